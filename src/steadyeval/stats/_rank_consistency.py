"""Rank consistency: how stable a model ranking is across subsets of evaluation units, in
the exact mode (ties up to floating noise, earlier model first) or the reference mode (the
causal-probing authors' rounding and tie order)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import SeedLike, as_float_2d, as_positive_int, make_rng, warn

__all__ = [
    "REFERENCE_DECIMALS",
    "REFERENCE_MAX_MODELS",
    "TIE_TOLERANCE",
    "RankConsistencyResult",
    "rank_consistency",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Exact mode: two subset means ``a`` and ``b`` tie when ``|a - b| <= tol * max(1, |a|, |b|)``.
TIE_TOLERANCE = 1e-9
#: Reference mode: decimals the authors round each subset mean to (their scores are percentages).
REFERENCE_DECIMALS = 2
#: Reference mode reproduces the authors' tie order exactly for at most this many models.
REFERENCE_MAX_MODELS = 16


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
    means : ndarray of float, shape (n_subsets, n_models)
        The subset means the models were ranked by (rounded in the reference mode).
    tied : ndarray of bool, shape (n_subsets,)
        Whether two models tied on the subset, so that the tie rule decided part of its
        ranking (exact mode: within the tie tolerance; reference mode: equal once rounded).
    reference : bool
        Whether the reference mode (the authors' rounding and tie order) ranked them.
    """

    per_model: FloatArray
    modal_rank: IntArray
    overall: float
    modal_ranking: IntArray
    ranks: IntArray
    n_subsets: int
    means: FloatArray
    tied: BoolArray
    reference: bool


def _index_sets(subsets: Sequence[ArrayLike], n_units: int) -> list[IntArray]:
    out: list[IntArray] = []
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
        out.append(idx.astype(np.int64))
    if not out:
        raise StatsInputError("subsets is empty; pass at least one subset.")
    return out


def _drawn_sets(
    n_units: int, n_subsets: int | None, subset_size: int | None, seed: SeedLike | None
) -> list[IntArray]:
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
    return [rng.choice(n_units, size=size, replace=False).astype(np.int64) for _ in range(s)]


def _rank_exact(means: FloatArray, tol: float) -> tuple[IntArray, BoolArray]:
    """Rank 1 = highest mean. Means within ``tol`` (relative, at least absolute) of the next
    lower one form a tie group (chained); a group ranks its models in column order."""
    n_sub, n = means.shape
    order = np.argsort(-means, axis=1, kind="stable")
    ordered = np.take_along_axis(means, order, axis=1)
    hi, lo = ordered[:, :-1], ordered[:, 1:]
    scale = np.maximum(1.0, np.maximum(np.abs(hi), np.abs(lo)))
    same = (hi - lo) <= tol * scale
    group_in_order = np.concatenate(
        [np.zeros((n_sub, 1), dtype=np.int64), np.cumsum(~same, axis=1)], axis=1
    )
    group = np.empty_like(group_in_order)
    np.put_along_axis(group, order, group_in_order, axis=1)
    columns = np.broadcast_to(np.arange(n), means.shape)
    final = np.lexsort((columns, group), axis=1)  # by group (best first), then column
    ranks = np.empty((n_sub, n), dtype=np.int64)
    np.put_along_axis(ranks, final, np.broadcast_to(np.arange(1, n + 1), means.shape), axis=1)
    tied: BoolArray = np.asarray(same.any(axis=1), dtype=np.bool_)
    return ranks, tied


def _rank_reference(rounded: FloatArray) -> tuple[IntArray, BoolArray]:
    """The authors' ``np.argsort(ps)``: ascending, equal values in column order (their
    numpy's quicksort sorts up to 16 values by insertion, which keeps that order); the
    model at position ``k`` of the ascending order has rank ``n - k``."""
    n_sub, n = rounded.shape
    order = np.argsort(rounded, axis=1, kind="stable")
    ranks = np.empty((n_sub, n), dtype=np.int64)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(n, 0, -1), rounded.shape), axis=1)
    ordered = np.take_along_axis(rounded, order, axis=1)
    tied: BoolArray = np.asarray((ordered[:, 1:] == ordered[:, :-1]).any(axis=1), dtype=np.bool_)
    return ranks, tied


