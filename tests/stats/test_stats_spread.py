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


def test_repeated_rows_draw_counts_with_the_same_bootstrap_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0/1 scores under 3 conditions have at most 8 distinct rows; the bootstrap then draws
    how often each row is picked (multinomial) instead of n item indices. Its distribution
    (means, spreads, correlations of the column means) equals the index bootstrap's."""
    from steadyeval.stats import _bootstrap

    rng = np.random.default_rng(5)
    p = rng.uniform(0.2, 0.9, size=(4000, 1)) + np.array([[0.0, -0.1, 0.05]])
    x = (rng.uniform(size=(4000, 3)) < np.clip(p, 0, 1)).astype(float)
    counts = _bootstrap.bootstrap_row_means(x, 4000, np.random.default_rng(1))
    monkeypatch.setattr(_bootstrap, "_FEW_ROWS", 10**9)  # force the index bootstrap
    index = _bootstrap.bootstrap_row_means(x, 4000, np.random.default_rng(1))
    se = x.std(axis=0) / np.sqrt(len(x))
    assert np.abs(counts.mean(axis=0) - x.mean(axis=0)).max() < 4 * se.max() / np.sqrt(4000)
    assert counts.std(axis=0) == pytest.approx(index.std(axis=0), rel=0.06)
    assert counts.std(axis=0) == pytest.approx(se, rel=0.06)
    assert np.corrcoef(counts.T) == pytest.approx(np.corrcoef(index.T), abs=0.05)
    # A small table keeps the index bootstrap (few items per distinct row).
    monkeypatch.setattr(_bootstrap, "_FEW_ROWS", 16)
    small = x[:40]
    a = _bootstrap.bootstrap_row_means(small, 50, np.random.default_rng(2))
    idx = np.random.default_rng(2).integers(0, 40, size=(50, 40))
    assert a == pytest.approx(small[idx].mean(axis=1))


def test_distinct_rows_match_numpy_unique() -> None:
    from steadyeval.stats._bootstrap import _distinct_rows

    rng = np.random.default_rng(0)
    for x in (
        (rng.random((500, 5)) < 0.3).astype(float),  # 0/1: coded as integers
        np.round(rng.random((500, 2)), 1),  # other values: numpy's row-wise unique
    ):
        rows, freq = _distinct_rows(x)
        want_rows, want_freq = np.unique(x, axis=0, return_counts=True)
        assert np.array_equal(rows, want_rows) and np.array_equal(freq, want_freq)
