"""How the spread estimator's fit scales with the items (issue 41: all of MMLU).

    python bench/irt_fit_bench.py            # ~15-30 s on one core
    python bench/irt_fit_bench.py --full     # also the whole estimate at MMLU's size (~7 min)

``stats.fit_irt`` factorises the Laplace precision by blocks (a Schur complement on the
items, whose block is diagonal: ``steadyeval.stats._irt_factor``), so its cost should grow
about linearly with the items at a fixed number of formats, where the dense factorisation
it replaced grew with their cube. For 100 formats with the grammar's 24 covariate columns
and two cells per item, it times the fit at 500, 2,000 and 14,042 items (MMLU's count) and
prints each time and its ratio to the 500-item fit's, beside the ratio of the items (linear)
and of their cubes (the dense fit). ``--full`` also times ``estimate_spread`` at 14,042
items with the default 400 draws (sampler and completed matrices included).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
from scipy.special import expit

from steadyeval import stats

FORMATS, COVARIATES = 100, 24
ITEMS = (500, 2_000, 14_042)


def cells(n_items: int, seed: int = 0) -> tuple:
    """Two cells per item on 100 formats with one-hot-like covariates, additive truth."""
    rng = np.random.default_rng(seed)
    theta, beta = rng.normal(0, 1, FORMATS), rng.normal(0, 1.5, n_items)
    rows = rng.integers(0, FORMATS, 2 * n_items)
    cols = np.repeat(np.arange(n_items), 2)
    y = (rng.random(len(rows)) < expit(theta[rows] + beta[cols])).astype(float)
    x = (rng.random((FORMATS, COVARIATES)) < 0.3).astype(float)
    return rows, cols, y, x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also estimate_spread at MMLU size")
    args = parser.parse_args()
    warnings.simplefilter("ignore", stats.StatsWarning)
    base = None
    for n_items in ITEMS:
        rows, cols, y, x = cells(n_items)
        start = time.perf_counter()
        stats.fit_irt(stats.IrtCells.of(rows, cols, y, FORMATS, n_items), x)
        took = time.perf_counter() - start
        base = base or (took, n_items)
        ratio, items = took / base[0], n_items / base[1]
        print(
            f"{FORMATS} formats × {n_items:>6,} items: fit {took:6.2f} s, {ratio:5.1f}× the "
            f"{base[1]}-item fit (items {items:.1f}×, their cubes {items**3:,.0f}×)"
        )
    if args.full:
        rows, cols, y, x = cells(ITEMS[-1])
        start = time.perf_counter()
        stats.estimate_spread(rows, cols, y, (FORMATS, ITEMS[-1]), x, draws=400, seed=0)
        print(
            f"estimate_spread at {ITEMS[-1]:,} items, 400 draws: {time.perf_counter() - start:.0f} s"
        )


if __name__ == "__main__":
    main()
