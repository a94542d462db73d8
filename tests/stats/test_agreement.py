"""Rater agreement: Cohen's kappa and Krippendorff's alpha with bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from steadyeval import stats

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example with
# 4 observers, 12 units and missing values; published: nominal 0.743, ordinal 0.815,
# interval 0.849.
KRIPPENDORFF_EXAMPLE = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def test_cohen_kappa_hand_computed() -> None:
    # 10 items: 4 both yes, 3 both no, 2 only A yes, 1 only B yes
    a = ["y"] * 4 + ["n"] * 3 + ["y"] * 2 + ["n"]
    b = ["y"] * 4 + ["n"] * 3 + ["n"] * 2 + ["y"]
    p_o = 0.7
    p_e = 0.6 * 0.5 + 0.4 * 0.5
    r = stats.cohen_kappa(a, b, n_resamples=500)
    assert r.estimate == pytest.approx((p_o - p_e) / (1 - p_e))
    assert r.low <= r.estimate <= r.high
    assert (r.n_units, r.n_categories, r.method) == (10, 2, "cohen-kappa")


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_scikit_learn(weights: str | None) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 200)
    b = np.where(rng.uniform(size=200) < 0.6, a, rng.integers(0, 5, 200))
    r = stats.cohen_kappa(a, b, weights=weights, n_resamples=200)  # type: ignore[arg-type]
    assert r.estimate == pytest.approx(metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12)


def test_cohen_kappa_interval_covers_the_truth_and_matches_a_naive_bootstrap() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 300)
    b = np.where(rng.uniform(size=300) < 0.5, a, rng.integers(0, 3, 300))
    r = stats.cohen_kappa(a, b, n_resamples=2000, seed=2)
    # the same bootstrap drawn the slow way: resample items, recompute kappa
    boot_rng = np.random.default_rng(3)
    naive = []
    for _ in range(1000):
        idx = boot_rng.integers(0, 300, 300)
        naive.append(stats.cohen_kappa(a[idx], b[idx], n_resamples=1).estimate)
    low, high = np.quantile(naive, [0.025, 0.975])
    assert r.low == pytest.approx(low, abs=0.015) and r.high == pytest.approx(high, abs=0.015)
    # agreement 0.5 + 0.5 * 1/3 with uniform marginals: kappa = 0.5
    assert r.low < 0.5 < r.high


def test_cohen_kappa_degenerate_and_invalid_input() -> None:
    with pytest.warns(stats.StatsWarning, match="undefined"):
        r = stats.cohen_kappa([1, 1, 1], [1, 1, 1], n_resamples=10)
    assert np.isnan(r.estimate) and np.isnan(r.low)
    with pytest.raises(stats.StatsInputError, match="same items"):
        stats.cohen_kappa([1, 0], [1, 0, 1])
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.cohen_kappa([1.0, NAN], [1.0, 0.0])
    with pytest.raises(stats.StatsInputError, match="None"):
        stats.cohen_kappa(["a", None], ["a", "b"])
    with pytest.raises(stats.StatsInputError, match="weights"):
        stats.cohen_kappa([1, 0], [1, 0], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="seed"):
        stats.cohen_kappa([1, 0], [1, 0], seed=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_alpha_textbook_example(level: str, published: float) -> None:
    r = stats.krippendorff_alpha(KRIPPENDORFF_EXAMPLE, level=level, n_resamples=200)  # type: ignore[arg-type]
    assert round(r.estimate, 3) == published
    assert r.n_units == 11  # unit 12 has a single rating and is not pairable
    assert r.n_categories == 5


@pytest.mark.filterwarnings("ignore::steadyeval.stats.StatsWarning")  # 5 units: some resamples
def test_krippendorff_alpha_nominal_by_hand() -> None:
    """Two raters, no missing values: the coincidence matrix written out by hand."""
    ratings = [[1, 1, 2, 2, 1], [1, 2, 2, 2, 1]]
    # pairs (both orders, weight 1/(2-1)): (1,1) x2 units -> o11 = 4, (2,2) x2 -> o22 = 4,
    # (1,2) and (2,1) once each. n_1 = 5, n_2 = 5, n = 10.
    d_o = 2
    d_e = 5 * 5 * 2
    r = stats.krippendorff_alpha(ratings, n_resamples=100)
    assert r.estimate == pytest.approx(1 - (10 - 1) * d_o / d_e)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_equals_the_krippendorff_package(level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 6, 80).astype(float)
    ratings = np.where(rng.uniform(size=(4, 80)) < 0.7, truth, rng.integers(1, 6, (4, 80)))
    ratings[rng.uniform(size=ratings.shape) < 0.25] = NAN
    r = stats.krippendorff_alpha(ratings, level=level, n_resamples=300)  # type: ignore[arg-type]
    want = krippendorff.alpha(reliability_data=ratings, level_of_measurement=level)
    assert r.estimate == pytest.approx(want, abs=1e-12)
    assert r.low < r.estimate < r.high


def test_krippendorff_alpha_two_raters_nominal_is_close_to_cohen_kappa() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 400)
    b = np.where(rng.uniform(size=400) < 0.6, a, rng.integers(0, 3, 400))
    alpha = stats.krippendorff_alpha(np.stack([a, b]).astype(float), n_resamples=10)
    kappa = stats.cohen_kappa(a, b, n_resamples=10)
    assert alpha.estimate == pytest.approx(kappa.estimate, abs=0.01)


def test_krippendorff_alpha_degenerate_and_invalid_input() -> None:
    with pytest.warns(stats.StatsWarning, match="undefined"):
        r = stats.krippendorff_alpha([[1, 1, 1], [1, 1, NAN]], n_resamples=10)
    assert np.isnan(r.estimate)
    with pytest.raises(stats.StatsInputError, match="two or more ratings"):
        stats.krippendorff_alpha([[1, NAN], [NAN, 2]])
    with pytest.raises(stats.StatsInputError, match="2-D"):
        stats.krippendorff_alpha([1, 2, 3])
    with pytest.raises(stats.StatsInputError, match="integers"):
        stats.krippendorff_alpha([["a", "b"], ["a", "a"]])
    with pytest.raises(stats.StatsInputError, match="level"):
        stats.krippendorff_alpha([[1, 2], [1, 2]], level="ratio")  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="infinite"):
        stats.krippendorff_alpha([[1, np.inf], [1, 2]])
