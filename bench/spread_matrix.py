"""Seeded correctness matrices (formats × items) for the spread benchmark.

The generator is deliberately *not* the estimator's model (σ(μ + θ_format + β_item)). A
matrix is drawn as follows (all from ``numpy.random.default_rng(seed)``):

1. Formats have 6 discrete grammar features (levels 3, 4, 2, 5, 3, 2: separator, spacing,
   casing, enumeration, wrapper, option joiner); one-hot they are the covariates every
   method may use. A feature level shifts the logit by N(0, 0.6²) for every item.
2. Formats fall into 8 clusters (formats that look alike): a cluster shift N(0, 1) and a
   cluster direction in a rank-3 interaction space.
3. Idiosyncratic format shift N(0, 0.6²); 12% of formats are *catastrophic* (logit −3 to −6,
   e.g. an answer format the model cannot follow).
4. Items: difficulty from a Student-t (3 d.o.f.) × 2.6 (many items every format gets right,
   or wrong, as in BBH), a loading a_i ~ N(0, 0.8² I_3), so
   the logit gets the interaction z_format · a_item (formats of one cluster agree on which
   items they find hard).
5. 15% of items are *fragile*: formats whose enumeration feature is one of two "bad" levels
   (chosen per matrix) get −2.5 on them (items that only some formats break).
6. The model's overall level μ ~ U(−1.2, 2.2) (matrices from near chance to strong).
7. y ~ Bernoulli(σ(logit)).

On the benchmark's 20 matrices the per-format accuracy spreads (best − worst) range from 59
to 89 points (43 to 73 between the 5% and the 95% quantile) and the mean accuracy from 0.32
to 0.74; FormatSpread (Sclar et al., 2024) reports spreads of up to 76 points. The scales
above were set so that plain averaging and PromptEval without covariates (PE-Rasch) make
errors close to the paper's BBH values (the benchmark checks ±35%). They were set with
those two methods only, before steadyeval's estimator was run on the result: a first
version (difficulty × 1.8, 8% catastrophic formats at −2.5 to −5) left plain averaging's
error at 1,600 cells 38% below the paper's (items too moderate: a format's observed mean
was then less noisy than on BBH); heavier-tailed difficulties raise it, and more, deeper
catastrophic formats keep PE-Rasch's error at 800 cells in range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

LEVELS = (3, 4, 2, 5, 3, 2)
LEVEL_SD, CLUSTER_SD, IDIO_SD, BAD_SHARE = 0.6, 1.0, 0.6, 0.12


@dataclass(frozen=True)
class Matrix:
    y: NDArray[np.float64]  # (formats, items) 0/1
    covariates: NDArray[np.float64]  # (formats, k) one-hot grammar features
    default: int  # the "default" format's row (its first)


def _features(n: int, rng: np.random.Generator) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    feats = np.stack([rng.integers(0, k, n) for k in LEVELS], axis=1)
    onehot = np.concatenate([np.eye(k)[feats[:, d]] for d, k in enumerate(LEVELS)], axis=1)
    return feats, onehot


def generate(seed: int, n_formats: int, n_items: int = 100) -> Matrix:
    """One seeded matrix (see the module docstring)."""
    rng = np.random.default_rng(seed)
    feats, onehot = _features(n_formats, rng)
    level_effect = [rng.normal(0, LEVEL_SD, k) for k in LEVELS]
    fmt = sum(level_effect[d][feats[:, d]] for d in range(len(LEVELS)))
    cluster = rng.integers(0, 8, n_formats)
    fmt = fmt + rng.normal(0, CLUSTER_SD, 8)[cluster] + rng.normal(0, IDIO_SD, n_formats)
    bad = rng.random(n_formats) < BAD_SHARE
    fmt = fmt - bad * rng.uniform(3.0, 6.0, n_formats)
    centres = rng.normal(0, 1.0, (8, 3))
    z = centres[cluster] + rng.normal(0, 0.4, (n_formats, 3))
    diff = rng.standard_t(3, n_items) * 2.6
    load = rng.normal(0, 0.8, (n_items, 3))
    fragile = rng.random(n_items) < 0.15
    bad_enum = rng.choice(LEVELS[3], 2, replace=False)
    breaks = np.isin(feats[:, 3], bad_enum)
    logit = rng.uniform(-1.2, 2.2) + fmt[:, None] + diff[None, :] + z @ load.T
    logit = logit - 2.5 * np.outer(breaks, fragile)
    y = (rng.random(logit.shape) < expit(logit)).astype(np.float64)
    return Matrix(y=y, covariates=onehot, default=0)
