"""bench/spread_priors.py: its arguments are checked before any work starts."""

from __future__ import annotations

import sys

import pytest

from ._script import load_bench_script

sp = load_bench_script("spread_priors")


@pytest.mark.parametrize("text", ["5", "a-b", "9-3", "-5", "1-2-3", ""])
def test_malformed_matrices_are_refused(text: str) -> None:
    with pytest.raises(SystemExit, match="expected FIRST-LAST"):
        sp.matrices(text)


def test_matrices_are_a_range() -> None:
    assert list(sp.matrices("20-21")) == [20, 21]


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("nonsense", "unknown variant part"),
        ("cpfabc", "'cpfabc'"),
        ("fix0", "positive number"),
        ("fix-1", "positive number"),
        ("fixnan", "positive number"),
        ("fixinf", "positive number"),
    ],
)
def test_a_bad_variant_is_refused_before_the_pool(
    variant: str, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["spread_priors.py", "base", variant, "--matrices", "20-20"])
    monkeypatch.setattr(sp, "Pool", lambda *a, **k: pytest.fail("the pool started"))
    with pytest.raises(SystemExit, match=match):
        sp.main()
    assert sp._DEFAULTS["_FORMAT_SD_PER_CELL"] == sp._irt_gibbs._FORMAT_SD_PER_CELL


def test_pair_cells_are_two_distinct_items_on_half_the_budget_of_formats() -> None:
    import numpy as np

    rows, cols = sp.pair_cells(181, 100, 200, seed=3)
    assert len(rows) == 200 and len(np.unique(rows)) == 100
    assert (rows[0::2] == rows[1::2]).all() and (cols[0::2] != cols[1::2]).all()
    assert set(np.bincount(cols, minlength=100)) == {2}  # items balanced
    few = sp.pair_cells(150, 100, 400, seed=0)  # under budget / 2 formats: stratified
    assert len(few[0]) == 400 and np.bincount(few[0]).min() >= 2


def test_group_cells_put_k_distinct_items_on_each_chosen_format() -> None:
    rows, cols = sp.group_cells(150, 100, 200, 4, seed=0)
    assert len(rows) == 200 and len(set(rows.tolist())) == 50
    for f in set(rows.tolist()):
        assert len(set(cols[rows == f].tolist())) == 4
    rows, cols = sp.group_cells(150, 100, 200, 3, seed=0)
    assert len(rows) == 198  # the remainder is not spent (documented)
    # more cells per format than items, or too few formats for the groups: stratified
    rows, cols = sp.group_cells(150, 3, 200, 4, seed=0)
    assert len(set(rows.tolist())) == 150


@pytest.mark.parametrize("k", ["1", "-3", "51"])
def test_a_bad_group_size_is_refused(k: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["spread_priors.py", "base", "--groups", k])
    with pytest.raises(SystemExit, match="K from 2 to 50"):
        sp.main()


def test_fix_holds_the_formats_sd_near_s() -> None:
    """``fixS``: the prior on the formats' total variance peaks at s.d. S (log density of
    the variance, Jacobian included) and falls off fast either side."""
    import numpy as np

    sp.apply("fix0.5")
    try:
        sds = np.array([0.3, 0.45, 0.5, 0.55, 0.8])
        logp = sp._irt_gibbs._log_format_var(sds**2, 1.0) + np.log(2 * sds)  # → s.d.'s density
        assert int(np.argmax(logp)) == 2
        assert logp[2] - logp[0] > 20 and logp[2] - logp[4] > 20
    finally:
        sp.apply("base")
    assert sp._irt_gibbs._log_format_var is sp._DEFAULTS["_log_format_var"]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--families", "narrow,halved"], "only choose families"),
        (["--jobs", "0"], "positive whole numbers"),
        (["--budget", "0"], "positive whole numbers"),
    ],
)
def test_spread_width_refuses_before_any_work(
    argv: list[str], match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sw = load_bench_script("spread_width")
    monkeypatch.setattr(sys, "argv", ["spread_width.py", *argv])
    monkeypatch.setattr(sw, "Pool", lambda *a, **k: pytest.fail("the pool started"))
    with pytest.raises(SystemExit, match=match):
        sw.main()
