"""Reducers for repeated samples per item: pass@k, majority vote, best-of-k, per-item means.

A model that answers each item K times at temperature > 0 gives K rows per item. These
functions reduce them to one value per item, which is what paired tests between models
need: the items are the independent units, the samples are not (treating them as
independent is pseudo-replication and shrinks standard errors by up to sqrt(K)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import as_binary, as_float_1d, as_positive_int, check_same_length, group_codes

__all__ = [
    "BestOfK",
    "GroupMeans",
    "MajorityVote",
    "best_of_k",
    "majority_vote",
    "mean_over_samples",
    "pass_at_k",
]


def _as_counts(values: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim > 1:
        raise StatsInputError(f"{name} must be 1-D (one count per item); got shape {arr.shape}.")
    arr = np.atleast_1d(arr)
    if arr.size == 0:
        raise StatsInputError(f"{name} is empty; pass at least one item.")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise StatsInputError(f"{name} must hold non-negative integer counts; got {arr.dtype}.")
    ok = np.isfinite(arr) & (arr >= 0) & (arr == np.floor(arr))
    if not np.all(ok):
        raise StatsInputError(
            f"{name} must hold non-negative integer counts; found {arr[~ok][0]!r}."
        )
    return arr.astype(np.int64)


def pass_at_k(n_samples: ArrayLike, n_correct: ArrayLike, k: int) -> NDArray[np.float64]:
    """Unbiased pass@k per item from ``n`` samples of which ``c`` are correct.

    Parameters
    ----------
    n_samples : int or array_like of int, shape (n_items,)
        Samples drawn per item, ``n``. A single number applies to every item.
    n_correct : array_like of int, shape (n_items,)
        Correct samples per item, ``0 <= c <= n``.
    k : int
        The k of pass@k, ``1 <= k <= n`` for every item.

    Returns
    -------
    numpy.ndarray of float, shape (n_items,)
        ``1 - C(n - c, k) / C(n, k)`` per item; average it for the benchmark's pass@k.

    Raises
    ------
    StatsInputError
        If a count is negative or not an integer, ``c > n``, ``k < 1`` or ``k > n``, or
        the arrays have different lengths.

    Notes
    -----
    The estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on
    Code": the probability that at least one of ``k`` samples drawn without replacement
    from the ``n`` is correct. It is unbiased for the chance that ``k`` fresh samples
    contain a correct one, assuming the ``n`` samples are i.i.d. given the item. It is
    computed as the product ``1 - prod_{i=n-c+1}^{n} (1 - k / i)`` (1 when ``n - c < k``),
    summed in logs, so no binomial coefficient is ever formed. ``k = 1`` gives ``c / n``.
    The items are the independent units: compare models with paired tests on these
    per-item values, not on samples.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.pass_at_k(10, [0, 1, 5, 10], k=1).tolist()
    [0.0, 0.1, 0.5, 1.0]
    >>> round(float(stats.pass_at_k(200, [3], k=100)[0]), 4)
    0.8769
    """
    k_ = as_positive_int(k, "k")
    n_arr = _as_counts(n_samples, "n_samples")
    c_arr = _as_counts(n_correct, "n_correct")
    if n_arr.size == 1 and c_arr.size > 1:
        n_arr = np.full(c_arr.shape, n_arr[0])
    check_same_length(n_arr, c_arr, "n_samples", "n_correct")
    if np.any(c_arr > n_arr):
        i = int(np.argmax(c_arr > n_arr))
        raise StatsInputError(
            f"n_correct must not exceed n_samples; item {i} has c={c_arr[i]}, n={n_arr[i]}."
        )
    if np.any(n_arr < k_):
        i = int(np.argmax(n_arr < k_))
        raise StatsInputError(
            f"k={k_} exceeds the samples of item {i} (n={n_arr[i]}); pass@k needs n >= k "
            "samples per item. Lower k or drop items with fewer samples."
        )
    pairs, inverse = np.unique(np.stack([n_arr, c_arr], axis=1), axis=0, return_inverse=True)
    values = np.ones(pairs.shape[0], dtype=np.float64)
    for row, (n, c) in enumerate(pairs):
        if n - c >= k_:
            terms = np.arange(n - c + 1, n + 1, dtype=np.float64)
            values[row] = 0.0 - math.expm1(float(np.sum(np.log1p(-k_ / terms))))
    out: NDArray[np.float64] = values[inverse.reshape(-1)]
    return out


def _is_missing(answer: Any) -> bool:
    """``None`` or a float NaN: an unmatched answer."""
    if answer is None:
        return True
    return isinstance(answer, float | np.floating) and math.isnan(answer)


@dataclass(frozen=True, slots=True)
class MajorityVote:
    """Result of :func:`majority_vote`: one entry per group (item), groups sorted.

    Attributes
    ----------
    groups : numpy.ndarray, shape (n_groups,)
        The distinct group labels, sorted.
    answer : numpy.ndarray of object, shape (n_groups,)
        The most frequent non-missing answer; ``None`` where every answer was missing.
    correct : numpy.ndarray of bool, shape (n_groups,)
        Whether that answer is correct (``False`` where every answer was missing).
    votes : numpy.ndarray of int, shape (n_groups,)
        Samples that gave the winning answer.
    n_answered : numpy.ndarray of int, shape (n_groups,)
        Samples with a non-missing answer.
    n_samples : numpy.ndarray of int, shape (n_groups,)
        All samples of the group.
    """

    groups: NDArray[Any]
    answer: NDArray[np.object_]
    correct: NDArray[np.bool_]
    votes: NDArray[np.int64]
    n_answered: NDArray[np.int64]
    n_samples: NDArray[np.int64]

    @property
    def vote_share(self) -> NDArray[np.float64]:
        """``votes / n_samples``: the winner's share of all samples, missing ones included."""
        share: NDArray[np.float64] = self.votes / self.n_samples
        return share


