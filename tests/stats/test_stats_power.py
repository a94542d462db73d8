"""Sample size and minimum detectable difference for paired binary outcomes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from steadyeval import stats

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "stats" / "golden.json").read_text()
)


@pytest.mark.parametrize("case", GOLDEN["power"], ids=lambda c: f"{c['delta']}-{c['discordance']}")
def test_paired_power_matches_connor(case: dict[str, Any]) -> None:
    r = stats.paired_power(
        case["delta"], case["discordance"], alpha=case["alpha"], power=case["power"]
    )
    assert r.n_exact == pytest.approx(case["n_exact"], rel=1e-12)
    assert r.n == math.ceil(case["n_exact"])
    assert r.power >= case["power"]
    below = stats.paired_power(case["delta"], case["discordance"], alpha=case["alpha"], n=r.n - 1)
    assert below.power < case["power"]


def test_negative_delta_same_as_positive() -> None:
    assert stats.paired_power(-0.05, 0.3).n == stats.paired_power(0.05, 0.3).n


@pytest.mark.parametrize("power", [0.3, 0.8, 0.9])
@pytest.mark.parametrize("n", [50, 300, 2000])
def test_mdd_inverts_power(n: int, power: float) -> None:
    m = stats.minimum_detectable_difference(n, 0.34, power=power)
    back = stats.paired_power(m.delta, 0.34, n=n)
    assert back.power == pytest.approx(power, abs=1e-9)


def _exact_power_uncorrected_mcnemar(n: int, p10: float, p01: float, alpha: float) -> float:
    """Power of the asymptotic McNemar test, summed over the trinomial law of (b, c)."""
    crit = sps.chi2.ppf(1 - alpha, 1)
    total = 0.0
    for m in range(1, n + 1):  # m = number of discordant items
        pm = sps.binom.pmf(m, n, p10 + p01)
        if pm < 1e-14:
            continue
        b = np.arange(m + 1)
        reject = (b - (m - b)) ** 2 / m > crit
        total += pm * sps.binom.pmf(b, m, p10 / (p10 + p01))[reject].sum()
    return total


def test_connor_sample_size_gives_about_the_target_power() -> None:
    r = stats.paired_power(0.1, 0.3, power=0.8)
    exact = _exact_power_uncorrected_mcnemar(r.n, 0.2, 0.1, 0.05)
    assert exact == pytest.approx(0.8, abs=0.03)


def test_power_invalid_and_degenerate() -> None:
    with pytest.raises(stats.StatsInputError, match="cannot exceed discordance"):
        stats.paired_power(0.3, 0.2)
    with pytest.raises(stats.StatsInputError, match="non-zero"):
        stats.paired_power(0.0, 0.2)
    with pytest.raises(stats.StatsInputError, match="discordance is 0"):
        stats.paired_power(0.1, 0.0)
    with pytest.raises(stats.StatsInputError, match="either power"):
        stats.paired_power(0.1, 0.3, power=0.8, n=100)
    with pytest.raises(stats.StatsInputError, match="power"):
        stats.paired_power(0.1, 0.3, power=1.0)
    with pytest.warns(stats.StatsWarning, match="Use more items"):
        m = stats.minimum_detectable_difference(3, 0.05)
    assert math.isnan(m.delta)
