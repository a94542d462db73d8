"""The results table: the typed row, schema version 3, and version 1 and 2 files read back."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from steadyeval import DataError, read_results
from steadyeval.results import (
    ADDED_IN_V3,
    RESULTS_SCHEMA,
    RESULTS_SCHEMA_V1,
    SCHEMA_VERSION,
    ResultRow,
    StudyColumn,
    prompt_hash,
    rows_to_table,
    study_columns,
    upgrade_table,
    write_results,
)


def _v1_file(path: Path) -> Path:
    n = 3
    data = {f.name: [None] * n for f in RESULTS_SCHEMA_V1}
    data.update(
        schema_version=[1] * n,
        run_id=["r"] * n,
        model=["hf:x"] * n,
        item_id=["a", "b", "c"],
        condition=["c"] * n,
        correct=[True, False, None],
        subject=["algebra", None, "history"],
        metadata=["{}"] * n,
    )
    table = pa.Table.from_pydict(data, schema=RESULTS_SCHEMA_V1)
    table = table.append_column("part", pa.array(["dev", "test", "dev"]))
    table = table.replace_schema_metadata(RESULTS_SCHEMA_V1.metadata)
    pq.write_table(table, path)
    return path


def test_a_version_1_file_reads_as_the_current_version(tmp_path: Path) -> None:
    t = read_results(_v1_file(tmp_path / "v1.parquet"))
    assert SCHEMA_VERSION == 3
    assert t.column("schema_version").to_pylist() == [3, 3, 3]
    assert t.column("extractor").to_pylist() == [None] * 3  # added in version 3: null
    # relation, split and hparams held nothing: dropped; subject held values: a study column.
    assert t.column_names == [*RESULTS_SCHEMA.names, "subject", "part"]
    assert t.column("subject").to_pylist() == ["algebra", None, "history"]
    assert t.column("part").to_pylist() == ["dev", "test", "dev"]  # a v1 study's own column
    assert [c.name for c in study_columns(t)] == ["subject"]
    assert t.column("correct").to_pylist() == [True, False, None]


def test_a_version_2_file_reads_with_the_version_3_columns_null(tmp_path: Path) -> None:
    """A version 2 table (the core without issue 43's four columns, a declared study
    column) reads with those columns null and its study column kept and declared."""
    rows = [
        ResultRow(
            run_id="r", model="m", item_id=i, condition="c", correct=True, metadata={"task": "t"}
        )
        for i in "ab"
    ]
    current = rows_to_table(rows, [StudyColumn("task", "string", "the task")])
    v2 = current.drop_columns(list(ADDED_IN_V3))
    meta = {**v2.schema.metadata, b"steadyeval.schema_version": b"2"}
    v2 = v2.replace_schema_metadata(meta).set_column(
        0, "schema_version", pa.array([2, 2], pa.int32())
    )
    pq.write_table(v2, tmp_path / "v2.parquet")
    t = read_results(tmp_path / "v2.parquet")
    assert t.column_names == [*RESULTS_SCHEMA.names, "task"]
    assert t.column("schema_version").to_pylist() == [3, 3]
    for name in ADDED_IN_V3:
        assert t.column(name).to_pylist() == [None, None]
    assert [c.name for c in study_columns(t)] == ["task"]
    assert t.column("task").to_pylist() == ["t", "t"]
    assert t.equals(upgrade_table(t))  # a current table is unchanged


def test_newer_and_foreign_files_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"x": [1]}), plain)
    with pytest.raises(DataError, match="not a steadyeval results file"):
        read_results(plain)
    future = tmp_path / "future.parquet"
    table = rows_to_table([ResultRow(run_id="r", model="m", item_id="i", condition="c")])
    meta = {**table.schema.metadata, b"steadyeval.schema_version": b"99"}
    pq.write_table(table.replace_schema_metadata(meta), future)
    with pytest.raises(DataError, match="schema_version 99 is newer"):
        read_results(future)


def test_rows_fill_the_core_schema_and_derive_prompt_hash() -> None:
    rows = [
        ResultRow(run_id="r", model="m", item_id="i", condition="c", prompt="Q: 2+2?"),
        ResultRow(run_id="r", model="m", item_id="j", condition="c", metadata={"k": [1, 2]}),
    ]
    t = rows_to_table(rows, [StudyColumn("k", "json", "a list")])
    assert t.schema.names == [*RESULTS_SCHEMA.names, "k"]
    want = hashlib.sha256(b"Q: 2+2?").hexdigest()[:16]
    assert t.column("prompt_hash").to_pylist() == [want, None] and prompt_hash("Q: 2+2?") == want
    assert t.column("k").to_pylist() == [None, "[1,2]"]
    assert t.column("metadata").to_pylist() == ["{}", '{"k":[1,2]}']


def test_with_study_columns_appends_and_declares(tmp_path: Path) -> None:
    from steadyeval import ConfigError
    from steadyeval.results import with_study_columns

    rows = [ResultRow(run_id="r", model="m", item_id=i, condition="c") for i in "ab"]
    base = rows_to_table(rows, [StudyColumn("task", "string", "the task")])
    out = with_study_columns(
        base, [StudyColumn("score", "float", "a score")], {"score": [0.5, None]}
    )
    assert [c.name for c in study_columns(out)] == ["task", "score"]
    assert out.column("score").to_pylist() == [0.5, None]
    write_results(out, tmp_path / "t.parquet")
    assert read_results(tmp_path / "t.parquet").column("score").to_pylist() == [0.5, None]
    with pytest.raises(ConfigError, match="already has"):
        with_study_columns(out, [StudyColumn("score", "float")], {"score": [1.0, 2.0]})
    with pytest.raises(ConfigError, match="1 values for a table of 2 rows"):
        with_study_columns(base, [StudyColumn("x", "int")], {"x": [1]})