def _answer_codes(answers: ArrayLike, n: int) -> tuple[NDArray[np.intp], list[Any]]:
    """Code per sample (-1 for a missing answer) and the distinct answers by first appearance."""
    if isinstance(answers, np.ndarray) and answers.ndim != 1:
        raise StatsInputError(
            f"answers must be 1-D with one answer per sample; got shape {answers.shape}."
        )
    try:
        seq = answers.tolist() if isinstance(answers, np.ndarray) else list(answers)  # type: ignore[arg-type]
    except TypeError as exc:
        raise StatsInputError("answers must be a sequence with one answer per sample.") from exc
    if len(seq) != n:
        raise StatsInputError(
            f"answers must have one answer per sample; got {len(seq)} answers for {n} samples."
        )
    index: dict[Any, int] = {}
    codes = np.empty(n, dtype=np.intp)
    for pos, a in enumerate(seq):
        if _is_missing(a):
            codes[pos] = -1
            continue
        try:
            codes[pos] = index.setdefault(a, len(index))
        except TypeError as exc:
            raise StatsInputError(
                f"answers must be hashable (str, int, ...); sample {pos} holds {a!r}. "
                "Normalise answers to strings first."
            ) from exc
    return codes, list(index)


def majority_vote(groups: ArrayLike, answers: ArrayLike, correct: ArrayLike) -> MajorityVote:
    """Majority vote (self-consistency) over the samples of each group.

    Parameters
    ----------
    groups : array_like, shape (n_samples,)
        Group (item) label of each sample; any mutually comparable labels.
    answers : array_like, shape (n_samples,)
        Parsed answer of each sample (hashable: str, int, ...). ``None`` or NaN marks an
        unmatched answer, which does not vote.
    correct : array_like of bool or {0, 1}, shape (n_samples,)
        Whether each sample's answer is correct.

    Returns
    -------
    MajorityVote
        Per group: ``answer``, ``correct``, ``votes``, ``n_answered``, ``n_samples`` and
        the property ``vote_share``.

    Raises
    ------
    StatsInputError
        If lengths differ, ``correct`` is not 0/1, an answer is unhashable, or one answer
        is marked both correct and incorrect within a group (correctness must be a function
        of the answer within an item; check the scorer).

    Notes
    -----
    The winner is the most frequent non-missing answer of the group; ties go to the answer
    that appears first in input order. A group whose answers are all missing gets answer
    ``None`` and ``correct = False``: an unanswered item is wrong, as lm-evaluation-harness's
    majority filter would score it. Answers are compared by equality after hashing, so
    normalise them (strip, case) before voting. ``vote_share`` counts missing answers in
    the denominator. Groups are returned sorted by label, so two models' results on the
    same items align position by position.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.majority_vote(
    ...     ["q1", "q1", "q1", "q2", "q2"], ["A", "B", "B", None, None], [1, 0, 0, 0, 0]
    ... )
    >>> r.answer.tolist(), r.correct.tolist(), r.vote_share.round(2).tolist()
    (['B', None], [False, False], [0.67, 0.0])
    """
    ok = as_binary(correct, "correct")
    n = ok.shape[0]
    labels, g = group_codes(groups, n, "groups", unit="sample")
    a, distinct = _answer_codes(answers, n)
    n_groups = labels.shape[0]
    n_samples = np.bincount(g, minlength=n_groups).astype(np.int64)
    voted = a >= 0
    n_answered = np.bincount(g[voted], minlength=n_groups).astype(np.int64)
    answer = np.full(n_groups, None, dtype=object)
    is_correct = np.zeros(n_groups, dtype=np.bool_)
    votes = np.zeros(n_groups, dtype=np.int64)
    if np.any(voted):
        pos = np.flatnonzero(voted)
        key = g[pos] * len(distinct) + a[pos]
        uniq, first, inverse, count = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        n_right = np.bincount(inverse.reshape(-1), weights=ok[pos], minlength=uniq.size)
        mixed = (n_right > 0) & (n_right < count)
        if np.any(mixed):
            bad = int(uniq[np.argmax(mixed)])
            raise StatsInputError(
                f"answer {distinct[bad % len(distinct)]!r} of group "
                f"{labels[bad // len(distinct)]!r} is marked both correct and incorrect; "
                "correctness must be a function of the answer within an item."
            )
        grp = uniq // len(distinct)
        # most votes first, then earliest first appearance; the first row per group wins
        order = np.lexsort((first, -count, grp))
        head = np.ones(order.size, dtype=np.bool_)
        head[1:] = grp[order][1:] != grp[order][:-1]
        win = order[head]
        answer[grp[win]] = [distinct[int(u % len(distinct))] for u in uniq[win]]
        is_correct[grp[win]] = n_right[win] > 0
        votes[grp[win]] = count[win]
    return MajorityVote(labels, answer, is_correct, votes, n_answered, n_samples)


