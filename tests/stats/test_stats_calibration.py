"""ECE, RMS calibration error, Brier score, reliability bins."""

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


@pytest.mark.parametrize("case", GOLDEN["calibration"], ids=lambda c: str(len(c["correct"])))
def test_calibration_matches_golden_loops(case: dict[str, Any]) -> None:
    conf, corr, n_bins = case["confidence"], case["correct"], case["n_bins"]
    w = stats.expected_calibration_error(conf, corr, n_bins=n_bins)
    m = stats.expected_calibration_error(conf, corr, n_bins=n_bins, binning="equal-mass")
    rms = stats.rms_calibration_error(conf, corr, bin_size=case["bin_size"])
    assert w.statistic == pytest.approx(case["ece_equal_width"], rel=1e-12)
    assert m.statistic == pytest.approx(case["ece_equal_mass"], rel=1e-12)
    assert rms.statistic == pytest.approx(case["rms"], rel=1e-12)
    assert rms.n_bins == max(1, len(conf) // case["bin_size"])
    assert stats.brier_score(conf, corr).statistic == pytest.approx(case["brier"], rel=1e-12)


@pytest.mark.parametrize(
    "case", GOLDEN["rms_reference"], ids=lambda c: f"n{len(c['correct'])}-b{c['n_bins']}"
)
def test_rms_reference_mode_matches_golden(case: dict[str, Any]) -> None:
    conf, corr = case["confidence"], case["correct"]
    r = stats.rms_calibration_error(conf, corr, bin_size=case["bin_size"], mode="mmlu-reference")
    assert r.statistic == pytest.approx(case["rmsce"], rel=1e-12)
    assert (r.n_bins, r.mode) == (case["n_bins"], "mmlu-reference")
    if "textbook" in case:  # the hand-worked case: the same folded bins, textbook formula
        t = stats.rms_calibration_error(conf, corr, bin_size=case["bin_size"])
        assert t.mode == "textbook"
        assert t.statistic != pytest.approx(case["rmsce"])


def test_rms_reference_mode_by_hand() -> None:
    # Folding: 0.2 (wrong) becomes 0.8 (right); 0.6/0.7/0.9 stay. Sorted folded values
    # .6(1) .7(0) | .8(1) .9(1): weighted gaps .5 * (.5 - .65) and .5 * (1 - .85).
    r = stats.rms_calibration_error(
        [0.2, 0.6, 0.7, 0.9], [0, 1, 0, 1], n_bins=2, mode="mmlu-reference"
    )
    assert r.statistic == pytest.approx((2 * 0.075**2) ** 0.25)
    assert r.bins.confidence.tolist() == pytest.approx([0.65, 0.85])
    assert r.bins.accuracy.tolist() == [0.5, 1.0]
    # Exactly 0.5 is not folded (the rule: flip when c < 0.5).
    half = stats.rms_calibration_error([0.5, 0.5], [1, 1], mode="mmlu-reference")
    assert half.statistic == pytest.approx((0.5**2) ** 0.25)
    with pytest.raises(stats.StatsInputError, match="mode"):
        stats.rms_calibration_error([0.5], [1], mode="hendrycks")  # type: ignore[arg-type]


def test_reliability_bins_by_hand() -> None:
    conf = [0.05, 0.1, 0.3, 0.35, 0.8, 1.0, 0.0]
    corr = [0, 0, 1, 0, 1, 1, 0]
    r = stats.reliability_bins(conf, corr, n_bins=4)
    # right-closed bins: (0, .25] incl. 0, (.25, .5], (.5, .75] (empty), (.75, 1]
    assert r.count.tolist() == [3, 2, 0, 2]
    assert r.confidence[0] == pytest.approx(0.05)
    assert r.accuracy[:2].tolist() == [0.0, 0.5]
    assert math.isnan(r.confidence[2]) and math.isnan(r.accuracy[2])
    assert r.low.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert r.high.tolist() == [0.25, 0.5, 0.75, 1.0]
    # boundary value 0.25 goes to the lower bin
    assert stats.reliability_bins([0.25], [1], n_bins=4).count.tolist() == [1, 0, 0, 0]
    em = stats.reliability_bins(conf, corr, n_bins=3, binning="equal-mass")
    assert em.count.tolist() == [3, 2, 2]
    assert em.low.tolist() == [0.0, 0.3, 0.8] and em.high.tolist() == [0.1, 0.35, 1.0]


def test_ece_and_rms_hand_example() -> None:
    conf = [0.1, 0.15, 0.9, 0.95]
    corr = [0, 1, 1, 1]
    # bin 1: conf 0.125, acc 0.5 (gap .375); bin 2: conf .925, acc 1 (gap .075)
    ece = stats.expected_calibration_error(conf, corr, n_bins=2)
    assert ece.statistic == pytest.approx(0.5 * 0.375 + 0.5 * 0.075)
    rms = stats.rms_calibration_error(conf, corr, n_bins=2)
    assert rms.statistic == pytest.approx(math.sqrt(0.5 * 0.375**2 + 0.5 * 0.075**2))
    # fewer items than bin_size: one bin, |accuracy - mean confidence|
    one = stats.rms_calibration_error(conf, corr)
    assert one.n_bins == 1 and one.statistic == pytest.approx(abs(0.75 - 0.525))


def test_perfect_calibration_in_bins_gives_zero() -> None:
    conf = np.repeat([0.2, 0.5, 0.8], 10)
    corr = np.r_[[1] * 2 + [0] * 8, [1] * 5 + [0] * 5, [1] * 8 + [0] * 2]
    assert stats.expected_calibration_error(conf, corr).statistic == pytest.approx(0.0)
    assert stats.rms_calibration_error(conf, corr, n_bins=3).statistic == pytest.approx(0.0)


def test_brier_by_hand_and_se() -> None:
    r = stats.brier_score([0.9, 0.2], [1, 0])
    assert r.statistic == pytest.approx((0.01 + 0.04) / 2)
    assert r.se == pytest.approx(np.std([0.01, 0.04], ddof=1) / math.sqrt(2))
    with pytest.warns(stats.StatsWarning, match="single item"):
        assert math.isnan(stats.brier_score([0.5], [1]).se)


def test_calibration_invalid() -> None:
    with pytest.raises(stats.StatsInputError, match="probability in"):
        stats.expected_calibration_error([0.5, 1.2], [1, 0])
    with pytest.raises(stats.StatsInputError, match="0/1"):
        stats.brier_score([0.5, 0.2], [1, 3])
    with pytest.raises(stats.StatsInputError, match="exceeds the number of items"):
        stats.expected_calibration_error([0.5, 0.2], [1, 0], n_bins=3, binning="equal-mass")
    with pytest.raises(stats.StatsInputError, match="binning"):
        stats.reliability_bins([0.5], [1], binning="quantile")  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="empty"):
        stats.rms_calibration_error([], [])
