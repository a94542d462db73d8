"""Agreement of rankings: Spearman, Kendall τ-b, Kendall's W (rank consistency is in
``_rank_consistency``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from ._errors import StatsInputError
from ._validate import as_float_1d, as_float_2d, check_same_length, warn

__all__ = [
    "CorrelationResult",
    "KendallWResult",
    "kendall_tau",
    "kendall_w",
    "spearman",
]


@dataclass(frozen=True, slots=True)
class CorrelationResult:
    """Result of :func:`spearman` or :func:`kendall_tau`.

    Attributes
    ----------
    statistic : float
        The correlation coefficient (NaN when a variable is constant).
    pvalue : float
        Two-sided p-value for no association (NaN when undefined).
    n : int
        Number of pairs.
    method : str
        ``"spearman"`` or ``"kendall-tau-b"``.
    """

    statistic: float
    pvalue: float
    n: int
    method: str


def _pairs(x: ArrayLike, y: ArrayLike, who: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x_ = as_float_1d(x, "x")
    y_ = as_float_1d(y, "y")
    check_same_length(x_, y_, "x", "y")
    if x_.size < 3:
        raise StatsInputError(f"{who} needs at least 3 pairs; got {x_.size}.")
    return x_, y_


def _correlation(
    x: ArrayLike, y: ArrayLike, who: str, method: str, test: Callable[[Any, Any], Any]
) -> CorrelationResult:
    """Validated pairs, NaN (with a warning) when either is constant, else scipy's ``test``."""
    x_, y_ = _pairs(x, y, who)
    if bool(np.all(x_ == x_[0])) or bool(np.all(y_ == y_[0])):
        warn(f"{who}: one of the inputs is constant, so the correlation is undefined; NaN.", 4)
        return CorrelationResult(math.nan, math.nan, x_.size, method)
    r = test(x_, y_)
    return CorrelationResult(float(r.statistic), float(r.pvalue), x_.size, method)


def spearman(x: ArrayLike, y: ArrayLike) -> CorrelationResult:
    """Spearman rank correlation with a two-sided p-value.

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        Paired observations (e.g. dev and test score of each hyperparameter setting).

    Returns
    -------
    CorrelationResult
        ``statistic`` (rho), ``pvalue``, ``n``, ``method``.

    Raises
    ------
    StatsInputError
        If fewer than 3 pairs, lengths differ, or values are not finite.

    Warns
    -----
    StatsWarning
        If ``x`` or ``y`` is constant; statistic and p-value are NaN.

    Notes
    -----
    Assumes independent pairs. Ties get average ranks. The p-value is the t approximation
    used by :func:`scipy.stats.spearmanr`, ``t = rho sqrt((n - 2)/(1 - rho^2))`` with
    ``n - 2`` degrees of freedom; it is not exact for small ``n``.

    Examples
    --------
    >>> from steadyeval import stats
    >>> round(stats.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).statistic, 6)
    0.8
    """
    return _correlation(x, y, "spearman", "spearman", sps.spearmanr)


def kendall_tau(x: ArrayLike, y: ArrayLike) -> CorrelationResult:
    """Kendall's τ-b with a two-sided p-value.

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        Paired observations.

    Returns
    -------
    CorrelationResult
        ``statistic`` (tau-b), ``pvalue``, ``n``, ``method``.

    Raises
    ------
    StatsInputError
        If fewer than 3 pairs, lengths differ, or values are not finite.

    Warns
    -----
    StatsWarning
        If ``x`` or ``y`` is constant; statistic and p-value are NaN.

    Notes
    -----
    Assumes independent pairs. τ-b adjusts for ties in either variable. The p-value comes
    from :func:`scipy.stats.kendalltau` with ``method="auto"``: exact when there are no ties
    and ``n`` is small, otherwise the normal approximation with tie-corrected variance.

    Examples
    --------
    >>> from steadyeval import stats
    >>> round(stats.kendall_tau([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).statistic, 6)
    0.6
    """
    return _correlation(
        x, y, "kendall_tau", "kendall-tau-b", lambda a, b: sps.kendalltau(a, b, variant="b")
    )


@dataclass(frozen=True, slots=True)
class KendallWResult:
    """Result of :func:`kendall_w`.

    Attributes
    ----------
    statistic : float
        Kendall's W in [0, 1] (tie-corrected).
    chi2 : float
        ``n_raters (n_items - 1) W``, the Friedman statistic.
    df : int
        ``n_items - 1``.
    pvalue : float
        Upper-tail chi-square p-value (asymptotic).
    n_raters, n_items : int
        Number of rankings and of ranked objects.
    """

    statistic: float
    chi2: float
    df: int
    pvalue: float
    n_raters: int
    n_items: int


def kendall_w(rankings: ArrayLike) -> KendallWResult:
    """Kendall's coefficient of concordance W across many rankings, with tie correction.

    Parameters
    ----------
    rankings : array_like of float, shape (n_raters, n_items)
        Row ``r`` ranks (or scores) the ``n_items`` objects according to rater ``r`` (a
        prompt, a subset, a judge). Each row is converted to average ranks, so raw scores
        can be passed; all rows must use the same direction (W is unchanged if every row is
        reversed).

    Returns
    -------
    KendallWResult
        ``statistic`` (W), ``chi2``, ``df``, ``pvalue``, ``n_raters``, ``n_items``.

    Raises
    ------
    StatsInputError
        If fewer than 2 raters or 2 items, or values are not finite.

    Warns
    -----
    StatsWarning
        If every row is entirely tied (no rater orders anything); all fields are NaN.

    Notes
    -----
    Assumes the raters are independent. With ``m`` raters, ``n`` items, rank sums ``R_j``
    and ``S = sum_j (R_j - mean(R))^2``:
    ``W = 12 S / (m^2 (n^3 - n) - m sum_r T_r)`` with ``T_r = sum_g (t_g^3 - t_g)`` over
    groups of ``t_g`` tied values in row ``r``. ``m (n - 1) W`` is the tie-corrected
    Friedman statistic, referred to chi-square with ``n - 1`` degrees of freedom.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.kendall_w([[1, 2, 3], [1, 2, 3], [1, 2, 3]]).statistic
    1.0
    """
    r = as_float_2d(rankings, "rankings")
    m, n = r.shape
    if m < 2 or n < 2:
        raise StatsInputError(
            f"rankings must be raters × items with at least 2 of each; got shape {r.shape}."
        )
    ranks = sps.rankdata(r, axis=1)
    totals = ranks.sum(axis=0)
    s = float(np.sum((totals - totals.mean()) ** 2))
    ties = 0.0
    for row in r:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(np.float64) ** 3 - counts))
    denom = m * m * (n**3 - n) - m * ties
    if denom <= 0.0:
        warn("kendall_w: every ranking is entirely tied, so W is undefined; NaN.")
        return KendallWResult(math.nan, math.nan, n - 1, math.nan, m, n)
    w = 12.0 * s / denom
    chi2 = m * (n - 1) * w
    return KendallWResult(w, chi2, n - 1, float(sps.chi2.sf(chi2, n - 1)), m, n)
