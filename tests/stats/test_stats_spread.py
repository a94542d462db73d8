"""Spread across conditions, MaxP, AvgP, CPS."""

from __future__ import annotations

import numpy as np
import pytest

from steadyeval import stats


def test_spread_by_hand() -> None:
    scores = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]])
    s = stats.spread(scores, n_resamples=500, seed=0)
    assert s.per_condition.tolist() == [0.75, 0.75, 0.5]
    avg = 2.0 / 3.0
    assert s.min.estimate == 0.5 and s.max.estimate == 0.75
    assert s.mean.estimate == pytest.approx(avg)
    assert s.std.estimate == pytest.approx(np.std([0.75, 0.75, 0.5], ddof=1))
    assert s.best_minus_worst.estimate == pytest.approx(0.25)
    assert s.max_p.estimate == 0.75 and s.avg_p.estimate == pytest.approx(avg)
    assert s.cps.estimate == pytest.approx((1 - (0.75 - avg)) * 0.75)
    assert (s.n_items, s.n_conditions, s.n_resamples, s.confidence) == (4, 3, 500, 0.95)


def test_spread_intervals_and_reproducibility() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.3, 0.9, size=(300, 1)) + np.array([[0.0, -0.05, 0.03, -0.1]])
    scores = (rng.uniform(size=(300, 4)) < np.clip(p, 0, 1)).astype(float)
    s1 = stats.spread(scores, n_resamples=400, seed=3)
    s2 = stats.spread(scores, n_resamples=400, seed=3)
    assert s1.cps == s2.cps and s1.std == s2.std
    for name in ("mean", "avg_p", "best_minus_worst", "std"):
        iv = getattr(s1, name)
        assert iv.low <= iv.high and iv.confidence == 0.95
    assert s1.mean.low <= s1.mean.estimate <= s1.mean.high
    assert 0.0 <= s1.cps.low <= s1.cps.high <= 1.0


def test_spread_invalid() -> None:
    with pytest.raises(stats.StatsInputError, match="at least 2 conditions"):
        stats.spread([[1], [0]], n_resamples=10, seed=0)
    with pytest.raises(stats.StatsInputError, match="divide percentages by 100"):
        stats.spread([[80, 70], [60, 50]], n_resamples=10, seed=0)
    with pytest.raises(stats.StatsInputError, match="seed"):
        stats.spread([[1, 0], [0, 1]], n_resamples=10, seed=None)  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="2-D"):
        stats.spread([1, 0], n_resamples=10, seed=0)