def _reference_means(x: FloatArray, index_sets: list[IntArray], decimals: int) -> FloatArray:
    """Per subset and model: ``np.mean`` of the 1-D run of the subset's unit scores in the
    subset's order (the authors' ``np.mean(ps)``, same summation), then Python's
    ``round(float(mean), decimals)``."""
    out = np.empty((len(index_sets), x.shape[1]))
    for i, idx in enumerate(index_sets):
        means = np.ascontiguousarray(x[idx].T).mean(axis=1)  # rows: one model's run
        out[i] = [round(float(v), decimals) for v in means]
    return out


def _summarise(
    ranks: IntArray, means: FloatArray, tied: BoolArray, reference: bool
) -> RankConsistencyResult:
    n_sub, n_models = ranks.shape
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
        means=means,
        tied=tied,
        reference=reference,
    )


def _check_mode(reference: bool, decimals: int | None, tie_tolerance: float | None) -> None:
    if not isinstance(reference, bool):
        raise StatsInputError(f"reference must be True or False; got {reference!r}.")
    if reference and tie_tolerance is not None:
        raise StatsInputError(
            "tie_tolerance applies to the exact mode only; the reference mode ties models "
            "whose rounded means are equal (set decimals instead)."
        )
    if not reference and decimals is not None:
        raise StatsInputError(
            "decimals applies to the reference mode only; pass reference=True to round the "
            "subset means as the authors do."
        )
    if decimals is not None and (
        isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral)
    ):
        raise StatsInputError(f"decimals must be an integer; got {decimals!r}.")
    if tie_tolerance is not None and (
        isinstance(tie_tolerance, bool)
        or not isinstance(tie_tolerance, numbers.Real)
        or not math.isfinite(float(tie_tolerance))
        or float(tie_tolerance) < 0
    ):
        raise StatsInputError(
            f"tie_tolerance must be a finite number >= 0 (0: only bit-equal means tie); "
            f"got {tie_tolerance!r}."
        )


