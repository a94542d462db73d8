"""Choose the calibration factor of the Laplace sampler's quantile intervals (issue 21).

    python bench/spread_calibrate.py            # ~8-15 min on 2 cores
    python bench/spread_calibrate.py --budgets 400 --set _LOW_A=2 --set _LOW_B=8


The spread estimator's default (Gibbs) sampler needs no calibration; with
``irt_distribution(..., sampler="laplace")``, :func:`steadyeval.stats._irt.widen`
multiplies each side of a quantile's posterior interval (its distance from the posterior
median) by 1 + factor × min(1, 5 / cells per format). This script fits that estimator (with
the format covariates, the study's default until the Gibbs sampler replaced it) on
matrices of bench/spread_matrix.py drawn from generator seeds that the benchmark does not use
(7000-7019 with 3 sampling seeds, 9000-9019 with 2; the benchmark's matrices are seeds
1000-1019), at budgets 200/400/800/1,600, and prints, for each candidate factor, the
coverage of the true 5/25/50/75/95% quantiles by the widened 90% intervals (500 intervals
per budget) and their mean width. The factor in ``_irt._WIDEN`` (0.35) is the one whose
coverage came closest to 90% over the budgets (least summed distance: 88%, 92%, 90%, 93%;
factor 0: 76%, 83%, 83%, 90%; 0.45, the factor before ``_irt_mixture.gap`` widened with
the cells per row: 91%, 93%, 93%, 94%; with the broken share's Beta prior following the
cells per row too, 0.35 covers 87.6%, 94.0%, 92.8%, 93.0%). ~7-10 min on 2 cores.

It also prints, per budget, the mean W1 of the estimator (with covariates) and of the
better PromptEval baseline (PE-Rasch, PE-discrete; bench/spread_baseline.py, on the same
cells, cached in ``--cache`` since they do not depend on steadyeval's settings) and their
ratio, so that a change of the estimator can be judged on these seeds before the benchmark;
then where the estimator's W1 comes from: the error of the distribution's mean, the W1 of
the two distributions with their means removed, and the signed errors of the centred 2-95%
quantiles (positive: the estimate's quantile too high).
``--set NAME=VALUE`` overrides a module constant of ``_irt_mixture`` or ``_irt`` (e.g. the
Beta prior ``_LOW_A``/``_LOW_B``) in this run only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from multiprocessing import Pool
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_baseline import prompteval  # noqa: E402
from spread_matrix import generate  # noqa: E402

from steadyeval.stats import _irt, _irt_mixture  # noqa: E402
from steadyeval.stats._irt import IrtCells, fit_irt, irt_distribution, widen  # noqa: E402
from steadyeval.studies.spread._irt_design import stratified_cells  # noqa: E402

BUDGETS = (200, 400, 800, 1600)
LEVELS = np.array([5.0, 25.0, 50.0, 75.0, 95.0])
SETS = ((7000, 3), (9000, 2))  # (first generator seed, sampling seeds per matrix)
FACTORS = (0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


SHAPE = np.array([2.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0])


def _w1(est: np.ndarray, true: np.ndarray) -> float:
    return float(np.mean(np.abs(np.sort(est) - np.sort(true))))


def _shape(est: np.ndarray, true: np.ndarray) -> list[float]:
    """|mean error|, W1 with both means removed, and the signed errors of the centred
    quantiles at ``SHAPE`` (where the estimated distribution is too wide or too narrow)."""
    e, t = est - est.mean(), true - true.mean()
    q = np.percentile(e, SHAPE) - np.percentile(t, SHAPE)
    return [abs(float(est.mean() - true.mean())), _w1(e, t), *map(float, q)]


def run_one(gseed: int, size: int, budget: int, seed: int, baseline: bool) -> dict:
    """Uncalibrated 90% intervals, per-draw quantiles and the true quantiles of one run; W1
    of the estimator and (``baseline``) the better PromptEval's."""
    m = generate(gseed, size)
    rows, cols = stratified_cells(*m.y.shape, budget, seed=seed)
    cells = IrtCells.of(rows, cols, m.y[rows, cols], *m.y.shape)
    dist = irt_distribution(
        fit_irt(cells, m.covariates), seed=seed, n_draws=150, sampler="laplace", calibrate=False
    )
    true = m.y.mean(axis=1)
    base = None
    if baseline:
        obs = m.y[rows, cols]
        base = min(
            _w1(prompteval(rows, cols, obs, m.y.shape), true),
            _w1(prompteval(rows, cols, obs, m.y.shape, m.covariates), true),
        )
    return {
        "key": f"{gseed}/{size}/{budget}/{seed}",
        "w1": _w1(dist.sorted_accuracy, true),
        "shape": _shape(dist.sorted_accuracy, true),
        "base": base,
        "budget": budget,
        "low": dist.quantile_low,
        "high": dist.quantile_high,
        "median": np.median(dist.quantile_draws, axis=0),
        "cells_per_row": budget / m.y.shape[0],
        "true": np.percentile(true, LEVELS),
    }


