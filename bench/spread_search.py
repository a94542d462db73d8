"""Search benchmark: Thompson sampling (FormatSpread's two phases) vs uniform sampling.

    python bench/spread_search.py              # 20 matrices, budget 10% of the cells

On every generated matrix (bench/spread_matrix.py, 136-189 formats × 100 items) both
searches spend 10% of the cells. Thompson sampling: batches of 5 items, Beta prior centred
on the default format's first batch (worth 2 observations); 40% of the budget in phase 1
(best) and phase 2 (worst), 60% in the confirmation phases that measure the top three
candidates of each side on many items (steadyeval.stats._irt_search.thompson_search;
"thompson-2ph" is the same without confirmation: FormatSpread's two phases). Uniform: the same number of cells
spread evenly (stratified) over all formats; best/worst = highest/lowest observed mean.
A hit: the true accuracy of the format found is within 2 points of the true best (worst).
Targets: hits in >= 80% of matrices, and more than uniform sampling.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_bench import matrices

from steadyeval.stats._irt_design import stratified_cells
from steadyeval.stats._irt_search import thompson_search


def uniform(y: np.ndarray, budget: int, seed: int) -> tuple[int, int]:
    rows, cols = stratified_cells(*y.shape, budget, seed=seed)
    n = np.bincount(rows, minlength=y.shape[0])
    mean = np.bincount(rows, weights=y[rows, cols], minlength=y.shape[0]) / np.maximum(n, 1)
    return int(np.argmax(mean)), int(np.argmin(np.where(n > 0, mean, np.inf)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=int, default=20)
    ap.add_argument("--share", type=float, default=0.10)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    hits = {"thompson": [0, 0], "thompson-2ph": [0, 0], "uniform": [0, 0]}
    runs = 0
    for y, _ in matrices(args.matrices):
        acc = y.mean(axis=1)
        budget = int(args.share * y.size)
        for seed in range(args.seeds):
            found = {"uniform": uniform(y, budget, seed)}
            for name, confirm in (("thompson", 0.6), ("thompson-2ph", 0.0)):
                res = thompson_search(
                    lambda r, c, y=y: y[r, c], *y.shape, budget, batch=5, confirm=confirm, seed=seed
                )
                found[name] = (res.best, res.worst)
            for name, (b, w) in found.items():
                hits[name][0] += acc.max() - acc[b] <= 0.02
                hits[name][1] += acc[w] - acc.min() <= 0.02
            runs += 1
    print(f"{args.matrices} matrices × {args.seeds} seeds, budget {args.share:.0%} of the cells")
    print(f"{'method':12} {'best within 2 pts':>18} {'worst within 2 pts':>19}")
    for name, (b, w) in hits.items():
        print(f"{name:12} {b / runs:18.2f} {w / runs:19.2f}")
    t, u = hits["thompson"], hits["uniform"]
    ok = min(t) >= 0.8 * runs and t[0] > u[0] and t[1] > u[1]
    print("targets met" if ok else "NOT all targets met")


if __name__ == "__main__":
    main()
