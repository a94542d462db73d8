"""What the cells say about how far formats differ: the posterior of the formats' s.d.
(issue 41).

    python bench/spread_width.py                         # narrow, bench, guess; 200 cells
    python bench/spread_width.py --budget 400 --matrices 20-23

For each matrix of the ``choose`` families of bench/spread_families.py (never the ``report``
ones; numbered apart from the family table's 0-7), fits ``steadyeval.stats.estimate_spread``
on the study's stratified cells (seed 0, 150 draws) and prints its diagnostic's posterior
mean of the formats' s.d. in logits (covariate part included) with its 90% interval, next
to the true s.d. of the per-format accuracies. ``python bench/spread_priors.py fixS`` holds
that s.d. at S instead, to see which width would have been right for each family.
"""

from __future__ import annotations

import argparse
import os
import sys
from multiprocessing import Pool
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_families import FAMILIES, role  # noqa: E402
from spread_families import generate as family_matrix  # noqa: E402
from spread_priors import matrices  # noqa: E402

from steadyeval.stats import estimate_spread  # noqa: E402
from steadyeval.studies.spread._irt_design import stratified_cells  # noqa: E402


def one(family: str, k: int, budget: int) -> str:
    """One line: the posterior of matrix ``k``'s formats' s.d. from ``budget`` cells."""
    m = family_matrix(family, k)
    y = m.y
    rows, cols = stratified_cells(*y.shape, budget, seed=0)
    est = estimate_spread(
        rows, cols, y[rows, cols], y.shape, covariates=m.covariates, seed=0, draws=150
    )
    d = est.diagnostic
    return (
        f"{family:8} matrix {k:3} cells {budget:4}: format s.d. {d.format_sd:.2f} logit "
        f"[{d.format_sd_low:.2f}, {d.format_sd_high:.2f}]  true accuracy s.d. "
        f"{y.mean(axis=1).std():.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choose = ",".join(f for f in FAMILIES if role(f) == "choose")
    ap.add_argument("--families", default=choose, help="choose families, comma-separated")
    ap.add_argument("--matrices", default="20-27", help="matrix numbers FIRST-LAST")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if args.jobs < 1 or args.budget < 1:
        raise SystemExit("--jobs and --budget: positive whole numbers")
    fams = args.families.split(",")
    if any(f not in FAMILIES or role(f) != "choose" for f in fams):
        raise SystemExit(f"only choose families ({choose}) are looked at here")
    keys = [(f, k, args.budget) for f in fams for k in matrices(args.matrices)]
    with Pool(args.jobs) as pool:
        for line in pool.starmap(one, keys):
            print(line, flush=True)


if __name__ == "__main__":
    main()
