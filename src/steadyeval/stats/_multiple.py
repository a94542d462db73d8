"""Multiple-comparison adjustments: Holm and Benjamini–Hochberg."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import as_float_1d, check_probability

__all__ = ["MultipleTestResult", "benjamini_hochberg", "holm"]


@dataclass(frozen=True, slots=True, eq=False)
class MultipleTestResult:
    """Result of :func:`holm` or :func:`benjamini_hochberg`.

    Attributes
    ----------
    pvalues : ndarray of float
        Adjusted p-values, in the order of the input.
    reject : ndarray of bool
        ``pvalues <= alpha``.
    alpha : float
        Family-wise error rate (Holm) or false discovery rate (BH) controlled.
    method : str
        ``"holm"`` or ``"benjamini-hochberg"``.
    """

    pvalues: NDArray[np.float64]
    reject: NDArray[np.bool_]
    alpha: float
    method: str


def _check(pvalues: ArrayLike, alpha: float) -> tuple[NDArray[np.float64], float]:
    p = as_float_1d(pvalues, "pvalues")
    if bool(np.any((p < 0.0) | (p > 1.0))):
        raise StatsInputError(f"pvalues must lie in [0, 1]; found {p[(p < 0.0) | (p > 1.0)][0]!r}.")
    return p, check_probability(alpha, "alpha")


def _adjust(
    pvalues: ArrayLike,
    alpha: float,
    method: str,
    adjust_sorted: Callable[[NDArray[np.float64]], NDArray[np.float64]],
) -> MultipleTestResult:
    """Validate, sort (stably), adjust the sorted p-values, and put them back in input order."""
    p, a = _check(pvalues, alpha)
    order = np.argsort(p, kind="stable")
    adj = np.empty(p.size, dtype=np.float64)
    adj[order] = adjust_sorted(p[order])
    return MultipleTestResult(adj, adj <= a, a, method)


def _holm_sorted(p: NDArray[np.float64]) -> NDArray[np.float64]:
    m = p.size
    return np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p))


def _bh_sorted(p: NDArray[np.float64]) -> NDArray[np.float64]:
    m = p.size
    scaled = np.minimum(1.0, m * p / np.arange(1, m + 1))
    return np.minimum.accumulate(scaled[::-1])[::-1]


def holm(pvalues: ArrayLike, *, alpha: float = 0.05) -> MultipleTestResult:
    """Holm's step-down adjustment (controls the family-wise error rate).

    Parameters
    ----------
    pvalues : array_like of float, shape (m,)
        Unadjusted p-values, one per hypothesis.
    alpha : float
        Family-wise error rate.

    Returns
    -------
    MultipleTestResult
        ``pvalues`` (adjusted, input order), ``reject``, ``alpha``, ``method``.

    Raises
    ------
    StatsInputError
        If ``pvalues`` is empty, contains NaN or values outside [0, 1].

    Notes
    -----
    Valid under any dependence between the tests. With sorted p-values
    ``p_(1) <= ... <= p_(m)``, the adjusted value is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.holm([0.01, 0.04, 0.03]).pvalues.tolist()
    [0.03, 0.06, 0.06]
    """
    return _adjust(pvalues, alpha, "holm", _holm_sorted)


def benjamini_hochberg(pvalues: ArrayLike, *, alpha: float = 0.05) -> MultipleTestResult:
    """Benjamini–Hochberg step-up adjustment (controls the false discovery rate).

    Parameters
    ----------
    pvalues : array_like of float, shape (m,)
        Unadjusted p-values, one per hypothesis.
    alpha : float
        False discovery rate.

    Returns
    -------
    MultipleTestResult
        ``pvalues`` (adjusted, input order), ``reject``, ``alpha``, ``method``.

    Raises
    ------
    StatsInputError
        If ``pvalues`` is empty, contains NaN or values outside [0, 1].

    Notes
    -----
    Assumes the tests are independent or positively dependent (PRDS). With sorted
    p-values, the adjusted value is ``min_{j >= i} min(1, m p_(j) / j)``.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.benjamini_hochberg([0.01, 0.04, 0.03]).pvalues.tolist()
    [0.03, 0.04, 0.04]
    """
    return _adjust(pvalues, alpha, "benjamini-hochberg", _bh_sorted)
