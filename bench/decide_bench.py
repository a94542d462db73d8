"""Sequential "which model is better" decisions on simulated model pairs (issue 44).

Each pair is two correctness-probability matrices (formats × items) that share format and
item effects and differ by a model × format and a model × item interaction (strong enough
that the better model loses on some formats) and an intercept. The truth is
Δ = mean(p_A) - mean(p_B) over all cells; a *null* pair has Δ = 0 exactly (B's intercept
is found by root-finding). Cells are drawn one at a time (format uniform; item uniform or
by ``stats.importance_allocation``), both models are scored on the cell (Bernoulli draws
from p_A, p_B) and ``stats.sequential_sign`` is checked after every batch of 10 cells (and,
separately, after every cell). The procedure stops when it decides or at the budget N.

Reported, per family: under the null, the false-decision rate with its 95% Clopper-Pearson
upper end, the rate of "decided by cell t" at several t, and the same for a naive fixed-
sample z-test repeated after every batch (invalid under monitoring). Where Δ ≠ 0: correct
and wrong-sign decisions, mean cells spent, against (a) the fixed budget N and (b) n*, the
one fixed sample size at which a fixed-sample two-sided z-test at the same level reaches,
on average over the bin's pairs (normal approximation), the sequential procedure's rate of
correct decisions.

Families with role ``choose`` were the only ones used to choose anything (the floor ε of
the adaptive allocation, the batch size, the bet's truncation and prior); the ``report``
families are only reported.

    python bench/decide_bench.py --quick                # smoke run, seconds
    python bench/decide_bench.py --jobs 2               # the README's table
    python bench/decide_bench.py --tune                 # ε on the choose families
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing import Pool
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import optimize
from scipy import stats as sps
from scipy.special import expit

from steadyeval import stats

Probs = Callable[[float], tuple[NDArray[np.float64], NDArray[np.float64]]]
ALPHA = 0.05
BATCH = 10
FLOOR = 0.2
LOOKS = (100, 250, 500, 1000, 2000, 5000)
BINS = ((0.0, 0.01), (0.01, 0.03), (0.03, 0.06), (0.06, 1.0))


def _effects(
    rng: np.random.Generator,
    n: int,
    m: int,
    *,
    fmt_sd: float,
    items: NDArray[np.float64],
    model_fmt: float,
    model_item: float,
    rank: int = 0,
    inter: float = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Logits of A and B before B's intercept shift: shared format, item and format × item
    effects, plus each model's own format and item effects."""
    shared = rng.normal(0, fmt_sd, n)[:, None] + items[None, :]
    if rank:
        shared = shared + rng.normal(0, 1, (n, rank)) @ rng.normal(0, inter, (m, rank)).T
    own = [
        rng.normal(0, model_fmt, n)[:, None] + rng.normal(0, model_item, m)[None, :]
        for _ in range(2)
    ]
    return shared + own[0], shared + own[1]


