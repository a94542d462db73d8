"""Spread benchmark: steadyeval's estimator vs the published PromptEval method (issue 21).

    python bench/spread_bench.py                 # 20 matrices × 5 seeds, budgets 200-1600
    python bench/spread_bench.py --matrices 4 --seeds 2   # a quick look

For every matrix (bench/spread_matrix.py: templates × 100 items, templates drawn from
BBH's 136-189) and seed, each budget's cells are drawn once by the stratified sampler and
every method is fitted on those same cells: plain averaging, PromptEval as read from the
paper (bench/spread_baseline.py) without covariates (PE-Rasch) and with the format
covariates (PE-discrete), steadyeval's estimator as the study
runs it by default (Gibbs sampler, with the grammar's covariates where the formats have
them) and without the covariates (``steadyeval-nocov``). The adaptive
sampler (half stratified, then rounds at the least certain formats) is reported on its own
cells at the same budget. PromptEval as its released code runs it
(bench/spread_prompteval.py: C = 100, every coefficient penalised, PCA-filtered covariates
instead of a format one-hot, and the "-logreg" variant) is fitted on the same cells as
``PE-Rasch (code)``, ``PE-discrete (code)`` and ``PE-discrete-logreg (code)``; the
verdict's baseline is the best PromptEval, the lowest mean W1 among every ``PE-`` method
run (paper reading and code). Printed per budget: mean W1 between the estimated and the true
per-format accuracy distributions, mean absolute error of the 5/25/50/75/95 quantiles, and
(steadyeval) the coverage of the true quantiles by its 90% intervals and their mean width.
The verdict reads the study's default (``steadyeval``) only. The generator counts as valid when plain averaging's and PE-Rasch's W1 are within
±35% of the paper's BBH values (paper_results.npz, when ../shared is there; else the
values from its SOURCE.md). If convert_ys.py outputs (``--real DIR`` with ``*.npz``) are
given, their matrices are benchmarked too. The search part is bench/spread_search.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: threads only contend
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_baseline import plain_average, prompteval  # noqa: E402
from spread_families import FAMILIES, describe, role  # noqa: E402
from spread_families import generate as family_matrix  # noqa: E402
from spread_matrix import generate  # noqa: E402
from spread_prompteval import VARIANTS as CODE_VARIANTS  # noqa: E402

from steadyeval.stats._irt import IrtCells, fit_irt, irt_distribution  # noqa: E402
from steadyeval.studies.spread._config import SpreadConfig  # noqa: E402
from steadyeval.studies.spread._irt_design import adaptive_cells, stratified_cells  # noqa: E402

BUDGETS = (200, 400, 800, 1600)
LEVELS = np.array([5.0, 25.0, 50.0, 75.0, 95.0])
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "prompteval"
#: paper_results.npz's BBH__dist means (the -logreg row is not in SOURCE.md's table).
PAPER_BBH = {
    "avg": (0.299, 0.178, 0.113, 0.069),
    "PE-Rasch": (0.109, 0.082, 0.072, 0.045),
    "PE-discrete": (0.055, 0.030, 0.023, 0.021),
    "PE-discrete-logreg": (0.049, 0.035, 0.026, 0.022),
}
#: PromptEval as its code runs it (bench/spread_prompteval.py), named "<paper name> (code)".
CODE = {f"{name} (code)": v for name, v in CODE_VARIANTS.items()}
METHODS = (
    "avg",
    "PE-Rasch",
    "PE-discrete",
    *CODE,
    "steadyeval",
    "steadyeval-nocov",
    "adaptive",
)
#: What ``--default-only`` leaves out.
EXTRAS = ("steadyeval-nocov", "adaptive")
Runs = dict[int, list[dict]]  # budget -> one result dict per (matrix, seed)
Mat = tuple[NDArray[np.float64], NDArray[np.float64] | None]  # (0/1 matrix, covariates)
#: Posterior draws per fit (``--draws``): the study's default (the Gibbs chain runs 300 +
#: 2 × draws sweeps; fewer draws are a shorter chain and a noisier mean over them).
DRAWS = int(SpreadConfig.model_fields["draws"].default)
#: How the cells are drawn (``--cells``): "stratified" (the study's) or "uniform".
CELLS = "stratified"


def paper_bbh() -> dict[str, tuple[float, ...]]:
    """Mean W1 on BBH per method and budget, from paper_results.npz when it is there."""
    path = SHARED / "paper_results.npz"
    if not path.exists():
        return PAPER_BBH
    r = np.load(path, allow_pickle=False)
    w1 = r["BBH__dist"].mean(axis=(0, 1, 2))
    names = [str(m) for m in r["methods"]]
    return {m: tuple(float(v) for v in w1[names.index(m)]) for m in PAPER_BBH}


def w1(est_sorted: NDArray[np.float64], true: NDArray[np.float64]) -> float:
    return float(np.mean(np.abs(np.sort(est_sorted) - np.sort(true))))


def _point(acc: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return np.sort(acc), np.percentile(acc, LEVELS)


def _ours(cells: IrtCells, x: NDArray[np.float64] | None, seed: int) -> tuple:
    dist = irt_distribution(fit_irt(cells, x), seed=seed, n_draws=DRAWS)
    return dist.sorted_accuracy, dist.quantiles, dist.quantile_low, dist.quantile_high


def _adaptive(y: NDArray[np.float64], budget: int, seed: int, rounds: int = 2) -> tuple:
    n_f, n_i = y.shape
    rows, cols = stratified_cells(n_f, n_i, budget // 2, seed=seed)
    taken = np.zeros(y.shape, dtype=bool)
    taken[rows, cols] = True
    left = budget - budget // 2
    for k in range(rounds):
        dist = irt_distribution(
            fit_irt(IrtCells.of(rows, cols, y[rows, cols], n_f, n_i)), seed=seed, n_draws=DRAWS
        )
        step = left // (rounds - k)
        r, c = adaptive_cells(dist, taken, step, seed=seed + k)
        taken[r, c] = True
        rows, cols, left = np.concatenate([rows, r]), np.concatenate([cols, c]), left - step
    return _ours(IrtCells.of(rows, cols, y[rows, cols], n_f, n_i), None, seed)


def _cells(n_f: int, n_i: int, budget: int, seed: int) -> tuple:
    """The cells every method gets: the study's stratified cells, or with ``--cells
    uniform`` a uniform draw without replacement (some formats get none, some several), as
    a caller choosing its own cells might draw them."""
    if CELLS == "uniform":
        flat = np.random.default_rng([seed, 99]).choice(n_f * n_i, budget, replace=False)
        return np.divmod(flat, n_i)
    return stratified_cells(n_f, n_i, budget, seed=seed)


def run_one(
    y: NDArray[np.float64],
    x: NDArray[np.float64] | None,
    budget: int,
    seed: int,
    methods: tuple[str, ...] = METHODS,
) -> dict:
    """Every method in ``methods`` on one stratified sample of ``budget`` cells of ``y``
    (``x``: the formats' covariates, or None). The covariate methods (PE-discrete and its
    code variants, steadyeval-nocov) are skipped when ``x`` is None, the adaptive sampler
    unless ``seed`` is 0. Returns, per method run, its W1, quantile error and (steadyeval's
    estimators) interval coverage and width."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; known: {METHODS}")
    n_f, n_i = y.shape
    rows, cols = _cells(n_f, n_i, budget, seed)
    obs = y[rows, cols]
    cells = IrtCells.of(rows, cols, obs, n_f, n_i)
    out = {}
    if "avg" in methods:
        out["avg"] = _point(plain_average(rows, obs, n_f))
    if "PE-Rasch" in methods:
        out["PE-Rasch"] = _point(prompteval(rows, cols, obs, y.shape))
    if "PE-discrete" in methods and x is not None:
        out["PE-discrete"] = _point(prompteval(rows, cols, obs, y.shape, x))
    for m, (estimate, needs_x) in CODE.items():
        if m in methods and (x is not None or not needs_x):
            out[m] = _point(estimate(rows, cols, obs, y.shape, x))
    if "steadyeval" in methods:
        out["steadyeval"] = _ours(cells, x, seed)
    if "steadyeval-nocov" in methods and x is not None:  # real matrices come without covariates
        out["steadyeval-nocov"] = _ours(cells, None, seed)
    if "adaptive" in methods and seed == 0:  # one seed per matrix (its own cells)
        out["adaptive"] = _adaptive(y, budget, seed)
    true = y.mean(axis=1)
    tq = np.percentile(true, LEVELS)
    res = {}
    for m, v in out.items():
        row = {"w1": w1(v[0], true), "qerr": float(np.mean(np.abs(v[1] - tq)))}
        if len(v) == 4:
            row["covered"] = ((v[2] <= tq) & (tq <= v[3])).tolist()
            row["width"] = float(np.mean(v[3] - v[2]))
        res[m] = row
    return res


