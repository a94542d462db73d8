"""``analyze_formats`` returns exactly the pinned analyses of ``tests/golden/formats``.

The inputs and expected outputs come from ``tests/golden/formats/make_golden.py`` (first
written with the row-wise implementation, as dicts); the typed analysis' JSON
(``to_json()`` without ``schema_version``) must have the same keys, the same Python types and
the same numbers (floats within 1e-12 relative). The pinned files keep NaN where the JSON
has null (as ``summary.json`` always wrote it), and key order is the type's field order
(``summary.json`` sorts keys), so both sides are compared with keys sorted.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from steadyeval import DataError
from steadyeval._json import json_safe
from steadyeval.results import ResultsFrame
from steadyeval.studies.formats import (
    ANSWERABLE_OUTCOMES,
    UNANSWERABLE_OUTCOMES,
    AnswerableCounts,
    AnswerableRates,
    FormatsAnalysis,
    UnanswerableCounts,
    UnanswerableRates,
    analyze_formats,
    classify,
)
from steadyeval.studies.formats._analysis import _LABELS, _labels
from steadyeval.studies.formats._frame import FormatsFrame

from ..pinned import assert_same, cases, load_case

CASES = cases("formats")


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def assert_pinned(analysis: FormatsAnalysis, expected: Any) -> None:
    """``analysis`` as ``summary.json`` holds it equals the pinned dict."""
    data = analysis.to_json()
    assert data.pop("schema_version") == FormatsAnalysis.SCHEMA_VERSION
    assert_same(_sorted(data), _sorted(json_safe(expected)))


def test_golden_cases_are_present() -> None:
    assert CASES == ["generate-extras", "logprob-unifiedqa", "plain"]


@pytest.mark.parametrize("case", CASES)
def test_analysis_equals_the_pinned_output(case: str) -> None:
    table, design, expected = load_case("formats", case)
    analysis = analyze_formats(ResultsFrame(table), design)
    assert_pinned(analysis, expected)
    assert FormatsAnalysis.from_json(analysis.to_json()) == analysis


def test_chunks_and_extra_columns_change_nothing() -> None:
    table, design, expected = load_case("formats", "generate-extras")
    chunked = pa.concat_tables([table.slice(0, 500), table.slice(500, 3), table.slice(503)])
    wider = chunked.append_column("prompt", pa.array(["p"] * table.num_rows))
    assert_pinned(analyze_formats(ResultsFrame(wider), design), expected)


@pytest.mark.parametrize("case", CASES)
def test_column_labels_equal_the_row_rule(case: str) -> None:
    """The vectorised outcome of every row is what :func:`classify` says for that row."""
    table, design, _ = load_case("formats", case)
    frame = FormatsFrame(ResultsFrame(table))
    conditions = {c["name"]: c for c in design["conditions"]}
    rows = table.to_pylist()
    checked = 0
    for name, cond in conditions.items():
        for model in frame.models:
            idx = frame.group(model, name)
            labels = _labels(frame, idx, cond["role"], cond["escape"])
            for i, code in zip(idx.tolist(), labels.tolist(), strict=True):
                row = {**rows[i], "meta": frame.metas[int(frame.meta_code[i])]}
                assert _LABELS[code] == classify(row, cond["role"], cond["escape"]), (case, i)
                checked += 1
    assert checked == table.num_rows


def test_frame_rejects_missing_columns_and_null_keys() -> None:
    table, _, _ = load_case("formats", "plain")
    with pytest.raises(DataError, match=r"missing column\(s\) metadata; the formats analysis"):
        FormatsFrame(ResultsFrame(table.drop_columns(["metadata"])))
    models = table.column("model").to_pylist()
    models[5] = None
    bad = table.set_column(0, "model", pa.array(models))
    with pytest.raises(DataError, match="row 5: column 'model' is null"):
        FormatsFrame(ResultsFrame(bad))
    meta = table.column("metadata").to_pylist()
    meta[7] = "{not json"
    bad = table.set_column(table.schema.get_field_index("metadata"), "metadata", pa.array(meta))
    with pytest.raises(DataError, match="row 7: column 'metadata' is not JSON"):
        FormatsFrame(ResultsFrame(bad))


def test_empty_table_gives_empty_analysis() -> None:
    table, design, _ = load_case("formats", "generate-extras")
    out = analyze_formats(ResultsFrame(table.slice(0, 0)), design)
    assert [c.model_dump() for c in out.conditions] == design["conditions"]
    assert out.models == out.outcomes == out.pairs == out.noise_floor == []
    assert out.orders == out.no_decoy == out.sampling == out.examples == []
    assert out.determinism is not None and out.determinism.compared == 0


def test_outcome_fields_are_the_outcomes_in_order() -> None:
    """The report lists counts and rates in the order of the types' fields."""
    assert tuple(UnanswerableCounts.model_fields) == UNANSWERABLE_OUTCOMES
    assert tuple(UnanswerableRates.model_fields) == UNANSWERABLE_OUTCOMES
    assert tuple(AnswerableCounts.model_fields) == ANSWERABLE_OUTCOMES
    assert tuple(AnswerableRates.model_fields) == ANSWERABLE_OUTCOMES


def test_free_form_fields_are_written_for_free_form_only() -> None:
    """``near_decoy``, ``em`` and ``f1`` are in the JSON of a free-form outcome only (as
    the dict analysis wrote them), and read back as None where absent."""
    table, design, _ = load_case("formats", "plain")
    analysis = analyze_formats(ResultsFrame(table), design)
    data = analysis.to_json()
    for rec, typed in zip(data["outcomes"], analysis.outcomes, strict=True):
        own = {"near_decoy"} if rec["subset"] == "unanswerable" else {"em", "f1"}
        assert (own <= set(rec)) == (rec["role"] == "free"), rec
        if rec["role"] != "free":
            assert all(getattr(typed, k) is None for k in own)
    assert FormatsAnalysis.from_json(data) == analysis


def test_the_assertion_catches_a_changed_type_and_number() -> None:
    with pytest.raises(AssertionError, match=r"analysis\.a"):
        assert_same({"a": 1}, {"a": 1.0})
    with pytest.raises(AssertionError, match=r"analysis\[0\]\.b"):
        assert_same([{"b": 0.5}], [{"b": 0.5000001}])
    with pytest.raises(AssertionError, match="keys"):
        assert_same({"x": 1, "y": 2}, {"y": 2, "x": 1})
