"""How much the spread estimator's prior choices matter, and whether a benchmark can tell them
apart (issue 41).

    python bench/spread_priors.py base exp1 usd --matrices 20-31      # ~90 s per variant
    python bench/spread_priors.py base exp1 --matrices 32-43          # a second, disjoint set
    python bench/spread_priors.py --identify --matrices 20-31         # what 200 cells can tell

Each *variant* replaces one or more of the Gibbs sampler's prior constants
(``steadyeval.stats._irt_gibbs``) for the run, then fits the study's default estimator on the
cells bench/spread_bench.py would draw, on the ``choose`` families of
bench/spread_families.py only (never the ``report`` ones) and matrices numbered apart from the
family table's 0-7. The PromptEval variants are fitted once per (family, matrix, seed, budget)
and kept in a cache file (``--cache``) that later variants reuse. Variants, joined with ``+``:

- ``base``: the constants as they are (an exponential prior on the formats' total s.d.
  whose mean is 1 logit × the cells per format);
- ``cpfA``: that prior with mean A × the cells per format; ``cpsqA``: A × its square;
- ``expS``: an exponential prior with mean S logits whatever the cells per format;
- ``fixS``: the formats' total s.d. held at about S logits (log-normal, s.d. 5%): a width
  chosen with the truth, to see how far the width alone can take the estimator;
- ``hcS``: a half-Cauchy prior with scale S on it; ``usd``: a uniform prior on it;
- ``shA_B``: Beta(A, B) on the covariates' share of the format variance;
- ``bsA_B``: Beta(A, B) on the broken formats' share.

``--design pairs`` gives every method the same cells drawn another way: two cells on each of
budget / 2 formats (the others none), so that the formats' spread is seen in pairs.
``--groups K`` gives steadyeval alone K cells on each of budget / K formats (``group_cells``)
and compares it with PromptEval on the stratified cells it samples itself (each method
with its own design; the stratified cache is reused).

``--identify`` prints, per matrix at the first budget, the two things the cells say about
how much formats differ: the covariance of two cells of one format on different items (an
unbiased estimate of the per-format accuracy variance, printed as a signed s.d.) next to the
true s.d., and the s.d. over formats of the covariate part of PromptEval's fit
(PE-discrete, bench/spread_baseline.py).
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections.abc import Callable
from multiprocessing import Pool
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from scipy.special import expit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spread_bench  # noqa: E402
from spread_baseline import _design  # noqa: E402
from spread_families import FAMILIES, role  # noqa: E402
from spread_families import generate as family_matrix  # noqa: E402

from steadyeval.stats import _irt_gibbs  # noqa: E402
from steadyeval.studies.spread._irt_design import stratified_cells  # noqa: E402

PROMPTEVAL = tuple(m for m in spread_bench.METHODS if m.startswith("PE-"))
Key = tuple[str, int, int, int]  # (family, matrix, seed, budget)


#: The sampler's constants as they are, restored before each variant is applied (a worker
#: process runs several variants in turn).
_DEFAULTS = {
    name: getattr(_irt_gibbs, name)
    for name in ("_log_format_var", "_FORMAT_SD_PER_CELL", "_SHARE", "_BROKEN_SHARE")
}


def _sd_prior(log_density: Callable[[NDArray[np.float64]], NDArray[np.float64]]) -> Callable:
    """A prior on the formats' total variance V given as a log density of its s.d. (with the
    Jacobian of V = s.d.²), in place of the sampler's (whose mean follows the cells per
    format: this one does not)."""
    return lambda var, _mean: np.asarray(log_density(np.sqrt(var)) - np.log(np.sqrt(var)))


def apply(variant: str) -> None:
    """Set the sampler's constants for ``variant`` (see the module docstring)."""
    for name, value in _DEFAULTS.items():
        setattr(_irt_gibbs, name, value)
    for part in variant.split("+"):
        if part == "base":
            continue
        if part.startswith("cpf"):
            _irt_gibbs._FORMAT_SD_PER_CELL = float(part[3:])
        elif part.startswith("cpsq"):  # mean A × (cells per format)²

            def log_var(var: NDArray[np.float64], mean: float, a: float = float(part[4:])) -> Any:
                per_row = mean / _DEFAULTS["_FORMAT_SD_PER_CELL"]
                return _DEFAULTS["_log_format_var"](var, a * per_row**2)

            _irt_gibbs._log_format_var = log_var
        elif part == "usd":
            _irt_gibbs._log_format_var = _sd_prior(np.zeros_like)
        elif part.startswith("exp"):
            mean = float(part[3:])
            _irt_gibbs._log_format_var = _sd_prior(lambda sd, m=mean: -sd / m)
        elif part.startswith("fix"):  # the width held at S: no prior could do better
            s = float(part[3:])
            if not 0 < s < np.inf:
                raise ValueError(f"{part!r}: S must be a positive number of logits")
            _irt_gibbs._log_format_var = _sd_prior(
                lambda sd, s=s: -0.5 * (np.log(sd / s) / 0.05) ** 2
            )
        elif part.startswith("hc"):
            s = float(part[2:])
            _irt_gibbs._log_format_var = _sd_prior(lambda sd, s=s: -np.log1p((sd / s) ** 2))
        elif part.startswith(("sh", "bs")):
            a, b = map(float, part[2:].split("_"))
            setattr(_irt_gibbs, "_SHARE" if part.startswith("sh") else "_BROKEN_SHARE", (a, b))
        else:
            raise SystemExit(f"unknown variant part {part!r} (see --help)")


