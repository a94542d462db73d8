"""The posterior of the sparse two-way model of :mod:`._irt` as a distribution of per-row
accuracies over all columns: draws (:mod:`._irt_gibbs`, or Laplace with the rows'
two-component prior of :mod:`._irt_mixture`), the completed matrix, its quantiles and
their intervals."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from ._errors import StatsInputError
from ._irt_check import SpreadDiagnostic, diagnose
from ._irt_gibbs import formats_prior_mean, gibbs_draws
from ._irt_mixture import draw_with_mixture
from ._validate import (
    Progress,
    SeedLike,
    as_positive_int,
    check_confidence,
    check_progress,
    make_rng,
    warn,
)

if TYPE_CHECKING:
    from ._irt import IrtCells, IrtFit

__all__ = [
    "MAX_DRAW_VALUES",
    "QUANTILES",
    "IrtDistribution",
    "degenerate_cells",
    "irt_distribution",
    "widen",
]

QUANTILES = (5.0, 25.0, 50.0, 75.0, 95.0)


#: Calibration of the quantiles' intervals: their half-widths (from the posterior median) are
#: multiplied by 1 + _WIDEN × min(1, _WIDEN_CELLS / cells per row). The model is additive in
#: logits and its priors are fitted, so with a few cells per row its posterior is too sure of
#: the distribution's tails (nominal 90% intervals covered 76-82% at 1-5 cells per row on
#: generated matrices, 90% at 10); the misses there come mostly from the prior's shape (the
#: catastrophic rows pulled up, the bulk too wide), which more cells per row do not remove
#: until they outweigh the prior, hence a constant factor up to _WIDEN_CELLS, then 1/cells.
#: Both were chosen on generator seeds 7000-7019 and 9000-9019 of bench/spread_matrix.py,
#: not on the benchmark's matrices (seeds 1000-1019): 5 (a round number) and the _WIDEN
#: whose 90% intervals covered closest to 90% at 200-1,600 cells on 100 items (least
#: summed distance; there: 88%, 92%, 90%, 93% of 500 intervals per budget; uncalibrated
#: 76%, 83%, 83%, 90%; 0.45, chosen before the components' gap of
#: :func:`._irt_mixture.gap` widened with the cells per row, covered 91%, 93%, 93%, 94%
#: then), by bench/spread_calibrate.py. With the broken share's prior following the cells
#: per row as well (``_irt_mixture._LOW_A``) it covers 87.6%, 94.0%, 92.8%, 93.0% there
#: (within 85-95%: not re-chosen).
_WIDEN = 0.35
_WIDEN_CELLS = 5.0


def widen(
    low: NDArray[np.float64],
    centre: NDArray[np.float64],
    high: NDArray[np.float64],
    cells_per_row: float,
    factor: float = _WIDEN,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Calibrated interval: each side's distance from ``centre`` times
    ``1 + factor × min(1, _WIDEN_CELLS / cells_per_row)``, clipped to [0, 1]
    (bench/spread_calibrate.py chooses ``factor``)."""
    k = 1.0 + factor * min(1.0, _WIDEN_CELLS / max(cells_per_row, 1e-9))
    return np.clip(centre - k * (centre - low), 0, 1), np.clip(centre + k * (high - centre), 0, 1)


@dataclass(frozen=True, eq=False)
class IrtDistribution:
    """The distribution of per-row accuracies over all columns, from posterior draws.

    Attributes
    ----------
    accuracy : ndarray, shape (n_rows,)
        Posterior mean accuracy of each row (observed cells count as observed).
    accuracy_low, accuracy_high : ndarray, shape (n_rows,)
        Its equal-tailed interval.
    sorted_accuracy : ndarray, shape (n_rows,)
        The estimated distribution: the posterior mean of the sorted accuracies (the
        accuracy of the k-th worst row), as an empirical distribution over rows.
    quantiles : ndarray, shape (len(levels),)
        Posterior mean of each quantile of the per-row accuracies; ``quantile_low`` and
        ``quantile_high`` its interval (calibrated unless ``calibrate=False``, see
        :func:`widen`); ``quantile_draws`` (draws, levels) the quantiles of each draw.
    spread : tuple of float
        Best − worst row accuracy: (estimate, low, high).
    levels : tuple of float
        The quantile levels (percent).
    effect_sd : tuple of float
        Posterior mean of the s.d. of the rows' effects (with their covariate part) and of
        the columns' effects, in logits: how far rows and columns differ, as drawn (the
        fit's ``tau_row`` and ``tau_col`` are the prior scales at the empirical-Bayes
        mode, the Gibbs chain's starting point).
    accuracy_draws : ndarray, shape (draws, n_rows)
        Each posterior draw's per-row accuracies over the completed matrix (observed cells
        as observed, the others drawn): every summary above is computed from them.
    format_sd_draws : ndarray, shape (draws,)
        Each draw's s.d. of the rows' (formats') effects, covariate part included, in
        logits (``effect_sd[0]`` is their mean).
    diagnostic : SpreadDiagnostic
        Whether to trust the distribution: is its width set by the data, and do the
        cells fit the additive model (:func:`._irt_check.diagnose`).
    """

    accuracy: NDArray[np.float64]
    accuracy_low: NDArray[np.float64]
    accuracy_high: NDArray[np.float64]
    sorted_accuracy: NDArray[np.float64]
    quantiles: NDArray[np.float64]
    quantile_low: NDArray[np.float64]
    quantile_high: NDArray[np.float64]
    quantile_draws: NDArray[np.float64]
    spread: tuple[float, float, float]
    levels: tuple[float, ...]
    confidence: float
    effect_sd: tuple[float, float]
    accuracy_draws: NDArray[np.float64]
    format_sd_draws: NDArray[np.float64]
    diagnostic: SpreadDiagnostic


