"""The distribution of accuracy over many prompt formats from a sparse sample of (format,
item) cells, in one call: :func:`estimate_spread` validates the cells, fits the sparse
two-way model (:func:`._irt.fit_irt`), draws its posterior (:func:`._irt_posterior.irt_distribution`)
and returns a :class:`SpreadEstimate` with the fit check (:class:`._irt_check.SpreadDiagnostic`)."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError, StatsWarning
from ._irt import IrtCells, check_size, fit_irt
from ._irt_check import SpreadDiagnostic
from ._irt_posterior import (
    MAX_DRAW_VALUES,
    IrtDistribution,
    in_formats_and_items,
    irt_distribution,
)
from ._validate import (
    Progress,
    SeedLike,
    as_positive_int,
    check_confidence,
    check_progress,
    check_seed,
)

__all__ = ["PosteriorEstimate", "SpreadEstimate", "estimate_spread"]


class PosteriorEstimate(NamedTuple):
    """A posterior mean with its equal-tailed interval: ``(estimate, low, high)``."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True, eq=False)
class SpreadEstimate:
    """The estimated distribution of per-format accuracy (:func:`estimate_spread`).

    Attributes
    ----------
    draws : ndarray, shape (draws, n_formats)
        Each posterior draw's accuracy of every format over all items (the completed
        matrix: observed cells as observed, the others drawn from that draw's model).
    accuracy : ndarray, shape (n_formats,)
        Posterior mean accuracy of each format (``draws.mean(axis=0)``).
    spread : PosteriorEstimate
        Best − worst format's accuracy: posterior mean of each draw's best − worst, and its
        equal-tailed interval at ``confidence``.
    diagnostic : SpreadDiagnostic
        When not to trust the estimate: ``prior_driven`` (the distribution's width comes
        from the prior, not the cells), ``misfit`` (the cells do not fit the additive
        model), and a ``message`` saying what to do.
    shape : tuple of int
        ``(n_formats, n_items)``.
    confidence : float
        Level of the intervals (and the default of :meth:`quantile`).
    distribution : IrtDistribution
        Everything else :func:`irt_distribution` gives: per-format intervals, the sorted
        accuracies, the 5/25/50/75/95% quantiles with their intervals, the effects' s.d.
    """

    draws: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    spread: PosteriorEstimate
    diagnostic: SpreadDiagnostic
    shape: tuple[int, int]
    confidence: float
    distribution: IrtDistribution

    def quantile(self, q: float, confidence: float | None = None) -> PosteriorEstimate:
        """The ``q``-th percentile (0-100) of the per-format accuracy distribution.

        Parameters
        ----------
        q : float
            Percentile in [0, 100] (5: the accuracy that 5% of the formats fall below).
        confidence : float, optional
            Level of the interval; default the estimate's ``confidence``.

        Returns
        -------
        PosteriorEstimate
            The posterior mean of each draw's percentile (numpy's linear interpolation
            over the formats) and its equal-tailed interval over the draws.
        """
        level = _percentile(q)
        alpha = (1 - (self.confidence if confidence is None else check_confidence(confidence))) / 2
        per_draw = np.percentile(self.draws, level, axis=1)
        return PosteriorEstimate(
            float(per_draw.mean()),
            float(np.quantile(per_draw, alpha)),
            float(np.quantile(per_draw, 1 - alpha)),
        )


def _percentile(q: Any) -> float:
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0.0 <= float(q) <= 100.0:
        raise StatsInputError(f"q must be a percentile in [0, 100] (5 for the 5th); got {q!r}")
    return float(q)


def _shape(shape: Any) -> tuple[int, int]:
    """``shape`` as (n_formats, n_items), two positive integers."""
    expected = "shape must be a pair of positive integers (n_formats, n_items)"
    if isinstance(shape, (Set, Mapping)):  # unordered: {30, 40} unpacks as (40, 30)
        raise StatsInputError(f"{expected}, in that order; got {shape!r}"[:200])
    try:
        n_formats, n_items = shape
    except (TypeError, ValueError):
        raise StatsInputError(f"{expected}; got {shape!r}"[:200]) from None
    for value in (n_formats, n_items):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise StatsInputError(f"{expected}; got {shape!r}"[:200])
    check_size(int(n_formats), int(n_items), rows="formats", cols="items")
    return int(n_formats), int(n_items)


def read_only(*arrays: NDArray[Any]) -> None:
    """Freeze a frozen result's arrays too (edited draws changed a quantile but not the
    accuracy they came from)."""
    for array in arrays:
        array.flags.writeable = False