def check_variants(variants: list[str]) -> None:
    """Refuse an unknown or malformed variant here, before any work: applied in a worker, its
    error killed the worker and the pool waited for it forever."""
    for variant in variants:
        try:
            apply(variant)
        except ValueError as exc:
            raise SystemExit(f"variant {variant!r}: {exc} (see --help)") from None
    apply("base")


def matrices(text: str) -> range:
    """``--matrices FIRST-LAST`` as the range of matrix numbers (FIRST <= LAST)."""
    first, dash, last = text.partition("-")
    if not (dash and first.isdigit() and last.isdigit() and int(first) <= int(last)):
        raise SystemExit(f"--matrices {text!r}: expected FIRST-LAST, e.g. 20-31 (FIRST <= LAST)")
    return range(int(first), int(last) + 1)


def _prompteval(key: Key) -> tuple[Key, dict[str, float]]:
    fam, k, seed, budget = key
    m = family_matrix(fam, k)
    res = spread_bench.run_one(m.y, m.covariates, budget, seed, PROMPTEVAL)
    return key, {name: r["w1"] for name, r in res.items()}


#: ``--groups K``: steadyeval's cells are K per format (0: the design every method shares).
GROUPS = 0


def _ours(variant: str, key: Key, draws: int) -> tuple[Key, dict]:
    fam, k, seed, budget = key
    m = family_matrix(fam, k)
    apply(variant)
    spread_bench.DRAWS = draws
    shared = spread_bench.stratified_cells
    if GROUPS:
        spread_bench.stratified_cells = lambda n_f, n_i, b, seed=0: group_cells(
            n_f, n_i, b, GROUPS, seed
        )
    try:
        res = spread_bench.run_one(m.y, m.covariates, budget, seed, ("steadyeval",))
    finally:
        spread_bench.stratified_cells = shared
    return key, res["steadyeval"]


def run_variant(variant: str, keys: list[Key], cache: dict, pool: Pool, draws: int) -> float:
    """Print each family's and budget's W1 ratio to the best PromptEval and coverage; returns
    the worst ratio."""
    res = dict(pool.starmap(_ours, [(variant, k, draws) for k in keys]))
    worst = 0.0
    print(f"{variant}")
    for fam, b in dict.fromkeys((k[0], k[3]) for k in keys):
        ks = [k for k in keys if k[0] == fam and k[3] == b]
        pe = {m: float(np.mean([cache[k][m] for k in ks])) for m in cache[ks[0]]}
        best = min(pe, key=pe.__getitem__)
        ours = float(np.mean([res[k]["w1"] for k in ks]))
        cover = float(np.mean([c for k in ks for c in res[k]["covered"]]))
        worst = max(worst, ours / pe[best])
        print(
            f"  {fam:8} {b:5} ours {ours:.4f}  best PE {pe[best]:.4f} ({best})  "
            f"ratio {ours / pe[best]:.3f}  cover90 {cover:.3f}"
        )
    print(f"  worst ratio {worst:.3f}", flush=True)
    return worst