def run_matrices(
    mats: Sequence[Mat],
    budgets: Sequence[int],
    seeds: int,
    jobs: int = 1,
    methods: tuple[str, ...] = METHODS,
) -> Runs:
    """``run_one`` on every matrix × seed (0 .. seeds-1) × budget; ``mats`` are (0/1 matrix,
    covariates or None) pairs from any generator. Returns budget → one result dict per
    (matrix, seed), matrices outer. ``jobs`` > 1 runs them in that many processes."""
    out: Runs = {}
    pool = Pool(jobs) if jobs > 1 else None
    try:
        for b in budgets:
            tasks = [(y, x, b, s, methods) for y, x in mats for s in range(seeds)]
            out[b] = pool.starmap(run_one, tasks) if pool else [run_one(*t) for t in tasks]
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return out


def matrices(n: int) -> list[Mat]:
    sizes = np.random.default_rng(2024).integers(136, 190, n)
    out: list[Mat] = []
    for k in range(n):
        m = generate(1000 + k, int(sizes[k]))
        out.append((m.y, m.covariates))
    return out


def family_matrices(family: str, n: int, shape: tuple[int, int] | None = None) -> list[Mat]:
    """Matrices 0 .. n-1 of a family of bench/spread_families.py (of ``shape``, formats ×
    items, when given)."""
    return [(m.y, m.covariates) for m in (family_matrix(family, k, shape) for k in range(n))]


