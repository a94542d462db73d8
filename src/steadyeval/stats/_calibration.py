"""Calibration: ECE, RMS calibration error, Brier score, reliability-diagram data."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import as_binary, as_float_1d, as_positive_int, check_same_length, warn

__all__ = [
    "Binning",
    "BrierScore",
    "CalibrationError",
    "ReliabilityBins",
    "RmsMode",
    "brier_score",
    "expected_calibration_error",
    "reliability_bins",
    "rms_calibration_error",
]

Binning = Literal["equal-width", "equal-mass"]
_BINNINGS = ("equal-width", "equal-mass")
RmsMode = Literal["textbook", "mmlu-reference"]
_RMS_MODES = ("textbook", "mmlu-reference")


@dataclass(frozen=True, slots=True, eq=False)
class ReliabilityBins:
    """Reliability-diagram data, one entry per bin.

    Attributes
    ----------
    confidence : ndarray of float
        Mean confidence in each bin (NaN for an empty bin).
    accuracy : ndarray of float
        Share correct in each bin (NaN for an empty bin).
    count : ndarray of int
        Items in each bin (0 for an empty equal-width bin).
    low, high : ndarray of float
        Bin edges: fixed edges for equal-width bins, smallest and largest confidence in
        the bin for equal-mass bins (NaN when empty).
    binning : str
        ``"equal-width"`` or ``"equal-mass"``.
    """

    confidence: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    count: NDArray[np.int64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    binning: str


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationError:
    """Result of :func:`expected_calibration_error` or :func:`rms_calibration_error`.

    Attributes
    ----------
    statistic : float
        The calibration error, in [0, 1].
    n : int
        Number of items.
    n_bins : int
        Number of bins (including empty equal-width bins, which get weight 0).
    binning : str
        ``"equal-width"`` or ``"equal-mass"``.
    bins : ReliabilityBins
        The per-bin data the statistic was computed from (for ``mode="mmlu-reference"``,
        of the folded confidences and outcomes).
    mode : str
        Which definition: ``"textbook"`` (every ECE, and the textbook RMS error) or
        ``"mmlu-reference"`` (:func:`rms_calibration_error`).
    """

    statistic: float
    n: int
    n_bins: int
    binning: str
    bins: ReliabilityBins
    mode: str = "textbook"


@dataclass(frozen=True, slots=True)
class BrierScore:
    """Result of :func:`brier_score`.

    Attributes
    ----------
    statistic : float
        Mean squared difference between confidence and outcome (lower is better).
    se : float
        CLT standard error of that mean (NaN, with a StatsWarning, for a single item).
    n : int
        Number of items.
    """

    statistic: float
    se: float
    n: int


def _inputs(
    confidence: ArrayLike, correct: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    conf = as_float_1d(confidence, "confidence")
    if bool(np.any((conf < 0.0) | (conf > 1.0))):
        bad = conf[(conf < 0.0) | (conf > 1.0)][0]
        raise StatsInputError(
            f"confidence must be a probability in [0, 1]; found {bad!r}. Pass the probability "
            "of the chosen answer, not a logit or a percentage."
        )
    corr = as_binary(correct, "correct")
    check_same_length(conf, corr, "confidence", "correct")
    return conf, corr.astype(np.float64)


def _reliability(
    conf: NDArray[np.float64], corr: NDArray[np.float64], n_bins: int, binning: str
) -> ReliabilityBins:
    if binning not in _BINNINGS:
        raise StatsInputError(f"binning must be one of {_BINNINGS}; got {binning!r}.")
    n = conf.size
    if binning == "equal-width":
        edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins  # b / B, correctly rounded
        # Bins are right-closed, (edges[b], edges[b + 1]], with 0 in the first bin.
        idx = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, n_bins - 1)
        low, high = edges[:-1].copy(), edges[1:].copy()
    else:
        if n_bins > n:
            raise StatsInputError(
                f"n_bins ({n_bins}) exceeds the number of items ({n}) for equal-mass bins; "
                "use fewer bins."
            )
        order = np.argsort(conf, kind="stable")
        idx = np.empty(n, dtype=np.intp)
        low = np.empty(n_bins, dtype=np.float64)
        high = np.empty(n_bins, dtype=np.float64)
        for b, part in enumerate(np.array_split(order, n_bins)):
            idx[part] = b
            low[b] = conf[part].min()
            high[b] = conf[part].max()
    count = np.bincount(idx, minlength=n_bins).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=conf, minlength=n_bins) / count
        acc = np.bincount(idx, weights=corr, minlength=n_bins) / count
    return ReliabilityBins(mean_conf, acc, count, low, high, binning)


def reliability_bins(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    n_bins: int = 10,
    binning: Binning = "equal-width",
) -> ReliabilityBins:
    """Per-bin mean confidence, accuracy and count for a reliability diagram.

    Parameters
    ----------
    confidence : array_like of float, shape (n_items,)
        Predicted probability that each answer is correct, in [0, 1].
    correct : array_like of bool or {0, 1}, shape (n_items,)
        Whether each answer was correct.
    n_bins : int
        Number of bins.
    binning : {"equal-width", "equal-mass"}
        Equal-width bins split [0, 1] into right-closed intervals
        ``(b/B, (b + 1)/B]`` (0 goes to the first bin); equal-mass bins sort items by
        confidence (stable) and cut them into ``n_bins`` runs whose sizes differ by at most
        one (the first runs get the extra items).

    Returns
    -------
    ReliabilityBins
        ``confidence``, ``accuracy``, ``count``, ``low``, ``high``, ``binning``.

    Raises
    ------
    StatsInputError
        If inputs are empty, of different lengths, confidences are outside [0, 1],
        outcomes are not 0/1, or equal-mass bins outnumber the items.

    Notes
    -----
    Empty equal-width bins are kept with ``count == 0`` and NaN confidence and accuracy,
    so the arrays always have ``n_bins`` entries. Equal-mass bins may split items with
    identical confidence between neighbouring bins.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.reliability_bins([0.1, 0.15, 0.9, 0.95], [0, 1, 1, 1], n_bins=2)
    >>> r.count.tolist(), r.accuracy.tolist()
    ([2, 2], [0.5, 1.0])
    """
    conf, corr = _inputs(confidence, correct)
    return _reliability(conf, corr, as_positive_int(n_bins, "n_bins"), binning)


def _weighted(bins: ReliabilityBins, n: int, power: int) -> float:
    used = bins.count > 0
    gap = np.abs(bins.accuracy[used] - bins.confidence[used]) ** power
    return float(np.sum(bins.count[used] / n * gap))


def expected_calibration_error(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    n_bins: int = 10,
    binning: Binning = "equal-width",
) -> CalibrationError:
    """Expected calibration error ``sum_b (n_b / N) |acc_b - conf_b|``.

    Parameters
    ----------
    confidence : array_like of float, shape (n_items,)
        Predicted probability that each answer is correct, in [0, 1].
    correct : array_like of bool or {0, 1}, shape (n_items,)
        Whether each answer was correct.
    n_bins : int
        Number of bins.
    binning : {"equal-width", "equal-mass"}
        See :func:`reliability_bins`.

    Returns
    -------
    CalibrationError
        ``statistic``, ``n``, ``n_bins``, ``binning``, ``bins``.

    Raises
    ------
    StatsInputError
        As for :func:`reliability_bins`.

    Notes
    -----
    A binned plug-in estimate: it depends on the binning and is biased upward for small
    bins (a perfectly calibrated model still shows a positive ECE). Items are assumed
    independent. Empty bins get weight 0.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.expected_calibration_error([0.1, 0.15, 0.9, 0.95], [0, 1, 1, 1], n_bins=2)
    >>> round(r.statistic, 4)
    0.225
    """
    conf, corr = _inputs(confidence, correct)
    bins = _reliability(conf, corr, as_positive_int(n_bins, "n_bins"), binning)
    return CalibrationError(
        _weighted(bins, conf.size, 1), conf.size, bins.count.size, binning, bins
    )


def rms_calibration_error(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    n_bins: int | None = None,
    bin_size: int = 100,
    binning: Binning = "equal-mass",
    mode: RmsMode = "textbook",
) -> CalibrationError:
    """Root-mean-square calibration error, textbook or as the MMLU authors' code computes it.

    Parameters
    ----------
    confidence : array_like of float, shape (n_items,)
        Predicted probability that each answer is correct, in [0, 1].
    correct : array_like of bool or {0, 1}, shape (n_items,)
        Whether each answer was correct.
    n_bins : int, optional
        Number of bins. Default: ``max(1, N // bin_size)``, i.e. bins of at least
        ``bin_size`` items each.
    bin_size : int
        Target items per bin when ``n_bins`` is not given (100, as in the MMLU paper).
    binning : {"equal-mass", "equal-width"}
        See :func:`reliability_bins`.
    mode : {"textbook", "mmlu-reference"}
        ``"textbook"``: ``sqrt(sum_b (n_b / N) (acc_b - conf_b)^2)``.
        ``"mmlu-reference"``: the computation of ``calib_tools.rmsce`` in the MMLU authors'
        repository (hendrycks/test): every confidence ``c`` becomes ``max(c, 1 - c)``, its
        outcome flipped when ``c < 0.5``; then, over the bins of those folded values,
        ``sqrt(sqrt(sum_b ((n_b / N) (acc_b - conf_b))^2))``.

    Returns
    -------
    CalibrationError
        ``statistic``, ``n``, ``n_bins``, ``binning``, ``bins``, ``mode``.

    Raises
    ------
    StatsInputError
        As for :func:`reliability_bins`, if ``bin_size < 1`` or ``mode`` is unknown.

    Notes
    -----
    Items are assumed independent; every bin counts. With fewer than ``bin_size`` items
    there is one bin (textbook: ``|accuracy - mean confidence|``).

    Hendrycks et al. (MMLU, 2021) report an "RMS calibration error" without saying which
    computation produced their numbers. The textbook quantity weights each squared gap by
    the bin's share of items. The repository's ``rmsce`` (``gce`` with adaptive bins,
    ``max_prob=True``, ``norm="l2"``, ``datapoints_per_bin=100``) treats the confidence as
    a two-class prediction ``[1 - c, c]`` and keeps the larger class, squares the
    *weighted* gaps ``(n_b / N)(acc_b - conf_b)``, takes a square root inside ``gce`` and
    another at its end: a fourth root of a sum of squared weighted gaps, on a different
    scale from the textbook value. Here it is that stated formula, with two documented
    departures: bins are this module's equal-mass bins (``N // bin_size`` runs whose sizes
    differ by at most one; the repository cuts at rounded quantile indices with
    ``np.digitize``, which keeps tied confidences together), and ``c = 0.5`` is not folded
    (the repository's ``argmax`` picks the first class on a tie, so it flips that outcome).
    With fewer than ``bin_size`` items the repository has zero bins; here there is one.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.rms_calibration_error([0.1, 0.15, 0.9, 0.95], [0, 1, 1, 1], n_bins=2)
    >>> round(r.statistic, 4)
    0.2704
    >>> r = stats.rms_calibration_error(
    ...     [0.2, 0.6, 0.7, 0.9], [0, 1, 0, 1], n_bins=2, mode="mmlu-reference"
    ... )
    >>> round(r.statistic, 4)
    0.3257
    """
    if mode not in _RMS_MODES:
        raise StatsInputError(f"mode must be one of {_RMS_MODES}; got {mode!r}.")
    conf, corr = _inputs(confidence, correct)
    if n_bins is None:
        size = as_positive_int(bin_size, "bin_size")
        b = max(1, conf.size // size)
    else:
        b = as_positive_int(n_bins, "n_bins")
    if mode == "textbook":
        bins = _reliability(conf, corr, b, binning)
        stat = math.sqrt(_weighted(bins, conf.size, 2))
    else:
        low = conf < 0.5
        folded = np.where(low, 1.0 - conf, conf)
        outcome = np.where(low, 1.0 - corr, corr)
        bins = _reliability(folded, outcome, b, binning)
        used = bins.count > 0
        weighted_gap = bins.count[used] / conf.size * (bins.accuracy[used] - bins.confidence[used])
        stat = math.sqrt(math.sqrt(float(np.sum(weighted_gap**2))))
    return CalibrationError(stat, conf.size, bins.count.size, binning, bins, mode)


def brier_score(confidence: ArrayLike, correct: ArrayLike) -> BrierScore:
    """Brier score ``mean((confidence - correct)^2)`` for binary outcomes.

    Parameters
    ----------
    confidence : array_like of float, shape (n_items,)
        Predicted probability that each answer is correct, in [0, 1].
    correct : array_like of bool or {0, 1}, shape (n_items,)
        Whether each answer was correct.

    Returns
    -------
    BrierScore
        ``statistic``, ``se``, ``n``.

    Raises
    ------
    StatsInputError
        If inputs are empty, of different lengths, confidences are outside [0, 1], or
        outcomes are not 0/1.

    Notes
    -----
    The binary (one-probability) Brier score, in [0, 1]; 0.25 is the score of always
    saying 0.5. It is a proper scoring rule and needs no binning. ``se`` is the CLT
    standard error of the mean over items, assuming independent items.

    Examples
    --------
    >>> from steadyeval import stats
    >>> round(stats.brier_score([0.9, 0.2], [1, 0]).statistic, 4)
    0.025
    """
    conf, corr = _inputs(confidence, correct)
    sq = (conf - corr) ** 2
    if sq.size > 1:
        se = float(math.sqrt(sq.var(ddof=1) / sq.size))
    else:
        warn("brier_score: a single item has no standard error; se is NaN.")
        se = math.nan
    return BrierScore(float(sq.mean()), se, conf.size)
