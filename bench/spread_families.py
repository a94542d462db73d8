"""Families of correctness matrices (formats × items) for the spread benchmark (issue 41).

One generator can be matched by an estimator whose priors were tuned on it; these families
differ in every way the estimator's model (σ(μ + θ_format + β_item [+ x·γ]), a bulk of formats
and a broken minority) could be wrong: narrow to wide format spreads, with and without broken
formats, broken formats at chance or at zero, additive or interacting grammar effects,
format × item interactions, light- or heavy-tailed items, a guessing floor (multiple choice),
formats that differ in how sharply they separate easy from hard items, weak to strong
models, 60-150 items and 100-200 formats. Every matrix's parameters are drawn from its
family's ranges with ``numpy.random.default_rng(seed)``.

Each family has a *role*: ``choose`` families are the only ones the estimator's settings
were chosen on (bench/spread_calibrate.py); ``report`` families are only reported
(bench/spread_bench.py --family), never used to choose anything. ``bench`` is
bench/spread_matrix.py, whose scales were set so that plain averaging and PromptEval without
covariates make errors close to the paper's BBH values (PromptEval's real-data
magnitudes, paper_results.npz); it served to choose the estimator's earlier constants, so it
stays a ``choose`` family.

    python bench/spread_families.py          # each family's spread and accuracy ranges
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit
from spread_matrix import LEVELS, Matrix
from spread_matrix import generate as bench_generate

Logits = tuple[NDArray[np.float64], NDArray[np.float64]]  # (probabilities, covariates)


def _grammar(
    rng: np.random.Generator, n: int, scale: float, pairs: float = 0.0
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """A format's grammar effect: one N(0, scale²) shift per feature level, plus (``pairs``
    > 0) an N(0, pairs²) shift per level combination of three random feature pairs (effects
    that one-hot covariates cannot express). Returns (effect, one-hot covariates, features)."""
    feats = np.stack([rng.integers(0, k, n) for k in LEVELS], axis=1)
    onehot = np.concatenate([np.eye(k)[feats[:, d]] for d, k in enumerate(LEVELS)], axis=1)
    effect = sum(rng.normal(0, scale, k)[feats[:, d]] for d, k in enumerate(LEVELS))
    if pairs > 0:
        for _ in range(3):
            a, b = rng.choice(len(LEVELS), 2, replace=False)
            table = rng.normal(0, pairs, (LEVELS[a], LEVELS[b]))
            effect = effect + table[feats[:, a], feats[:, b]]
    return np.asarray(effect, dtype=np.float64), onehot, feats


def _interaction(rng: np.random.Generator, n: int, m: int, rank: int, sd: float) -> NDArray:
    """Format × item interaction of the given rank: z_format · a_item, each N(0, sd)."""
    return np.asarray(rng.normal(0, 1, (n, rank)) @ rng.normal(0, sd, (m, rank)).T / np.sqrt(rank))


def _narrow(rng: np.random.Generator, n: int, m: int) -> Logits:
    """Narrow spread, additive grammar, normal items, no broken formats."""
    effect, x, _ = _grammar(rng, n, rng.uniform(0.05, 0.25))
    fmt = effect + rng.normal(0, rng.uniform(0.05, 0.25), n)
    items = rng.normal(0, rng.uniform(1.0, 2.5), m)
    return expit(rng.uniform(-0.5, 2.0) + fmt[:, None] + items[None, :]), x


def _guess(rng: np.random.Generator, n: int, m: int) -> Logits:
    """Four-option multiple choice: a guessing floor of 1/4; moderate spread; 6% of formats
    at chance (the model cannot follow them)."""
    effect, x, _ = _grammar(rng, n, 0.4)
    fmt = effect + rng.normal(0, 0.4, n)
    items = rng.standard_t(5, m) * 1.8
    p = 0.25 + 0.75 * expit(rng.uniform(-0.5, 2.5) + fmt[:, None] + items[None, :])
    dead = rng.random(n) < 0.06
    p[dead] = 0.25
    return p, x


def _strong_narrow(rng: np.random.Generator, n: int, m: int) -> Logits:
    """A strong model (80-97% correct), narrow spread, heavy-tailed items, a weak rank-2
    format × item interaction, no broken formats."""
    effect, x, _ = _grammar(rng, n, rng.uniform(0.1, 0.3))
    fmt = effect + rng.normal(0, rng.uniform(0.1, 0.3), n)
    items = rng.standard_t(3, m) * 1.5
    inter = _interaction(rng, n, m, 2, 0.2)
    return expit(rng.uniform(2.0, 3.5) + fmt[:, None] + items[None, :] + inter), x


def _wide_hostile(rng: np.random.Generator, n: int, m: int) -> Logits:
    """Wide spread: interacting grammar effects, a rank-3 format × item interaction, very
    heavy-tailed items, 10% dead formats (half never right, half at chance)."""
    effect, x, _ = _grammar(rng, n, 0.7, pairs=0.6)
    fmt = effect + rng.normal(0, 0.8, n)
    items = rng.standard_t(2.5, m) * 2.5
    inter = _interaction(rng, n, m, 3, 0.8)
    p = expit(rng.uniform(-1.0, 2.0) + fmt[:, None] + items[None, :] + inter)
    dead = np.flatnonzero(rng.random(n) < 0.10)
    p[dead[: len(dead) // 2]] = 0.01
    p[dead[len(dead) // 2 :]] = 0.25
    return p, x


def _halved(rng: np.random.Generator, n: int, m: int) -> Logits:
    """The bench generator's structure (grammar levels, clusters, idiosyncratic shifts,
    rank-3 interaction, fragile items) with every format scale halved and no catastrophic
    formats."""
    effect, x, feats = _grammar(rng, n, 0.3)
    cluster = rng.integers(0, 8, n)
    fmt = effect + rng.normal(0, 0.5, 8)[cluster] + rng.normal(0, 0.3, n)
    z = rng.normal(0, 1.0, (8, 3))[cluster] + rng.normal(0, 0.4, (n, 3))
    items = rng.standard_t(3, m) * 2.6
    load = rng.normal(0, 0.4, (m, 3))
    fragile = rng.random(m) < 0.15
    breaks = np.isin(feats[:, 3], rng.choice(LEVELS[3], 2, replace=False))
    logit = rng.uniform(-1.2, 2.2) + fmt[:, None] + items[None, :] + z @ load.T
    return expit(logit - 1.25 * np.outer(breaks, fragile)), x


def _weak_shallow(rng: np.random.Generator, n: int, m: int) -> Logits:
    """A weak model (15-45% correct), normal items, 20% of formats broken only shallowly
    (1.5-3 logits down: they overlap the bulk)."""
    effect, x, _ = _grammar(rng, n, 0.3)
    fmt = effect + rng.normal(0, 0.3, n)
    fmt = fmt - (rng.random(n) < 0.2) * rng.uniform(1.5, 3.0, n)
    items = rng.normal(0, 1.2, m)
    return expit(rng.uniform(-1.8, -0.3) + fmt[:, None] + items[None, :]), x


def _discrimination(rng: np.random.Generator, n: int, m: int) -> Logits:
    """Formats that differ in discrimination: logit = a_format × item + θ_format with
    a_format ~ U(0.4, 1.6) (some formats blur easy and hard items together), items U-shaped
    on the probability scale (many always or never right), moderate spread, no broken."""
    effect, x, _ = _grammar(rng, n, 0.25)
    fmt = effect + rng.normal(0, 0.35, n)
    base = rng.beta(0.6, 0.6, m).clip(0.01, 0.99)
    items = np.log(base / (1 - base))
    a = rng.uniform(0.4, 1.6, n)
    return expit(rng.uniform(-0.5, 1.5) + fmt[:, None] + a[:, None] * items[None, :]), x


#: name → (role, generator of (probabilities, covariates) from (rng, formats, items); None:
#: bench/spread_matrix.py's own ``generate``). A generator's docstring describes its family.
FAMILIES: dict[str, tuple[str, Callable[[np.random.Generator, int, int], Logits] | None]] = {
    "bench": ("choose", None),
    "narrow": ("choose", _narrow),
    "guess": ("choose", _guess),
    "strong-narrow": ("report", _strong_narrow),
    "wide-hostile": ("report", _wide_hostile),
    "halved": ("report", _halved),
    "weak-shallow": ("report", _weak_shallow),
    "discrimination": ("report", _discrimination),
}


def role(family: str) -> str:
    return FAMILIES[family][0]


def describe(family: str) -> str:
    make = FAMILIES[family][1]
    if make is None:
        return "bench/spread_matrix.py (BBH-calibrated: wide, 12% catastrophic formats)"
    doc = make.__doc__ or ""
    return " ".join(doc.split())


def generate(family: str, seed: int, shape: tuple[int, int] | None = None) -> Matrix:
    """One seeded matrix of a family: 100-200 formats (``bench``: 136-189 and 100 items, as
    bench/spread_matrix.py), 60-150 items, y ~ Bernoulli(p); ``shape`` (formats, items)
    instead, for shapes the families' table never takes."""
    if family not in FAMILIES:
        raise KeyError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    rng = np.random.default_rng([seed, sorted(FAMILIES).index(family), *(shape or ())])
    make = FAMILIES[family][1]
    if make is None:
        if shape is not None:
            return bench_generate(seed, *shape)
        return bench_generate(seed, int(rng.integers(136, 190)))
    n, m = shape or (int(rng.integers(100, 201)), int(rng.integers(60, 151)))
    p, x = make(rng, n, m)
    y = (rng.random(p.shape) < p).astype(np.float64)
    return Matrix(y=y, covariates=x, default=0)


def main() -> None:
    for name, (r, _) in FAMILIES.items():
        spreads, means, q = [], [], []
        for seed in range(8):
            y = generate(name, seed).y
            acc = y.mean(axis=1)
            spreads.append(acc.max() - acc.min())
            q.append(np.percentile(acc, 95) - np.percentile(acc, 5))
            means.append(acc.mean())
        print(
            f"{name:15} {r:7} best-worst {min(spreads):.2f}-{max(spreads):.2f}  "
            f"q95-q5 {min(q):.2f}-{max(q):.2f}  mean {min(means):.2f}-{max(means):.2f}"
        )
        print(f"{'':24}{describe(name)}")


if __name__ == "__main__":
    main()