def families_table(per_family: dict[str, Runs]) -> bool | None:
    """One line per family and budget: steadyeval's W1, the best PromptEval's (the variant of
    lowest W1 on that family and budget: an oracle choice, since a user cannot tell which
    variant suits their matrix), their ratio, the 90% intervals' coverage, and the ratio to
    the one PromptEval variant of lowest mean W1 over every family and budget run (one variant
    for all families, as a user would run it, though picked with the truth of all of them);
    then issue 41's verdict on the ``report`` families: ratio to the best <= 1.0 on every one
    at every budget (<= 0.8 on at least half of them) and coverage within 85-95%. Returns
    whether it holds; None when no ``report`` family was run (no verdict)."""
    cells = [(fam, b, runs) for fam, results in per_family.items() for b, runs in results.items()]
    means = [{m: v for m, v in mean_w1(runs).items() if m.startswith("PE-")} for *_, runs in cells]
    common = set.intersection(*(set(m) for m in means))
    fixed = min(common, key=lambda m: float(np.mean([w[m] for w in means])))
    print(
        f"{'family':15} {'role':7} {'budget':>6} {'ours W1':>8} {'best PE':>8} "
        f"{'(which)':26} {'ratio':>6} {'cover90':>8} {'vs one PE':>9}"
    )
    ok, ratios = True, {}
    for (fam, b, runs), pe in zip(cells, means, strict=True):
        best, best_w1 = best_prompteval(runs)
        ours = mean_w1(runs)["steadyeval"]
        cov = float(np.mean([c for r in runs for c in r["steadyeval"]["covered"]]))
        ratio = ours / best_w1
        print(
            f"{fam:15} {role(fam):7} {b:>6} {ours:8.4f} {best_w1:8.4f} {best:26} "
            f"{ratio:6.3f} {cov:8.3f} {ours / pe[fixed]:9.3f}"
        )
        if role(fam) == "report":
            ratios.setdefault(fam, []).append(ratio)
            ok &= ratio <= 1.0 and 0.85 <= cov <= 0.95
    print(f"one PE: {fixed}, the one PromptEval variant of lowest mean W1 over all of them")
    if not ratios:
        return None
    n_strong = sum(max(r) <= 0.8 for r in ratios.values())
    print(f"report families: {len(ratios)}; ratio <= 0.8 at every budget on {n_strong}")
    return ok and 2 * n_strong >= len(ratios)


