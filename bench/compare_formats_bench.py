"""Calibration of the comparison over formats (``stats.compare_formats``, issue 44) on model
pairs with known truth.

Each pair comes from the generator families of ``bench/decide_bench.py`` (two models sharing
format and item effects, with model × format and model × item interactions strong enough
that the ranking flips on some formats; null pairs have exactly equal mean accuracy). One
0/1 matrix per model is drawn from its probabilities: the truth is that matrix (the
comparison's estimand is the accuracy each model would have on every cell). Both models
answer the same ``budget`` random cells; the crossed model is fitted to them and its 90%
intervals are checked against the truth:

- the expected difference A − B over the formats (its interval covers the truth?);
- the share of formats on which A is better (the probability that A beats B on a format
  drawn at random; ties count half);
- P(A − B > 0): decisive calls (above 0.95 or below 0.05) on null pairs (their true
  difference is the realised matrices' noise, so a calibrated posterior makes them about
  10% of the time) and on pairs with a difference of 1 point or more (how many point the
  wrong way).

Nothing in the crossed model was chosen on these families (its interaction prior is the
spread model's schedule capped at 1 logit, fixed before this benchmark ran), so every family
reports.

    python bench/compare_formats_bench.py --pairs 20 --jobs 2   # the table in bench/README.md
    python bench/compare_formats_bench.py --pairs 4 --budgets 200 --families mild
    python bench/compare_formats_bench.py --quick          # a smoke run (tiny)
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from steadyeval import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decide_bench import FAMILIES, make_pair

LEVEL = 0.9


def one(task: tuple[str, int, bool, int, int]) -> dict[str, Any]:
    """One pair at one budget: the truth and the crossed model's intervals."""
    family, seed, null, budget, draws = task
    pair = make_pair(family, seed, null)
    rng = np.random.default_rng([seed, budget, 7])
    ya = rng.random(pair.pa.shape) < pair.pa
    yb = rng.random(pair.pb.shape) < pair.pb
    n, m = ya.shape
    per_format = ya.mean(axis=1) - yb.mean(axis=1)
    truth = {
        "difference": float(per_format.mean()),
        "p_better": float((per_format > 0).mean() + 0.5 * (per_format == 0).mean()),
    }
    cells = rng.choice(n * m, size=min(budget, n * m), replace=False)
    rows, cols = np.divmod(cells, m)
    models = np.repeat([0, 1], len(cells))
    r, c = np.tile(rows, 2), np.tile(cols, 2)
    y = np.concatenate([ya[rows, cols], yb[rows, cols]])
    cmp = stats.quietly(
        stats.compare_formats, models, r, c, y, (2, n, m), draws=draws, seed=seed, confidence=LEVEL
    )
    pair_est = cmp.pair(0, 1)
    out: dict[str, Any] = {"family": family, "budget": budget, "null": null}
    for name in ("difference", "p_better"):
        est = getattr(pair_est, name)
        out[f"{name}_cover"] = est.low <= truth[name] <= est.high
        out[f"{name}_width"] = est.high - est.low
        out[f"{name}_error"] = abs(est.estimate - truth[name])
    p = pair_est.prob_positive
    out["decisive"] = p > 0.95 or p < 0.05
    out["wrong"] = (
        not null
        and abs(truth["difference"]) >= 0.01
        and out["decisive"]
        and (p > 0.5) != (truth["difference"] > 0)
    )
    return out


def _table(rows: list[dict[str, Any]], families: list[str], budgets: list[int]) -> list[str]:
    head = (
        "| family | role | cells | pairs | difference: 90% coverage | width | abs error "
        "| share A better: 90% coverage | width | null pairs: decisive P(A>B) "
        "| non-null: decisive, wrong sign |"
    )
    lines = [head, "|" + "---|" * 11]
    for family in families:
        for budget in budgets:
            sel = [r for r in rows if r["family"] == family and r["budget"] == budget]
            if not sel:
                continue

            def mean(key: str, sel: list[dict[str, Any]] = sel) -> float:
                return float(np.mean([float(r[key]) for r in sel]))

            lines.append(
                f"| {family} | {FAMILIES[family][0]} | {budget} | {len(sel)} "
                f"| {mean('difference_cover'):.2f} | {mean('difference_width'):.3f} "
                f"| {mean('difference_error'):.3f} | {mean('p_better_cover'):.2f} "
                f"| {mean('p_better_width'):.2f} "
                f"| {sum(r['decisive'] for r in sel if r['null'])} of "
                f"{sum(r['null'] for r in sel)} "
                f"| {sum(r['decisive'] for r in sel if not r['null'])}, "
                f"{sum(r['wrong'] for r in sel)} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--pairs", type=int, default=10, help="pairs per family (half null)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[200, 400])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 pairs, 60 cells")
    args = parser.parse_args()
    if args.quick:
        args.families, args.pairs, args.budgets, args.draws = ["mild"], 2, [60], 30
    tasks = [
        (family, 1000 + k, k % 2 == 0, budget, args.draws)
        for family in args.families
        for k in range(args.pairs)
        for budget in args.budgets
    ]
    start = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(one, tasks))
    else:
        rows = [one(t) for t in tasks]
    print("\n".join(_table(rows, args.families, args.budgets)))
    print(f"\n{len(tasks)} fits in {time.perf_counter() - start:.0f} s; nominal coverage {LEVEL}")


if __name__ == "__main__":
    main()
