"""Seeded simulations: McNemar size under the null and Wilson coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from steadyeval import stats

N_SIM = 2000


def test_exact_mcnemar_rejects_at_most_alpha_under_the_null() -> None:
    rng = np.random.default_rng(20240917)
    n_items = 100
    # identical per-item success probabilities for both conditions, varying across items
    p = rng.uniform(0.1, 0.9, size=(N_SIM, n_items))
    a = rng.uniform(size=p.shape) < p
    b = rng.uniform(size=p.shape) < p
    only_a = np.sum(a & ~b, axis=1)
    only_b = np.sum(~a & b, axis=1)
    pvalues = np.array(
        [stats.mcnemar(int(x), int(y)).pvalue for x, y in zip(only_a, only_b, strict=True)]
    )
    rate = float(np.mean(pvalues <= 0.05))
    assert rate <= 0.05
    assert rate > 0.02  # conservative, but not degenerate: the test can reject


def _exact_wilson_coverage(n: int, p: float) -> float:
    covered = 0.0
    for k in range(n + 1):
        iv = stats.wilson_interval(k, n)
        if iv.low <= p <= iv.high:
            covered += float(sps.binom.pmf(k, n, p))
    return covered


@pytest.mark.parametrize(("p", "stated"), [(0.1, 93.6), (0.3, 93.7), (0.5, 94.3)])
def test_wilson_coverage_simulated_matches_exact(p: float, stated: float) -> None:
    n = 100
    exact = _exact_wilson_coverage(n, p)
    assert round(100 * exact, 1) == stated
    rng = np.random.default_rng(int(p * 1000))
    ks = rng.binomial(n, p, size=N_SIM)
    intervals = {int(k): stats.wilson_interval(int(k), n) for k in np.unique(ks)}
    hits = [intervals[int(k)].low <= p <= intervals[int(k)].high for k in ks]
    simulated = float(np.mean(hits))
    sim_se = math.sqrt(exact * (1 - exact) / N_SIM)
    assert abs(simulated - exact) <= 3 * sim_se