def _unmasked(values: Any, name: str) -> Any:
    """``values`` without a numpy mask: a masked entry is refused (numpy would read the
    value under the mask as if it were there)."""
    if isinstance(values, np.ma.MaskedArray):
        if np.ma.is_masked(values):
            what = (
                "give every format's covariates"
                if name == "covariates"
                else "pass only the observed cells (leave the masked ones out of rows, cols "
                "and correct alike)"
            )
            raise StatsInputError(f"{name} has masked entries; {what}")
        return np.ma.getdata(values)
    return values


def _odd_objects(values: NDArray[Any]) -> str | None:
    """What in an object array is not a real number or boolean (text, bytes, complex
    numbers, durations, dates, None, ...: numpy would parse ``"1"`` and read a duration as
    its count), or None when every value is one."""
    for v in values.flat:
        if isinstance(v, bool | np.bool_):
            continue
        if not isinstance(v, numbers.Number) or isinstance(
            v, complex | np.complexfloating | np.timedelta64
        ):
            return f"{type(v).__name__} values"
    return None


def _covariates(covariates: ArrayLike | None) -> ArrayLike | None:
    """``covariates`` unmasked and not complex or text (numpy would drop an imaginary part,
    or parse ``"1"``); :func:`fit_irt` checks the rest."""
    if covariates is None:
        return None
    covariates = _unmasked(covariates, "covariates")
    raw = np.asarray(covariates)
    dtype = raw.dtype
    got = None
    if dtype.kind not in "biufO":
        got = {"c": "complex numbers", "U": "text", "S": "text"}.get(dtype.kind, dtype.name)
    elif dtype.kind == "O":  # a DataFrame's text columns, dates, ...
        got = _odd_objects(raw)
    if got is not None:
        raise StatsInputError(f"covariates must be real numbers; got {got}")
    return covariates


def _correct(correct: ArrayLike) -> NDArray[np.float64]:
    """``correct`` as a 1-D array of 0.0 and 1.0 (booleans allowed)."""
    expected = "correct must hold only 0 and 1 (or booleans), one per observed cell"
    correct = _unmasked(correct, "correct")
    try:
        raw = np.asarray(correct)
        kinds = {"U": "text", "S": "text", "c": "complex numbers", "m": "durations"}
        kind = kinds.get(raw.dtype.kind, None if raw.dtype.kind in "biufO" else raw.dtype.name)
        if kind is None and raw.dtype == object:
            kind = _odd_objects(raw)
        y = np.asarray(raw, dtype=np.float64) if kind is None else raw
    except (TypeError, ValueError, OverflowError):
        raise StatsInputError(f"{expected}; could not read it as numbers") from None
    if kind is not None:  # '1' or 1+1j would be read as 1
        raise StatsInputError(f"{expected}; got {kind}")
    if y.ndim != 1:
        raise StatsInputError(f"{expected}: a 1-D array; got shape {y.shape}")
    bad = np.flatnonzero((y != 0) & (y != 1))
    if len(bad):
        raise StatsInputError(f"{expected}; got {float(y[bad[0]])!r} at position {int(bad[0])}")
    return y


def _index(values: ArrayLike, name: str) -> NDArray[Any]:
    """``rows`` or ``cols`` as a 1-D array (:meth:`IrtCells.of` checks the indices)."""
    expected = f"{name} must be a 1-D array of integer indices, one per observed cell"
    values = _unmasked(values, name)
    try:
        a = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        raise StatsInputError(f"{expected}; could not read it as an array") from None
    if a.ndim != 1:
        raise StatsInputError(f"{expected}; got shape {a.shape}")
    return a


