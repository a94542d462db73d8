"""Agreement of rankings: Spearman, Kendall τ-b, Kendall's W, rank consistency."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from ._errors import StatsInputError
from ._validate import (
    SeedLike,
    as_float_1d,
    as_float_2d,
    as_positive_int,
    check_same_length,
    make_rng,
    warn,
)

__all__ = [
    "CorrelationResult",
    "KendallWResult",
    "RankConsistencyResult",
    "kendall_tau",
    "kendall_w",
    "rank_consistency",
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


@dataclass(frozen=True, slots=True, eq=False)
class RankConsistencyResult:
    """Result of :func:`rank_consistency`.

    Attributes
    ----------
    per_model : ndarray of float, shape (n_models,)
        Share of subsets in which each model gets its modal (most frequent) rank.
    modal_rank : ndarray of int, shape (n_models,)
        Each model's modal rank (1 = best; the smallest rank if several are equally
        frequent).
    overall : float
        Share of subsets whose full ranking equals the modal full ranking.
    modal_ranking : ndarray of int, shape (n_models,)
        The modal full ranking as the rank of each model (lexicographically smallest
        among equally frequent rankings).
    ranks : ndarray of int, shape (n_subsets, n_models)
        The rank of every model on every subset.
    n_subsets : int
        Number of subsets.
    """

    per_model: NDArray[np.float64]
    modal_rank: NDArray[np.int64]
    overall: float
    modal_ranking: NDArray[np.int64]
    ranks: NDArray[np.int64]
    n_subsets: int


def _rank_rows(means: NDArray[np.float64]) -> NDArray[np.int64]:
    """Rank 1 = highest mean; ties keep column order (stable sort)."""
    order = np.argsort(-means, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(means.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, means.shape[1] + 1)
    return ranks.astype(np.int64)


def rank_consistency(
    scores: ArrayLike,
    *,
    n_subsets: int | None = None,
    subset_size: int | None = None,
    seed: SeedLike | None = None,
    subsets: Sequence[ArrayLike] | None = None,
) -> RankConsistencyResult:
    """How stable a model ranking is across random subsets of evaluation units.

    Parameters
    ----------
    scores : array_like of float, shape (n_units, n_models)
        Score of each model on each unit (e.g. P@1 per relation); higher is better.
    n_subsets : int
        Number of subsets ``S`` to draw (with ``subset_size`` and ``seed``).
    subset_size : int
        Units per subset, drawn without replacement; subsets are drawn independently.
    seed : int or numpy.random.Generator
        Source of randomness for drawing subsets.
    subsets : sequence of array_like of int, optional
        Explicit subsets (unit indices) instead of drawing them; then ``n_subsets``,
        ``subset_size`` and ``seed`` must be left out.

    Returns
    -------
    RankConsistencyResult
        ``per_model``, ``modal_rank``, ``overall``, ``modal_ranking``, ``ranks``,
        ``n_subsets``.

    Raises
    ------
    StatsInputError
        If ``scores`` is not a finite 2-D array with at least 2 models, if both or neither
        of ``subsets`` and (``n_subsets``, ``subset_size``, ``seed``) are given, or if a
        subset is empty or indexes outside ``scores``.

    Notes
    -----
    Follows the rank-consistency evaluation of the causal-probing paper (MISSION Study 2):
    on each subset, models are ranked by their mean score over the subset's units with a
    *stable* sort on descending score, so exact ties go to the model in the earlier
    column. A model's consistency is the share of subsets in which it has its most
    frequent rank; the overall consistency is the share of subsets whose whole ranking is
    the most frequent ranking. Units are assumed exchangeable; subsets overlap.

    Examples
    --------
    >>> from steadyeval import stats
    >>> scores = [[0.9, 0.5], [0.2, 0.6], [0.8, 0.7]]
    >>> r = stats.rank_consistency(scores, subsets=[[0, 2], [1], [0, 1, 2]])
    >>> r.per_model.tolist(), r.overall
    ([0.6666666666666666, 0.6666666666666666], 0.6666666666666666)
    """
    x = as_float_2d(scores, "scores")
    n_units, n_models = x.shape
    if n_models < 2:
        raise StatsInputError(
            f"scores must be units × models with at least 2 models (columns); got {n_models}."
        )
    drawn = n_subsets is not None or subset_size is not None or seed is not None
    if subsets is not None:
        if drawn:
            raise StatsInputError(
                "pass either explicit subsets or n_subsets/subset_size/seed, not both."
            )
        index_sets = []
        for i, sub in enumerate(subsets):
            idx = np.asarray(sub)
            if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
                raise StatsInputError(
                    f"subsets[{i}] must be a non-empty 1-D array of unit indices; got {sub!r}."
                )
            if bool(np.any((idx < 0) | (idx >= n_units))):
                raise StatsInputError(
                    f"subsets[{i}] indexes outside 0..{n_units - 1} (scores has {n_units} units)."
                )
            index_sets.append(idx)
        if not index_sets:
            raise StatsInputError("subsets is empty; pass at least one subset.")
        means = np.stack([x[idx].mean(axis=0) for idx in index_sets])
    else:
        if n_subsets is None or subset_size is None or seed is None:
            raise StatsInputError("pass n_subsets, subset_size and seed (or explicit subsets=...).")
        s = as_positive_int(n_subsets, "n_subsets")
        size = as_positive_int(subset_size, "subset_size")
        if size > n_units:
            raise StatsInputError(
                f"subset_size ({size}) exceeds the number of units ({n_units}); subsets are "
                "drawn without replacement."
            )
        rng = make_rng(seed)
        means = np.empty((s, n_models), dtype=np.float64)
        for i in range(s):
            idx = rng.choice(n_units, size=size, replace=False)
            means[i] = x[idx].mean(axis=0)
    ranks = _rank_rows(means)
    n_sub = ranks.shape[0]
    per_model = np.empty(n_models, dtype=np.float64)
    modal_rank = np.empty(n_models, dtype=np.int64)
    for j in range(n_models):
        counts = np.bincount(ranks[:, j], minlength=n_models + 1)
        best = int(np.argmax(counts))
        modal_rank[j] = best
        per_model[j] = counts[best] / n_sub
    uniq, counts = np.unique(ranks, axis=0, return_counts=True)
    top = int(np.argmax(counts))
    return RankConsistencyResult(
        per_model=per_model,
        modal_rank=modal_rank,
        overall=float(counts[top] / n_sub),
        modal_ranking=uniq[top].astype(np.int64),
        ranks=ranks,
        n_subsets=n_sub,
    )
