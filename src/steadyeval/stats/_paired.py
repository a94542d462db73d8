"""Paired binary comparisons: McNemar, the 2×2 agreement table, Cochran's Q."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from ._errors import StatsInputError
from ._validate import as_binary, as_count, check_same_length, warn

__all__ = [
    "AgreementTable",
    "CochranQResult",
    "McNemarMethod",
    "McNemarResult",
    "agreement_table",
    "cochran_q",
    "mcnemar",
]

McNemarMethod = Literal["exact", "midp", "asymptotic", "asymptotic-cc"]
_METHODS = ("exact", "midp", "asymptotic", "asymptotic-cc")


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """Result of :func:`mcnemar`.

    Attributes
    ----------
    statistic : float
        ``min(b, c)`` for ``"exact"`` and ``"midp"``; the chi-square statistic (1 degree of
        freedom) for ``"asymptotic"`` and ``"asymptotic-cc"``. NaN when ``b + c == 0``.
    pvalue : float
        Two-sided p-value. NaN when ``b + c == 0``.
    method : str
        The method used.
    b, c : int
        The discordant counts (only A succeeds, only B succeeds).
    """

    statistic: float
    pvalue: float
    method: str
    b: int
    c: int

    @property
    def n_discordant(self) -> int:
        """Number of discordant pairs, ``b + c``."""
        return self.b + self.c


def mcnemar(b: int, c: int, *, method: McNemarMethod = "exact") -> McNemarResult:
    """McNemar's test for paired binary outcomes from the two discordant counts.

    Parameters
    ----------
    b : int
        Items on which only condition A succeeds (A yes, B no).
    c : int
        Items on which only condition B succeeds (A no, B yes).
    method : {"exact", "midp", "asymptotic", "asymptotic-cc"}
        ``"exact"``: conditional binomial test, ``p = min(1, 2 P(X <= min(b, c)))`` with
        ``X ~ Binomial(b + c, 1/2)``. ``"midp"``: the mid-p version of Fagerland, Lydersen
        & Laake (2013), which counts the observed outcome with weight 1/2:
        ``min(1, 2 [P(X <= k) - P(X = k)/2])`` with ``k = min(b, c)``; it is 1 when
        ``b == c`` (e.g. ``(3, 3)``).
        ``"asymptotic"``: ``(b - c)^2 / (b + c)`` against chi-square with 1 degree of freedom.
        ``"asymptotic-cc"``: Edwards' continuity correction,
        ``max(|b - c| - 1, 0)^2 / (b + c)``.

    Returns
    -------
    McNemarResult
        ``statistic``, ``pvalue``, ``method``, ``b``, ``c``.

    Raises
    ------
    StatsInputError
        If ``b`` or ``c`` is not a non-negative integer or ``method`` is unknown.

    Warns
    -----
    StatsWarning
        If ``b + c == 0`` (the conditions agree on every item); statistic and p-value are NaN.

    Notes
    -----
    Assumes *paired* outcomes: both conditions were run on the same items, and items are
    independent of each other (for clustered items see :func:`paired_difference` with
    ``clusters``). The test conditions on the number of discordant pairs; concordant pairs
    carry no information about the difference. The exact test is conservative (its size is
    at most the nominal level); mid-p is closer to nominal but may exceed it slightly
    (Fagerland, Lydersen & Laake 2013). The test is symmetric in ``b`` and ``c``.

    The continuity-corrected statistic is clipped at zero, so ``b == c`` gives ``p = 1``;
    ``statsmodels.stats.contingency_tables.mcnemar(..., correction=True)`` does not clip and
    differs from this function only in that case.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.mcnemar(51, 52).pvalue
    1.0
    """
    b_ = as_count(b, "b")
    c_ = as_count(c, "c")
    if method not in _METHODS:
        raise StatsInputError(f"method must be one of {_METHODS}; got {method!r}.")
    n = b_ + c_
    if n == 0:
        warn(
            "McNemar's test: no discordant pairs (b + c == 0), so the data say nothing about "
            "a difference; statistic and p-value are NaN. Report the agreement table instead."
        )
        return McNemarResult(math.nan, math.nan, method, b_, c_)
    k = min(b_, c_)
    gap = abs(b_ - c_)
    if method in ("exact", "midp"):
        # |b - c| <= 1: 2 P(X <= k) >= 1 exactly (by symmetry); avoid round-off below 1.
        p_exact = 1.0 if gap <= 1 else min(1.0, 2.0 * float(sps.binom.cdf(k, n, 0.5)))
        if method == "exact":
            return McNemarResult(float(k), p_exact, method, b_, c_)
        # Fagerland et al. (2013): 2 [P(X <= k) - P(X = k)/2], capped at 1. When b == c,
        # 2 P(X <= k) = 1 + P(X = k) (symmetry), so the mid-p is exactly 1; when |b - c| = 1,
        # 2 P(X <= k) = 1 and p_exact (1 by the shortcut above) is the same number.
        if gap == 0:
            return McNemarResult(float(k), 1.0, method, b_, c_)
        pmf = float(sps.binom.pmf(k, n, 0.5))
        p = p_exact - pmf
        return McNemarResult(float(k), min(1.0, max(0.0, p)), method, b_, c_)
    diff = max(gap - 1, 0) if method == "asymptotic-cc" else gap
    stat = diff * diff / n
    return McNemarResult(float(stat), float(sps.chi2.sf(stat, 1)), method, b_, c_)


@dataclass(frozen=True, slots=True)
class AgreementTable:
    """The paired 2×2 table of two binary outcomes per item.

    Attributes
    ----------
    both : int
        Items on which A and B both succeed.
    only_a : int
        Items on which only A succeeds (McNemar's ``b``).
    only_b : int
        Items on which only B succeeds (McNemar's ``c``).
    neither : int
        Items on which neither succeeds.
    """

    both: int
    only_a: int
    only_b: int
    neither: int

    def __post_init__(self) -> None:
        for name in ("both", "only_a", "only_b", "neither"):
            object.__setattr__(self, name, as_count(getattr(self, name), name))

    @property
    def n(self) -> int:
        """Number of items."""
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def discordant(self) -> int:
        """Items on which A and B differ (``only_a + only_b``)."""
        return self.only_a + self.only_b

    @property
    def successes_a(self) -> int:
        """Items on which A succeeds."""
        return self.both + self.only_a

    @property
    def successes_b(self) -> int:
        """Items on which B succeeds."""
        return self.both + self.only_b

    def as_array(self) -> NDArray[np.int64]:
        """Return ``[[both, only_a], [only_b, neither]]`` (rows: A yes/no; columns: B yes/no)."""
        return np.array([[self.both, self.only_a], [self.only_b, self.neither]], dtype=np.int64)

    def mcnemar(self, method: McNemarMethod = "exact") -> McNemarResult:
        """McNemar's test on this table; see :func:`mcnemar`."""
        return mcnemar(self.only_a, self.only_b, method=method)


def agreement_table(a: ArrayLike, b: ArrayLike) -> AgreementTable:
    """Cross-tabulate two paired binary outcomes per item.

    Parameters
    ----------
    a, b : array_like of bool or {0, 1}, shape (n_items,)
        Outcome of conditions A and B on the same items, in the same order.

    Returns
    -------
    AgreementTable
        ``both``, ``only_a``, ``only_b``, ``neither`` (and properties ``n``, ``discordant``).

    Raises
    ------
    StatsInputError
        If the arrays are empty, of different lengths, or hold values other than 0/1.

    Notes
    -----
    Assumes the outcomes are *paired*: position ``i`` of ``a`` and ``b`` is the same item.
    Two conditions with equal totals can still disagree on many items; the table shows
    this where the totals do not.

    Examples
    --------
    >>> from steadyeval import stats
    >>> t = stats.agreement_table([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    >>> (t.both, t.only_a, t.only_b, t.neither)
    (2, 1, 1, 1)
    """
    a_ = as_binary(a, "a")
    b_ = as_binary(b, "b")
    check_same_length(a_, b_, "a", "b")
    return AgreementTable(
        both=int(np.sum(a_ & b_)),
        only_a=int(np.sum(a_ & ~b_)),
        only_b=int(np.sum(~a_ & b_)),
        neither=int(np.sum(~a_ & ~b_)),
    )


@dataclass(frozen=True, slots=True)
class CochranQResult:
    """Result of :func:`cochran_q`.

    Attributes
    ----------
    statistic : float
        Cochran's Q (NaN when undefined).
    pvalue : float
        Upper-tail chi-square p-value with ``df`` degrees of freedom (NaN when undefined).
    df : int
        ``n_conditions - 1``.
    n_items, n_conditions : int
        Shape of the input.
    """

    statistic: float
    pvalue: float
    df: int
    n_items: int
    n_conditions: int


def cochran_q(matrix: ArrayLike) -> CochranQResult:
    """Cochran's Q test that k paired binary conditions have the same success rate.

    Parameters
    ----------
    matrix : array_like of bool or {0, 1}, shape (n_items, n_conditions)
        Outcome of every condition on every item; ``n_conditions >= 2``.

    Returns
    -------
    CochranQResult
        ``statistic``, ``pvalue``, ``df``, ``n_items``, ``n_conditions``.

    Raises
    ------
    StatsInputError
        If the matrix is not 2-D binary, is empty, or has fewer than two conditions.

    Warns
    -----
    StatsWarning
        If every item has the same outcome under all conditions (no item discriminates);
        statistic and p-value are NaN.

    Notes
    -----
    Assumes *paired* (repeated-measures) outcomes on independent items.
    ``Q = (k - 1) (k sum_j C_j^2 - N^2) / (k N - sum_i R_i^2)`` with column totals ``C_j``,
    row totals ``R_i`` and grand total ``N``, referred to chi-square with ``k - 1`` degrees
    of freedom (asymptotic). With two conditions Q equals the uncorrected McNemar statistic.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.cochran_q([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 1, 0]])
    >>> r.df
    2
    """
    m = as_binary(matrix, "matrix", ndim=2)
    n_items, k = m.shape
    if k < 2:
        raise StatsInputError(
            f"matrix must have one column per condition and at least 2 conditions; got {k}. "
            "For a single condition use wilson_interval instead."
        )
    x = m.astype(np.float64)
    col = x.sum(axis=0)
    row = x.sum(axis=1)
    total = float(col.sum())
    denom = k * total - float(np.sum(row * row))
    if denom == 0.0:
        warn(
            "Cochran's Q: every item has the same outcome under all conditions, so no item "
            "discriminates between them; statistic and p-value are NaN."
        )
        return CochranQResult(math.nan, math.nan, k - 1, n_items, k)
    q = (k - 1) * (k * float(np.sum(col * col)) - total * total) / denom
    return CochranQResult(float(q), float(sps.chi2.sf(q, k - 1)), k - 1, n_items, k)
