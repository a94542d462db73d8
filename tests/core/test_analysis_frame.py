"""The analysis half's two shared shapes: the typed, versioned ``Analysis`` and the one
reader of the results table, ``ResultsFrame``."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from steadyeval._errors import DataError
from steadyeval.results import Analysis, AnalysisRecord, Design, ResultsFrame


class _Row(AnalysisRecord):
    name: str
    score: float | None


class _Toy(Analysis):
    SCHEMA_VERSION = 3
    rows: list[_Row]
    notes: tuple[str, ...] = ()


def test_an_analysis_round_trips_through_json_as_its_type() -> None:
    made = _Toy(rows=[{"name": "a", "score": np.float64(0.5)}, {"name": "b", "score": math.nan}])
    assert made.rows[1].score is None  # not finite: None, as summary.json writes it
    data = json.loads(json.dumps(made.to_json()))
    assert data["schema_version"] == 3
    assert _Toy.from_json(data) == made
    with pytest.raises(ValidationError, match="frozen"):
        made.rows[0].name = "c"  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"rows": []}, "schema version None"),
        ({"rows": [], "schema_version": 2}, "schema version 2; this steadyeval reads version 3"),
        ({"rows": [{"name": 1, "score": 0}], "schema_version": 3}, "analysis field rows.0.name"),
        ({"rows": [], "extra": 1, "schema_version": 3}, "analysis field extra"),
        ([1, 2], "'analysis' is list"),
    ],
)
def test_a_wrong_analysis_is_refused_with_where_and_how_to_recompute(
    data: object, expected: str
) -> None:
    with pytest.raises(DataError, match=r"run/summary\.json") as err:
        _Toy.from_json(data, source="run/summary.json")
    assert expected in str(err.value)


class _ToyDesign(Design):
    n_items: int | None = None
    sizes: tuple[float, ...] = ()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_design_with_a_non_finite_number_is_refused_not_nulled(bad: float) -> None:
    with pytest.raises(DataError, match=r"run/summary\.json: design field n_items is not a fin"):
        _ToyDesign.from_json({"n_items": bad}, source="run/summary.json")
    with pytest.raises(DataError, match=r"design field sizes\.1 is not a finite number"):
        _ToyDesign.from_json({"sizes": [1.0, bad]}, source="run/summary.json")
    assert _ToyDesign.from_json({"n_items": 3}).n_items == 3


def _frame() -> ResultsFrame:
    table = pa.table(
        {
            "model": ["m2", "m1", "m2", "m1"],
            "item_id": ["b", "a", "a", None],
            "correct": [True, None, False, True],
            "sample_index": pa.array([0, 1, None, 0], pa.int64()),
            "metadata": ['{"k": 1}', None, '{"k": 1}', "{}"],
        }
    )
    return ResultsFrame(table, source="t.parquet")


def test_frame_codes_in_first_seen_or_sorted_order() -> None:
    frame = _frame()
    codes, values = frame.codes("model")
    assert values == ["m2", "m1"] and codes.tolist() == [0, 1, 0, 1]
    codes, values = frame.codes("model", order="sorted")
    assert values == ["m1", "m2"] and codes.tolist() == [1, 0, 1, 0]
    codes, values = frame.codes("item_id")
    assert values == ["b", "a"] and codes.tolist() == [0, 1, 1, -1]
    with pytest.raises(DataError, match=r"t.parquet, row 3: column 'item_id' is null"):
        frame.codes("item_id", nulls=False)


def test_frame_typed_columns() -> None:
    frame = _frame()
    assert frame.bools("correct").tolist() == [1, -1, 0, 1]
    assert frame.ints("sample_index", null=-1).tolist() == [0, 1, -1, 0]
    assert np.isnan(frame.floats("correct")[1]) and frame.floats("correct")[0] == 1.0
    codes, metas = frame.metadata()
    assert [metas[c] for c in codes] == [{"k": 1}, {}, {"k": 1}, {}]
    assert frame.values("model", np.array([3, 0])) == ["m1", "m2"]
    assert len(frame.where(model="m1")) == 2
    assert frame.select(np.array([2])).values("item_id") == ["a"]


def test_frame_errors_name_the_source_and_column() -> None:
    frame = _frame()
    with pytest.raises(DataError, match=r"t.parquet: no column 'parsed'"):
        frame.bools("parsed")
    with pytest.raises(DataError, match=r"missing column\(s\) parsed; the toy reads model, parsed"):
        frame.require(["model", "parsed"], reader="the toy")
    bad = ResultsFrame(pa.table({"metadata": ["{}", "[1]"]}), source="t.parquet")
    with pytest.raises(DataError, match=r"row 1: column 'metadata' holds list"):
        bad.metadata()


def test_frame_edges_a_hostile_review_found() -> None:
    # chunks with their own dictionaries are numbered as one column
    chunks = [pa.array(["x", "y"]).dictionary_encode(), pa.array(["y", "z"]).dictionary_encode()]
    codes, values = ResultsFrame(pa.table({"model": pa.chunked_array(chunks)})).codes("model")
    assert values == ["x", "y", "z"] and codes.tolist() == [0, 1, 1, 2]
    frame = ResultsFrame(pa.table({"s": ["a", None, "b"], "x": [1.5, math.nan, 0.0]}), source="t")
    assert frame.where(s=None).values("s") == [None]
    assert frame.codes("x", order="sorted")[1][:2] == [0.0, 1.5]  # NaN last
    with pytest.raises(ValueError, match=r"where\(s=...\): a int cannot be compared"):
        frame.where(s=5)
    with pytest.raises(IndexError, match="row -1 is out of range"):
        frame.select([-1])
    with pytest.raises(IndexError, match="must be integers"):
        frame.select([0.5])
    with pytest.raises(DataError, match=r"column 's' \(string\) cannot be read as integers"):
        frame.ints("s", null=0)
    deep = '{"a":' * 30_000 + "1" + "}" * 30_000
    with pytest.raises(DataError, match="row 0: column 'metadata' is nested too deeply"):
        ResultsFrame(pa.table({"metadata": [deep]}), source="t").metadata()
    with pytest.raises(DataError, match="column 'metadata' holds int64"):
        ResultsFrame(pa.table({"metadata": [1]}), source="t").metadata()
    with pytest.raises(TypeError, match="expected a ResultsFrame or a pyarrow Table"):
        ResultsFrame.of([1])  # type: ignore[arg-type]


def test_a_missing_design_says_so() -> None:
    from steadyeval.studies import find_study

    formats = find_study("formats")
    assert formats is not None
    for missing in (None, {}):
        with pytest.raises(DataError, match=r"run/summary\.json: no design facts .*formats"):
            formats.read_design(missing, source="run/summary.json")
    with pytest.raises(DataError, match="design field seed"):  # a wrong field is named
        formats.read_design({"seed": "x"}, source="run/summary.json")
