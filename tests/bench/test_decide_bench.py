"""bench/decide_bench.py: pairs have the stated truth and the quick run prints its tables."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ._script import load_bench_script

db = load_bench_script("decide_bench")


@pytest.mark.parametrize("family", list(db.FAMILIES))
def test_null_pairs_tie_exactly_while_formats_flip(family: str) -> None:
    pair = db.make_pair(family, 0, null=True)
    assert pair.pa.shape == pair.pb.shape and 100 <= pair.pa.shape[0] <= 200
    assert abs(pair.pa.mean() - pair.pb.mean()) < 1e-9 and pair.delta == 0.0
    assert 0.1 < db.flips(pair) < 0.9  # each model wins on some formats
    alt = db.make_pair(family, 0, null=False)
    assert alt.delta == pytest.approx(alt.pa.mean() - alt.pb.mean()) and alt.delta != 0


def test_roles_are_disjoint_and_both_present() -> None:
    roles = {r for r, _ in db.FAMILIES.values()}
    assert roles == {"choose", "report"}


def test_quick_run_prints_both_tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["decide_bench.py", "--quick", "--family", "mild", "--pairs", "6", "--horizon", "300"]
    monkeypatch.setattr(sys, "argv", argv)
    db.main()
    out = capsys.readouterr().out
    assert "| mild | choose | uniform | 300 | 6 |" in out
    assert "| mild | adaptive ε=0.2 | 300 |" in out


def test_an_unknown_family_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["decide_bench.py", "--family", "nope"])
    with pytest.raises(SystemExit, match="unknown family 'nope'"):
        db.main()


def test_n_star_inverts_the_normal_power() -> None:
    deltas, variances = np.full(10, 0.05), np.full(10, 0.2)
    n = db.n_star(0.8, deltas, variances)
    assert n == pytest.approx((1.959964 + 0.841621) ** 2 * 0.2 / 0.05**2, rel=1e-4)
