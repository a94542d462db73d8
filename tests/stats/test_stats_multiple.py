"""Holm and Benjamini–Hochberg."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steadyeval import stats

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "stats" / "golden.json").read_text()
)


@pytest.mark.parametrize("case", GOLDEN["multiple"], ids=lambda c: str(len(c["pvalues"])))
def test_matches_statsmodels_multipletests(case: dict[str, Any]) -> None:
    h = stats.holm(case["pvalues"])
    bh = stats.benjamini_hochberg(case["pvalues"])
    np.testing.assert_allclose(h.pvalues, case["holm"], rtol=1e-12)
    np.testing.assert_allclose(bh.pvalues, case["bh"], rtol=1e-12)
    assert h.reject.tolist() == case["holm_reject"]
    assert bh.reject.tolist() == case["bh_reject"]
    assert (h.method, bh.method, h.alpha) == ("holm", "benjamini-hochberg", 0.05)


def test_adjusted_not_below_raw_and_bh_not_above_holm() -> None:
    p = np.random.default_rng(0).uniform(size=30) ** 3
    h = stats.holm(p).pvalues
    bh = stats.benjamini_hochberg(p).pvalues
    assert np.all(h >= p) and np.all(bh >= p)
    assert np.all(bh <= h + 1e-15)


def test_invalid() -> None:
    with pytest.raises(stats.StatsInputError, match=r"\[0, 1\]"):
        stats.holm([0.1, 1.5])
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.benjamini_hochberg([0.1, float("nan")])
    with pytest.raises(stats.StatsInputError, match="empty"):
        stats.holm([])
    with pytest.raises(stats.StatsInputError, match="alpha"):
        stats.holm([0.1], alpha=0)
