"""Anytime-valid confidence sequences, sequential sign decisions and importance allocation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from steadyeval import stats
from steadyeval.stats import StatsInputError

# --- input validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x": []}, "empty"),
        ({"x": [[0.1, 0.2]]}, "1-D"),
        ({"x": [0.1, 0.2], "lower": [0, 0, 0]}, "one value per observation"),
        ({"x": [0.1, 0.2], "lower": [0, 1], "upper": 1}, r"position 1 lower = 1\.0 >= upper"),
        ({"x": [0.1, 1.2, 0.3]}, r"x\[1\] = 1\.2 lies outside"),
        ({"x": [0.1, 0.2], "confidence": 1.0}, r"confidence must lie in \(0, 1\)"),
        ({"x": [0.1, 0.2], "confidence": 0}, "confidence"),
        ({"x": [0.1, np.nan]}, "NaN"),
        ({"x": [0.1], "grid": 1}, "grid must be an integer >= 2"),
    ],
)
def test_confidence_sequence_refuses_bad_input(kwargs: dict, match: str) -> None:
    args = {"lower": 0.0, "upper": 1.0, **kwargs}
    with pytest.raises(StatsInputError, match=match):
        stats.confidence_sequence(**args)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([],), {}, "empty"),
        (([0, 2, 1],), {}, r"differences\[1\] = 2\.0 is outside \[-1, 1\]"),
        (([0, 1], [1, 1]), {}, "weight_bound"),
        (([0, 1],), {"weight_bound": 2.0}, "without weights"),
        (([0, 1], [1, 1, 1]), {"weight_bound": 2.0}, "one entry per difference"),
        (([0, 1], [1, -1]), {"weight_bound": 2.0}, r"weights\[1\] = -1\.0 is negative"),
        (([0, 1], [1, 3]), {"weight_bound": 2.0}, r"weights\[1\] = 3\.0 exceeds its bound"),
        (([0, 1], [1, 1]), {"weight_bound": [2.0, 0.0]}, r"weight_bound\[1\]"),
        (([0, 1],), {"confidence": 1.5}, "confidence"),
    ],
)
def test_sequential_sign_refuses_bad_input(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(StatsInputError, match=match):
        stats.sequential_sign(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([], []), {}, "non-empty 1-D"),
        (([1, 2], [3]), {}, "one count per item"),
        (([1, -1], [3, 3]), {}, r"disagreements\[1\] must be a non-negative integer"),
        (([1, 1], [3, 2.5]), {}, r"cells\[1\]"),
        (([1, 4], [3, 3]), {}, "item 1 has 4 disagreements in 3 cells"),
        (([1, 1], [3, 3]), {"floor": 0.0}, "floor must be above 0"),
        (([1, 1], [3, 3]), {"floor": 1.5}, "floor must lie in"),
        (([1, 1], [3, 3]), {"prior": (0.0, 1.0)}, "prior"),
        ((["a"], [1]), {}, "integer counts"),
    ],
)
def test_importance_allocation_refuses_bad_input(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(StatsInputError, match=match):
        stats.importance_allocation(*args, **kwargs)


# --- confidence sequence properties --------------------------------------------------


def test_running_intersection_is_nested_and_contains_the_mean() -> None:
    x = np.random.default_rng(3).beta(2, 5, 3000)  # mean 2/7
    cs = stats.confidence_sequence(x, 0, 1)
    assert np.all(np.diff(cs.low) >= 0) and np.all(np.diff(cs.high) <= 0)
    assert np.all(cs.low <= 2 / 7) and np.all(cs.high >= 2 / 7)
    assert cs.excludes(2 / 7) is None
    width = cs.high - cs.low
    assert width[2999] < width[299] / 2.5 < width[29] / 2.5
    np.testing.assert_allclose(cs.estimate, np.cumsum(x) / np.arange(1, 3001))


def test_excludes_reports_the_first_index() -> None:
    cs = stats.confidence_sequence(np.ones(200) * 0.9, 0, 1)
    t = cs.excludes(0.2)
    assert t is not None and cs.low[t] > 0.2 and cs.low[t - 1] <= 0.2
    assert cs.excludes(0.9) is None


def test_a_finer_grid_only_tightens_within_one_grid_step() -> None:
    x = np.random.default_rng(4).binomial(1, 0.4, 800)
    coarse = stats.confidence_sequence(x, 0, 1, grid=50)
    fine = stats.confidence_sequence(x, 0, 1, grid=4901)  # holds every coarse point
    step = 1 / 49
    assert np.all(coarse.low <= fine.low + 1e-12) and np.all(coarse.high >= fine.high - 1e-12)
    assert np.all(fine.low - coarse.low <= step + 1e-9)
    assert np.all(coarse.high - fine.high <= step + 1e-9)


def test_per_observation_bounds_and_shift_equivariance() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, 500)
    a = stats.confidence_sequence(x, -1, 1, grid=401)
    b = stats.confidence_sequence(x + 3, np.full(500, 2.0), np.full(500, 4.0), grid=401)
    np.testing.assert_allclose(b.low, a.low + 3, atol=1e-9)
    np.testing.assert_allclose(b.high, a.high + 3, atol=1e-9)


def test_bounds_tighter_than_the_grid_clip_the_interval() -> None:
    x = np.full(5, 0.5)
    cs = stats.confidence_sequence(x, [0, 0.2, 0.2, 0.2, 0.2], [1, 1, 0.7, 0.7, 0.7])
    assert cs.low[1] >= 0.2 and cs.high[2] <= 0.7


@settings(max_examples=25, deadline=None)
@given(
    p=st.floats(0.05, 0.95),
    n=st.integers(1, 300),
    seed=st.integers(0, 2**16),
    conf=st.sampled_from([0.8, 0.95, 0.99]),
)
def test_bounds_are_ordered_within_the_range(p: float, n: int, seed: int, conf: float) -> None:
    x = np.random.default_rng(seed).binomial(1, p, n)
    cs = stats.confidence_sequence(x, 0, 1, conf, grid=200)
    assert np.all(cs.low <= cs.high) and cs.low[0] >= 0 and cs.high[0] <= 1
    wider = stats.confidence_sequence(x, 0, 1, min(conf + 0.009, 0.999), grid=200)
    assert np.all(wider.low <= cs.low) and np.all(wider.high >= cs.high)


def _binomial_allowance(alpha: float, n: int) -> float:
    """Largest null miss rate that a valid alpha procedure shows with probability 0.999."""
    return float(sps.binom.ppf(0.999, n, alpha)) / n


def test_confidence_sequence_covers_under_continuous_monitoring() -> None:
    """300 null sequences of paired differences in {-1, 0, 1} (mean 0.05): the share whose
    running interval ever misses the mean stays within alpha plus a binomial allowance."""
    rng = np.random.default_rng(11)
    reps, n = 300, 400
    misses = 0
    for _ in range(reps):
        d = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.15, 0.65, 0.20])
        cs = stats.confidence_sequence(d, -1, 1, 0.8, grid=200)
        misses += cs.excludes(0.05) is not None
    assert misses / reps <= _binomial_allowance(0.2, reps)


# --- sequential sign -------------------------------------------------------------------


def test_sign_decides_a_clear_difference_early_in_both_directions() -> None:
    rng = np.random.default_rng(2)
    d = rng.choice([-1.0, 0.0, 1.0], size=2000, p=[0.05, 0.7, 0.25])
    up = stats.sequential_sign(d)
    down = stats.sequential_sign(-d)
    assert up.decision == 1 and down.decision == -1
    assert up.stop is not None and up.stop < 300 and up.stop == down.stop
    ev = np.logaddexp(up.log_wealth_up, up.log_wealth_down) - np.log(2)
    assert ev[up.stop] >= np.log(20) and np.all(ev[: up.stop] < np.log(20))


def test_sign_undecided_on_ties() -> None:
    r = stats.sequential_sign(np.zeros(500))
    assert r.decision == 0 and r.stop is None
    assert np.all(r.log_wealth_up == 0) and np.all(r.log_wealth_down == 0)


def test_unit_weights_equal_no_weights() -> None:
    d = np.random.default_rng(0).choice([-1.0, 0.0, 1.0], size=300)
    a = stats.sequential_sign(d)
    b = stats.sequential_sign(d, np.ones(300), weight_bound=1.0)
    np.testing.assert_array_equal(a.log_wealth_up, b.log_wealth_up)


def test_sign_false_decisions_under_the_null_within_alpha() -> None:
    """300 null sequences (mean difference exactly 0, monitored after every observation):
    the false-decision rate stays within alpha plus a binomial allowance."""
    rng = np.random.default_rng(12)
    reps, n, alpha = 300, 1000, 0.2
    d = rng.choice([-1.0, 0.0, 1.0], size=(reps, n), p=[0.2, 0.6, 0.2])
    wrong = sum(stats.sequential_sign(row, confidence=1 - alpha).decision != 0 for row in d)
    assert wrong / reps <= _binomial_allowance(alpha, reps)


def test_importance_weighted_sign_is_valid_under_the_null() -> None:
    """Adaptive item sampling with p/q weights: 300 null sequences of 60 items whose
    differences have item means summing to zero (some items never disagree)."""
    rng = np.random.default_rng(13)
    item_mean = np.concatenate([np.full(10, 0.3), np.full(10, -0.3), np.zeros(40)])
    disagree = np.concatenate([np.full(20, 0.5), np.full(20, 0.2), np.full(20, 0.02)])
    reps, n, batch, alpha = 300, 600, 20, 0.2
    wrong = 0
    for _ in range(reps):
        dis, seen = np.zeros(60, dtype=int), np.zeros(60, dtype=int)
        d, w, bound = [], [], []
        for _ in range(n // batch):
            alloc = stats.importance_allocation(dis, seen, floor=0.2)
            items = rng.choice(60, size=batch, p=alloc.probabilities)
            # P(+1) - P(-1) = item mean, P(+1) + P(-1) = disagreement rate
            up = (disagree[items] + item_mean[items]) / 2
            down = (disagree[items] - item_mean[items]) / 2
            u = rng.random(batch)
            di = np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))
            np.add.at(seen, items, 1)
            np.add.at(dis, items, (di != 0).astype(int))
            d += list(di)
            w += list(alloc.weights[items])
            bound += [alloc.weight_bound] * batch
        r = stats.sequential_sign(d, w, weight_bound=bound, confidence=1 - alpha)
        wrong += r.decision != 0
    assert wrong / reps <= _binomial_allowance(alpha, reps)


# --- importance allocation -------------------------------------------------------------


def test_allocation_is_neyman_with_a_floor() -> None:
    a = stats.importance_allocation([0, 8, 18], [18, 18, 18], floor=0.25, prior=(1, 1))
    rate = np.array([1, 9, 19]) / 20
    expected = 0.75 * np.sqrt(rate) / np.sqrt(rate).sum() + 0.25 / 3
    np.testing.assert_allclose(a.probabilities, expected)
    np.testing.assert_allclose(a.weights, (1 / 3) / expected)
    assert a.weight_bound == pytest.approx(a.weights.max()) and a.weight_bound <= 1 / 0.25


def test_no_data_or_floor_one_is_uniform() -> None:
    np.testing.assert_allclose(stats.importance_allocation([0] * 4, [0] * 4).probabilities, 0.25)
    a = stats.importance_allocation([0, 9], [10, 10], floor=1.0)
    np.testing.assert_allclose(a.weights, 1.0)
    assert a.weight_bound == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(
    counts=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=30),
    floor=st.floats(0.01, 1.0),
)
def test_allocation_weights_keep_the_mean(counts: list[tuple[int, int]], floor: float) -> None:
    dis = [min(a, b) for a, b in counts]
    seen = [max(a, b) for a, b in counts]
    a = stats.importance_allocation(dis, seen, floor=floor)
    assert a.probabilities.sum() == pytest.approx(1.0)
    assert np.all(a.probabilities >= floor / len(counts) * (1 - 1e-12))
    # E_q[w_i f_i] = mean_i f_i for any per-item function f
    f = np.arange(len(counts), dtype=float)
    assert float(np.sum(a.probabilities * a.weights * f)) == pytest.approx(f.mean())
    assert a.weight_bound <= 1 / floor * (1 + 1e-9)


def test_sign_interval_leaves_zero_exactly_when_the_test_decides() -> None:
    for seed in range(60):
        rng = np.random.default_rng(seed)
        d = (rng.random(300) < 0.58).astype(int) - (rng.random(300) < 0.5)
        cs, test = stats.sign_interval(d), stats.sequential_sign(d)
        assert cs.excludes(0.0) == test.stop
        assert np.all(np.diff(cs.low) >= 0) and np.all(np.diff(cs.high) <= 0)
        assert np.all(cs.low <= cs.high)


def test_sign_interval_with_weights_and_its_checks() -> None:
    rng = np.random.default_rng(3)
    d = (rng.random(200) < 0.7).astype(int) - (rng.random(200) < 0.4)
    w = rng.uniform(0.5, 2.0, 200)
    cs = stats.sign_interval(d, w, weight_bound=2.0)
    test = stats.sequential_sign(d, w, weight_bound=2.0)
    assert cs.excludes(0.0) == test.stop and test.decision == 1
    with pytest.raises(stats.StatsInputError, match="odd integer"):
        stats.sign_interval(d, grid=100)
    with pytest.raises(stats.StatsInputError, match="below 1"):
        stats.sign_interval(d, w * 0.2, weight_bound=0.5)
    with pytest.raises(stats.StatsInputError, match="outside"):
        stats.sign_interval([2, 0])


def test_sign_interval_covers_the_mean_under_monitoring() -> None:
    misses = 0
    for seed in range(200):
        rng = np.random.default_rng(5000 + seed)
        d = (rng.random(500) < 0.55).astype(int) - (rng.random(500) < 0.5)
        cs = stats.sign_interval(d, confidence=0.9)
        misses += bool(np.any((cs.low > 0.05) | (cs.high < 0.05)))
    assert misses / 200 <= 0.1 + 3 * np.sqrt(0.09 / 200)
