"""The report's "Repeated samples" section and ``compare`` on sampled runs (issue 43): the
numbers against direct computations, and no pseudo-replication of samples."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steadyeval import stats
from steadyeval.compare import compare_runs
from steadyeval.reports import Table, build_report, context_from_table
from steadyeval.reports._samples import rerun_agreement
from steadyeval.results import write_results
from tests.results_table import table_of

K = 6


def _sampled(
    model: str, p: np.ndarray, seed: int, conditions: tuple[str, ...] = ("a", "b")
) -> list[dict[str, Any]]:
    """K samples per item and condition; item i right with probability p[i]; parsed
    answers "right" or a wrong word (two kinds, so majority vote has something to do)."""
    rng = np.random.default_rng(seed)
    out = []
    for cond in conditions:
        for i, pi in enumerate(p):
            for s in range(K):
                right = bool(rng.random() < pi)
                out.append(
                    {
                        "model": model,
                        "item_id": f"i{i}",
                        "condition": cond,
                        "sample_index": s,
                        "correct": right,
                        "parsed": "right" if right else ("wrong" if s % 2 else "other"),
                        "metadata": "{}",
                    }
                )
    return out


P_A = np.linspace(0.1, 0.9, 12)
P_B = np.clip(P_A + 0.25, 0, 1)


def _table(table: Any, title: str) -> Table:
    ctx = context_from_table(table)
    report = build_report(ctx)
    section = next(s for s in report.sections if s.id == "samples")
    return next(b for b in section.blocks if isinstance(b, Table) and b.title == title)


def test_reducers_match_the_stats_functions() -> None:
    rows = _sampled("m", P_A, 0)
    table = table_of(rows)
    got = _table(table, "Accuracy over samples, per model and condition")
    first = got.rows[0]
    sub = [r for r in rows if r["condition"] == "a"]
    items = np.array([r["item_id"] for r in sub], dtype=object)
    correct = np.array([r["correct"] for r in sub], dtype=float)
    means = stats.mean_over_samples(items, correct)
    vote = stats.majority_vote(items, np.array([r["parsed"] for r in sub], dtype=object), correct)
    passk = stats.pass_at_k(np.full(12, K), np.rint(means.mean * K), K)
    assert first[:4] == ("m", "a", 12, K)
    assert first[4][0] == pytest.approx(means.mean.mean())
    assert first[5] == pytest.approx(vote.correct.mean())
    assert first[6] == pytest.approx(passk.mean())


def test_the_decomposition_is_the_stats_one_and_pairs_use_item_means() -> None:
    rows = _sampled("A", P_A, 1) + _sampled("B", P_B, 2)
    table = table_of(rows)
    decomposition = _table(table, "Variance decomposition")
    a_rows = [r for r in rows if r["model"] == "A"]
    vc = stats.variance_components(
        np.array([r["correct"] for r in a_rows], dtype=float),
        np.array([r["item_id"] for r in a_rows], dtype=object),
        np.array([r["condition"] for r in a_rows], dtype=object),
        n_resamples=1000,
        seed=0,
    )
    assert decomposition.rows[0][0] == "A"
    assert decomposition.rows[0][4].startswith(
        f"{100 * vc.item.share:.0f}%: {vc.item.estimate:.4f}"
    )
    pairs = _table(table, "Paired comparisons over per-item sample means")
    row = next(r for r in pairs.rows if r[1] == "a")
    mean_a = stats.mean_over_samples(
        np.array([r["item_id"] for r in a_rows if r["condition"] == "a"], dtype=object),
        np.array([r["correct"] for r in a_rows if r["condition"] == "a"], dtype=float),
    ).mean
    b_rows = [r for r in rows if r["model"] == "B" and r["condition"] == "a"]
    mean_b = stats.mean_over_samples(
        np.array([r["item_id"] for r in b_rows], dtype=object),
        np.array([r["correct"] for r in b_rows], dtype=float),
    ).mean
    direct = stats.paired_difference(mean_b, mean_a)
    assert row[2] == 12  # items, not items × samples
    assert row[3][0] == pytest.approx(direct.estimate) and row[4] == pytest.approx(direct.pvalue)


def test_rerun_agreement() -> None:
    assert rerun_agreement(0.1, 0.0) == 1.0
    assert math.isnan(rerun_agreement(0.0, 0.05))
    assert rerun_agreement(0.05, 0.05) == pytest.approx(0.7602, abs=1e-4)  # Φ(1/√2)


def test_no_section_for_single_samples() -> None:
    rows = [r for r in _sampled("m", P_A, 0) if r["sample_index"] == 0]
    report = build_report(context_from_table(table_of(rows)))
    assert all(s.id != "samples" for s in report.sections)


def test_compare_averages_samples_per_item(tmp_path: Path) -> None:
    """One unit per item and condition: the SE is the one of the per-item means (sample i
    of A is not paired with sample i of B), and a note says so."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    rows_a, rows_b = _sampled("A", P_A, 1), _sampled("B", P_B, 2)
    write_results(table_of(rows_a), a)
    write_results(table_of(rows_b), b)
    result = compare_runs([str(a), str(b)])
    (pair,) = result.pairs
    cond = next(c for c in pair.conditions if c.condition == "a")
    mean = {}
    for name, rows in (("A", rows_a), ("B", rows_b)):
        sub = [r for r in rows if r["condition"] == "a"]
        mean[name] = stats.mean_over_samples(
            np.array([r["item_id"] for r in sub], dtype=object),
            np.array([r["correct"] for r in sub], dtype=float),
        ).mean
    direct = stats.paired_difference(mean["B"], mean["A"])
    assert cond.n == 12 and cond.se == pytest.approx(direct.se)
    assert cond.difference == pytest.approx(direct.estimate)
    assert math.isnan(cond.mcnemar_p)
    assert any("samples per item" in n for n in pair.warnings)


def test_samples_for_sign() -> None:
    from steadyeval.reports._samples import samples_for_sign

    # 10 items, within-item variances summing to 2.5: SE(K) = sqrt(2.5 / K) / 10; half of
    # a 0.1 difference is 0.05 -> K = 2.5 / (10 * 0.05)**2 = 10
    assert samples_for_sign(0.1, 2.5, 10) == 10
    assert samples_for_sign(-0.1, 2.5, 10) == 10
    assert samples_for_sign(0.0, 2.5, 10) == "no difference"
    se = math.sqrt(2.5 / 10) / 10
    assert rerun_agreement(0.1, se) == pytest.approx(0.9214, abs=1e-4)


def test_the_decomposition_leaves_out_conditions_answered_once() -> None:
    """A greedy condition beside two sampled ones: its one answer per item is not a
    sample, and the greedy-vs-sampled gap is not condition variance."""
    greedy = [r for r in _sampled("m", P_A, 5, ("g",)) if r["sample_index"] == 0]
    table = table_of(_sampled("m", P_A, 0) + greedy)
    row = _table(table, "Variance decomposition").rows[0]
    assert row[2] == 2 and row[3] == K  # conditions a and b; K samples per cell
    shares = [float(x.split("%")[0]) for x in row[4:8] if "%" in x]
    assert sum(shares) == pytest.approx(100, abs=2)  # rounded shares of the four parts