def real_matrices(folder: Path) -> list[Mat]:
    out: list[Mat] = []
    for f in sorted(folder.glob("*.npz")):
        z = np.load(f, allow_pickle=False)
        out += [(z[k].astype(np.float64), None) for k in z.files if "__m" in k]
    return out


def _paper(paper: dict[str, tuple[float, ...]], m: str, b: int) -> float | None:
    """The paper's BBH W1 of method ``m`` (a "(code)" variant: its namesake's) at budget b."""
    vals = paper.get(m.removesuffix(" (code)"))
    return vals[BUDGETS.index(b)] if vals is not None and b in BUDGETS else None


def mean_w1(runs: list[dict]) -> dict[str, float]:
    """Mean W1 per method over the runs that have it, in METHODS order."""
    return {
        m: float(np.mean([r[m]["w1"] for r in runs if m in r]))
        for m in METHODS
        if any(m in r for r in runs)
    }


def best_prompteval(runs: list[dict]) -> tuple[str, float]:
    """The PromptEval variant (a ``PE-`` method: paper reading or code) of lowest mean W1."""
    mean = {m: v for m, v in mean_w1(runs).items() if m.startswith("PE-")}
    if not mean:
        raise ValueError("no PromptEval method was run")
    best = min(mean, key=mean.__getitem__)
    return best, mean[best]


def table(results: Runs, paper: dict[str, tuple[float, ...]], verdict: bool = True) -> bool:
    """Print, per budget, each method's means and (``verdict``) the targets; returns whether
    every target was met (True when ``verdict`` is off)."""
    ok = True
    head = f"{'budget':>6} {'method':25} {'W1':>7} {'q-MAE':>7} {'cover90':>8} {'width90':>8}"
    for b, runs in results.items():
        print(f"{head} {'paper W1':>9}")
        for m, w in mean_w1(runs).items():
            q = np.mean([r[m]["qerr"] for r in runs if m in r])
            cov = [c for r in runs if m in r for c in r[m].get("covered", [])]
            cv = f"{np.mean(cov):.3f}" if cov else "-"
            wd = [r[m]["width"] for r in runs if m in r and "width" in r[m]]
            wv = f"{np.mean(wd):.3f}" if wd else "-"
            pv = _paper(paper, m, b)
            pp = f"{pv:.3f}" if pv is not None else ""
            print(f"{b:>6} {m:25} {w:7.4f} {q:7.4f} {cv:>8} {wv:>8} {pp:>9}")
        if verdict:
            ok &= _verdicts(b, runs, paper)
        elif "steadyeval" in runs[0]:
            best, best_w1 = best_prompteval(runs)
            ratio = mean_w1(runs)["steadyeval"] / best_w1
            print(f"       steadyeval / best PromptEval ({best}) = {ratio:.3f}")
    return ok


def _verdicts(b: int, runs: list[dict], paper: dict[str, tuple[float, ...]]) -> bool:
    mean = mean_w1(runs)
    valid = all(
        m in mean and (pv := _paper(paper, m, b)) is not None and abs(mean[m] / pv - 1) <= 0.35
        for m in ("avg", "PE-Rasch")
    )
    best, best_w1 = best_prompteval(runs)
    ours = mean["steadyeval"]  # the study's default: Gibbs, covariates where there are some
    limit = 0.8 if b <= 400 else 1.0
    cov = [c for r in runs for c in r["steadyeval"]["covered"]]  # the study's default
    cov_ok = 0.85 <= np.mean(cov) <= 0.95
    print(
        f"       generator valid (avg, PE-Rasch within ±35% of paper): {valid}; "
        f"steadyeval / best PromptEval ({best}) = {ours / best_w1:.3f} (target <= {limit}); "
        f"coverage {np.mean(cov):.3f} of {len(cov)} (target 0.85-0.95): {cov_ok}"
    )
    return valid and ours <= limit * best_w1 and cov_ok


