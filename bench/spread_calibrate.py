"""Choose the calibration factor of the spread estimator's quantile intervals (issue 21).

    python bench/spread_calibrate.py            # ~8-15 min on 2 cores

:func:`steadyeval.stats._irt.widen` multiplies each side of a quantile's posterior interval
(its distance from the posterior median) by 1 + factor × min(1, 5 / cells per format). This
script fits steadyeval's estimator (with the format covariates, the study's default) on
matrices of bench/spread_matrix.py drawn from generator seeds that the benchmark does not use
(7000-7019 with 3 sampling seeds, 9000-9019 with 2; the benchmark's matrices are seeds
1000-1019), at budgets 200/400/800/1,600, and prints, for each candidate factor, the
coverage of the true 5/25/50/75/95% quantiles by the widened 90% intervals (500 intervals
per budget) and their mean width. The factor in ``_irt._WIDEN`` (0.35) is the one whose
coverage came closest to 90% over the budgets (least summed distance: 88%, 92%, 90%, 93%;
factor 0: 76%, 83%, 83%, 90%; 0.45, the factor before ``_irt_mixture.gap`` widened with
the cells per row: 91%, 93%, 93%, 94%). ~8 min on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
from multiprocessing import Pool
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_matrix import generate  # noqa: E402

from steadyeval.stats._irt import IrtCells, fit_irt, irt_distribution, widen  # noqa: E402
from steadyeval.stats._irt_design import stratified_cells  # noqa: E402

BUDGETS = (200, 400, 800, 1600)
LEVELS = np.array([5.0, 25.0, 50.0, 75.0, 95.0])
SETS = ((7000, 3), (9000, 2))  # (first generator seed, sampling seeds per matrix)
FACTORS = (0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def run_one(gseed: int, size: int, budget: int, seed: int) -> dict:
    """Uncalibrated 90% intervals, per-draw quantiles and the true quantiles of one run."""
    m = generate(gseed, size)
    rows, cols = stratified_cells(*m.y.shape, budget, seed=seed)
    cells = IrtCells.of(rows, cols, m.y[rows, cols], *m.y.shape)
    dist = irt_distribution(fit_irt(cells, m.covariates), seed=seed, n_draws=150, calibrate=False)
    return {
        "budget": budget,
        "low": dist.quantile_low,
        "high": dist.quantile_high,
        "median": np.median(dist.quantile_draws, axis=0),
        "cells_per_row": budget / m.y.shape[0],
        "true": np.percentile(m.y.mean(axis=1), LEVELS),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    tasks = []
    for first, seeds in SETS:
        sizes = np.random.default_rng(first).integers(136, 190, args.matrices)
        tasks += [
            (first + k, int(sizes[k]), b, s)
            for b in BUDGETS
            for k in range(args.matrices)
            for s in range(seeds)
        ]
    with Pool(args.jobs) as pool:
        runs = pool.starmap(run_one, tasks)
    print(f"{'factor':>6} " + " ".join(f"{b:>14}" for b in BUDGETS) + "   (coverage, width)")
    for f in FACTORS:
        cells = []
        for b in BUDGETS:
            cov, wid = [], []
            for r in (r for r in runs if r["budget"] == b):
                lo, hi = widen(r["low"], r["median"], r["high"], r["cells_per_row"], f)
                cov += list((lo <= r["true"]) & (r["true"] <= hi))
                wid.append(float(np.mean(hi - lo)))
            cells.append(f"{np.mean(cov):.3f} ({np.mean(wid):.3f})")
        print(f"{f:6.2f} " + " ".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
