"""The seed's analyses not computed before issue 40: per-subject confidence − accuracy
(Figure 8), accuracy vs question length (Figure 12) and UnifiedQA's end marker (appendix
A.3), on hand-built tables with numbers worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from steadyeval import stats
from steadyeval.document import Paragraph, Table
from steadyeval.results import ResultsFrame
from steadyeval.studies.knowledge import (
    KnowledgeAnalysis,
    analyze_knowledge,
    knowledge_report_sections,
)
from tests.results_table import table_of

from .test_analysis import CONF, CORRECT, ITEMS, _table

AA, US = "abstract_algebra", "high_school_us_history"


@pytest.fixture(scope="module")
def analysis() -> KnowledgeAnalysis:
    return analyze_knowledge(ResultsFrame(_table()), {"seed": 0})


def test_confidence_gap_per_subject_by_hand(analysis: KnowledgeAnalysis) -> None:
    gaps = {
        g.subject: g for g in analysis.confidence_gaps if g.condition == "letter-reference-0shot"
    }
    # abstract_algebra: confidence (0.9+0.6+0.8+0.3)/4 = 0.65, accuracy 2/4 → +0.15
    # us history: (0.7+0.5)/2 = 0.6, 2/2 → −0.4; virology: (0.4+0.6)/2 = 0.5, 1/2 → 0
    assert {s: round(g.gap, 12) for s, g in gaps.items()} == {
        AA: 0.15,
        US: -0.4,
        "virology": 0.0,
    }
    aa = gaps[AA]
    assert (aa.n, aa.confidence, aa.accuracy) == (4, pytest.approx(0.65), 0.5)
    boot = stats.paired_bootstrap(
        CONF[:4], CORRECT[("reference", 0, 0)][:4], n_resamples=2000, seed=0
    )
    assert (aa.low, aa.high) == (boot.low, boot.high)
    assert aa.low <= aa.gap <= aa.high
    # every (model, condition) with confidences, every subject
    assert len(analysis.confidence_gaps) == len(CORRECT) * 3


def test_report_sorts_gaps_by_size_and_names_the_largest(analysis: KnowledgeAnalysis) -> None:
    (sec,) = [s for s in knowledge_report_sections(analysis) if s.id == "knowledge-confidence-gaps"]
    table = next(b for b in sec.blocks if isinstance(b, Table))
    ref = [r for r in table.rows if r[0] == "letter-reference-0shot"]
    assert [r[1] for r in ref] == [US, AA, "virology"]  # |−0.4| > |0.15| > 0
    named = [b.text for b in sec.blocks if isinstance(b, Paragraph)]
    assert any(t.startswith(f"letter-reference-0shot: {US} -40.0 pts") for t in named)


# -- accuracy vs question length ----------------------------------------------------------

LENGTHS = [20, 65, 100, 150, 300, 400, 700, 1500, 50, 260, 90, 2000]
RIGHT = [1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
SUBJ = [AA] * 6 + [US] * 6


def _length_rows() -> list[dict[str, Any]]:
    rows = []
    for i, (chars, ok) in enumerate(zip(LENGTHS, RIGHT, strict=True)):
        gold, pick = 1, 1 if ok else 2
        rows.append(
            {
                "model": "m",
                "item_id": f"{SUBJ[i]}/test/{i}",
                "condition": "letter-reference-0shot",
                "template": "reference",
                "scoring": "letter-logprob",
                "option_order": "original",
                "n_shots": 0,
                "n_shots_used": 0,
                "subject": SUBJ[i],
                "metadata": "{}",
                "correct": bool(ok),
                "confidence": 0.5,
                "option_source": [0, 1, 2, 3],
                "gold_options": [gold],
                "parsed_option": pick,
                "truncated": False,
                "option_logprobs": [-2.0, -1.0 - i / 10, -1.5, -3.0],
                "question_chars": chars,
            }
        )
    return rows


def test_length_bins_slope_and_long_question_correlation() -> None:
    (trend,) = analyze_knowledge(table_of(_length_rows())).length
    assert trend.n == 12
    bins = {(b.low_chars, b.high_chars): (b.n, b.accuracy) for b in trend.bins}
    # 0-69: 20, 65, 50 → 1 right of 3; 70-139: 100, 90 → 2 of 2; 140-279: 150, 260 → 0 of 2;
    # 280-559: 300, 400 → 2/2; 560-1119: 700 → 0/1; ≥1120: 1500, 2000 → 2/2
    assert bins == {
        (0, 70): (3, 1 / 3),
        (70, 140): (2, 1.0),
        (140, 280): (2, 0.0),
        (280, 560): (2, 1.0),
        (560, 1120): (1, 0.0),
        (1120, None): (2, 1.0),
    }
    # the true answer's probability: softmax of the letter scores at the gold option (B)
    p = []
    for i in range(12):
        x = np.array([-2.0, -1.0 - i / 10, -1.5, -3.0])
        p.append(np.exp(x[1]) / np.exp(x).sum())
    first = trend.bins[0]
    assert first.true_label_probability == pytest.approx(np.mean([p[0], p[1], p[8]]))
    # logistic regression by hand: maximise the log-likelihood, SE from the Hessian
    x = np.log2(np.asarray(LENGTHS, dtype=float))
    y = np.asarray(RIGHT, dtype=float)

    def nll(beta: np.ndarray) -> float:
        eta = beta[0] + beta[1] * x
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    beta = optimize.minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    mu = 1 / (1 + np.exp(-(beta[0] + beta[1] * x)))
    design = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv(design.T @ (design * (mu * (1 - mu))[:, None]))
    se = math.sqrt(cov[1, 1])
    assert trend.n_clusters is None  # two subjects: the ordinary standard error
    assert trend.slope.estimate == pytest.approx(beta[1], abs=1e-5)
    assert trend.slope.low == pytest.approx(beta[1] - 1.959963984540054 * se, abs=1e-4)
    assert trend.pvalue == pytest.approx(2 * sps.norm.sf(abs(beta[1]) / se), abs=1e-4)
    # Pearson r over questions longer than 280 characters
    long_q = [i for i, c in enumerate(LENGTHS) if c > 280]
    r = sps.pearsonr([LENGTHS[i] for i in long_q], [p[i] for i in long_q])
    assert trend.long_questions.n == len(long_q) == 5
    assert trend.long_questions.r == pytest.approx(r.statistic)


def test_length_slope_undefined_when_every_answer_is_right() -> None:
    rows = [{**r, "correct": True, "parsed_option": 1} for r in _length_rows()]
    (trend,) = analyze_knowledge(table_of(rows)).length
    assert trend.slope.estimate is None and trend.pvalue is None
    assert "all right or all wrong" in (trend.note or "")


def test_no_length_section_without_the_column(analysis: KnowledgeAnalysis) -> None:
    assert analysis.length == []  # a table written before question_chars


# -- UnifiedQA with and without the end marker ----------------------------------------------

WITHOUT = [1, 1, 0, 0, 1, 0, 1, 0]
WITH = [1, 1, 1, 1, 1, 0, 0, 1]


def test_end_marker_pairs_items() -> None:
    rows = []
    for template, series in (("unifiedqa", WITHOUT), ("unifiedqa-eos", WITH)):
        for i, ok in enumerate(series):
            subject, n = ITEMS[i]
            scores = [-1.0, -2.0, -3.0, -4.0] if ok else [-2.0, -1.0, -3.0, -4.0]
            rows.append(
                {
                    "model": "m",
                    "item_id": f"{subject}/test/{n}",
                    "condition": f"option-{template}-0shot",
                    "template": template,
                    "scoring": "option-logprob",
                    "option_order": "original",
                    "n_shots": 0,
                    "n_shots_used": 0,
                    "subject": subject,
                    "metadata": "{}",
                    "correct": bool(ok),
                    "confidence": 0.5,
                    "option_source": [0, 1, 2, 3],
                    "gold_options": [0],
                    "parsed_option": 0 if ok else 1,
                    "option_logprobs": scores,
                    "option_logprobs_per_token": scores,
                    "option_logprobs_per_char": scores,
                    "truncated": False,
                }
            )
    analysis = analyze_knowledge(table_of(rows), {"seed": 4})
    (e,) = analysis.end_marker
    assert (e.n, e.without_marker, e.with_marker, e.n_truncated) == (8, 4 / 8, 6 / 8, 0)
    # discordant: right only without → item 6; right only with → items 2, 3, 7
    assert (e.mcnemar.only_first, e.mcnemar.only_second) == (1, 3)
    assert e.mcnemar.pvalue == pytest.approx(sps.binomtest(1, 4).pvalue)
    boot = stats.paired_bootstrap(WITH, WITHOUT, seed=4)
    assert (e.difference.estimate, e.difference.low, e.difference.high) == (
        pytest.approx(0.25),
        boot.low,
        boot.high,
    )
    (sec,) = [s for s in knowledge_report_sections(analysis) if s.id == "knowledge-end-marker"]
    assert sec.title == "UnifiedQA end marker"
    # A model not given ?special_tokens=false is named: its tokenizer may add one </s> more.
    text = str(sec)
    assert "for m that is one </s> against two" in text
    bare = analysis.model_copy(
        update={
            "end_marker": [
                e.model_copy(update={"model": "hf:t5?special_tokens=false"})
                for e in analysis.end_marker
            ]
        }
    )
    (sec,) = [s for s in knowledge_report_sections(bare) if s.id == "knowledge-end-marker"]
    assert "one </s> against two" not in str(sec)


def test_end_marker_leaves_out_items_cut_under_either_template() -> None:
    """A right cut removes the typed </s>: such an item's two inputs may be the same, so it is
    left out of the pairing and counted."""
    rows = []
    for template, series in (("unifiedqa", WITHOUT), ("unifiedqa-eos", WITH)):
        for i, ok in enumerate(series):
            subject, n = ITEMS[i]
            rows.append(
                {
                    "model": "m", "item_id": f"{subject}/test/{n}",
                    "condition": f"option-{template}-0shot", "template": template,
                    "scoring": "option-logprob", "option_order": "original", "n_shots": 0,
                    "n_shots_used": 0, "subject": subject, "metadata": "{}",
                    "correct": bool(ok), "confidence": 0.5, "option_source": [0, 1, 2, 3],
                    "gold_options": [0], "parsed_option": 0 if ok else 1,
                    "option_logprobs": [-1.0, -2.0, -3.0, -4.0],
                    "option_logprobs_per_token": [-1.0, -2.0, -3.0, -4.0],
                    "option_logprobs_per_char": [-1.0, -2.0, -3.0, -4.0],
                    # items 2 and 3 cut with the marker only (its </s> is what the cut removes)
                    "truncated": template == "unifiedqa-eos" and i in (2, 3),
                }
            )  # fmt: skip
    (e,) = analyze_knowledge(table_of(rows), {"seed": 4}).end_marker
    kept = [i for i in range(8) if i not in (2, 3)]
    assert (e.n, e.n_truncated) == (6, 2)
    assert e.without_marker == pytest.approx(np.mean([WITHOUT[i] for i in kept]))
    assert e.with_marker == pytest.approx(np.mean([WITH[i] for i in kept]))
