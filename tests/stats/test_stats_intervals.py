"""Wilson, Clopper–Pearson, CLT and clustered SEs, paired differences."""

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


@pytest.mark.parametrize(
    "case", GOLDEN["proportions"], ids=lambda c: f"{c['k']}of{c['n']}@{c['confidence']}"
)
def test_proportion_intervals_match_statsmodels(case: dict[str, Any]) -> None:
    w = stats.wilson_interval(case["k"], case["n"], confidence=case["confidence"])
    cp = stats.clopper_pearson_interval(case["k"], case["n"], confidence=case["confidence"])
    assert (w.low, w.high) == pytest.approx(tuple(case["wilson"]), rel=1e-9, abs=1e-12)
    assert (cp.low, cp.high) == pytest.approx(tuple(case["clopper_pearson"]), rel=1e-9, abs=1e-12)
    assert w.estimate == cp.estimate == case["k"] / case["n"]
    assert w.confidence == case["confidence"]


@settings(derandomize=True, max_examples=80, deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_intervals_contain_estimate(kn: tuple[int, int]) -> None:
    k, n = kn
    for f in (stats.wilson_interval, stats.clopper_pearson_interval):
        r = f(k, n)
        assert 0.0 <= r.low <= r.estimate <= r.high <= 1.0


def test_clopper_pearson_is_wider_than_wilson_at_half() -> None:
    w = stats.wilson_interval(50, 100)
    cp = stats.clopper_pearson_interval(50, 100)
    assert cp.low < w.low and cp.high > w.high


@pytest.mark.parametrize(
    ("k", "n", "conf", "match"),
    [
        (0, 0, 0.95, "n is 0"),
        (5, 4, 0.95, "must not exceed n"),
        (-1, 4, 0.95, "non-negative integer"),
        (1, 4, 1.0, "confidence"),
        (1, 4, 0.0, "confidence"),
    ],
)
def test_proportion_invalid(k: int, n: int, conf: float, match: str) -> None:
    for f in (stats.wilson_interval, stats.clopper_pearson_interval):
        with pytest.raises(stats.StatsInputError, match=match):
            f(k, n, confidence=conf)


def test_clt_se_by_hand() -> None:
    r = stats.clt_se([1, 0, 1, 1])
    # s^2 = 0.25 (ddof=1), se = sqrt(0.25 / 4)
    assert (r.mean, r.se, r.n, r.n_clusters, r.method) == (0.75, 0.25, 4, 4, "clt")
    ci = r.interval(0.95)
    assert ci.low == pytest.approx(0.75 - 1.959963984540054 * 0.25)
    assert ci.low < ci.estimate < ci.high


@pytest.mark.parametrize("case", GOLDEN["clustered"], ids=lambda c: str(len(c["scores"])))
def test_clustered_se_matches_eq4_and_statsmodels_cr1(case: dict[str, Any]) -> None:
    x, g = case["scores"], case["clusters"]
    plain = stats.clustered_se(x, g)
    cr1 = stats.clustered_se(x, g, correction="cr1")
    assert plain.mean == pytest.approx(case["mean"])
    assert plain.se == pytest.approx(case["se_eq4"], rel=1e-10)
    assert cr1.se == pytest.approx(case["se_cr1"], rel=1e-10)
    assert (plain.method, cr1.method) == ("clustered", "clustered-cr1")
    assert plain.n_clusters == len(set(g))
    assert stats.clt_se(x).se == pytest.approx(case["se_clt"], rel=1e-12)


def test_singleton_clusters_reduce_to_clt() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(size=37)
    clt = stats.clt_se(x).se
    assert stats.clustered_se(x, np.arange(37)).se == pytest.approx(clt, rel=1e-12)
    assert stats.clustered_se(x, np.arange(37), correction="cr1").se == pytest.approx(clt)


def test_clustered_se_degenerate_and_invalid() -> None:
    with pytest.warns(stats.StatsWarning, match="at least two clusters"):
        r = stats.clustered_se([1, 0, 1], ["a", "a", "a"])
    assert math.isnan(r.se) and r.mean == pytest.approx(2 / 3)
    with pytest.warns(stats.StatsWarning, match="single item"):
        assert math.isnan(stats.clt_se([1.0]).se)
    with pytest.raises(stats.StatsInputError, match="one label per item"):
        stats.clustered_se([1, 0, 1], ["a", "b"])
    with pytest.raises(stats.StatsInputError, match="correction"):
        stats.clustered_se([1, 0], ["a", "b"], correction="cr2")  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="NaN"):
        stats.clustered_se([1, 0], [1.0, float("nan")])
    with pytest.raises(stats.StatsInputError, match="empty"):
        stats.clt_se([])


@pytest.mark.parametrize("case", GOLDEN["paired_difference"], ids=lambda c: str(len(c["a"])))
def test_paired_difference_matches_statsmodels_ztest(case: dict[str, Any]) -> None:
    r = stats.paired_difference(case["a"], case["b"])
    for field in ("estimate", "se", "statistic", "pvalue", "low", "high"):
        assert getattr(r, field) == pytest.approx(case[field], rel=1e-10), field
    assert r.low <= r.estimate <= r.high


def test_paired_difference_clustered_uses_clustered_se() -> None:
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(15), 4)
    a = rng.integers(0, 2, size=60)
    b = rng.integers(0, 2, size=60)
    r = stats.paired_difference(a, b, clusters=g, correction="cr1")
    se = stats.clustered_se(a - b, g, correction="cr1").se
    assert r.se == pytest.approx(se)
    assert (r.n_clusters, r.method) == (15, "clustered-cr1")


def test_paired_difference_degenerate() -> None:
    with pytest.warns(stats.StatsWarning, match="standard error is 0"):
        r = stats.paired_difference([1, 1, 0], [1, 1, 0])
    assert r.estimate == 0.0 and math.isnan(r.pvalue)
    with pytest.warns(stats.StatsWarning, match="at least two clusters"):
        r = stats.paired_difference([1, 1, 0], [0, 1, 0], clusters=["x", "x", "x"])
    assert math.isnan(r.se) and math.isnan(r.pvalue)
    with pytest.raises(stats.StatsInputError, match="only with clusters"):
        stats.paired_difference([1, 0], [0, 0], correction="cr1")