def _override(settings: list[str]) -> None:
    """Apply ``NAME=VALUE`` to the module constant NAME of ``_irt_mixture`` or ``_irt``
    (before the workers fork, so they inherit it)."""
    for item in settings:
        name, value = item.split("=", 1)
        mod = _irt_mixture if hasattr(_irt_mixture, name) else _irt
        if not hasattr(mod, name):
            raise SystemExit(f"no constant {name} in _irt_mixture or _irt")
        setattr(mod, name, float(value))
    if any(s.startswith("_WIDEN=") for s in settings):  # widen()'s default is bound at def
        global FACTORS
        FACTORS = tuple(sorted({*FACTORS, float(_irt._WIDEN)}))


def _ratios(runs: list[dict], cache: dict[str, float]) -> None:
    """W1 of the estimator, of the better baseline, their ratio and the coverage at _WIDEN."""
    print(f"{'budget':>6} {'W1':>7} {'best PE':>8} {'ratio':>6} {'cover90':>8}")
    for b in sorted({r["budget"] for r in runs}):
        mine = [r for r in runs if r["budget"] == b]
        w = float(np.mean([r["w1"] for r in mine]))
        pe = float(np.mean([cache[r["key"]] for r in mine]))
        cov = []
        for r in mine:
            lo, hi = widen(r["low"], r["median"], r["high"], r["cells_per_row"], _irt._WIDEN)
            cov += list((lo <= r["true"]) & (r["true"] <= hi))
        print(f"{b:>6} {w:7.4f} {pe:8.4f} {w / pe:6.3f} {np.mean(cov):8.3f}")
    levels = " ".join(f"{f'{q:.0f}%':>7}" for q in SHAPE)
    print("where W1 comes from: |mean error|, W1 of the centred distributions, and the")
    print("signed error (estimate - truth) of the centred quantiles")
    print(f"{'budget':>6} {'|mean|':>7} {'centred':>8} {levels}")
    for b in sorted({r["budget"] for r in runs}):
        a = np.mean([r["shape"] for r in runs if r["budget"] == b], axis=0)
        errs = " ".join(f"{v:+7.3f}" for v in a[2:])
        print(f"{b:>6} {a[0]:7.4f} {a[1]:8.4f} {errs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/spread_calibrate_baseline.json"))
    args = ap.parse_args()
    _override(args.set)
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    tasks = []
    for first, seeds in SETS:
        sizes = np.random.default_rng(first).integers(136, 190, args.matrices)
        tasks += [
            (first + k, int(sizes[k]), b, s)
            for b in args.budgets
            for k in range(args.matrices)
            for s in range(seeds)
        ]
    tasks = [(*t, "/".join(map(str, t)) not in cache) for t in tasks]
    with Pool(args.jobs) as pool:
        runs = pool.starmap(run_one, tasks)
    cache.update({r["key"]: r["base"] for r in runs if r["base"] is not None})
    args.cache.write_text(json.dumps(cache))
    print("settings: " + (" ".join(args.set) or "defaults"))
    _ratios(runs, cache)
    print(f"{'factor':>6} " + " ".join(f"{b:>14}" for b in args.budgets) + "   (coverage, width)")
    for f in FACTORS:
        cells = []
        for b in args.budgets:
            cov, wid = [], []
            for r in (r for r in runs if r["budget"] == b):
                lo, hi = widen(r["low"], r["median"], r["high"], r["cells_per_row"], f)
                cov += list((lo <= r["true"]) & (r["true"] <= hi))
                wid.append(float(np.mean(hi - lo)))
            cells.append(f"{np.mean(cov):.3f} ({np.mean(wid):.3f})")
        print(f"{f:6.2f} " + " ".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
