"""How often the spread estimate's fit check flags, and when (issue 41).

    python bench/spread_check.py                 # every part, ~25 min on one core
    python bench/spread_check.py --part toy      # the additive / reversed matrices only

``steadyeval.stats.estimate_spread(...).diagnostic`` (``SpreadDiagnostic``) flags
``prior_driven`` (fewer than half the formats have two cells, or the format s.d.'s 90%
interval spans more than a factor 3 and holds a quarter or more of the prior's mass) and ``misfit`` (a posterior predictive p-value below 0.05
or above 0.95). This script prints, per setting, how many of its runs each flag hit, the
range of the width ratio, of the prior's mass in the s.d.'s interval and of the p-values:

- ``toy``: 30 formats × 40 items, θ ~ N(0, 1), β ~ N(0, 1.5²), each format's cells drawn
  without repeats (2, 4, 8 cells per format), seeds 0-19: from the additive model
  (``add``: a misfit flag is a false alarm), with no format effects at all (``zero``:
  θ = 0, formats identical; the width is known to be small), with the last half of the formats taking −β
  (``rev``: they find the easy items hard; an interaction the model cannot hold) or the
  last third (``rev3``).
- ``dense``: the same on 20 formats × 20 items, β ~ N(0, 2.5²), 12 cells per format (the
  setting of tests/stats/test_estimate_spread.py), seeds 0-19.
- ``bench``: the benchmark generator's matrices (``bench/spread_matrix.py``: format ×
  item interactions, clusters, catastrophic formats) from the calibration seeds
  7000-7019 (136-189 formats × 100 items), stratified cells at budgets 200, 400, 800,
  1,600, the grammar's covariates, as the study fits them.

150 posterior draws per run (the study's default is 400). Results: bench/README.md
("The fit check: how often it flags").
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
from scipy.special import expit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_matrix import generate  # noqa: E402

from steadyeval.stats import SpreadDiagnostic, estimate_spread  # noqa: E402
from steadyeval.studies.spread._irt_design import stratified_cells  # noqa: E402

DRAWS = 150
TOY = [(kind, per) for kind in ("add", "zero", "rev", "rev3") for per in (2, 4, 8)]
DENSE = [("add", 12), ("rev", 12)]
BUDGETS = (200, 400, 800, 1600)


def toy(
    kind: str, per: int, seed: int, shape: tuple[int, int] = (30, 40), item_sd: float = 1.5
) -> tuple[str, tuple[float, ...]]:
    rng = np.random.default_rng(seed)
    n_f, n_i = shape
    theta, beta = rng.normal(0, 1.0, n_f), rng.normal(0, item_sd, n_i)
    theta *= kind != "zero"
    share = {"add": 0.0, "zero": 0.0, "rev": 0.5, "rev3": 1 / 3}[kind]
    sign = np.where(np.arange(n_f) < round((1 - share) * n_f), 1.0, -1.0)
    truth = rng.random((n_f, n_i)) < expit(0.3 + theta[:, None] + sign[:, None] * beta)
    rows = np.repeat(np.arange(n_f), per)
    cols = np.concatenate([rng.choice(n_i, per, replace=False) for _ in range(n_f)])
    d = estimate_spread(rows, cols, truth[rows, cols], (n_f, n_i), seed=seed, draws=DRAWS)
    return f"{kind} {per}/{n_i} cells/format", _row(d.diagnostic)


def bench(gseed: int, size: int, budget: int) -> tuple[str, tuple[float, ...]]:
    m = generate(gseed, size)
    rows, cols = stratified_cells(*m.y.shape, budget, seed=0)
    d = estimate_spread(
        rows, cols, m.y[rows, cols], m.y.shape, m.covariates, seed=0, draws=DRAWS
    ).diagnostic
    return f"bench {budget} cells", _row(d)


def _row(d: SpreadDiagnostic) -> tuple[float, ...]:
    flags = (float(d.prior_driven), float(d.misfit), d.width_ratio, d.prior_mass)
    return (*flags, d.ppc_format_p, d.ppc_item_p, d.ppc_interaction_p)


def _call(job: tuple) -> tuple[str, tuple[float, ...]]:
    return job[0](*job[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("toy", "dense", "bench", "all"), default="all")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    jobs: list[tuple] = []
    if args.part in ("toy", "all"):
        jobs += [(toy, kind, per, seed) for kind, per in TOY for seed in range(20)]
    if args.part in ("dense", "all"):
        jobs += [(toy, k, per, seed, (20, 20), 2.5) for k, per in DENSE for seed in range(20)]
    if args.part in ("bench", "all"):
        sizes = np.random.default_rng(7000).integers(136, 190, 20)
        jobs += [(bench, 7000 + k, int(sizes[k]), b) for b in BUDGETS for k in range(20)]
    with Pool(args.jobs) as pool:
        results = pool.map(_call, jobs)
    print(f"{'setting':<22} {'runs':>4} {'prior':>5} {'misfit':>6} {'ratio':>11} {'mass':>11} "
          f"{'p formats':>11} {'p items':>11} {'p fmt×item':>11}")  # fmt: skip
    for name in dict.fromkeys(name for name, _ in results):
        a = np.array([row for n, row in results if n == name])

        def span(col: int, a: np.ndarray = a) -> str:
            v = a[:, col][np.isfinite(a[:, col])]
            return f"{v.min():.2f}-{v.max():.2f}" if len(v) else "–"

        print(f"{name:<22} {len(a):>4} {int(a[:, 0].sum()):>5} {int(a[:, 1].sum()):>6} "
              f"{span(2):>11} {span(3):>11} {span(4):>11} {span(5):>11} {span(6):>11}")  # fmt: skip


if __name__ == "__main__":
    main()
