"""McNemar, the agreement table and Cochran's Q."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steadyeval import stats

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "stats" / "golden.json").read_text()
)
METHODS = ["exact", "midp", "asymptotic", "asymptotic-cc"]


@pytest.mark.parametrize("case", GOLDEN["mcnemar"], ids=lambda c: f"b{c['b']}-c{c['c']}")
@pytest.mark.parametrize("method", METHODS)
def test_mcnemar_matches_golden(case: dict[str, Any], method: Any) -> None:
    r = stats.mcnemar(case["b"], case["c"], method=method)
    stat, p = case[method]
    assert r.statistic == pytest.approx(stat, rel=1e-12, abs=1e-14)
    assert r.pvalue == pytest.approx(p, rel=1e-9, abs=1e-12)
    assert (r.b, r.c, r.method, r.n_discordant) == (
        case["b"],
        case["c"],
        method,
        case["b"] + case["c"],
    )


def test_mcnemar_mission_example_by_hand() -> None:
    # MISSION Study 1: free form vs NOTA list, only free form refuses 51, only the list 52.
    exact = stats.mcnemar(51, 52)
    assert exact.statistic == 51.0
    assert exact.pvalue == 1.0  # |b - c| = 1: P(X <= 51) = 1/2 exactly for n = 103
    asym = stats.mcnemar(51, 52, method="asymptotic")
    assert asym.statistic == pytest.approx(1 / 103)
    cc = stats.mcnemar(51, 52, method="asymptotic-cc")
    assert (cc.statistic, cc.pvalue) == (0.0, 1.0)


def test_mcnemar_small_exact_by_hand() -> None:
    # b=0, c=5: p = 2 * (1/2)^5 = 1/16; mid-p = 1/16 - 1/32.
    assert stats.mcnemar(0, 5).pvalue == pytest.approx(1 / 16)
    assert stats.mcnemar(0, 5, method="midp").pvalue == pytest.approx(1 / 32)
    # b=c: Fagerland et al. (2013), 2 [P(X <= k) - P(X = k)/2] capped at 1.
    # (1, 1): X ~ Bin(2, 1/2), P(X <= 1) = 3/4, P(X = 1) = 1/2: 2 (3/4 - 1/4) = 1.
    assert stats.mcnemar(1, 1, method="midp").pvalue == 1.0
    # (3, 3): X ~ Bin(6, 1/2), P(X <= 3) = 42/64, P(X = 3) = 20/64: 2 (42 - 10)/64 = 1
    # (the former rule, 1 - P(X = 3)/2 = 0.84375, is not the published one).
    assert stats.mcnemar(3, 3, method="midp").pvalue == 1.0
    # (2, 4): X ~ Bin(6, 1/2), P(X <= 2) = 22/64, P(X = 2) = 15/64: 2 (22 - 7.5)/64.
    assert stats.mcnemar(2, 4, method="midp").pvalue == pytest.approx(29 / 64)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.sampled_from(METHODS))
def test_mcnemar_symmetric_and_p_in_unit_interval(b: int, c: int, method: Any) -> None:
    if b + c == 0:
        return
    r1 = stats.mcnemar(b, c, method=method)
    r2 = stats.mcnemar(c, b, method=method)
    assert r1.statistic == r2.statistic
    assert r1.pvalue == r2.pvalue
    assert 0.0 <= r1.pvalue <= 1.0


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200))
def test_midp_never_exceeds_exact(b: int, c: int) -> None:
    if b + c == 0:
        return
    assert stats.mcnemar(b, c, method="midp").pvalue <= stats.mcnemar(b, c).pvalue


@pytest.mark.parametrize("method", METHODS)
def test_mcnemar_no_discordant_pairs_warns_nan(method: Any) -> None:
    with pytest.warns(stats.StatsWarning, match="no discordant pairs"):
        r = stats.mcnemar(0, 0, method=method)
    assert math.isnan(r.statistic) and math.isnan(r.pvalue)


@pytest.mark.parametrize(
    ("b", "c", "method", "match"),
    [
        (-1, 3, "exact", "non-negative integer"),
        (2.5, 3, "exact", "non-negative integer"),
        (True, 3, "exact", "non-negative integer"),
        (2, 3, "fisher", "method must be one of"),
    ],
)
def test_mcnemar_invalid_input(b: object, c: int, method: str, match: str) -> None:
    with pytest.raises(stats.StatsInputError, match=match):
        stats.mcnemar(b, c, method=method)  # type: ignore[arg-type]


def test_agreement_table_mission_counts() -> None:
    # both refuse 82, only free form 51, only list 52, both answer 115 (n = 300).
    a = np.array([1] * 82 + [1] * 51 + [0] * 52 + [0] * 115, dtype=bool)
    b = np.array([1] * 82 + [0] * 51 + [1] * 52 + [0] * 115, dtype=bool)
    t = stats.agreement_table(a, b)
    assert (t.both, t.only_a, t.only_b, t.neither) == (82, 51, 52, 115)
    assert t.n == 300 and t.discordant == 103
    assert (t.successes_a, t.successes_b) == (133, 134)
    assert t.as_array().tolist() == [[82, 51], [52, 115]]
    assert t.mcnemar().pvalue == stats.mcnemar(51, 52).pvalue
    assert t.mcnemar(method="midp") == stats.mcnemar(51, 52, method="midp")


def test_agreement_table_accepts_01_and_validates() -> None:
    t = stats.agreement_table([1, 0, 1, 0], [1.0, 1.0, 0.0, 0.0])
    assert (t.both, t.only_a, t.only_b, t.neither) == (1, 1, 1, 1)
    with pytest.raises(stats.StatsInputError, match="lengths 3 and 2"):
        stats.agreement_table([1, 0, 1], [1, 0])
    with pytest.raises(stats.StatsInputError, match="only booleans or 0/1"):
        stats.agreement_table([1, 2], [1, 0])
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.agreement_table([1, float("nan")], [1, 0])
    with pytest.raises(stats.StatsInputError, match="empty"):
        stats.agreement_table([], [])
    with pytest.raises(stats.StatsInputError, match="non-negative integer"):
        stats.AgreementTable(1, -1, 0, 0)


@pytest.mark.parametrize("case", GOLDEN["cochran_q"], ids=lambda c: f"{len(c['matrix'])}")
def test_cochran_q_matches_statsmodels(case: dict[str, Any]) -> None:
    r = stats.cochran_q(case["matrix"])
    assert r.statistic == pytest.approx(case["statistic"], rel=1e-12)
    assert r.pvalue == pytest.approx(case["pvalue"], rel=1e-9)
    assert r.df == case["df"]
    assert (r.n_items, r.n_conditions) == np.shape(case["matrix"])


def test_cochran_q_two_conditions_equals_mcnemar_chi2() -> None:
    rng = np.random.default_rng(0)
    m = rng.integers(0, 2, size=(60, 2))
    t = stats.agreement_table(m[:, 0], m[:, 1])
    q = stats.cochran_q(m)
    mc = t.mcnemar(method="asymptotic")
    assert q.statistic == pytest.approx(mc.statistic)
    assert q.pvalue == pytest.approx(mc.pvalue)


def test_cochran_q_degenerate_and_invalid() -> None:
    with pytest.warns(stats.StatsWarning, match="no item discriminates"):
        r = stats.cochran_q([[1, 1, 1], [0, 0, 0]])
    assert math.isnan(r.statistic) and math.isnan(r.pvalue)
    with pytest.raises(stats.StatsInputError, match="at least 2 conditions"):
        stats.cochran_q([[1], [0]])
    with pytest.raises(stats.StatsInputError, match="2-D"):
        stats.cochran_q([1, 0, 1])