@dataclass(frozen=True, slots=True)
class BestOfK:
    """Result of :func:`best_of_k`: one entry per group (item), groups sorted.

    Attributes
    ----------
    groups : numpy.ndarray, shape (n_groups,)
        The distinct group labels, sorted.
    correct : numpy.ndarray of bool, shape (n_groups,)
        Correctness of the highest-scoring sample considered.
    index : numpy.ndarray of int, shape (n_groups,)
        Position of that sample in the input.
    n_considered : numpy.ndarray of int, shape (n_groups,)
        Samples the choice was made among (``k``, or all of the group's samples).
    """

    groups: NDArray[Any]
    correct: NDArray[np.bool_]
    index: NDArray[np.intp]
    n_considered: NDArray[np.int64]


def best_of_k(
    groups: ArrayLike, scores: ArrayLike, correct: ArrayLike, k: int | None = None
) -> BestOfK:
    """Correctness of the highest-scoring sample per group (best-of-k with a scorer).

    Parameters
    ----------
    groups : array_like, shape (n_samples,)
        Group (item) label of each sample.
    scores : array_like of float, shape (n_samples,)
        The selector's score of each sample (a reward model, a log-probability), finite.
    correct : array_like of bool or {0, 1}, shape (n_samples,)
        Whether each sample is correct.
    k : int, optional
        Consider only each group's first ``k`` samples in input order; every group must
        have at least ``k``. ``None`` (default): all of them.

    Returns
    -------
    BestOfK
        ``groups``, ``correct``, ``index`` (input position of the chosen sample),
        ``n_considered``.

    Raises
    ------
    StatsInputError
        If lengths differ, scores are not finite, ``correct`` is not 0/1, or a group has
        fewer than ``k`` samples.

    Notes
    -----
    Ties in score go to the sample that comes first in input order. The samples' order
    should be the order they were drawn in (the sample index), so that "the first ``k``"
    is a random subset. This is one draw of best-of-k, not an average over subsets of size
    ``k``.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.best_of_k([0, 0, 0, 1, 1], [0.2, 0.9, 0.9, 0.5, 0.1], [0, 1, 0, 0, 1])
    >>> r.correct.tolist(), r.index.tolist()
    ([True, False], [1, 3])
    """
    ok = as_binary(correct, "correct")
    n = ok.shape[0]
    s = as_float_1d(scores, "scores")
    check_same_length(s, ok, "scores", "correct")
    labels, g = group_codes(groups, n, "groups", unit="sample")
    n_groups = labels.shape[0]
    order = np.argsort(g, kind="stable")  # samples grouped, input order kept within a group
    sizes = np.bincount(g, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rank = np.arange(n) - np.repeat(starts, sizes)  # position within its group
    if k is not None:
        k_ = as_positive_int(k, "k")
        if np.any(sizes < k_):
            short = int(np.argmax(sizes < k_))
            raise StatsInputError(
                f"group {labels[short]!r} has {sizes[short]} samples, fewer than k={k_}; "
                "lower k or drop groups with fewer samples."
            )
        keep = order[rank < k_]
        considered = np.full(n_groups, k_, dtype=np.int64)
    else:
        keep = order
        considered = sizes.astype(np.int64)
    # within each group: highest score first, then earliest input position
    best = keep[np.lexsort((keep, -s[keep], g[keep]))]
    head = np.ones(best.size, dtype=np.bool_)
    head[1:] = g[best][1:] != g[best][:-1]
    chosen = best[head].astype(np.intp)
    return BestOfK(labels, ok[chosen], chosen, considered)


@dataclass(frozen=True, slots=True)
class GroupMeans:
    """Result of :func:`mean_over_samples`: one entry per group (item), groups sorted.

    Attributes
    ----------
    groups : numpy.ndarray, shape (n_groups,)
        The distinct group labels, sorted.
    mean : numpy.ndarray of float, shape (n_groups,)
        Mean of the group's values (its accuracy over samples).
    count : numpy.ndarray of int, shape (n_groups,)
        Samples per group.
    """

    groups: NDArray[Any]
    mean: NDArray[np.float64]
    count: NDArray[np.int64]


def mean_over_samples(groups: ArrayLike, correct: ArrayLike) -> GroupMeans:
    """Mean of the samples of each group: one value per item for paired tests.

    Parameters
    ----------
    groups : array_like, shape (n_samples,)
        Group (item) label of each sample.
    correct : array_like of float, shape (n_samples,)
        0/1 correctness (or any finite score) of each sample.

    Returns
    -------
    GroupMeans
        ``groups`` (sorted), ``mean``, ``count``.

    Raises
    ------
    StatsInputError
        If lengths differ or values are not finite.

    Notes
    -----
    Paired tests between models (:func:`paired_difference`, :func:`paired_bootstrap`)
    must get one value per item: the samples of an item are correlated, so passing them as
    separate items is pseudo-replication and understates the standard error. The mean over
    samples estimates the item's probability of a correct answer; with equal counts per
    item it is also pass@1. Groups come sorted by label so that two models' results on the
    same items align.

    Examples
    --------
    >>> from steadyeval import stats
    >>> r = stats.mean_over_samples(["b", "a", "b", "a"], [1, 0, 1, 1])
    >>> r.groups.tolist(), r.mean.tolist(), r.count.tolist()
    (['a', 'b'], [0.5, 1.0], [2, 2])
    """
    x = as_float_1d(correct, "correct")
    labels, g = group_codes(groups, x.shape[0], "groups", unit="sample")
    count = np.bincount(g, minlength=labels.shape[0]).astype(np.int64)
    mean = np.bincount(g, weights=x, minlength=labels.shape[0]) / count
    return GroupMeans(labels, mean, count)