def identify(family: str, k: int, budget: int) -> str:
    """One line: what ``budget`` stratified cells of matrix ``k`` say about the formats'
    spread (see the module docstring)."""
    m = family_matrix(family, k)
    y, x = m.y, m.covariates
    n_f, n_i = y.shape
    rows, cols = stratified_cells(n_f, n_i, budget, seed=0)
    obs = y[rows, cols]
    resid = obs - obs.mean()
    products = []
    for f in np.unique(rows):
        r = resid[rows == f]
        if len(r) >= 2:
            products.append((r.sum() ** 2 - r @ r) / (len(r) * (len(r) - 1)))
    cov = float(np.mean(products)) if products else float("nan")
    d = _design(rows, cols, n_f, n_i, x)
    precision = np.ones(d.shape[1])
    precision[0] = 0.0  # PE-discrete's objective: C = 1, intercept unpenalised

    def loss(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = d @ w
        value = np.sum(np.logaddexp(0.0, eta) - obs * eta) + 0.5 * np.sum(precision * w * w)
        return float(value), d.T @ (expit(eta) - obs) + precision * w

    w = minimize(loss, np.zeros(d.shape[1]), jac=True, method="L-BFGS-B").x
    part = x @ w[1 + n_f + n_i :]
    return (
        f"{family:8} matrix {k:3}: formats with 2+ cells {len(products):3}, pair-covariance "
        f"s.d. {np.sign(cov) * np.sqrt(abs(cov)):+.3f} (true accuracy s.d. "
        f"{y.mean(axis=1).std():.3f}); PE-discrete covariate part s.d. {part.std():.2f} logit"
    )


def pair_cells(
    n_f: int, n_i: int, budget: int, seed: int = 0
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """``--design pairs``: the budget as two cells on each of budget // 2 formats drawn at
    random (the others get none; an odd cell is left unspent), items in balanced random
    order (each item about equally often), a format's two items distinct. With fewer than
    budget / 2 formats every format already gets two cells: the study's stratified cells.
    Same signature as ``stratified_cells``."""
    return group_cells(n_f, n_i, budget, 2, seed)


def group_cells(
    n_f: int, n_i: int, budget: int, k: int, seed: int = 0
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """``--groups K``: K cells on each of budget // K formats drawn at random (the others
    none), items in balanced random order, distinct within a format: budget // K × K
    cells, so a budget K does not divide loses its remainder (198 of 200 at K = 3). With
    fewer formats than budget // K, fewer items than K, a budget under 2 K, or K = 1: the
    study's stratified cells."""
    if k < 2 or k > n_i or budget < 2 * k or budget // k > n_f:
        return stratified_cells(n_f, n_i, budget, seed=seed)
    rng = np.random.default_rng(seed)
    formats = rng.choice(n_f, budget // k, replace=False)
    laps = len(formats) * k // n_i + 2
    cols = np.concatenate([rng.permutation(n_i) for _ in range(laps)])[: len(formats) * k]
    groups = cols.reshape(-1, k)
    for g in groups:  # a repeated item moves to the next one not in its group
        for j in range(1, k):
            while g[j] in g[:j]:
                g[j] = (g[j] + 1) % n_i
    return np.repeat(formats, k).astype(np.intp), groups.ravel().astype(np.intp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", default=["base"])
    ap.add_argument("--families", default="choose", help="'choose' or names, comma-separated")
    ap.add_argument("--matrices", default="20-31", help="matrix numbers FIRST-LAST")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--budgets", type=int, nargs="+", default=[200, 400])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/steadyeval-spread-priors.pkl"))
    ap.add_argument("--identify", action="store_true")
    ap.add_argument(
        "--design",
        choices=("stratified", "pairs"),
        default="stratified",
        help="the cells every method sees: the study's stratified sampler (one or two cells "
        "per format at 200 cells), or two cells on each of budget/2 formats (pair_cells)",
    )
    ap.add_argument("--groups", type=int, default=0, help="steadyeval on K cells per format")
    args = ap.parse_args()
    global GROUPS
    GROUPS = args.groups  # before the pool: its workers fork with it
    if args.groups and (args.design != "stratified" or args.groups < 2 or args.groups > 50):
        raise SystemExit("--groups K: K from 2 to 50, with the stratified design for PromptEval")
    if args.design == "pairs":  # before the pool: its workers fork with it
        spread_bench.stratified_cells = pair_cells
        args.cache = args.cache.with_name(f"{args.cache.stem}-pairs{args.cache.suffix}")
    fams = (
        [f for f in FAMILIES if role(f) == "choose"]
        if args.families == "choose"
        else args.families.split(",")
    )
    reported = [f for f in fams if f not in FAMILIES or role(f) != "choose"]
    if reported:
        raise SystemExit(f"only choose families are used to choose settings; not {reported}")
    numbers = matrices(args.matrices)
    check_variants(args.variants)
    if args.identify:
        for fam in fams:
            for k in numbers:
                print(identify(fam, k, args.budgets[0]), flush=True)
        return
    keys = [
        (f, k, s, b) for f in fams for b in args.budgets for k in numbers for s in range(args.seeds)
    ]
    cache = pickle.loads(args.cache.read_bytes()) if args.cache.exists() else {}
    with Pool(args.jobs) as pool:
        cache.update(pool.map(_prompteval, [k for k in keys if k not in cache]))
        args.cache.write_bytes(pickle.dumps(cache))
        for variant in args.variants:
            run_variant(variant, keys, cache, pool, args.draws)


if __name__ == "__main__":
    main()