def estimate_spread(
    rows: ArrayLike,
    cols: ArrayLike,
    correct: ArrayLike,
    shape: tuple[int, int],
    covariates: ArrayLike | None = None,
    *,
    seed: SeedLike = 0,
    draws: int = 400,
    confidence: float = 0.9,
    progress: Progress | None = None,
) -> SpreadEstimate:
    """The distribution of accuracy over all formats from a sparse sample of cells.

    Parameters
    ----------
    rows : array_like of int
        The format index of each observed cell, in [0, n_formats).
    cols : array_like of int
        The item index of each observed cell, in [0, n_items).
    correct : array_like of {0, 1} or bool
        Whether the cell's answer was correct.
    shape : tuple of int
        ``(n_formats, n_items)``: every format and item, observed or not.
    covariates : array_like, shape (n_formats, k), optional
        Format covariates (e.g. one-hot grammar choices), as in :func:`fit_irt`.
    seed : int or numpy.random.Generator
        Seed of the posterior draws.
    draws : int
        Posterior draws.
    confidence : float
        Level of the equal-tailed intervals.
    progress : callable, optional
        Called as ``progress(done, total)`` after each step of the sampler (as
        :func:`irt_distribution`): an estimate at MMLU's size takes minutes.

    Returns
    -------
    SpreadEstimate
        The draws, per-format accuracies, :meth:`SpreadEstimate.quantile`, the spread and
        the fit check ``diagnostic``.

    Raises
    ------
    StatsInputError
        If ``rows``, ``cols`` and ``correct`` are not 1-D, differ in length or are empty, an
        index is out of range or not an integer, ``correct`` holds anything but 0 and 1
        (text and complex numbers too), an argument is a masked array with masked entries,
        ``shape`` is not two positive integers (or is over the estimator's limits: formats
        + covariate columns over ``MAX_ROW_EFFECTS``, 6,000, or formats + items +
        covariate columns over ``MAX_EFFECTS``, 20,000), ``draws`` is not a positive
        integer, ``confidence`` is not in (0, 1), or the covariates are not finite real
        numbers of shape (n_formats, k).

    Warns
    -----
    StatsWarning
        When the cells cannot inform the estimate (every cell correct or wrong; one format
        or one item observed of several, or fewer than 10 of more; cells observed several
        times, always with the same answer), as :func:`irt_distribution`.

    Notes
    -----
    The model is P(correct) = σ(μ + θ_format + β_item [+ x_format·γ]), fitted by
    :func:`fit_irt` and sampled by :func:`irt_distribution` (Gibbs sampling of every
    effect and prior scale; see there and ``docs/study-spread.md``). Cells are assumed
    independent given the effects and each cell is observed once (a repeated cell counts
    as two observations in the fit, and as their mean in the completed matrix). A draw's
    accuracy of a format is its mean over all items of the completed matrix, so the unseen
    cells' own coin flips are part of the uncertainty.
    Estimates are posterior means over draws; intervals are equal-tailed percentiles of
    the draws. The quantiles of :meth:`SpreadEstimate.quantile` and the spread are computed
    per draw (sorting each draw before averaging keeps the distribution's width, which the
    shrunk per-format means would understate).

    The estimate rests on the model and, with few cells per format, on its priors:
    ``diagnostic`` says when not to trust it. ``prior_driven``: with zero or one cell per
    format, how much formats differ is not identified by the data beyond the covariates,
    so the width of the distribution comes from the prior. ``misfit``: a posterior
    predictive check finds the cells unlike data from the fitted model (formats that
    disagree on which items are hard), so the intervals may be too narrow.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(0)
    >>> formats, items = rng.normal(0, 1, 20), rng.normal(0, 1, 30)
    >>> truth = rng.random((20, 30)) < 1 / (1 + np.exp(-(formats[:, None] + items)))
    >>> rows, cols = np.divmod(rng.choice(20 * 30, size=120, replace=False), 30)
    >>> est = stats.estimate_spread(rows, cols, truth[rows, cols], (20, 30), draws=100)
    >>> est.draws.shape, est.accuracy.shape
    ((100, 20), (20,))
    >>> low, median, high = est.quantile(5), est.quantile(50), est.quantile(95)
    >>> bool(low.estimate <= median.estimate <= high.estimate)
    True
    >>> est.diagnostic.cells_per_format
    6.0
    """
    n_formats, n_items = _shape(shape)
    y = _correct(correct)
    r, c = _index(rows, "rows"), _index(cols, "cols")
    lengths = (len(r), len(c), len(y))
    if len(set(lengths)) > 1:
        raise StatsInputError(
            "rows, cols and correct must have one entry per observed cell each; got lengths "
            f"{lengths[0]}, {lengths[1]}, {lengths[2]}"
        )
    draws = as_positive_int(draws, "draws")
    confidence = check_confidence(confidence)
    check_seed(seed)
    progress = check_progress(progress)
    if draws * (n_formats + n_items) > MAX_DRAW_VALUES:
        raise StatsInputError(
            f"draws × (n_formats + n_items) = {draws:,} × {n_formats + n_items:,} is over the "
            f"limit of {MAX_DRAW_VALUES:,} values held at once; ask for fewer draws"
        )
    covariates = _covariates(covariates)
    cells = IrtCells.of(r, c, y, n_formats, n_items)
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dist = irt_distribution(
                fit_irt(cells, covariates),
                confidence=confidence,
                n_draws=draws,
                seed=seed,
                progress=progress,
            )
    finally:  # also when stopped (a progress callback that raises, Ctrl-C)
        for w in caught:  # shown at the caller's line, under the caller's filters
            message = w.message
            if isinstance(message, StatsWarning):  # rows and cols are formats and items
                message = StatsWarning(in_formats_and_items(str(message)))
            warnings.warn(message, w.category, stacklevel=2)
    read_only(*(v for v in vars(dist).values() if isinstance(v, np.ndarray)))
    return SpreadEstimate(
        draws=dist.accuracy_draws,
        accuracy=dist.accuracy,
        spread=PosteriorEstimate(*dist.spread),
        diagnostic=dist.diagnostic,
        shape=(n_formats, n_items),
        confidence=confidence,
        distribution=dist,
    )