def run_families(args: argparse.Namespace, methods: tuple[str, ...]) -> bool:
    """The ``--families`` run: every family's matrices at every budget, then the table."""
    names = {
        "all": list(FAMILIES),
        "choose": [f for f in FAMILIES if role(f) == "choose"],
        "report": [f for f in FAMILIES if role(f) == "report"],
    }.get(args.families, args.families.split(","))
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    n = args.matrices or 8
    budgets = args.budgets or [200, 400]
    methods = tuple(m for m in methods if m not in EXTRAS)
    per_family = {}
    for fam in names:
        print(f"{fam} ({role(fam)}): {describe(fam)}", flush=True)
        per_family[fam] = run_matrices(
            family_matrices(fam, n, args.shape), budgets, args.seeds, args.jobs, methods
        )
        table(per_family[fam], {}, verdict=False)
    ok = families_table(per_family)
    if ok is None:
        print("no report family was run: no verdict on issue 41's targets")
        return True
    print("all targets met" if ok else "NOT all targets met")
    return ok


def _shape(text: str) -> tuple[int, int]:
    try:
        n, m = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FORMATSxITEMS such as 400x60; got {text!r}"
        ) from None
    if n < 2 or m < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2 formats and 2 items; got {text!r}")
    return n, m


def main() -> None:
    global DRAWS, CELLS  # set from --draws, --cells; read by the workers (forked after)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--matrices", type=int, default=None, help="default 20 (--families: 8 per family)"
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument(
        "--budgets",
        type=int,
        nargs="+",
        default=None,
        help="default 200 400 800 1600 (--families: 200 400)",
    )
    ap.add_argument(
        "--draws",
        type=int,
        default=DRAWS,
        help=f"posterior draws per fit (default {DRAWS}, the study's)",
    )
    ap.add_argument("--real", type=Path, default=None, help="folder of convert_ys.py .npz files")
    ap.add_argument(
        "--default-only",
        action="store_true",
        help="skip steadyeval without covariates and the adaptive sampler (about 2.5x faster)",
    )
    ap.add_argument(
        "--families",
        default=None,
        help="run bench/spread_families.py instead: 'report', 'choose', 'all' or names, "
        "comma-separated (--matrices per family, default 8 there; budgets 200 400)",
    )
    ap.add_argument(
        "--shape",
        type=_shape,
        default=None,
        metavar="FORMATSxITEMS",
        help="with --families: every matrix of this shape (e.g. 400x60) instead of the "
        "families' 100-200 formats × 60-150 items",
    )
    ap.add_argument(
        "--cells",
        choices=("stratified", "uniform"),
        default="stratified",
        help="how every method's cells are drawn: the study's stratified design (default), "
        "or uniformly at random (some formats get none)",
    )
    args = ap.parse_args()
    if args.shape is not None and args.families is None:
        ap.error("--shape goes with --families")
    DRAWS, CELLS = args.draws, args.cells
    methods = tuple(m for m in METHODS if not (args.default_only and m in EXTRAS))
    if args.families is not None:
        sys.exit(0 if run_families(args, methods) else 1)
    mats = matrices(args.matrices or 20)
    budgets = args.budgets or list(BUDGETS)
    sizes = [y.shape[0] for y, _ in mats]
    print(
        f"{len(mats)} generated matrices × {args.seeds} seeds, 100 items, "
        f"{min(sizes)}-{max(sizes)} formats; adaptive: seed 0 of each matrix",
        flush=True,
    )
    paper = paper_bbh()
    ok = True
    for b in budgets:  # one budget at a time, so each table prints as it is done
        ok &= table(run_matrices(mats, [b], args.seeds, args.jobs, methods), paper)
        sys.stdout.flush()
    if args.real is not None:
        real = real_matrices(args.real)
        print(f"convert_ys.py matrices from {args.real}: {len(real)} (not in the verdict)")
        table(run_matrices(real, budgets, args.seeds, args.jobs, methods), paper, False)
    print("all targets met" if ok else "NOT all targets met")


if __name__ == "__main__":
    main()