#: The most values (draws × (rows + columns)) :func:`irt_distribution` draws at once.
MAX_DRAW_VALUES = 50_000_000
#: The most cells of completed matrices held at once (50 draws of a 100 × 14,000 grid, an
#: MMLU-sized study, before the limit); fewer draws per chunk on larger grids. A chunk
#: draws its coin flips in the order one chunk of all draws would, so the chunk size never
#: changes a result.
_CHUNK_CELLS = 70_000_000


def _accuracies(
    cells: IrtCells,
    mu: NDArray[np.float64],
    theta: NDArray[np.float64],
    beta: NDArray[np.float64],
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Each draw's per-row accuracies (draws, rows) over the completed matrix: observed
    cells as observed (a cell observed more than once as the mean of its observations),
    the others Bernoulli(σ(η)) of that draw."""
    n, m = cells.n_rows, cells.n_cols
    observed = np.zeros((n, m), dtype=bool)
    values = np.zeros((n, m))
    key, index, count = np.unique(cells.flat_index(), return_inverse=True, return_counts=True)
    observed.flat[key] = True
    values.flat[key] = np.bincount(index, cells.y, minlength=len(key)) / count
    n_draws = len(mu)
    chunk = max(1, min(50, _CHUNK_CELLS // (n * m)))
    acc = np.empty((n_draws, n))
    for lo in range(0, n_draws, chunk):
        hi = min(lo + chunk, n_draws)
        p = expit(mu[lo:hi, None, None] + theta[lo:hi, :, None] + beta[lo:hi, None, :])
        sim = rng.random(p.shape) < p
        acc[lo:hi] = np.where(observed, values, sim).mean(axis=2)
    return acc


def _copies(cells: IrtCells) -> list[str]:
    """A note when cells observed more than once always repeat their answer: copies of one
    answer (greedy decoding, a results file read twice) are not independent evidence, and
    the model counts each as a trial (formats then look far more different than they are)."""
    _, first, index, counts = np.unique(
        cells.flat_index(), return_index=True, return_inverse=True, return_counts=True
    )
    repeated = counts > 1
    if not repeated.any() or np.any(cells.y != cells.y[first][index]):
        return []  # no repeats, or repeats that vary (independent draws, e.g. sampling)
    return [
        f"{int(repeated.sum())} cells are observed more than once ({int(counts.max())} times "
        "at most), each always with the same answer: the model counts every copy as "
        "independent evidence, so if they are copies of one answer (greedy decoding, the "
        "same results read twice) pass each cell once"
    ]


_WORDS = {"rows": "formats", "cols": "items", "row's": "format's", "row": "format"}


def in_formats_and_items(message: str) -> str:
    """A message of the row × column model (:func:`degenerate_cells`) in the words of its
    spread use: rows are formats, columns items."""
    return re.sub(r"\b(rows|cols|row's|row)\b", lambda m: _WORDS[m.group(1)], message)


def degenerate_cells(cells: IrtCells) -> list[str]:
    """What the observed cells cannot tell (one message each; empty for ordinary cells):
    every cell correct, or every cell wrong (the intercept's prior is flat, so the level is
    bounded by the data on one side only), and one observed row or column of several (the
    others' spread is the prior's alone)."""
    out = []
    distinct = int(cells.distinct_per_row().sum())
    if np.all(cells.y == cells.y[0]):
        word, side = ("correct", "above") if cells.y[0] else ("wrong", "below")
        if distinct == cells.n_rows * cells.n_cols:
            out.append(  # nothing is estimated: the accuracies are the data's own
                f"every cell of the {cells.n_rows} × {cells.n_cols} matrix is observed and "
                f"{word}: every row's accuracy is {cells.y[0]:.0%}, with no uncertainty "
                "left to estimate (check the scoring if that is unexpected)"
            )
        else:
            seen = (
                f"{distinct}" if distinct == len(cells.y) else f"{distinct}, {len(cells.y)} answers"
            )
            out.append(
                f"every observed cell ({seen}) is {word}: nothing bounds the "
                f"accuracy from {side}, so the estimates sit at the end of the scale and "
                "their intervals understate the uncertainty; observe more cells (or check "
                "the scoring)"
            )
    if distinct < len(cells.y):
        out += _copies(cells)
    for name, index, size in (
        ("rows", cells.rows, cells.n_rows),
        ("cols", cells.cols, cells.n_cols),
    ):
        observed = len(np.unique(index))
        if size > 1 and observed == 1:
            out.append(
                f"only one of the {size} {name} has observed cells: how the others differ "
                "from it comes from the prior alone"
            )
        elif observed < min(size, _FEW):
            out.append(
                f"only {observed} of the {size} {name} have observed cells: how far the others "
                f"differ from them rests mostly on the prior (fewer than {_FEW} say little "
                "about their spread), and the intervals may miss; spread the cells over "
                f"more {name}"
            )
    return out


#: Fewer distinct rows (or columns) observed than this, of more, is warned about: their
#: effects' spread, which the unobserved ones are drawn from, is then mostly the prior's (3
#: items seen of 300, item s.d. 2 logits: every 90% interval of the quantiles missed).
_FEW = 10


def _levels(levels: tuple[float, ...]) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in levels)
    except (TypeError, ValueError):
        out = ()
    if not out or not all(0.0 <= v <= 100.0 for v in out):
        raise StatsInputError(f"levels must be percentages in [0, 100]; got {levels!r}"[:200])
    return out


def irt_distribution(
    fit: IrtFit,
    *,
    levels: tuple[float, ...] = QUANTILES,
    confidence: float = 0.9,
    n_draws: int = 400,
    sampler: str = "gibbs",
    row_prior: str = "mixture",
    calibrate: bool = True,
    seed: SeedLike = 0,
    progress: Progress | None = None,
) -> IrtDistribution:
    """Per-row accuracy distribution over all columns, its quantiles and their intervals.

    Parameters
    ----------
    fit : IrtFit
        The fitted model (:func:`fit_irt`).
    levels : tuple of float
        Quantile levels, in percent.
    confidence : float
        Level of the equal-tailed intervals.
    n_draws : int
        Posterior draws.
    sampler, row_prior : str
        ``"gibbs"`` or ``"laplace"``; with Laplace, ``"mixture"`` or ``"fit"`` (see Notes).
    calibrate : bool
        Widen the Laplace sampler's quantile intervals (:func:`widen`).
    seed : int or numpy.random.Generator
    progress : callable, optional
        Called as ``progress(done, total)`` after each of the Gibbs sampler's sweeps
        (``total``: its burn-in and thinned sweeps; about a second each at MMLU's size),
        e.g. to show how far a long estimate has come. Not called with ``sampler="laplace"``.

    Returns
    -------
    IrtDistribution

    Warns
    -----
    StatsWarning
        When the cells cannot inform the estimate: see the last paragraph of Notes.

    Notes
    -----
    ``sampler="gibbs"`` (default): full Bayes; every effect, the prior scales and the
    rows' two-component prior are drawn by Gibbs sampling from the fit's mode on
    (:mod:`._irt_gibbs`); its intervals are the posterior's own (no calibration needed: on
    generated matrices its 90% intervals of the quantiles covered 94-95%).
    ``sampler="laplace"``: the scales fixed at the fit's empirical-Bayes values, and
    ``row_prior="mixture"``: the rows' own effects (beyond the covariates) are
    drawn from their exact one-dimensional posteriors under a two-component prior fitted
    by EM (:func:`._irt_mixture.fit_row_mixture`: a bulk and a minority of broken rows far
    below it), given each draw's other parameters, the mixture refitted per group of draws
    with Bayesian-bootstrap weights of the rows (:func:`._irt_mixture.draw_with_mixture`);
    ``"fit"``: from the Laplace posterior of the fit's Student-t prior. Each draw takes
    (μ, β, covariate effects) from the Laplace posterior, the row effects as just said,
    and completes the matrix: an
    observed cell keeps its observed value, an unobserved cell is drawn as Bernoulli(σ(η))
    (the accuracy of a row is the share of the columns it gets right, so the unseen cells'
    own coin flips belong in its uncertainty). A row's accuracy is its row mean; the
    quantiles are those of the per-row accuracies (numpy's linear interpolation). Estimates
    are posterior means over draws, intervals equal-tailed posterior percentiles; with the
    Laplace sampler and ``calibrate=True`` the quantiles' intervals are then widened about
    the posterior median by a factor calibrated on generated matrices (:func:`widen`; the
    factor was chosen for 90% intervals and is applied as is at other levels). Sorting
    each draw before averaging keeps the distribution's spread (posterior means of single
    rows are shrunk toward each other; their spread would understate the true one).

    Cells that cannot inform the estimate (every cell correct, or every cell wrong; one
    observed row or column of several: :func:`degenerate_cells`) still give a result, with
    a :class:`~steadyeval.stats.StatsWarning` saying what it rests on. ``n_draws × (n_rows + n_cols)`` is
    limited to ``MAX_DRAW_VALUES``.

    ``diagnostic`` says when not to trust the result, from the same draws
    (:func:`._irt_check.diagnose`, drawing its replicated cells after everything else, so
    the estimates are those of a call without it): whether the rows' effects' s.d. is set
    by the data (its 90% interval, the cells per row) and posterior predictive checks of
    the additive model.

    Examples
    --------
    >>> from steadyeval import stats
    >>> cells = stats.IrtCells.of([0, 0, 1, 1, 2], [0, 1, 1, 2, 0], [1, 0, 1, 1, 0], 3, 4)
    >>> dist = stats.irt_distribution(stats.fit_irt(cells), n_draws=50, seed=0)
    >>> dist.accuracy.shape, dist.levels
    ((3,), (5.0, 25.0, 50.0, 75.0, 95.0))
    """
    confidence = check_confidence(confidence)
    levels = _levels(levels)
    n_draws = as_positive_int(n_draws, "n_draws")
    progress = check_progress(progress)
    rng = make_rng(seed)
    cells = fit.cells
    n, m = cells.n_rows, cells.n_cols
    if n_draws * (n + m) > MAX_DRAW_VALUES:
        raise StatsInputError(
            f"n_draws × (n_rows + n_cols) = {n_draws:,} × {n + m:,} is over the limit of "
            f"{MAX_DRAW_VALUES:,} values held at once; ask for fewer draws"
        )
    if sampler not in ("gibbs", "laplace"):
        raise StatsInputError(f"sampler must be 'gibbs' or 'laplace'; got {sampler!r}")
    if row_prior not in ("mixture", "fit"):
        raise StatsInputError(f"row_prior must be 'mixture' or 'fit'; got {row_prior!r}")
    for message in degenerate_cells(cells):
        warn(message)
    if sampler == "gibbs":
        mu, theta, beta = gibbs_draws(fit, n_draws, rng, progress)
    elif row_prior == "mixture":
        mu, theta, beta = draw_with_mixture(fit, n_draws, rng)
    else:
        mu, theta, beta = fit.draw(n_draws, rng)
    acc = _accuracies(cells, mu, theta, beta, rng)
    format_sd = theta.std(axis=1)
    alpha = (1 - confidence) / 2
    q = np.percentile(acc, levels, axis=1).T  # (draws, levels)
    spread = acc.max(axis=1) - acc.min(axis=1)
    q_low, q_high = np.quantile(q, alpha, axis=0), np.quantile(q, 1 - alpha, axis=0)
    if calibrate and sampler == "laplace":
        q_low, q_high = widen(q_low, np.median(q, axis=0), q_high, len(cells.y) / n)
    # after every other draw, so that the check leaves the estimates as they were
    prior = formats_prior_mean(cells.distinct_per_row().sum() / n) if sampler == "gibbs" else None
    diagnostic = diagnose(cells, mu, theta, beta, rng, prior)
    return IrtDistribution(
        accuracy=acc.mean(axis=0),
        accuracy_low=np.quantile(acc, alpha, axis=0),
        accuracy_high=np.quantile(acc, 1 - alpha, axis=0),
        sorted_accuracy=np.sort(acc, axis=1).mean(axis=0),
        quantiles=q.mean(axis=0),
        quantile_low=q_low,
        quantile_high=q_high,
        quantile_draws=q,
        spread=(
            float(spread.mean()),
            float(np.quantile(spread, alpha)),
            float(np.quantile(spread, 1 - alpha)),
        ),
        levels=tuple(levels),
        confidence=confidence,
        effect_sd=(float(format_sd.mean()), float(beta.std(axis=1).mean())),
        accuracy_draws=acc,
        format_sd_draws=format_sd,
        diagnostic=diagnostic,
    )
