"""``analyze_knowledge`` returns exactly the pinned analyses of ``tests/golden/knowledge``.

The inputs and expected outputs come from ``tests/golden/knowledge/make_golden.py`` (first
written before the analysis was vectorised, as dicts with NaN): the typed analysis's JSON
(``to_json()`` less ``schema_version``) has the same keys in the same order, the same Python
types and the same numbers (floats within 1e-12 relative; a pinned NaN is None).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from steadyeval import DataError
from steadyeval._json import json_safe
from steadyeval.items import subject_info
from steadyeval.results import ResultsFrame
from steadyeval.studies.knowledge import KnowledgeAnalysis, analyze_knowledge, knowledge_frame
from steadyeval.studies.knowledge._frame import _COLUMNS, _rotation
from steadyeval.studies.knowledge._option_scoring import _argmax

from ..pinned import assert_same, cases, load_case

CASES = cases("knowledge")


def _same(analysis: KnowledgeAnalysis, expected: Any) -> None:
    """The analysis's JSON is the pinned dict (NaN: None), and reads back as itself."""
    data = analysis.to_json()
    assert data.pop("schema_version") == KnowledgeAnalysis.SCHEMA_VERSION
    assert_same(data, json_safe(expected))
    assert KnowledgeAnalysis.from_json(json.loads(json.dumps(analysis.to_json()))) == analysis


def test_golden_cases_are_present() -> None:
    assert CASES == ["ambiguous", "hand-built", "scripted-full"]


@pytest.mark.parametrize("case", CASES)
def test_analysis_equals_the_pinned_output(case: str) -> None:
    table, design, expected = load_case("knowledge", case)
    _same(analyze_knowledge(ResultsFrame(table), design), expected)


def test_chunks_and_extra_columns_change_nothing() -> None:
    table, design, expected = load_case("knowledge", "scripted-full")
    chunked = pa.concat_tables([table.slice(0, 400), table.slice(400, 1), table.slice(401)])
    wider = chunked.append_column("prompt", pa.array(["p"] * table.num_rows))
    _same(analyze_knowledge(ResultsFrame(wider), design), expected)
    _same(analyze_knowledge(wider, design), expected)  # a table is read as its frame


@pytest.mark.parametrize("case", CASES)
def test_knowledge_frame_equals_the_row_rule(case: str) -> None:
    """Category/subcategory from each item's first row, rotation by the row rule."""
    table, _, _ = load_case("knowledge", case)
    frame = knowledge_frame(ResultsFrame(table))
    expected = table.select(_COLUMNS).to_pandas()
    cats: dict[str, tuple[str, str]] = {}
    for item_id, meta, subject in zip(
        expected["item_id"], expected["metadata"], expected["subject"], strict=True
    ):
        if item_id not in cats:
            m = json.loads(meta) if meta else {}
            info = subject_info(str(subject))
            cats[item_id] = (
                m.get("category") or (info.category if info else "uncategorised"),
                m.get("subcategory") or (info.subcategory if info else "uncategorised"),
            )
    expected["category"] = expected["item_id"].map(lambda i: cats[i][0])
    expected["subcategory"] = expected["item_id"].map(lambda i: cats[i][1])
    expected["rotation"] = [
        _rotation(r) for r in expected[["option_order", "option_source"]].to_dict("records")
    ]
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)


def test_rotations_need_the_original_order_and_reject_repeated_cells() -> None:
    table, design, _ = load_case("knowledge", "hand-built")
    rows = table.to_pylist()
    rot = [r for r in rows if r["condition"] == "letter-reference-0shot-rot1"]
    doubled = pa.Table.from_pylist(rows + rot[:1], schema=table.schema)
    with pytest.raises(ValueError, match="duplicate entries"):
        analyze_knowledge(ResultsFrame(doubled), design)


def test_a_missing_column_is_named() -> None:
    table, design, _ = load_case("knowledge", "hand-built")
    with pytest.raises(DataError, match=r"missing column\(s\) option_source; the knowledge"):
        analyze_knowledge(ResultsFrame(table.drop_columns(["option_source"])), design)


def _option_scoring_by_rows(table: pa.Table) -> dict[tuple[str, str], dict[str, float]]:
    """Accuracy under each normalisation, row by row with the module's rule."""
    hits: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for r in table.to_pylist():
        if r["scoring"] != "option-logprob" or r["correct"] is None:
            continue
        gold = list(r["option_source"]).index(r["gold_options"][0])
        per = hits.setdefault((r["model"], r["condition"]), {"none": [], "token": [], "char": []})
        for norm, col in (("none", ""), ("token", "_per_token"), ("char", "_per_char")):
            pick = _argmax(r["option_logprobs" + col])
            if pick >= 0:  # a row with no answer (every score NaN) is left out
                per[norm].append(pick == gold)
    return {k: {n: sum(v) / len(v) for n, v in per.items()} for k, per in hits.items()}


def test_option_scoring_follows_the_row_rule_with_nan_scores() -> None:
    """NaN option scores take the row-by-row rule; the result is the row rule's."""
    table, design, _ = load_case("knowledge", "scripted-full")
    lp = table.column("option_logprobs").to_pylist()
    rows = [k for k, v in enumerate(lp) if v]
    for i in rows[:3]:
        lp[i] = [-1.0, math.nan, -0.5, math.nan][: len(lp[i])]
    for i in rows[3:5]:  # a NaN first: max() would keep it, the scoring never picks it
        lp[i] = [math.nan, -3.0, -0.1, -9.0][: len(lp[i])]
    lp[rows[5]] = [math.nan] * len(lp[rows[5]])  # no answer at all
    nan_table = table.set_column(
        table.schema.get_field_index("option_logprobs"),
        "option_logprobs",
        pa.array(lp, table.schema.field("option_logprobs").type),
    )
    got = {
        (g.model, g.condition): g.accuracy.model_dump()
        for g in analyze_knowledge(ResultsFrame(nan_table), design).option_scoring
    }
    assert got == _option_scoring_by_rows(nan_table)


def test_a_nan_option_score_is_never_the_pick() -> None:
    assert _argmax([math.nan, -3.0, -0.1]) == 2  # max() with NaN first kept the NaN
    assert _argmax([-1.0, math.nan, -0.5]) == 2
    assert _argmax([-math.inf, -2.0]) == 1
    assert _argmax([math.nan, math.nan]) == -1
