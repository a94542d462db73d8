"""``analyze_formats`` returns exactly the pinned dicts of ``tests/golden/formats``.

The inputs and expected outputs come from ``tests/golden/formats/make_golden.py`` (first
written with the row-wise implementation); the vectorised one must give the same keys in the
same order, the same Python types and the same numbers (floats within 1e-12 relative).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from steadyeval.studies.formats import analyze_formats, classify
from steadyeval.studies.formats._analysis import _LABELS, _labels
from steadyeval.studies.formats._frame import FormatsFrame

from ..pinned import assert_same, cases, load_case

CASES = cases("formats")


def test_golden_cases_are_present() -> None:
    assert CASES == ["generate-extras", "logprob-unifiedqa", "plain"]


@pytest.mark.parametrize("case", CASES)
def test_analysis_equals_the_pinned_output(case: str) -> None:
    table, design, expected = load_case("formats", case)
    assert_same(analyze_formats(table, design), expected)


def test_chunks_and_extra_columns_change_nothing() -> None:
    table, design, expected = load_case("formats", "generate-extras")
    chunked = pa.concat_tables([table.slice(0, 500), table.slice(500, 3), table.slice(503)])
    wider = chunked.append_column("prompt", pa.array(["p"] * table.num_rows))
    assert_same(analyze_formats(wider, design), expected)


@pytest.mark.parametrize("case", CASES)
def test_column_labels_equal_the_row_rule(case: str) -> None:
    """The vectorised outcome of every row is what :func:`classify` says for that row."""
    table, design, _ = load_case("formats", case)
    frame = FormatsFrame(table)
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
    with pytest.raises(ValueError, match=r"missing column.*metadata"):
        FormatsFrame(table.drop_columns(["metadata"]))
    models = table.column("model").to_pylist()
    models[5] = None
    bad = table.set_column(0, "model", pa.array(models))
    with pytest.raises(ValueError, match="row 5: column 'model' is null"):
        FormatsFrame(bad)
    meta = table.column("metadata").to_pylist()
    meta[7] = "{not json"
    bad = table.set_column(table.schema.get_field_index("metadata"), "metadata", pa.array(meta))
    with pytest.raises(ValueError, match="row 7: column 'metadata' is not JSON"):
        FormatsFrame(bad)


def test_empty_table_gives_empty_analysis() -> None:
    table, design, _ = load_case("formats", "generate-extras")
    out = analyze_formats(table.slice(0, 0), design)
    assert out["conditions"] == design["conditions"]
    empty = ("models", "outcomes", "pairs", "noise_floor", "orders", "no_decoy", "sampling")
    assert all(out[k] == [] for k in (*empty, "examples"))
    assert out["determinism"]["compared"] == 0


def test_the_assertion_catches_a_changed_type_and_number() -> None:
    with pytest.raises(AssertionError, match=r"analysis\.a"):
        assert_same({"a": 1}, {"a": 1.0})
    with pytest.raises(AssertionError, match=r"analysis\[0\]\.b"):
        assert_same([{"b": 0.5}], [{"b": 0.5000001}])
    with pytest.raises(AssertionError, match="keys"):
        assert_same({"x": 1, "y": 2}, {"y": 2, "x": 1})
