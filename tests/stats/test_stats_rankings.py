"""Spearman, Kendall τ-b, Kendall's W, rank consistency."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steadyeval import stats

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "stats" / "golden.json").read_text()
)


@pytest.mark.parametrize("case", GOLDEN["correlation"], ids=lambda c: str(len(c["x"])))
def test_correlations_match_scipy(case: dict[str, Any]) -> None:
    s = stats.spearman(case["x"], case["y"])
    k = stats.kendall_tau(case["x"], case["y"])
    assert (s.statistic, s.pvalue) == pytest.approx(tuple(case["spearman"]), rel=1e-10)
    assert (k.statistic, k.pvalue) == pytest.approx(tuple(case["kendall"]), rel=1e-10)
    assert (s.method, k.method, s.n) == ("spearman", "kendall-tau-b", len(case["x"]))


def test_correlation_hand_example() -> None:
    # one adjacent swap at each end: d^2 sum = 4, rho = 1 - 6*4/(5*24) = 0.8; tau = (8-2)/10
    assert stats.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).statistic == pytest.approx(0.8)
    assert stats.kendall_tau([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).statistic == pytest.approx(0.6)


def test_correlation_degenerate_and_invalid() -> None:
    for f in (stats.spearman, stats.kendall_tau):
        with pytest.warns(stats.StatsWarning, match="constant"):
            r = f([1, 1, 1, 1], [1, 2, 3, 4])
        assert math.isnan(r.statistic) and math.isnan(r.pvalue)
        with pytest.raises(stats.StatsInputError, match="at least 3 pairs"):
            f([1, 2], [2, 1])
        with pytest.raises(stats.StatsInputError, match="lengths"):
            f([1, 2, 3], [2, 1])


@pytest.mark.parametrize("case", GOLDEN["kendall_w"], ids=lambda c: str(np.shape(c["rankings"])))
def test_kendall_w_matches_friedman(case: dict[str, Any]) -> None:
    r = stats.kendall_w(case["rankings"])
    assert r.statistic == pytest.approx(case["w"], rel=1e-10)
    assert r.chi2 == pytest.approx(case["chi2"], rel=1e-10)
    assert r.pvalue == pytest.approx(case["pvalue"], rel=1e-9)
    assert (r.n_raters, r.n_items, r.df) == (
        *np.shape(case["rankings"]),
        np.shape(case["rankings"])[1] - 1,
    )


def test_kendall_w_hand_examples() -> None:
    assert stats.kendall_w([[1, 2, 3], [1, 2, 3]]).statistic == pytest.approx(1.0)
    # two opposite rankings: rank sums all equal -> W = 0
    assert stats.kendall_w([[1, 2, 3], [3, 2, 1]]).statistic == pytest.approx(0.0)
    # raw scores work; reversing every row leaves W unchanged
    x = np.array([[0.1, 0.5, 0.3, 0.9], [0.2, 0.4, 0.6, 0.8], [0.3, 0.1, 0.2, 0.7]])
    assert stats.kendall_w(x).statistic == pytest.approx(stats.kendall_w(-x).statistic)


def test_kendall_w_degenerate_and_invalid() -> None:
    with pytest.warns(stats.StatsWarning, match="entirely tied"):
        r = stats.kendall_w([[1, 1, 1], [2, 2, 2]])
    assert math.isnan(r.statistic)
    with pytest.raises(stats.StatsInputError, match="at least 2"):
        stats.kendall_w([[1, 2, 3]])


def test_rank_consistency_explicit_subsets_by_hand() -> None:
    # units × models; model 0 is best on unit 0 and 2, model 2 best on unit 1.
    scores = np.array(
        [
            [0.9, 0.5, 0.1],
            [0.1, 0.4, 0.8],
            [0.7, 0.6, 0.2],
        ]
    )
    subsets = [[0], [1], [2], [0, 1], [0, 2], [1, 2]]
    # means per subset -> ranks (1 = best):
    # [0]: .9 .5 .1 -> 1 2 3      [1]: .1 .4 .8 -> 3 2 1     [2]: .7 .6 .2 -> 1 2 3
    # [0,1]: .5 .45 .45 -> 1 2 3 (tie between models 1 and 2 -> earlier column first)
    # [0,2]: .8 .55 .15 -> 1 2 3  [1,2]: .4 .5 .5 -> 3 1 2 (tie -> model 1 before model 2)
    r = stats.rank_consistency(scores, subsets=subsets)
    expected_ranks = [[1, 2, 3], [3, 2, 1], [1, 2, 3], [1, 2, 3], [1, 2, 3], [3, 1, 2]]
    assert r.ranks.tolist() == expected_ranks
    assert r.modal_rank.tolist() == [1, 2, 3]
    assert r.per_model.tolist() == pytest.approx([4 / 6, 5 / 6, 4 / 6])
    assert r.overall == pytest.approx(4 / 6)
    assert r.modal_ranking.tolist() == [1, 2, 3]
    assert r.n_subsets == 6


def test_rank_consistency_random_subsets_seeded() -> None:
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=(40, 8)) + np.linspace(0, 0.3, 8)
    r1 = stats.rank_consistency(scores, n_subsets=300, subset_size=20, seed=1)
    r2 = stats.rank_consistency(scores, n_subsets=300, subset_size=20, seed=1)
    assert np.array_equal(r1.ranks, r2.ranks) and r1.overall == r2.overall
    assert r1.ranks.shape == (300, 8)
    assert np.all(np.sort(r1.ranks, axis=1) == np.arange(1, 9))
    assert np.all((r1.per_model > 0) & (r1.per_model <= 1))
    assert 0 < r1.overall <= r1.per_model.min()
    # all units: a single subset of everything has consistency 1
    full = stats.rank_consistency(scores, n_subsets=5, subset_size=40, seed=0)
    assert full.overall == 1.0


def test_rank_consistency_invalid() -> None:
    s = np.ones((4, 3))
    with pytest.raises(stats.StatsInputError, match="not both"):
        stats.rank_consistency(s, subsets=[[0]], seed=0)
    with pytest.raises(stats.StatsInputError, match="n_subsets, subset_size and seed"):
        stats.rank_consistency(s, n_subsets=10, subset_size=2)
    with pytest.raises(stats.StatsInputError, match="exceeds the number of units"):
        stats.rank_consistency(s, n_subsets=10, subset_size=5, seed=0)
    with pytest.raises(stats.StatsInputError, match="indexes outside"):
        stats.rank_consistency(s, subsets=[[0, 4]])
    with pytest.raises(stats.StatsInputError, match="at least 2 models"):
        stats.rank_consistency(np.ones((4, 1)), subsets=[[0]])
