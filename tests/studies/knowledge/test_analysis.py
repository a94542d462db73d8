"""The analysis on a hand-built results table, against numbers worked out by hand."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pytest

from steadyeval import stats
from steadyeval.items import canonical_json
from steadyeval.results import ResultsFrame
from steadyeval.studies.knowledge import (
    KNOWLEDGE_STUDY,
    KnowledgeAnalysis,
    NormalisedAccuracy,
    analyze_knowledge,
)
from tests.results_table import table_of

AA, US, VI = "abstract_algebra", "high_school_us_history", "virology"
ITEMS = [(AA, 0), (AA, 1), (AA, 2), (AA, 3), (US, 0), (US, 1), (VI, 0), (VI, 1)]
CATEGORY = {
    AA: ("STEM", "math"),
    US: ("humanities", "history"),
    VI: ("other (business, health, misc.)", "health"),
}
CONF = [0.9, 0.6, 0.8, 0.3, 0.7, 0.5, 0.4, 0.6]
# correct per item under each (template, shots, rotation)
CORRECT = {
    ("reference", 0, 0): [1, 1, 0, 0, 1, 1, 0, 1],
    ("reference", 0, 1): [1, 0, 0, 0, 1, 1, 0, 1],
    ("reference", 0, 2): [1, 1, 0, 1, 1, 0, 0, 0],
    ("reference", 0, 3): [1, 1, 0, 0, 1, 1, 0, 1],
    ("reference", 5, 0): [1, 1, 1, 0, 1, 0, 1, 1],
    ("single-space", 0, 0): [1, 0, 0, 0, 1, 1, 0, 1],
}
# question log-probability (one token each, so per token = total)
QLP = [-1.0, -2.0, -3.0, -4.0, -1.0, -1.0, -5.0, -3.0]


def _row(template: str, shots: int, rot: int, i: int, correct: int) -> dict[str, Any]:
    subject, n = ITEMS[i]
    cat, sub = CATEGORY[subject]
    gold = 0
    pick = gold if correct else (gold + 1) % 4
    name = f"letter-{template}-{shots}shot" + (f"-rot{rot}" if rot else "")
    return {
        "model": "m",
        "item_id": f"{subject}/test/{n}",
        "condition": name,
        "template": template,
        "scoring": "letter-logprob",
        "option_order": "rotated" if rot else "original",
        "n_shots": shots,
        "n_shots_used": shots if i != 3 else min(shots, 2),
        "subject": subject,
        "metadata": canonical_json({"subject": subject, "category": cat, "subcategory": sub}),
        "correct": bool(correct),
        "confidence": CONF[i],
        "option_source": [(rot + k) % 4 for k in range(4)],
        "gold_options": [gold],
        "parsed_option": pick,
        "truncated": False,
        "option_logprobs": [-1.0, -2.0, -3.0, -4.0],
    }


def _table() -> pa.Table:
    rows = [_row(t, k, r, i, c) for (t, k, r), corr in CORRECT.items() for i, c in enumerate(corr)]
    for i, lp in enumerate(QLP):
        subject, n = ITEMS[i]
        rows.append(
            {
                "model": "m",
                "item_id": f"{subject}/test/{n}",
                "condition": "question-logprob",
                "template": "question-only",
                "scoring": "prompt-logprob",
                "option_order": "original",
                "n_shots": 0,
                "n_shots_used": 0,
                "subject": subject,
                "metadata": "{}",
                "correct": None,
                "sequence_logprob": lp,
                "n_input_tokens": 1,
                "truncated": False,
            }
        )
    return table_of(rows)


R = TypeVar("R")


@pytest.fixture(scope="module")
def analysis() -> KnowledgeAnalysis:
    return analyze_knowledge(ResultsFrame(_table()), {"seed": 0})


def _one(rows: Sequence[R], **match: Any) -> R:
    (hit,) = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    return hit


def test_accuracy_micro_macro_clustered(analysis: KnowledgeAnalysis) -> None:
    a = _one(analysis.accuracy, condition="letter-reference-0shot")
    assert a.n == 8 and a.correct == 5
    assert a.micro.accuracy == 5 / 8
    w = stats.wilson_interval(5, 8)
    assert (a.micro.low, a.micro.high) == (w.low, w.high)
    assert a.macro == pytest.approx((2 / 4 + 2 / 2 + 1 / 2) / 3)
    # Miller (2024) eq. 4 by hand: s^2/n + (1/n^2) sum_c sum_{i != j in c} r_i r_j
    x = np.array(CORRECT[("reference", 0, 0)], dtype=float)
    r = x - x.mean()
    groups = [r[:4], r[4:6], r[6:]]
    cross = sum(g.sum() ** 2 - (g**2).sum() for g in groups)
    se = math.sqrt(x.var(ddof=1) / 8 + cross / 64)
    assert a.clustered_se == pytest.approx(se)
    assert a.n_fewer_shots == 0
    five = _one(analysis.accuracy, condition="letter-reference-5shot")
    assert five.n_fewer_shots == 1 and five.n_shots_used_mean == pytest.approx(37 / 8)


def test_per_category_subcategory_subject(analysis: KnowledgeAnalysis) -> None:
    cats = {
        r.category: (r.correct, r.n)
        for r in analysis.per_category
        if r.condition == "letter-reference-0shot"
    }
    assert cats == {"STEM": (2, 4), "humanities": (2, 2), "other (business, health, misc.)": (1, 2)}
    subs = {
        r.subcategory: r.accuracy
        for r in analysis.per_subcategory
        if r.condition == "letter-reference-0shot"
    }
    assert subs == {"math": 0.5, "history": 1.0, "health": 0.5}
    subj = _one(analysis.per_subject, condition="letter-reference-0shot", subject=VI)
    assert (subj.correct, subj.n) == (1, 2)


def test_calibration(analysis: KnowledgeAnalysis) -> None:
    c = _one(analysis.calibration, condition="letter-reference-0shot")
    assert c.mean_confidence == pytest.approx(0.6)
    assert c.rms == pytest.approx(0.025)  # one bin (< 100 items): |0.625 - 0.6|
    # The MMLU authors' rmsce: 0.3 and 0.4 (both wrong) fold to 0.7 and 0.6 (right); one bin
    # of folded confidences (mean 5.4 / 8 = 0.675) and outcomes (7 / 8): sqrt(sqrt(0.2^2)).
    assert c.rms_reference == pytest.approx(math.sqrt(0.2))
    # ECE, 10 equal-width bins: gaps .1 (0.9), .4 x2 (0.6, 0.6), .8 (0.8 wrong), .3 (0.3
    # wrong), .3 (0.7), .5 (0.5), .4 (0.4 wrong): 3.2 / 8
    assert c.ece == pytest.approx(0.4)
    assert sum(c.reliability.count) == 8 and c.reliability.count[5] == 2
    # across subjects: confidence (0.65, 0.6, 0.5) vs accuracy (0.5, 1, 0.5): r = 1/sqrt(28);
    # p with 1 degree of freedom (Cauchy): 1 - 2 atan(t)/pi, t = r sqrt(1/(1 - r^2))
    corr = c.subject_correlation
    assert corr.r == pytest.approx(1 / math.sqrt(28))
    assert corr.p == pytest.approx(1 - 2 * math.atan(1 / math.sqrt(27)) / math.pi)


def test_accuracy_vs_shots(analysis: KnowledgeAnalysis) -> None:
    (s,) = [s for s in analysis.shots if s.template == "reference"]
    zero, five = s.by_shots
    assert (zero.n_shots, zero.accuracy, five.n_shots, five.accuracy) == (
        0,
        5 / 8,
        5,
        6 / 8,
    )
    assert zero.vs_fewest is None  # the fewest shots: nothing to compare with
    vs = five.vs_fewest  # discordant: only 0-shot right on 1 item, only 5-shot on 2
    assert vs is not None
    assert (vs.only_first, vs.only_second) == (1, 2)
    assert vs.pvalue == pytest.approx(1.0)  # exact: 2 * P(X <= 1), X ~ Bin(3, 1/2)


def test_rotations_circular_eval(analysis: KnowledgeAnalysis) -> None:
    (r,) = analysis.rotations
    assert r.rotations == [0, 1, 2, 3]
    assert r.original == 5 / 8
    assert r.per_rotation == [5 / 8, 4 / 8, 4 / 8, 5 / 8]
    assert r.all_rotations == 2 / 8  # items 0 and 4
    # same original option picked under all rotations: always right (0, 4), always wrong (2, 6)
    assert r.same_answer == 4 / 8
    m = np.array([CORRECT[("reference", 0, k)] for k in range(4)]).T
    k, col, row = 4, m.sum(axis=0), m.sum(axis=1)
    q = (k - 1) * (k * (col**2).sum() - m.sum() ** 2) / (k * m.sum() - (row**2).sum())
    assert r.cochran_q == pytest.approx(q)


def test_template_sensitivity(analysis: KnowledgeAnalysis) -> None:
    (t,) = analysis.templates
    assert t.per_template == {"reference": 5 / 8, "single-space": 4 / 8}
    assert t.best_minus_worst.estimate == pytest.approx(1 / 8)
    assert t.flipped_items == 1
    assert t.mcnemar is not None and (t.mcnemar.only_first, t.mcnemar.only_second) == (1, 0)


def test_memorisation(analysis: KnowledgeAnalysis) -> None:
    m = _one(analysis.memorisation, condition="letter-reference-0shot")
    # subject means of question log-prob (-2.5, -1, -4) vs accuracy (0.5, 1, 0.5): r = sqrt(3)/2
    assert m.across_subjects.r == pytest.approx(math.sqrt(3) / 2)
    per = {p.subject: p for p in m.per_subject}
    assert per[AA].r == pytest.approx(2 / math.sqrt(5))  # (-1,-2,-3,-4) vs (1,1,0,0)
    assert per[US].r is None and per[US].note == "fewer than 3 points"
    assert per[VI].r is None and per[VI].n == 2


def test_option_scoring_and_letter_vs_option() -> None:
    base = {
        "model": "m",
        "template": "reference",
        "n_shots": 0,
        "n_shots_used": 0,
        "subject": AA,
        "metadata": "{}",
        "truncated": False,
        "gold_options": [2],
        "option_order": "original",
        "option_source": [0, 1, 2, 3],
    }
    rows = []
    # gold 2; item 0: raw picks 0, per token and per char pick 2; item 1: raw and per token
    # (one token per option) pick 0, per char (-2, -3, -1.5, -2.5) picks 2
    lps = [[-2.0, -9.0, -4.0, -6.0], [-2.0, -9.0, -6.0, -5.0]]
    ntok = [[1, 3, 4, 2], [1, 1, 1, 1]]
    texts = ["a", "bbb", "cccc", "dd"]
    for i, (lp, nt) in enumerate(zip(lps, ntok, strict=True)):
        per_tok = [v / n for v, n in zip(lp, nt, strict=True)]
        per_char = [v / len(t) for v, t in zip(lp, texts, strict=True)]
        rows.append(
            {
                **base,
                "item_id": f"{AA}/test/{i}",
                "condition": "option-reference-0shot",
                "scoring": "option-logprob",
                "correct": False,
                "confidence": 0.5,
                "option_logprobs": lp,
                "option_logprobs_per_token": per_tok,
                "option_logprobs_per_char": per_char,
                "parsed_option": 0,
            }
        )
        rows.append(
            {
                **base,
                "item_id": f"{AA}/test/{i}",
                "condition": "letter-reference-0shot",
                "scoring": "letter-logprob",
                "correct": True,
                "confidence": 0.5,
                "parsed_option": 2,
            }
        )
    a = analyze_knowledge(ResultsFrame(table_of(rows)))
    (o,) = a.option_scoring
    assert o.accuracy == NormalisedAccuracy(none=0.0, token=0.5, char=1.0)
    (lv,) = a.letter_vs_option
    assert (lv.letter, lv.option, lv.mcnemar.only_first) == (1.0, 0.0, 2)


def test_ambiguous_conditions_are_reported_not_mixed() -> None:
    rows = [_row("reference", 0, 0, i, c) for i, c in enumerate(CORRECT[("reference", 0, 0)])]
    rows += [{**r, "condition": "copy"} for r in rows]
    a = analyze_knowledge(ResultsFrame(table_of(rows)))
    assert a.rotations == [] and a.shots == []
    assert "several conditions share" in a.notes[0]
    assert len(a.accuracy) == 2


def test_render_is_json_safe_markdown(analysis: KnowledgeAnalysis) -> None:
    # summary.json's analysis (strict JSON) reads back as the same typed analysis
    stored = json.loads(json.dumps(analysis.to_json(), allow_nan=False))
    assert KnowledgeAnalysis.from_json(stored) == analysis
    md = KNOWLEDGE_STUDY.markdown(KNOWLEDGE_STUDY.read_analysis(stored), {})
    assert "## Knowledge study (MMLU)" in md and "### Accuracy per category" in md
    for title in (
        "Accuracy vs shots",
        "Calibration",
        "Option order",
        "Template sensitivity",
        "Memorisation",
    ):
        assert f"## {title}" in md
    # the categories are columns; the first condition's STEM accuracy and interval
    assert "| letter-reference-0shot | 50.0% [15.0, 85.0] |" in md