def _mild(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Narrow format spread, normal items, small model × format / × item interactions,
    mid-strength models, nothing broken."""
    la, lb = _effects(
        rng,
        n,
        m,
        fmt_sd=rng.uniform(0.1, 0.3),
        items=rng.normal(0, rng.uniform(1, 2), m),
        model_fmt=0.25,
        model_item=0.25,
    )
    base = rng.uniform(-0.5, 1.5)
    return lambda s: (expit(base + la), expit(base + s + lb))


def _flip_heavy(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Wide format spread and a strong model × format interaction (the better model loses
    on many formats), t5 items, a rank-2 format × item interaction."""
    la, lb = _effects(
        rng,
        n,
        m,
        fmt_sd=0.8,
        items=rng.standard_t(5, m) * 1.5,
        model_fmt=0.9,
        model_item=0.4,
        rank=2,
        inter=0.5,
    )
    base = rng.uniform(-1.0, 1.5)
    return lambda s: (expit(base + la), expit(base + s + lb))


def _strong_saturated(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Strong models (85-97% correct), heavy-tailed items (t3): most items right for both,
    disagreement concentrated on few items; narrow formats, moderate interactions."""
    la, lb = _effects(
        rng,
        n,
        m,
        fmt_sd=0.2,
        items=rng.standard_t(3, m) * 1.8,
        model_fmt=0.4,
        model_item=0.6,
    )
    base = rng.uniform(2.0, 3.5)
    return lambda s: (expit(base + la), expit(base + s + lb))


def _wide_broken(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Wide spread, rank-3 format × item interaction, very heavy-tailed items (t2.5);
    8% of formats broken for both models (never right or at chance) and 5% broken for one
    model only (a format that flips the ranking outright)."""
    la, lb = _effects(
        rng,
        n,
        m,
        fmt_sd=1.0,
        items=rng.standard_t(2.5, m) * 2.0,
        model_fmt=0.6,
        model_item=0.5,
        rank=3,
        inter=0.7,
    )
    base = rng.uniform(-1.0, 2.0)
    both = np.flatnonzero(rng.random(n) < 0.08)
    only = rng.random(n) < 0.05
    only_a = only & (rng.random(n) < 0.5)
    only_b = only & ~only_a

    def probs(s: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        pa, pb = expit(base + la), expit(base + s + lb)
        for p, own in ((pa, only_a), (pb, only_b)):
            p[both[: len(both) // 2]] = 0.01
            p[both[len(both) // 2 :]] = 0.25
            p[own] = 0.02
        return pa, pb

    return probs


def _weak_guess(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Four-option multiple choice (guessing floor 1/4), weak models (30-55% correct),
    a strong model × item interaction (models know different items), moderate spread."""
    la, lb = _effects(
        rng,
        n,
        m,
        fmt_sd=0.5,
        items=rng.normal(0, 1.5, m),
        model_fmt=0.5,
        model_item=0.9,
    )
    base = rng.uniform(-1.5, 0.0)
    return lambda s: (0.25 + 0.75 * expit(base + la), 0.25 + 0.75 * expit(base + s + lb))


def _discrimination(rng: np.random.Generator, n: int, m: int) -> Probs:
    """Formats differ in discrimination (a_format ~ U(0.4, 1.6) scales the item effects),
    U-shaped items (many always / never right), model × format interaction 0.6."""
    base_p = rng.beta(0.6, 0.6, m).clip(0.01, 0.99)
    a = rng.uniform(0.4, 1.6, n)
    items = np.log(base_p / (1 - base_p))
    fmt = rng.normal(0, 0.4, n)
    la, lb = (
        fmt[:, None]
        + a[:, None] * items[None, :]
        + rng.normal(0, 0.6, n)[:, None]
        + rng.normal(0, 0.3, m)[None, :]
        for _ in range(2)
    )
    base = rng.uniform(-0.5, 1.0)
    return lambda s: (expit(base + la), expit(base + s + lb))


#: name → (role, generator). ``choose``: the only families anything was tuned on.
FAMILIES: dict[str, tuple[str, Callable[[np.random.Generator, int, int], Probs]]] = {
    "mild": ("choose", _mild),
    "flip-heavy": ("choose", _flip_heavy),
    "strong-saturated": ("report", _strong_saturated),
    "wide-broken": ("report", _wide_broken),
    "weak-guess": ("report", _weak_guess),
    "discrimination": ("report", _discrimination),
}


class Pair(NamedTuple):
    pa: NDArray[np.float64]
    pb: NDArray[np.float64]
    delta: float
    variance: float  # Var(d) of one uniformly drawn cell


def make_pair(family: str, seed: int, null: bool) -> Pair:
    """One pair: 100-200 formats, 60-150 items; null: Δ = 0 exactly, else B's intercept
    shifted by ±U(0.03, 0.7) logits away from the null shift."""
    rng = np.random.default_rng([seed, list(FAMILIES).index(family), int(null)])
    n, m = int(rng.integers(100, 201)), int(rng.integers(60, 151))
    probs = FAMILIES[family][1](rng, n, m)
    target = float(probs(0.0)[0].mean())
    s0 = optimize.brentq(lambda s: probs(s)[1].mean() - target, -20.0, 20.0, xtol=1e-12)
    shift = s0 if null else s0 + rng.choice([-1.0, 1.0]) * rng.uniform(0.03, 0.7)
    pa, pb = probs(shift)
    delta = 0.0 if null else float(pa.mean() - pb.mean())
    disagree = float((pa * (1 - pb) + pb * (1 - pa)).mean())
    return Pair(pa, pb, delta, disagree - delta**2)


def flips(pair: Pair) -> float:
    """Share of formats on which the format's winner is not the overall winner (or, for a
    null pair, on which A wins)."""
    by_format = (pair.pa - pair.pb).mean(axis=1)
    sign = 1.0 if pair.delta >= 0 else -1.0
    return float(np.mean(by_format * sign < 0))


def _cells(pair: Pair, rng: np.random.Generator, f: NDArray[np.intp], i: NDArray[np.intp]):
    ya = rng.random(f.size) < pair.pa[f, i]
    yb = rng.random(f.size) < pair.pb[f, i]
    return ya.astype(np.float64) - yb.astype(np.float64)


def run_uniform(pair: Pair, horizon: int, rng: np.random.Generator):
    n, m = pair.pa.shape
    d = _cells(pair, rng, rng.integers(0, n, horizon), rng.integers(0, m, horizon))
    return d, stats.sequential_sign(d, confidence=1 - ALPHA)


def run_adaptive(pair: Pair, horizon: int, rng: np.random.Generator, floor: float):
    n, m = pair.pa.shape
    dis = np.zeros(m, dtype=np.int64)
    seen = np.zeros(m, dtype=np.int64)
    d = np.empty(horizon)
    w = np.empty(horizon)
    bound = np.empty(horizon)
    for start in range(0, horizon, BATCH):
        k = min(BATCH, horizon - start)
        alloc = stats.importance_allocation(dis, seen, floor=floor)
        i = rng.choice(m, size=k, p=alloc.probabilities)
        di = _cells(pair, rng, rng.integers(0, n, k), i)
        d[start : start + k] = di
        w[start : start + k] = alloc.weights[i]
        bound[start : start + k] = alloc.weight_bound
        np.add.at(seen, i, 1)
        np.add.at(dis, i, (di != 0).astype(np.int64))
    return d * w, stats.sequential_sign(d, w, weight_bound=bound, confidence=1 - ALPHA)


def summarise(x: NDArray[np.float64], r: stats.SignDecision, budgets: Sequence[int]) -> dict:
    """Stop indices and signs under every-cell and per-batch monitoring, the naive repeated
    z-test's first rejection, and the fixed-sample z-test at each budget."""
    ev = np.logaddexp(r.log_wealth_up, r.log_wealth_down) - math.log(2.0)
    sign = np.where(r.log_wealth_up > r.log_wealth_down, 1, -1)
    hit = ev >= math.log(1 / ALPHA)
    looks = np.arange(BATCH - 1, x.size, BATCH)
    batch_hit = looks[hit[looks]]
    t = np.arange(1, x.size + 1)
    mean = np.cumsum(x) / t
    var = np.maximum(np.cumsum(x * x) / t - mean**2, 0.0) * t / np.maximum(t - 1, 1)
    z = mean / np.sqrt(np.maximum(var, 1e-300) / t)
    crit = sps.norm.ppf(1 - ALPHA / 2)
    naive = looks[(np.abs(z[looks]) > crit) & (looks >= 2 * BATCH - 1)]
    out = {
        "cell_stop": r.stop if r.stop is not None else -1,
        "cell_sign": r.decision,
        "batch_stop": int(batch_hit[0]) if batch_hit.size else -1,
        "batch_sign": int(sign[batch_hit[0]]) if batch_hit.size else 0,
        "naive_stop": int(naive[0]) if naive.size else -1,
    }
    for b in budgets:
        out[f"fixed_{b}"] = int(np.sign(z[b - 1])) if abs(z[b - 1]) > crit else 0
    return out


def one(task: tuple[str, int, bool, int, float, bool]) -> dict:
    family, seed, null, horizon, floor, adaptive = task
    pair = make_pair(family, seed, null)
    rng = np.random.default_rng([seed, 7, int(null), int(adaptive)])
    budgets = [b for b in (2000, 5000) if b <= horizon] or [horizon]
    if adaptive:
        x, r = run_adaptive(pair, horizon, rng, floor)
    else:
        x, r = run_uniform(pair, horizon, rng)
    out = summarise(x, r, budgets)
    out.update(delta=pair.delta, variance=pair.variance, flips=flips(pair))
    return out


def cp_upper(k: int, n: int) -> float:
    return 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))


def n_star(power: float, deltas: NDArray[np.float64], variances: NDArray[np.float64]) -> float:
    """The one n at which a fixed two-sided z-test's mean power over these pairs (normal
    approximation) equals ``power``; NaN when power <= α/2."""
    if power <= ALPHA / 2:
        return math.nan
    power = min(power, 1 - 0.5 / deltas.size)
    z = sps.norm.ppf(1 - ALPHA / 2)
    snr = np.abs(deltas) / np.sqrt(variances)

    def gap(log_n: float) -> float:
        return float(sps.norm.cdf(np.exp(log_n / 2) * snr - z).mean() - power)

    if gap(math.log(1.0)) >= 0:
        return 1.0
    return float(math.exp(optimize.brentq(gap, 0.0, math.log(1e9))))


def null_rows(family: str, alloc: str, res: list[dict], budgets: Sequence[int]) -> list[str]:
    rows = []
    n = len(res)
    for b in budgets:
        cells = []
        for key in ("batch_stop", "cell_stop", "naive_stop"):
            k = sum(0 <= r[key] < b for r in res)
            cells.append(
                f"{k / n:.4f} (≤{cp_upper(k, n):.4f})" if key != "naive_stop" else f"{k / n:.3f}"
            )
        by_t = " / ".join(
            f"{sum(0 <= r['batch_stop'] < t for r in res) / n:.4f}" for t in LOOKS if t <= b
        )
        rows.append(
            f"| {family} | {FAMILIES[family][0]} | {alloc} | {b} | {n} | "
            + " | ".join(cells)
            + f" | {by_t} |"
        )
    return rows


def alt_rows(family: str, alloc: str, res: list[dict], budgets: Sequence[int]) -> list[str]:
    rows = []
    for b in budgets:
        for lo, hi in BINS:
            sel = [r for r in res if lo <= abs(r["delta"]) < hi]
            if not sel:
                continue
            truth = np.array([np.sign(r["delta"]) for r in sel])
            dec = np.array([r["batch_sign"] if 0 <= r["batch_stop"] < b else 0 for r in sel])
            spent = np.array([r["batch_stop"] + 1 if 0 <= r["batch_stop"] < b else b for r in sel])
            fixed = np.array([r[f"fixed_{b}"] for r in sel])
            correct = float(np.mean(dec == truth))
            ns = n_star(
                correct, np.array([r["delta"] for r in sel]), np.array([r["variance"] for r in sel])
            )
            rows.append(
                f"| {family} | {alloc} | {b} | {lo:.2f}-{hi:.2f} | {len(sel)} | "
                f"{correct:.3f} | {np.mean(dec == -truth):.4f} | {np.mean(fixed == truth):.3f} | "
                f"{spent.mean():.0f} | {spent.mean() / b:.2f} | "
                + (f"{ns:.0f} | {spent.mean() / ns:.2f} |" if math.isfinite(ns) else "– | – |")
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--pairs", type=int, default=2000, help="null pairs per family (and as many non-null pairs)"
    )
    ap.add_argument("--horizon", type=int, default=5000, help="largest budget N")
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--floor", type=float, default=FLOOR, help="adaptive allocation's ε")
    ap.add_argument("--no-adaptive", action="store_true", help="uniform sampling only")
    ap.add_argument("--tune", action="store_true", help="choose families, several ε")
    ap.add_argument("--quick", action="store_true", help="smoke run: 30 pairs, N = 600")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    if args.quick:  # explicit --pairs / --horizon still win
        given = " ".join(sys.argv)
        args.pairs = args.pairs if "--pairs" in given else 30
        args.horizon = args.horizon if "--horizon" in given else 600
    families = args.family or [f for f, (r, _) in FAMILIES.items() if r == "report"]
    for f in families:
        if f not in FAMILIES:
            raise SystemExit(f"unknown family {f!r}; known: {', '.join(FAMILIES)}")
    if args.tune:
        families = [f for f, (r, _) in FAMILIES.items() if r == "choose"]
    floors = [0.1, 0.2, 0.5] if args.tune else [args.floor]
    budgets = [b for b in (2000, 5000) if b <= args.horizon] or [args.horizon]
    allocs: list[tuple[str, float, bool]] = [("uniform", 1.0, False)]
    if not args.no_adaptive:
        allocs += [(f"adaptive ε={e}", e, True) for e in floors]
    started = time.perf_counter()
    null_table, alt_table, notes = [], [], []
    with Pool(args.jobs) if args.jobs > 1 else _Serial() as pool:
        for family in families:
            for name, floor, adaptive in allocs:
                res = {}
                for null in (True, False):
                    tasks = [
                        (family, s, null, args.horizon, floor, adaptive) for s in range(args.pairs)
                    ]
                    res[null] = pool.map(one, tasks, chunksize=max(1, len(tasks) // 64))
                null_table += null_rows(family, name, res[True], budgets)
                alt_table += alt_rows(family, name, res[False], budgets)
                if not adaptive:
                    notes.append(
                        f"{family}: formats won by the overall loser: null "
                        f"{np.mean([r['flips'] for r in res[True]]):.2f}, non-null "
                        f"{np.mean([r['flips'] for r in res[False]]):.2f}; |Δ| median "
                        f"{np.median([abs(r['delta']) for r in res[False]]):.3f}"
                    )
    print(
        f"α = {ALPHA}, batches of {BATCH} cells, budgets {budgets}, "
        f"{args.pairs} null + {args.pairs} non-null pairs per family and allocation\n"
    )
    print("Null pairs (Δ = 0): rate of false decisions by N (95% CP upper end)\n")
    looks = " / ".join(str(t) for t in LOOKS)
    print(
        "| family | role | allocation | N | pairs | per batch | per cell | naive z per batch "
        f"| per batch, decided by t = {looks} |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(null_table))
    print(
        "\nPairs with Δ ≠ 0 (monitored per batch): correct / wrong-sign decisions by N, "
        "fixed-N z-test's correct rate, mean cells spent, vs N and vs n*\n"
    )
    print(
        "| family | allocation | N | abs Δ | pairs | correct | wrong sign | fixed-N correct "
        "| cells | cells/N | n* | cells/n* |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(alt_table))
    print()
    print("\n".join(notes))
    print(f"\n{time.perf_counter() - started:.0f} s")


class _Serial:
    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable, tasks: list, chunksize: int = 1) -> list:
        return [fn(t) for t in tasks]


if __name__ == "__main__":
    main()
