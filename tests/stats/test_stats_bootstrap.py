"""Paired bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from steadyeval import stats


def _data(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.8, size=n)
    return (rng.uniform(size=n) < p + 0.08).astype(float), (rng.uniform(size=n) < p).astype(float)


def test_reproducible_with_int_seed_and_generator_advances() -> None:
    a, b = _data()
    r1 = stats.paired_bootstrap(a, b, n_resamples=2000, seed=5)
    r2 = stats.paired_bootstrap(a, b, n_resamples=2000, seed=5)
    assert r1 == r2
    gen = np.random.default_rng(5)
    g1 = stats.paired_bootstrap(a, b, n_resamples=2000, seed=gen)
    g2 = stats.paired_bootstrap(a, b, n_resamples=2000, seed=gen)
    assert g1 == r1  # a fresh Generator from the same int gives the same stream
    assert g2 != g1


def test_does_not_touch_global_rng() -> None:
    a, b = _data()
    state = np.random.get_state()[1].copy()  # type: ignore[index]
    stats.paired_bootstrap(a, b, n_resamples=500, seed=1)
    assert np.array_equal(np.random.get_state()[1], state)  # type: ignore[index]


def test_ci_contains_estimate_and_se_close_to_clt() -> None:
    a, b = _data(n=400, seed=3)
    r = stats.paired_bootstrap(a, b, n_resamples=4000, seed=0)
    assert r.estimate == pytest.approx(a.mean() - b.mean())
    assert r.low <= r.estimate <= r.high
    clt = stats.paired_difference(a, b)
    assert r.se == pytest.approx(clt.se, rel=0.1)
    assert r.high - r.low == pytest.approx(clt.high - clt.low, rel=0.15)
    assert (r.n, r.n_resamples, r.confidence) == (400, 4000, 0.95)
    # No resample is as far from the estimate as the estimate is from 0 (the CLT p-value is
    # 4.5e-6), so the p-value is the convention's floor 1 / (B + 1).
    assert r.pvalue == pytest.approx(1 / 4001)


def test_pvalue_convention_by_hand() -> None:
    # Two items with differences 1 and 0: observed d = 0.5. Resample means are 0, 0.5, 1,
    # and |d* - 0.5| >= 0.5 exactly when both draws are the same item, i.e. d* in {0, 1}.
    a, b = [1, 0], [0, 0]
    reps = 4000
    r = stats.paired_bootstrap(a, b, n_resamples=reps, seed=0)
    idx = np.random.default_rng(0).integers(0, 2, size=(reps, 2))
    d_star = np.array([1.0, 0.0])[idx].mean(axis=1)
    expected = (1 + np.sum(np.abs(d_star - 0.5) >= 0.5)) / (reps + 1)
    assert r.pvalue == pytest.approx(expected)
    assert r.pvalue == pytest.approx(0.5, abs=0.03)
    # percentile interval of {0, 0.5, 1} at 95%: 0 and 1
    assert (r.low, r.high) == (0.0, 1.0)


def test_strong_effect_gives_small_pvalue() -> None:
    a = np.ones(100)
    b = np.r_[np.zeros(40), np.ones(60)]
    r = stats.paired_bootstrap(a, b, n_resamples=999, seed=0)
    assert r.pvalue == pytest.approx(1 / 1000)


def test_degenerate_and_invalid() -> None:
    with pytest.warns(stats.StatsWarning, match="single point"):
        r = stats.paired_bootstrap([1, 1, 1], [0, 0, 0], n_resamples=100, seed=0)
    assert math.isnan(r.pvalue) and r.low == r.high == r.estimate == 1.0
    with pytest.raises(stats.StatsInputError, match="seed"):
        stats.paired_bootstrap([1, 0], [0, 0], n_resamples=10, seed=None)  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="n_resamples"):
        stats.paired_bootstrap([1, 0], [0, 0], n_resamples=0, seed=0)
    with pytest.raises(stats.StatsInputError, match="lengths"):
        stats.paired_bootstrap([1, 0], [0], n_resamples=10, seed=0)
