"""Intervals for proportions and standard errors for means (CLT, clustered, paired)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from ._errors import StatsInputError
from ._validate import (
    as_count,
    as_float_1d,
    check_confidence,
    check_same_length,
    group_codes,
    warn,
)

__all__ = [
    "Interval",
    "MeanSE",
    "PairedDifference",
    "clopper_pearson_interval",
    "clt_se",
    "clustered_se",
    "paired_difference",
    "wilson_interval",
]


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a two-sided confidence interval.

    Attributes
    ----------
    estimate : float
        The point estimate.
    low, high : float
        Interval bounds.
    confidence : float
        Nominal coverage, e.g. 0.95.
    """

    estimate: float
    low: float
    high: float
    confidence: float


def _counts(k: int, n: int) -> tuple[int, int]:
    k_ = as_count(k, "k")
    n_ = as_count(n, "n")
    if n_ == 0:
        raise StatsInputError(
            "n is 0: a proportion of zero items has no interval. Check that the item filter "
            "did not drop everything."
        )
    if k_ > n_:
        raise StatsInputError(f"k (successes) must not exceed n (trials); got k={k_}, n={n_}.")
    return k_, n_


@functools.lru_cache(maxsize=64)
def _two_sided_z(confidence: float) -> float:
    """The normal quantile of a two-sided ``confidence`` interval (1.96 for 95%); cached,
    since analyses ask for thousands of intervals at one confidence."""
    return float(sps.norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    k : int
        Number of successes.
    n : int
        Number of trials (items), ``n >= 1``.
    confidence : float
        Nominal two-sided coverage in (0, 1).

    Returns
    -------
    Interval
        ``estimate = k / n``, ``low``, ``high``, ``confidence``.

    Raises
    ------
    StatsInputError
        If ``n == 0``, ``k > n``, counts are not non-negative integers, or ``confidence`` is
        outside (0, 1).

    Notes
    -----
    Assumes ``n`` independent Bernoulli trials with a common success probability (no
    clustering). The interval inverts the score test:
    ``(k + z^2/2)/(n + z^2) ± z/(n + z^2) sqrt(k(n - k)/n + z^2/4)``. Its actual coverage
    oscillates around the nominal level (e.g. 93.6%, 93.7%, 94.3% at n = 100 and
    p = 0.1, 0.3, 0.5 for 95%); it is not exact.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.wilson_interval(133, 300)
    >>> round(r.low, 3), round(r.high, 3)
    (0.388, 0.5)
    """
    k_, n_ = _counts(k, n)
    conf = check_confidence(confidence)
    z = _two_sided_z(conf)
    z2 = z * z
    center = (k_ + z2 / 2.0) / (n_ + z2)
    half = z / (n_ + z2) * math.sqrt(k_ * (n_ - k_) / n_ + z2 / 4.0)
    low = 0.0 if k_ == 0 else max(0.0, center - half)
    high = 1.0 if k_ == n_ else min(1.0, center + half)
    return Interval(k_ / n_, low, high, conf)


def clopper_pearson_interval(k: int, n: int, confidence: float = 0.95) -> Interval:
    """Clopper–Pearson ("exact") interval for a binomial proportion.

    Parameters
    ----------
    k : int
        Number of successes.
    n : int
        Number of trials, ``n >= 1``.
    confidence : float
        Nominal two-sided coverage in (0, 1).

    Returns
    -------
    Interval
        ``estimate = k / n``, ``low``, ``high``, ``confidence``.

    Raises
    ------
    StatsInputError
        As for :func:`wilson_interval`.

    Notes
    -----
    Assumes independent Bernoulli trials. Bounds are beta quantiles:
    ``low = Beta(a/2; k, n - k + 1)`` (0 when ``k = 0``) and
    ``high = Beta(1 - a/2; k + 1, n - k)`` (1 when ``k = n``), with ``a = 1 - confidence``.
    The interval is *exact* in that its coverage is at least nominal for every p; it is
    therefore conservative.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.clopper_pearson_interval(0, 20)
    >>> r.low
    0.0
    """
    k_, n_ = _counts(k, n)
    conf = check_confidence(confidence)
    alpha = 1.0 - conf
    low = 0.0 if k_ == 0 else float(sps.beta.ppf(alpha / 2.0, k_, n_ - k_ + 1))
    high = 1.0 if k_ == n_ else float(sps.beta.ppf(1.0 - alpha / 2.0, k_ + 1, n_ - k_))
    return Interval(k_ / n_, low, high, conf)


@dataclass(frozen=True, slots=True)
class MeanSE:
    """A mean with its standard error.

    Attributes
    ----------
    mean : float
        Mean of the scores.
    se : float
        Standard error of the mean (NaN when undefined).
    n : int
        Number of items.
    n_clusters : int
        Number of clusters (``n`` when items are treated as independent).
    method : str
        ``"clt"``, ``"clustered"`` (Miller 2024, eq. 4) or ``"clustered-cr1"``.
    """

    mean: float
    se: float
    n: int
    n_clusters: int
    method: str

    def interval(self, confidence: float = 0.95) -> Interval:
        """Normal-approximation interval ``mean ± z * se``."""
        conf = check_confidence(confidence)
        z = _two_sided_z(conf)
        return Interval(self.mean, self.mean - z * self.se, self.mean + z * self.se, conf)


def clt_se(scores: ArrayLike) -> MeanSE:
    """Mean of per-item scores with its central-limit-theorem standard error.

    Parameters
    ----------
    scores : array_like of float, shape (n_items,)
        One score per item (0/1 correctness or any bounded score).

    Returns
    -------
    MeanSE
        ``mean``, ``se``, ``n``, ``n_clusters`` (= ``n``), ``method`` (= ``"clt"``).

    Raises
    ------
    StatsInputError
        If ``scores`` is empty, not 1-D or not finite.

    Warns
    -----
    StatsWarning
        If there is a single item; ``se`` is NaN.

    Notes
    -----
    Assumes items are independent draws from a larger population of questions.
    ``se = sqrt(s^2 / n)`` with the sample variance ``s^2`` (denominator ``n - 1``), as in
    eq. 2 of Miller (2024), "Adding Error Bars to Evals". For correlated items (shared
    passage or template) use :func:`clustered_se`.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.clt_se([1, 0, 1, 1])
    >>> r.mean, round(r.se, 4)
    (0.75, 0.25)
    """
    x = as_float_1d(scores, "scores")
    n = x.size
    mean = float(x.mean())
    if n < 2:
        warn("clt_se: a single item has no sample variance; se is NaN.")
        return MeanSE(mean, math.nan, n, n, "clt")
    return MeanSE(mean, float(math.sqrt(x.var(ddof=1) / n)), n, n, "clt")


def _cluster_codes(clusters: ArrayLike, n: int) -> tuple[NDArray[np.intp], int]:
    uniques, codes = group_codes(clusters, n, "clusters")
    return codes, len(uniques)


def clustered_se(
    scores: ArrayLike,
    clusters: ArrayLike,
    *,
    correction: Literal["cr1"] | None = None,
) -> MeanSE:
    """Mean of per-item scores with a cluster-robust standard error.

    Parameters
    ----------
    scores : array_like of float, shape (n_items,)
        One score per item.
    clusters : array_like, shape (n_items,)
        Cluster label per item (passage id, template id, ...). Any comparable labels.
    correction : {None, "cr1"}
        ``None`` (default): eq. 4 of Miller (2024), no small-sample factor.
        ``"cr1"``: the usual CR1 sandwich for a mean,
        ``G/(G - 1) · (1/n^2) sum_c (sum_{i in c} (s_i - mean))^2`` with ``G`` clusters
        (what Stata and ``statsmodels`` ``cov_type="cluster"`` report for an intercept-only
        regression).

    Returns
    -------
    MeanSE
        ``mean``, ``se``, ``n``, ``n_clusters``, and ``method`` (``"clustered"`` or
        ``"clustered-cr1"``) saying which variance was used.

    Raises
    ------
    StatsInputError
        If inputs are empty, of different lengths, or not finite, or ``correction`` is
        unknown.

    Warns
    -----
    StatsWarning
        If there is only one cluster (nothing to estimate between-cluster variation from)
        or a single item; ``se`` is NaN.

    Notes
    -----
    Assumes clusters are independent of each other, while items within a cluster may be
    correlated arbitrarily. With ``correction=None`` the variance is eq. 4 of Miller (2024):

    ``SE_C^2 = SE_CLT^2 + (1/n^2) sum_c sum_i sum_{j != i} (s_ic - mean)(s_jc - mean)``

    where ``SE_CLT^2 = s^2 / n`` uses the sample variance (as :func:`clt_se`). Both options
    equal :func:`clt_se` when every item is its own cluster. Cluster-robust standard
    errors are unreliable with few clusters (a few dozen at least is a common rule);
    CR1 is the slightly larger, more cautious choice.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.clustered_se([1, 1, 0, 0, 1, 0], ["p1", "p1", "p2", "p2", "p3", "p3"])
    >>> r.n_clusters
    3
    """
    x = as_float_1d(scores, "scores")
    n = x.size
    codes, n_clusters = _cluster_codes(clusters, n)
    if correction not in (None, "cr1"):
        raise StatsInputError(f'correction must be None or "cr1"; got {correction!r}.')
    method = "clustered" if correction is None else "clustered-cr1"
    mean = float(x.mean())
    if n < 2 or n_clusters < 2:
        warn(
            f"clustered_se: {n_clusters} cluster(s) and {n} item(s); a cluster-robust standard "
            "error needs at least two clusters. se is NaN."
        )
        return MeanSE(mean, math.nan, n, n_clusters, method)
    resid = x - mean
    cluster_sums = np.bincount(codes, weights=resid, minlength=n_clusters)
    between = float(np.sum(cluster_sums * cluster_sums))
    if correction is None:
        sum_sq = float(np.sum(resid * resid))
        cross = between - sum_sq  # sum over pairs i != j within clusters
        var = sum_sq / (n * (n - 1)) + cross / (n * n)
    else:
        var = n_clusters / (n_clusters - 1) * between / (n * n)
    return MeanSE(mean, float(math.sqrt(max(var, 0.0))), n, n_clusters, method)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Result of :func:`paired_difference`.

    Attributes
    ----------
    estimate : float
        Mean of ``a - b``.
    se : float
        Standard error of the mean difference.
    low, high : float
        Normal-approximation confidence interval.
    statistic : float
        ``z = estimate / se``.
    pvalue : float
        Two-sided normal p-value.
    n, n_clusters : int
        Number of items and of clusters (``n`` when unclustered).
    confidence : float
        Nominal coverage of ``low``, ``high``.
    method : str
        How ``se`` was computed (see :class:`MeanSE`).
    """

    estimate: float
    se: float
    low: float
    high: float
    statistic: float
    pvalue: float
    n: int
    n_clusters: int
    confidence: float
    method: str


def paired_difference(
    a: ArrayLike,
    b: ArrayLike,
    clusters: ArrayLike | None = None,
    *,
    confidence: float = 0.95,
    correction: Literal["cr1"] | None = None,
) -> PairedDifference:
    """Mean paired difference of two conditions with SE, interval, z and p.

    Parameters
    ----------
    a, b : array_like of float, shape (n_items,)
        Per-item scores of conditions A and B on the same items, in the same order.
    clusters : array_like, optional
        Cluster label per item; when given the SE is cluster-robust (see
        :func:`clustered_se`).
    confidence : float
        Coverage of the interval.
    correction : {None, "cr1"}
        Small-sample factor for the clustered SE; ignored without ``clusters``.

    Returns
    -------
    PairedDifference
        ``estimate``, ``se``, ``low``, ``high``, ``statistic``, ``pvalue``, ``n``,
        ``n_clusters``, ``confidence``, ``method``.

    Raises
    ------
    StatsInputError
        If arrays are empty, of different lengths, or not finite.

    Warns
    -----
    StatsWarning
        If the SE is zero or undefined (one item, one cluster, or all differences equal);
        ``statistic`` and ``pvalue`` (and, when undefined, ``se``, ``low``, ``high``) are
        NaN.

    Notes
    -----
    Assumes *paired* scores: the SE is that of the per-item differences ``d_i = a_i - b_i``,
    which equals ``sqrt(SE_A^2 + SE_B^2 - 2 Cov)`` (Miller 2024, eq. 7) and is smaller than
    the unpaired SE when the conditions are positively correlated. The test is a
    large-sample z-test; for 0/1 outcomes and few discordant items prefer
    :func:`mcnemar`.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.paired_difference([1, 1, 0, 1, 1, 0], [1, 0, 0, 1, 0, 0])
    >>> round(r.estimate, 3)
    0.333
    """
    a_ = as_float_1d(a, "a")
    b_ = as_float_1d(b, "b")
    check_same_length(a_, b_, "a", "b")
    conf = check_confidence(confidence)
    d = a_ - b_
    if clusters is None:
        if correction is not None:
            raise StatsInputError("correction applies only with clusters; pass clusters too.")
        m = clt_se(d)
    else:
        m = clustered_se(d, clusters, correction=correction)
    z_crit = _two_sided_z(conf)
    if math.isnan(m.se):
        stat = pval = math.nan
    elif m.se == 0.0:
        warn(
            "paired_difference: every paired difference is the same, so the standard error is "
            "0 and the z-test is undefined; statistic and p-value are NaN."
        )
        stat = pval = math.nan
    else:
        stat = m.mean / m.se
        pval = float(2.0 * sps.norm.sf(abs(stat)))
    return PairedDifference(
        estimate=m.mean,
        se=m.se,
        low=m.mean - z_crit * m.se,
        high=m.mean + z_crit * m.se,
        statistic=float(stat),
        pvalue=pval,
        n=m.n,
        n_clusters=m.n_clusters,
        confidence=conf,
        method=m.method,
    )
