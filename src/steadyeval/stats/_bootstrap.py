"""Paired bootstrap over items."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import (
    SeedLike,
    as_float_1d,
    as_positive_int,
    check_confidence,
    check_same_length,
    make_rng,
    warn,
)

__all__ = ["BootstrapResult", "bootstrap_row_means", "paired_bootstrap"]

_CHUNK_ELEMENTS = 1 << 22
_FEW_ROWS = 16


def bootstrap_row_means(
    values: NDArray[np.float64], n_resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Column means of ``values`` (items × columns) over items resampled with replacement.

    Returns an array of shape ``(n_resamples, n_columns)``. All columns share the same
    resampled items (a paired bootstrap). A resample draws ``n_items`` items uniformly with
    replacement; its column means depend only on how often it drew each distinct row. So
    when rows repeat a lot (0/1 scores under a few conditions: at most one distinct row per
    ``_FEW_ROWS`` items), the counts of the distinct rows are drawn directly — they are
    multinomial with the rows' frequencies, the same bootstrap distribution at a cost that
    does not grow with the items. Otherwise row indices are drawn and gathered, chunked to
    bound memory.
    """
    n, k = values.shape
    distinct, freq = _distinct_rows(values)
    if distinct.shape[0] * _FEW_ROWS <= n:
        counts = rng.multinomial(n, freq / n, size=n_resamples)
        means: NDArray[np.float64] = (counts @ distinct) / n
        return means
    out = np.empty((n_resamples, k), dtype=np.float64)
    columns = np.ascontiguousarray(values.T)  # gather one contiguous column at a time
    chunk = max(1, _CHUNK_ELEMENTS // max(1, n * k))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        for j in range(k):
            out[start:stop, j] = columns[j][idx].mean(axis=1)
    return out


def _distinct_rows(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The distinct rows of ``values`` and how often each occurs (0/1 rows are coded as
    integers first: a one-dimensional sort instead of a row-wise one). Rows come in
    lexicographic order either way."""
    k = values.shape[1]
    if k < 63 and bool(np.all((values == 0.0) | (values == 1.0))):
        shifts = np.arange(k - 1, -1, -1, dtype=np.int64)  # the first column is the top bit
        codes = values.astype(np.int64) @ (np.int64(1) << shifts)
        uniq, freq = np.unique(codes, return_counts=True)
        bits = (uniq[:, None] >> shifts) & 1
        return bits.astype(np.float64), freq
    rows, freq = np.unique(values, axis=0, return_counts=True)
    return rows, freq


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """Result of :func:`paired_bootstrap`.

    Attributes
    ----------
    estimate : float
        Observed mean difference ``mean(a) - mean(b)``.
    low, high : float
        Percentile confidence interval.
    pvalue : float
        Two-sided bootstrap p-value (see :func:`paired_bootstrap` Notes for the convention).
    se : float
        Standard deviation of the bootstrap distribution.
    n : int
        Number of items.
    n_resamples : int
        Number of bootstrap resamples.
    confidence : float
        Nominal coverage of the interval.
    """

    estimate: float
    low: float
    high: float
    pvalue: float
    se: float
    n: int
    n_resamples: int
    confidence: float


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: SeedLike,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of the mean difference between two conditions.

    Parameters
    ----------
    a, b : array_like of float, shape (n_items,)
        Per-item scores of conditions A and B on the same items, in the same order.
    n_resamples : int
        Number of bootstrap resamples ``B``.
    seed : int or numpy.random.Generator
        Source of randomness (required). An int gives the same result on every call; a
        Generator is advanced.
    confidence : float
        Coverage of the percentile interval.

    Returns
    -------
    BootstrapResult
        ``estimate``, ``low``, ``high``, ``pvalue``, ``se``, ``n``, ``n_resamples``,
        ``confidence``.

    Raises
    ------
    StatsInputError
        If arrays are empty, of different lengths or not finite, ``n_resamples < 1``, or
        ``seed`` is missing or invalid.

    Warns
    -----
    StatsWarning
        If every paired difference is the same (the bootstrap distribution is a point);
        ``pvalue`` is NaN.

    Notes
    -----
    Assumes *paired* scores on independent items: each resample draws ``n`` items with
    replacement and keeps both conditions of each drawn item together. For clustered
    items resample clusters instead (not provided here).

    The interval is the percentile interval: the ``(1 - confidence)/2`` and
    ``(1 + confidence)/2`` quantiles of the bootstrap differences (linear interpolation).

    p-value convention: the bootstrap distribution is shifted to the null (centred at 0),
    and the p-value is ``(1 + #{b : |d*_b - d| >= |d|}) / (B + 1)``, where ``d`` is the
    observed difference and ``d*_b`` the difference in resample ``b``; ties count as
    extreme. It is two-sided, never 0, and its resolution is ``1 / (B + 1)``.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.paired_bootstrap([1, 1, 0, 1, 1, 0], [1, 0, 0, 1, 0, 0],
    ...                            n_resamples=1000, seed=0)
    >>> r.low <= r.estimate <= r.high
    True
    """
    a_ = as_float_1d(a, "a")
    b_ = as_float_1d(b, "b")
    check_same_length(a_, b_, "a", "b")
    reps = as_positive_int(n_resamples, "n_resamples")
    conf = check_confidence(confidence)
    rng = make_rng(seed)
    d = a_ - b_
    est = float(d.mean())
    dist = bootstrap_row_means(d.reshape(-1, 1), reps, rng)[:, 0]
    q = np.quantile(dist, [(1.0 - conf) / 2.0, (1.0 + conf) / 2.0])
    low, high = float(q[0]), float(q[1])
    if bool(np.all(d == d[0])):
        warn(
            "paired_bootstrap: every paired difference is the same, so the bootstrap "
            "distribution is a single point; pvalue is NaN."
        )
        pval = math.nan
    else:
        tol = 1e-12 * max(1.0, abs(est))
        extreme = int(np.sum(np.abs(dist - est) >= abs(est) - tol))
        pval = (1.0 + extreme) / (reps + 1.0)
    se = float(dist.std(ddof=1)) if reps > 1 else math.nan
    return BootstrapResult(est, low, high, pval, se, d.size, reps, conf)
