"""Comparisons of models that hold over the formats not tried: :func:`compare_formats` fits
the crossed model of :mod:`._irt_crossed` to the observed (model, format, item) cells and
returns, from its posterior, each model's accuracy on every format, the pairwise
differences over the population of formats and the probability of each ranking."""

from __future__ import annotations

import numbers
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from ._errors import StatsInputError
from ._estimate_spread import PosteriorEstimate, _correct, _covariates, _index, read_only
from ._irt import IrtCells, _indices, check_size, fit_irt
from ._irt_crossed import crossed_draws
from ._irt_posterior import MAX_DRAW_VALUES, degenerate_cells, in_formats_and_items
from ._validate import (
    Progress,
    SeedLike,
    as_positive_int,
    check_confidence,
    check_progress,
    check_seed,
    make_rng,
    warn,
)

__all__ = ["FormatComparison", "PairOverFormats", "compare_formats"]


@dataclass(frozen=True, eq=False)
class PairOverFormats:
    """Model ``a`` against model ``b`` over the population of formats
    (:meth:`FormatComparison.pair`); every estimate is a posterior mean with its
    equal-tailed interval.

    Attributes
    ----------
    difference : PosteriorEstimate
        Expected accuracy difference a − b over the formats (the mean over formats of each
        format's difference over all items).
    p_better : PosteriorEstimate
        The share of formats on which a is more accurate than b (a tie counts half): the
        probability that a beats b on a format drawn at random from the population.
    flip_share : PosteriorEstimate
        The share of formats on which the other model wins than the one the expected
        difference favours (in each draw; a format where the two tie is no flip, and a draw
        whose expected difference is exactly 0 counts the smaller side).
    prob_positive : float
        Posterior probability that the expected difference is above 0.
    per_format : ndarray, shape (n_formats, 3)
        Each format's difference a − b: estimate, low, high.
    shared : ndarray of int, shape (n_formats,)
        Per format, the observed cells both models answered (the same format and item).
    observed : ndarray, shape (n_formats,)
        Per format, the mean of a − b on those cells (NaN where there are none).
    """

    a: int
    b: int
    difference: PosteriorEstimate
    p_better: PosteriorEstimate
    flip_share: PosteriorEstimate
    prob_positive: float
    per_format: NDArray[np.float64]
    shared: NDArray[np.int64]
    observed: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class FormatComparison:
    """Several models' accuracy over a population of formats (:func:`compare_formats`).

    Attributes
    ----------
    draws : ndarray, shape (draws, n_models, n_formats)
        Each posterior draw's accuracy of every model on every format over all items (the
        completed matrix: observed cells as observed, the others drawn from that draw).
    accuracy : ndarray, shape (n_models, 3)
        Each model's mean accuracy over the formats: estimate, low, high.
    interaction_sd : tuple of PosteriorEstimate
        The s.d. (logits) of the model × format and the model × item interactions: how far
        the models disagree on which formats, and which items, suit them.
    shape : tuple of int
        ``(n_models, n_formats, n_items)``.
    confidence : float
        Level of the intervals.
    cells : tuple of ndarray
        The observed cells: model, format, item and correct of each.
    """

    draws: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    interaction_sd: tuple[PosteriorEstimate, PosteriorEstimate]
    shape: tuple[int, int, int]
    confidence: float
    cells: tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]

    def _interval(self, values: NDArray[np.float64]) -> PosteriorEstimate:
        return _posterior_interval(values, self.confidence)

    def _observed(self, a: int, b: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Per format, the cells a and b both answered and the mean of a − b on them."""
        models, rows, cols, y = self.cells
        n_formats, n_items = self.shape[1:]
        key = rows.astype(np.int64) * n_items + cols
        of_a = dict(zip(key[models == a].tolist(), y[models == a].tolist(), strict=True))
        shared = np.zeros(n_formats, dtype=np.int64)
        total = np.zeros(n_formats)
        for k, value in zip(key[models == b].tolist(), y[models == b].tolist(), strict=True):
            if k in of_a:
                shared[k // n_items] += 1
                total[k // n_items] += of_a[k] - value
        observed = np.full(n_formats, np.nan)
        np.divide(total, shared, out=observed, where=shared > 0)
        return shared, observed

    def pair(self, a: int, b: int) -> PairOverFormats:
        """Model ``a`` against model ``b`` (indices in [0, n_models), different)."""
        k = self.shape[0]
        for name, value in (("a", a), ("b", b)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise StatsInputError(f"{name} must be a model index; got {value!r}"[:200])
            if not 0 <= value < k:
                raise StatsInputError(f"{name} must be in [0, {k}); got {value}")
        if a == b:
            raise StatsInputError(f"a and b must be different models; got {a} twice")
        diff = self.draws[:, a, :] - self.draws[:, b, :]  # (draws, formats)
        mean = diff.mean(axis=1)
        wins = (diff > 0).mean(axis=1) + 0.5 * (diff == 0).mean(axis=1)
        # formats whose winner is the other model than the expected difference's (a tie on
        # a format is no flip); with no expected winner, the smaller side
        up, down = (diff > 0).mean(axis=1), (diff < 0).mean(axis=1)
        flips = np.where(mean > 0, down, np.where(mean < 0, up, np.minimum(up, down)))
        alpha = (1 - self.confidence) / 2
        per_format = np.column_stack(
            [
                diff.mean(axis=0),
                np.quantile(diff, alpha, axis=0),
                np.quantile(diff, 1 - alpha, axis=0),
            ]
        )
        shared, observed = self._observed(a, b)
        return PairOverFormats(
            a=int(a),
            b=int(b),
            difference=self._interval(mean),
            p_better=self._interval(wins),
            flip_share=self._interval(flips),
            prob_positive=float((mean > 0).mean() + 0.5 * (mean == 0).mean()),
            per_format=per_format,
            shared=shared,
            observed=observed,
        )

    def rankings(self) -> list[tuple[tuple[int, ...], float]]:
        """Each ranking of the models by mean accuracy over the formats (best first) with
        its posterior probability, most probable first (rankings no draw gives are left
        out). Ties within a draw are broken by model index."""
        means = self.draws.mean(axis=2)  # (draws, models)
        order = np.argsort(-means, axis=1, kind="stable")
        counts = Counter(tuple(int(v) for v in row) for row in order)
        n = len(order)
        return sorted(((r, c / n) for r, c in counts.items()), key=lambda rc: (-rc[1], rc[0]))


def _shape3(shape: Any) -> tuple[int, int, int]:
    expected = "shape must be three positive integers (n_models, n_formats, n_items)"
    if isinstance(shape, (Set, Mapping)):
        raise StatsInputError(f"{expected}, in that order; got {shape!r}"[:200])
    try:
        k, n, m = shape
    except (TypeError, ValueError):
        raise StatsInputError(f"{expected}; got {shape!r}"[:200]) from None
    for value in (k, n, m):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise StatsInputError(f"{expected}; got {shape!r}"[:200])
    check_size(int(n), int(m), models=int(k), rows="formats", cols="items")
    return int(k), int(n), int(m)


def _models(models: NDArray[Any], k: int) -> NDArray[np.intp]:
    """Each cell's model index, checked as the formats' and items' are; every model needs
    a cell."""
    a = _indices(models, "models", k)
    missing = sorted(set(range(k)) - set(np.unique(a).tolist()))
    if missing:
        raise StatsInputError(
            f"model {missing[0]} has no observed cell: every model of shape[0] = {k} needs "
            "some (or leave it out of shape)"
        )
    return a


def _accuracies(
    draws: Any,
    models: NDArray[np.intp],
    cells: IrtCells,
    k: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Each draw's accuracy of every model on every format over the completed matrix:
    observed cells as observed (the mean of a repeated cell), the others Bernoulli."""
    n, m = cells.n_rows, cells.n_cols
    flat = (models.astype(np.int64) * n + cells.rows) * m + cells.cols
    key, index, count = np.unique(flat, return_inverse=True, return_counts=True)
    observed = np.zeros(k * n * m, dtype=bool)
    values = np.zeros(k * n * m)
    observed[key] = True
    values[key] = np.bincount(index, cells.y, minlength=len(key)) / count
    seen, value = observed.reshape(k, n, m), values.reshape(k, n, m)
    out = np.empty((len(draws.mu), k, n))
    for d in range(len(draws.mu)):
        eta = (
            draws.mu[d][:, None, None]
            + draws.theta[d][None, :, None]
            + draws.delta[d][:, :, None]
            + draws.beta[d][None, None, :]
            + draws.alpha[d][:, None, :]
        )
        sim = rng.random(eta.shape) < expit(eta)
        out[d] = np.where(seen, value, sim).mean(axis=2)
    return out


def compare_formats(
    models: ArrayLike,
    rows: ArrayLike,
    cols: ArrayLike,
    correct: ArrayLike,
    shape: tuple[int, int, int],
    covariates: ArrayLike | None = None,
    *,
    seed: SeedLike = 0,
    draws: int = 400,
    confidence: float = 0.9,
    labels: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> FormatComparison:
    """Compare models over a population of prompt formats from sparse (model, format,
    item) cells.

    Parameters
    ----------
    models, rows, cols : array_like of int
        Each observed cell's model in [0, n_models), format in [0, n_formats) and item in
        [0, n_items).
    correct : array_like of {0, 1} or bool
        Whether the cell's answer was correct.
    shape : tuple of int
        ``(n_models, n_formats, n_items)``: the formats are the population the comparison
        is over (a grammar's formats, or a formats file's), the items the data set.
    covariates : array_like, shape (n_formats, k), optional
        Format covariates (e.g. one-hot grammar choices), as in :func:`estimate_spread`.
    seed : int or numpy.random.Generator
        Seed of the posterior draws.
    draws : int
        Posterior draws.
    confidence : float
        Level of the equal-tailed intervals.
    labels : sequence of str, optional
        The models' names in warnings (default "model 0", "model 1", ...).
    progress : callable, optional
        Called as ``progress(done, total)`` after each of the sampler's sweeps (as
        :func:`estimate_spread`).

    Returns
    -------
    FormatComparison
        Per-draw accuracies of every model on every format; :meth:`FormatComparison.pair`
        for the difference of two models over the formats, the probability that one beats
        the other on a format drawn at random and the share of formats where the ranking
        flips; :meth:`FormatComparison.rankings` for the probability of each ranking.

    Raises
    ------
    StatsInputError
        On the input errors of :func:`estimate_spread`, a ``models`` index out of range or
        not an integer, or a model with no observed cell.

    Warns
    -----
    StatsWarning
        When the cells cannot inform the estimate (every cell correct or wrong, overall or of
        one model; one format or one item observed of several).

    Notes
    -----
    The model is P(correct) = σ(μ_model + θ_format [+ x_format·γ] + δ_model,format + β_item
    + α_model,item): :func:`estimate_spread`'s model with an intercept per model and the
    model × format (δ) and model × item (α) interactions, each N(0, σ²) with an exponential
    prior on σ (mean 1 logit × the distinct cells per model and format, or per model and
    item), drawn by the same Gibbs chain. The formats' and items' effects are shared: a
    format that is hard for one model informs the others, and cells that two models share
    are paired through them. The population of formats is the ``n_formats`` given: "a new
    format" is one drawn at random from them, formats with no cell included (their
    accuracies come from the covariates and the priors). A format's accuracy is over every
    item of the completed matrix (unseen cells' coin flips are part of the uncertainty),
    so the difference is of the accuracy each model would have on all the cells; the
    items are fixed, not a sample from a larger population.

    Assumptions: cells independent given the effects (greedy answers; a sampled answer
    repeated is two observations), the effects additive in logits beyond the two
    interactions, and, with a cell or so per (model, format), the interactions' s.d. is
    mostly the prior's: the share of formats where the ranking flips is then uncertain and
    its interval says so.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(0)
    >>> fmt, item = rng.normal(0, 1, 20), rng.normal(0, 1, 30)
    >>> models, rows, cols = np.repeat([0, 1], 150), *np.divmod(np.tile(
    ...     rng.choice(600, 150, replace=False), 2), 30)
    >>> logit = fmt[rows] + item[cols] + 0.8 * models
    >>> y = rng.random(300) < 1 / (1 + np.exp(-logit))
    >>> cmp = stats.compare_formats(models, rows, cols, y, (2, 20, 30), draws=100)
    >>> cmp.draws.shape
    (100, 2, 20)
    >>> bool(cmp.pair(1, 0).difference.estimate > 0)
    True
    """
    k, n_formats, n_items = _shape3(shape)
    y = _correct(correct)
    r, c, mod = _index(rows, "rows"), _index(cols, "cols"), _index(models, "models")
    covariates = _covariates(covariates)
    lengths = (len(mod), len(r), len(c), len(y))
    if len(set(lengths)) > 1:
        raise StatsInputError(
            "models, rows, cols and correct must have one entry per observed cell each; got "
            f"lengths {', '.join(str(v) for v in lengths)}"
        )
    draws = as_positive_int(draws, "draws")
    confidence = check_confidence(confidence)
    check_seed(seed)
    progress = check_progress(progress)
    if draws * k * (n_formats + n_items) > MAX_DRAW_VALUES:
        raise StatsInputError(
            f"draws × n_models × (n_formats + n_items) = {draws:,} × {k} × "
            f"{n_formats + n_items:,} is over the limit of {MAX_DRAW_VALUES:,} values held "
            "at once; ask for fewer draws"
        )
    cells = IrtCells.of(r, c, y, n_formats, n_items)
    mod = _models(mod, k)
    names = [f"model {m}" for m in range(k)] if labels is None else [str(v) for v in labels]
    if len(names) != k:
        raise StatsInputError(f"labels must name the {k} models of shape[0]; got {len(names)}")
    for message in degenerate_cells(cells):
        warn(in_formats_and_items(message))
    for m in range(k):
        own = y[mod == m]
        if len(own) and np.all(own == own[0]):
            word, side = ("correct", "above") if own[0] else ("wrong", "below")
            warn(
                f"{names[m]}: every one of its {len(own)} observed cells is {word}: nothing "
                f"bounds its accuracy from {side}, so its estimates sit at the end of the "
                "scale and their intervals understate the uncertainty; observe more cells"
            )
    rng = make_rng(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_irt(cells, covariates)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    post = crossed_draws(fit, mod, k, draws, rng, progress)
    acc = _accuracies(post, mod, cells, k, rng)
    alpha = (1 - confidence) / 2
    means = acc.mean(axis=2)
    accuracy = np.column_stack(
        [
            means.mean(axis=0),
            np.quantile(means, alpha, axis=0),
            np.quantile(means, 1 - alpha, axis=0),
        ]
    )

    read_only(acc, accuracy, mod)
    return FormatComparison(
        draws=acc,
        accuracy=accuracy,
        interaction_sd=(
            _posterior_interval(post.sd_format, confidence),
            _posterior_interval(post.sd_item, confidence),
        ),
        shape=(k, n_formats, n_items),
        confidence=confidence,
        cells=(mod, cells.rows, cells.cols, cells.y),
    )


def _posterior_interval(values: NDArray[np.float64], confidence: float) -> PosteriorEstimate:
    """The posterior mean of ``values`` (draws) and its equal-tailed interval."""
    alpha = (1 - confidence) / 2
    return PosteriorEstimate(
        float(values.mean()),
        float(np.quantile(values, alpha)),
        float(np.quantile(values, 1 - alpha)),
    )
