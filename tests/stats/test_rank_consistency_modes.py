"""rank_consistency's exact mode (ties up to floating noise, earlier model first) and
reference mode (the causal-probing authors' rounding and argsort order), on cases small
enough to check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from steadyeval import stats


def _ranks(scores: list[list[float]], subsets: list[list[int]], **kw: object) -> list[list[int]]:
    return stats.rank_consistency(scores, subsets=subsets, **kw).ranks.tolist()  # type: ignore[arg-type]


def test_exact_tie_goes_to_the_earlier_model_reference_to_the_later() -> None:
    # models 0 and 1 tie at 25: exact mode ranks model 0 first; the authors' ascending
    # argsort keeps tied models in column order, so the later one ends higher (rank 1).
    scores = [[25.0, 25.0, 10.0]]
    assert _ranks(scores, [[0]]) == [[1, 2, 3]]
    assert _ranks(scores, [[0]], reference=True) == [[2, 1, 3]]
    r = stats.rank_consistency(scores, subsets=[[0]], reference=True)
    assert r.tied.tolist() == [True] and r.reference
    assert r.means.tolist() == [[25.0, 25.0, 10.0]]


def test_floating_noise_is_a_tie_in_the_exact_mode() -> None:
    # model 1's mean (0.1 + 0.2) / 2 = 0.15000000000000002 exceeds model 0's 0.15 by one
    # ulp: noise of the summation, not a difference between the models
    scores = [[0.15, 0.1], [0.15, 0.2]]
    means = stats.rank_consistency(scores, subsets=[[0, 1]]).means[0]
    assert means[1] > means[0] and means[1] - means[0] < 1e-15
    assert _ranks(scores, [[0, 1]]) == [[1, 2]]  # a tie: the earlier model first
    assert stats.rank_consistency(scores, subsets=[[0, 1]]).tied.tolist() == [True]
    assert _ranks(scores, [[0, 1]], tie_tolerance=0.0) == [[2, 1]]  # bit-exact comparison
    assert _ranks(scores, [[0, 1]], reference=True) == [[2, 1]]  # 0.15 == 0.15: later first
    # a real difference far above the tolerance is never a tie
    assert _ranks([[0.5, 0.5 + 1e-6]], [[0]]) == [[2, 1]]


def test_tie_groups_chain_and_order_by_column() -> None:
    eps = 6e-10  # within the tolerance (1e-9) between neighbours, beyond it end to end
    scores = [[0.3, 0.3 + 2 * eps, 0.3 + eps, 0.9]]
    r = stats.rank_consistency(scores, subsets=[[0]])
    # model 3 best; models 0, 1, 2 are one chained group, ranked in column order
    assert r.ranks.tolist() == [[2, 3, 4, 1]] and r.tied.tolist() == [True]


def test_reference_rounds_to_two_decimals_then_ties() -> None:
    # 25.004 and 25.001 differ (exact: model 0 first) but both round to 25.0, where the
    # authors' order puts model 1 first; decimals=3 separates them again
    scores = [[25.004, 25.001]]
    assert _ranks(scores, [[0]]) == [[1, 2]]
    assert _ranks(scores, [[0]], reference=True) == [[2, 1]]
    assert _ranks(scores, [[0]], reference=True, decimals=3) == [[1, 2]]
    # scores on a 0–1 scale: decimals=4 is the authors' rounding of percentages
    assert _ranks([[0.25004, 0.25001]], [[0]], reference=True, decimals=4) == [[2, 1]]


def test_reference_rounding_is_pythons_round_of_the_subset_mean() -> None:
    # the mean of 0.1, 0.2 and 0.3 is 0.20000000000000004 in binary; Python's round gives
    # 0.2, equal to model 1's 0.2: a tie, the later model first
    scores = [[0.1, 0.2], [0.2, 0.2], [0.3, 0.2]]
    r = stats.rank_consistency(scores, subsets=[[0, 1, 2]], reference=True, decimals=2)
    assert r.means.tolist() == [[0.2, 0.2]] and r.ranks.tolist() == [[2, 1]]
    # half-way cases go to the even digit (round(0.125, 2) == 0.12 < 0.13)
    assert _ranks([[0.125, 0.13]], [[0]], reference=True) == [[2, 1]]


def test_all_zero_unit_counts_as_zero_in_every_mean() -> None:
    # unit 2: every model scores 0 (causalEval's P264 "record label" under every prompt)
    scores = [[30.0, 20.0, 10.0], [10.0, 20.0, 30.0], [0.0, 0.0, 0.0]]
    # alone, every model ties: exact ranks in column order, reference in reverse
    assert _ranks(scores, [[2]]) == [[1, 2, 3]]
    assert _ranks(scores, [[2]], reference=True) == [[3, 2, 1]]
    # with others it lowers every mean equally: (30 + 0) / 2 = 15 > 10 > 5
    r = stats.rank_consistency(scores, subsets=[[0, 2], [1, 2]], reference=True)
    assert r.means.tolist() == [[15.0, 10.0, 5.0], [5.0, 10.0, 15.0]]
    assert r.ranks.tolist() == [[1, 2, 3], [3, 2, 1]]
    assert not r.tied.any()


def test_reference_shares_follow_the_ranks() -> None:
    scores = np.array([[25.0, 25.0], [30.0, 10.0], [0.0, 0.0]])
    subsets = [[0], [1], [2], [0, 2]]
    r = stats.rank_consistency(scores, subsets=subsets, reference=True)
    # [0]: tie -> model 1 first; [1]: model 0; [2]: tie -> model 1; [0, 2]: 12.5 each -> 1
    assert r.ranks.tolist() == [[2, 1], [1, 2], [2, 1], [2, 1]]
    assert r.per_model.tolist() == [0.75, 0.75] and r.overall == 0.75
    assert r.modal_rank.tolist() == [2, 1] and r.modal_ranking.tolist() == [2, 1]
    exact = stats.rank_consistency(scores, subsets=subsets)
    assert exact.ranks.tolist() == [[1, 2], [1, 2], [1, 2], [1, 2]] and exact.overall == 1.0


def test_drawn_subsets_are_the_same_in_both_modes() -> None:
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(0, 100, size=(30, 5)), 2)
    exact = stats.rank_consistency(scores, n_subsets=200, subset_size=10, seed=7)
    ref = stats.rank_consistency(scores, n_subsets=200, subset_size=10, seed=7, reference=True)
    # distinct means two decimals apart rank the same in both modes
    rounded_apart = ~ref.tied
    assert np.array_equal(exact.ranks[rounded_apart], ref.ranks[rounded_apart])
    assert np.allclose(exact.means, ref.means, atol=0.005 + 1e-12)


def test_reference_warns_past_sixteen_models_with_a_tie() -> None:
    scores = np.tile(np.arange(17.0), (2, 1))
    r = stats.rank_consistency(scores, subsets=[[0]], reference=True)  # no tie: no warning
    assert r.ranks[0].tolist() == list(range(17, 0, -1))
    scores[:, 1] = 0.0
    with pytest.warns(stats.StatsWarning, match="16"):
        stats.rank_consistency(scores, subsets=[[0]], reference=True)


def test_mode_options_are_checked() -> None:
    s = [[1.0, 2.0]]
    with pytest.raises(stats.StatsInputError, match="decimals applies to the reference"):
        stats.rank_consistency(s, subsets=[[0]], decimals=2)
    with pytest.raises(stats.StatsInputError, match="tie_tolerance applies to the exact"):
        stats.rank_consistency(s, subsets=[[0]], reference=True, tie_tolerance=0.0)
    with pytest.raises(stats.StatsInputError, match="tie_tolerance must be"):
        stats.rank_consistency(s, subsets=[[0]], tie_tolerance=-1.0)
    with pytest.raises(stats.StatsInputError, match="decimals must be an integer"):
        stats.rank_consistency(s, subsets=[[0]], reference=True, decimals=2.5)  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="reference must be True or False"):
        stats.rank_consistency(s, subsets=[[0]], reference="yes")  # type: ignore[arg-type]
