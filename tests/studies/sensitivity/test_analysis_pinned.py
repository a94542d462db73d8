"""``analyze_sensitivity`` returns exactly the pinned dicts of ``tests/golden/sensitivity``.

The inputs and expected outputs come from ``tests/golden/sensitivity/make_golden.py`` (first
written before the tensor was built on columns): the typed analysis's JSON (without its
``schema_version``) has the same keys in the same order, the same Python types and the same
numbers (floats within 1e-12 relative).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from steadyeval._errors import ConfigError, DataError
from steadyeval.results import ResultsFrame
from steadyeval.studies.sensitivity import Correctness, SensitivityAnalysis, analyze_sensitivity

from ..pinned import assert_same, cases, load_case

CASES = cases("sensitivity")


def _analysis_json(table: pa.Table, design: dict[str, Any]) -> dict[str, Any]:
    """The analysis as ``summary.json`` holds it, less its schema version; it reads back as
    the same object."""
    analysis = analyze_sensitivity(ResultsFrame(table), design)
    data = analysis.to_json()
    assert SensitivityAnalysis.from_json(data) == analysis
    return {k: v for k, v in data.items() if k != "schema_version"}


def _tensor(table: pa.Table, design: dict[str, Any]) -> Correctness:
    return Correctness.from_results(ResultsFrame(table), design)


def test_golden_cases_are_present() -> None:
    assert CASES == ["probes", "probes-samples", "task-items", "task-subjects"]


@pytest.mark.parametrize("case", CASES)
def test_analysis_equals_the_pinned_output(case: str) -> None:
    table, design, expected = load_case("sensitivity", case)
    assert_same(_analysis_json(table, design), expected)


def test_chunks_and_extra_columns_change_nothing() -> None:
    table, design, expected = load_case("sensitivity", "probes-samples")
    chunked = pa.concat_tables([table.slice(0, 300), table.slice(300, 1), table.slice(301)])
    wider = chunked.append_column("prompt", pa.array(["p"] * table.num_rows))
    assert_same(_analysis_json(wider, design), expected)


def _with(table: pa.Table, name: str, values: list[Any]) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, name, pa.array(values, table.schema.field(name).type))


def test_tensor_errors_name_the_first_bad_row() -> None:
    table, design, _ = load_case("sensitivity", "probes")
    correct = table.column("correct").to_pylist()
    correct[17] = None
    with pytest.raises(ConfigError, match=r"row 17 \(condition 't00-a0', item 'known_for/"):
        _tensor(_with(table, "correct", correct), design)
    relation = table.column("relation").to_pylist()
    relation[9] = None
    with pytest.raises(ConfigError, match=r"row 9 \(item 'river/Calder/Tave'\) has no relation"):
        _tensor(_with(table, "relation", relation), design)
    conditions = table.column("condition").to_pylist()
    conditions[3], conditions[40] = "zzz", "aaa"
    unknown = _with(table, "condition", conditions)
    with pytest.raises(ConfigError, match="conditions aaa, zzz are not in the study's design"):
        _tensor(unknown, design)
    correct = table.column("correct").to_pylist()
    correct[100] = None  # a row without correctness is reported before unknown conditions
    with pytest.raises(ConfigError, match="row 100 "):
        _tensor(_with(unknown, "correct", correct), design)
    with pytest.raises(ConfigError, match="no rows for this study's conditions"):
        _tensor(table.slice(0, 0), design)
    with pytest.raises(DataError, match=r"missing column\(s\) parsed; the sensitivity analysis"):
        _tensor(table.drop_columns(["parsed"]), design)
    item_ids = table.column("item_id").to_pylist()
    item_ids[5] = None
    with pytest.raises(DataError, match=r"row 5: column 'item_id' is null"):
        _tensor(_with(table, "item_id", item_ids), design)


def test_tensor_cells_and_predictions_follow_the_rows() -> None:
    """Cells average a cell's rows; a cell's prediction code is its first row's, codes
    numbered in order of first use; facts in order of first appearance per unit."""
    table, design, _ = load_case("sensitivity", "probes-samples")
    c = _tensor(table, design)
    rows = table.to_pylist()
    roles = design["conditions"]
    units = list(dict.fromkeys(r["relation"] for r in rows))
    assert list(c.units) == units and list(c.models) == list(
        dict.fromkeys(r["model"] for r in rows)
    )
    for u, unit in enumerate(units):
        assert list(c.facts[u]) == list(
            dict.fromkeys(r["item_id"] for r in rows if r["relation"] == unit)
        )
    sums: dict[tuple[int, ...], list[float]] = {}
    first: dict[tuple[int, ...], str] = {}
    for r in rows:
        u = c.units.index(r["relation"])
        key = (u, c.models.index(r["model"]), c.templates.index(roles[r["condition"]]["template"]),
               int(roles[r["condition"]]["alias"]), c.facts[u].index(r["item_id"]))  # fmt: skip
        sums.setdefault(key, []).append(1.0 if r["correct"] else 0.0)
        first.setdefault(key, "\x00" if r["parsed"] is None else r["parsed"])
    codes: dict[str, int] = {}
    for key in sorted(first, key=lambda k: list(first).index(k)):
        codes.setdefault(first[key], len(codes))
    for (u, m, p, x, f), v in sums.items():
        assert c.cells[u][m, p, x, f] == sum(v) / len(v)
        assert c.predictions is not None
        assert c.predictions[u][m, p, x, f] == codes[first[(u, m, p, x, f)]]
    asked = sum(int((~np.isnan(cell)).sum()) for cell in c.cells)
    assert asked == len(sums)


def test_a_damaged_analysis_is_refused_naming_its_field() -> None:
    """summary.json's analysis read back: a value of the wrong type, a section that claims to
    apply without its fields, or an unknown regime is a DataError naming the field."""
    _, _, expected = load_case("sensitivity", "probes")
    good = {**expected, "schema_version": SensitivityAnalysis.SCHEMA_VERSION}
    assert SensitivityAnalysis.from_json(good).to_json() == good
    rc = good["rank_consistency"]
    damaged = [
        {**good, "n_facts": "many"},
        {**good, "rankings": {"applicable": True, "reason": "one model"}},
        {**good, "rank_consistency": {**rc, "regimes": {**rc["regimes"], "lucky": {}}}},
    ]
    for data, field in zip(damaged, ["n_facts", "rankings", "rank_consistency"], strict=True):
        with pytest.raises(DataError, match=rf"run/summary.json: analysis field {field}\b"):
            SensitivityAnalysis.from_json(data, source="run/summary.json")