def rank_consistency(
    scores: ArrayLike,
    *,
    n_subsets: int | None = None,
    subset_size: int | None = None,
    seed: SeedLike | None = None,
    subsets: Sequence[ArrayLike] | None = None,
    reference: bool = False,
    decimals: int | None = None,
    tie_tolerance: float | None = None,
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
    reference : bool, default False
        Rank as the causal-probing authors' script does: each subset mean rounded to
        ``decimals``, equal rounded means ordered as their ``np.argsort`` orders them (the
        later model ranks better). Default: the exact mode.
    decimals : int, optional
        Reference mode only: decimals of the rounding (default ``REFERENCE_DECIMALS`` = 2,
        the authors' rounding of percentages; pass 4 for scores on a 0–1 scale).
    tie_tolerance : float, optional
        Exact mode only: relative tolerance under which two subset means tie (default
        ``TIE_TOLERANCE`` = 1e-9; 0 ties only bit-equal means).

    Returns
    -------
    RankConsistencyResult
        ``per_model``, ``modal_rank``, ``overall``, ``modal_ranking``, ``ranks``,
        ``n_subsets``, ``means``, ``tied``, ``reference``.

    Raises
    ------
    StatsInputError
        If ``scores`` is not a finite 2-D array with at least 2 models, if both or neither
        of ``subsets`` and (``n_subsets``, ``subset_size``, ``seed``) are given, if a subset
        is empty or indexes outside ``scores``, or if ``decimals`` / ``tie_tolerance`` is
        given for the other mode.

    Warns
    -----
    StatsWarning
        Reference mode with more than ``REFERENCE_MAX_MODELS`` models and a tie: the
        authors' numpy orders such ties by its quicksort's partitioning, which is not
        reproduced (the column order is used).

    Notes
    -----
    Follows the rank-consistency evaluation of the causal-probing paper (MISSION Study 2):
    on each subset, models are ranked by their mean score over the subset's units. A
    model's consistency is the share of subsets in which it has its most frequent rank; the
    overall consistency is the share of subsets whose whole ranking is the most frequent
    ranking. Units are assumed exchangeable; subsets overlap.

    *Exact mode* (default): the mean is ``scores[subset].mean(axis=0)``. Means that differ by
    at most ``tie_tolerance · max(1, |a|, |b|)`` tie — the same mean summed in another
    order differs in its last bits, and such noise must not decide a rank — and tie groups
    chain (a ties b, b ties c: one group). Within a group the earlier column ranks better.

    *Reference mode* (``reference=True``), after c-box/causalEval ``cal_rank_consis.py`` at
    commit 85d237dff997ad4b044a0f329e15cf6531676c75: each subset mean is ``np.mean`` of the
    subset's unit scores in the subset's order, rounded with Python's ``round(.., 2)``
    (lines 159-160); models are ordered by ``np.argsort`` of those means, ascending (line
    97), and a model's rank is its position in that order (line 27; reported here as
    ``n_models - position``, 1 = best). Their numpy (1.22.3, ``requirements.txt``) sorts up
    to 16 values by insertion sort (``aquicksort``, ``SMALL_QUICKSORT`` in
    ``numpy/core/src/npysort/quicksort.c.src``), so equal rounded means keep column order in
    the ascending sort: among tied models the *later* column ranks better, the opposite of
    the exact mode. The shares (their lines 23-46) are the same computation in both modes.
    A unit on which every model scores 0 enters every mean as a 0, as in their script.

    Examples
    --------
    >>> from steadyeval import stats
    >>> scores = [[0.9, 0.5], [0.2, 0.6], [0.8, 0.7]]
    >>> r = stats.rank_consistency(scores, subsets=[[0, 2], [1], [0, 1, 2]])
    >>> r.per_model.tolist(), r.overall
    ([0.6666666666666666, 0.6666666666666666], 0.6666666666666666)
    >>> tie = [[25.0, 25.0, 10.0]]
    >>> stats.rank_consistency(tie, subsets=[[0]]).ranks.tolist()
    [[1, 2, 3]]
    >>> stats.rank_consistency(tie, subsets=[[0]], reference=True).ranks.tolist()
    [[2, 1, 3]]
    """
    x = as_float_2d(scores, "scores")
    n_units, n_models = x.shape
    if n_models < 2:
        raise StatsInputError(
            f"scores must be units × models with at least 2 models (columns); got {n_models}."
        )
    _check_mode(reference, decimals, tie_tolerance)
    drawn = n_subsets is not None or subset_size is not None or seed is not None
    if subsets is not None:
        if drawn:
            raise StatsInputError(
                "pass either explicit subsets or n_subsets/subset_size/seed, not both."
            )
        index_sets = _index_sets(subsets, n_units)
    else:
        index_sets = _drawn_sets(n_units, n_subsets, subset_size, seed)
    if reference:
        places = REFERENCE_DECIMALS if decimals is None else int(decimals)
        means = _reference_means(x, index_sets, places)
        ranks, tied = _rank_reference(means)
        if n_models > REFERENCE_MAX_MODELS and bool(tied.any()):
            warn(
                f"rank_consistency(reference=True): {n_models} models and tied subset "
                f"means; the authors' numpy orders ties among more than "
                f"{REFERENCE_MAX_MODELS} values by its quicksort's partitioning, which is "
                "not reproduced (column order is used).",
            )
    else:
        tol = TIE_TOLERANCE if tie_tolerance is None else float(tie_tolerance)
        means = np.stack([x[idx].mean(axis=0) for idx in index_sets])
        ranks, tied = _rank_exact(means, tol)
    return _summarise(ranks, means, tied, reference)
