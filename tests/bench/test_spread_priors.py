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
    ("variant", "match"), [("nonsense", "unknown variant part"), ("cpfabc", "'cpfabc'")]
)
def test_a_bad_variant_is_refused_before_the_pool(
    variant: str, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["spread_priors.py", "base", variant, "--matrices", "20-20"])
    monkeypatch.setattr(sp, "Pool", lambda *a, **k: pytest.fail("the pool started"))
    with pytest.raises(SystemExit, match=match):
        sp.main()
    assert sp._DEFAULTS["_FORMAT_SD_PER_CELL"] == sp._irt_gibbs._FORMAT_SD_PER_CELL
