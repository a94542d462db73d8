"""Reducers for repeated samples per item: pass@k, majority vote, best-of-k, per-item means."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from steadyeval import stats


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> float:
    """Share of the k-subsets of n samples (c of them correct) that hold a correct one."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 0, 1), (5, 2, 1), (6, 2, 3), (7, 3, 5), (6, 6, 2)])
def test_pass_at_k_equals_enumeration_of_subsets(n: int, c: int, k: int) -> None:
    assert stats.pass_at_k(n, [c], k)[0] == pytest.approx(_pass_at_k_by_enumeration(n, c, k))


def test_pass_at_k_equals_binomial_formula_and_is_stable_for_large_n() -> None:
    n = np.array([10, 20, 200, 5000])
    c = np.array([3, 0, 17, 40])
    got = stats.pass_at_k(n, c, 5)
    want = [1 - math.comb(int(a - b), 5) / math.comb(int(a), 5) for a, b in zip(n, c, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # binomials of this size overflow floats; the product form does not
    big = stats.pass_at_k(100_000, [1, 50_000], 1000)
    assert big[0] == pytest.approx(0.01)
    assert big[1] == 1.0
    assert stats.pass_at_k(10, [0, 1, 5, 10], 1).tolist() == [0.0, 0.1, 0.5, 1.0]


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        ([5], [6], 1, "must not exceed n_samples"),
        ([5], [2], 6, "exceeds the samples"),
        ([5], [-1], 1, "non-negative integer"),
        ([5], [1.5], 1, "non-negative integer"),
        ([5, 5], [1, 2, 3], 1, "one entry per item"),
        ([5], [1], 0, "k must be an integer >= 1"),
        ([], [], 1, "empty"),
    ],
)
def test_pass_at_k_rejects_bad_counts(n: list[float], c: list[float], k: int, match: str) -> None:
    with pytest.raises(stats.StatsInputError, match=match):
        stats.pass_at_k(n, c, k)


def test_majority_vote_picks_most_frequent_answer_and_first_on_ties() -> None:
    groups = ["b", "b", "b", "b", "a", "a", "a", "a", "c", "c"]
    answers = ["x", "y", "y", None, "q", "p", "p", "q", None, float("nan")]
    correct = [1, 0, 0, 0, 0, 1, 1, 0, 0, 0]
    r = stats.majority_vote(groups, answers, correct)
    assert r.groups.tolist() == ["a", "b", "c"]
    # a: q and p tie at 2 votes, q appears first in input order
    assert r.answer.tolist() == ["q", "y", None]
    assert r.correct.tolist() == [False, False, False]
    assert r.votes.tolist() == [2, 2, 0]
    assert r.n_answered.tolist() == [4, 3, 0]
    assert r.n_samples.tolist() == [4, 4, 2]
    np.testing.assert_allclose(r.vote_share, [0.5, 0.5, 0.0])


def test_majority_vote_marks_the_winning_answers_correctness() -> None:
    r = stats.majority_vote([1, 1, 1, 2, 2, 2], [7, 7, 3, 5, 5, 5], [1, 1, 0, 1, 1, 1])
    assert r.answer.tolist() == [7, 5]
    assert r.correct.tolist() == [True, True]


def test_majority_vote_refuses_inconsistent_correctness_and_unhashable_answers() -> None:
    with pytest.raises(stats.StatsInputError, match="both correct and incorrect"):
        stats.majority_vote([0, 0], ["A", "A"], [1, 0])
    with pytest.raises(stats.StatsInputError, match="hashable"):
        stats.majority_vote([0, 0], [["A"], ["B"]], [1, 0])
    with pytest.raises(stats.StatsInputError, match="one answer per sample"):
        stats.majority_vote([0, 0], ["A"], [1, 0])
    with pytest.raises(stats.StatsInputError, match="one label per sample"):
        stats.majority_vote([0], ["A", "B"], [1, 0])


def test_best_of_k_takes_highest_score_first_on_ties_within_first_k() -> None:
    groups = [0, 1, 0, 1, 0, 1]
    scores = [0.5, 0.9, 0.7, 0.9, 0.99, 0.1]
    correct = [0, 0, 1, 1, 0, 1]
    r = stats.best_of_k(groups, scores, correct)
    assert r.index.tolist() == [4, 1]  # group 1: tie at 0.9, the earlier sample wins
    assert r.correct.tolist() == [False, False]
    r2 = stats.best_of_k(groups, scores, correct, k=2)
    assert r2.index.tolist() == [2, 1]  # sample 4 is group 0's third, outside k=2
    assert r2.correct.tolist() == [True, False]
    assert r2.n_considered.tolist() == [2, 2]
    with pytest.raises(stats.StatsInputError, match="fewer than k=4"):
        stats.best_of_k(groups, scores, correct, k=4)
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.best_of_k(groups, [np.nan] * 6, correct)


def test_best_of_1_is_the_first_sample() -> None:
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 20, size=200)
    correct = rng.integers(0, 2, size=200)
    r = stats.best_of_k(groups, rng.normal(size=200), correct, k=1)
    first = [int(np.flatnonzero(groups == g)[0]) for g in r.groups]
    assert r.index.tolist() == first


def test_mean_over_samples_gives_one_value_per_item() -> None:
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(30), 4)
    perm = rng.permutation(groups.size)
    x = rng.integers(0, 2, size=groups.size).astype(float)
    r = stats.mean_over_samples(groups[perm], x[perm])
    np.testing.assert_allclose(r.mean, x.reshape(30, 4).mean(axis=1))
    assert r.count.tolist() == [4] * 30
    # with equal counts, the per-item mean is pass@1
    np.testing.assert_allclose(
        stats.pass_at_k(4, x.reshape(30, 4).sum(axis=1), 1), r.mean, rtol=1e-12
    )
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.mean_over_samples([0, 1], [1.0, np.nan])
    with pytest.raises(stats.StatsInputError, match="groups contains NaN"):
        stats.mean_over_samples([0.0, np.nan], [1.0, 0.0])
