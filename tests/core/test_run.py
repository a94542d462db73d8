from __future__ import annotations

import dataclasses
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from steadyeval import (
    FORMATS,
    TEMPLATES,
    Condition,
    ConfigError,
    Generation,
    Item,
    RunOptions,
    Shots,
    UnsupportedRequestError,
    parse_model_spec,
    read_results,
    run,
)
from steadyeval.results import StudyColumn, study_columns
from tests.scripted_backend import ScriptedBackend

ITEMS = [
    Item(
        id=f"q{i}",
        question=f"Question number {i}?",
        options=("alpha", "beta", "gamma"),
        gold_options=(i % 3,),
        answerable=i % 4 != 0,
        metadata={"subject": f"s{i % 2}"},
    )
    for i in range(12)
] + [Item(id="free", question="Name a colour.", answers=("red",))]

CONDITIONS = [
    Condition(name="free", template=TEMPLATES["qa"], format=FORMATS["free"]),
    Condition(name="mc-gen", template=TEMPLATES["qa"], format=FORMATS["mc"]),
    Condition(
        name="nota-lp",
        template=TEMPLATES["qa"],
        format=FORMATS["mc-nota"],
        scoring="option-logprob",
        option_order="shuffled",
        order_seed=3,
    ),
    Condition(
        name="letters-1shot",
        template=TEMPLATES["qa"],
        format=FORMATS["mc"],
        scoring="letter-logprob",
        shots=Shots(n=1, seed=5),
    ),
    Condition(
        name="sampled",
        template=TEMPLATES["qa"],
        format=FORMATS["free"],
        generation=Generation(temperature=0.8, n_samples=2, seed=1),
    ),
]


def backend(name: str = "a", **kw: object) -> ScriptedBackend:
    return ScriptedBackend(spec=parse_model_spec(f"scripted:{name}"), **kw)  # type: ignore[arg-type]


def test_run_writes_the_run_directory(tmp_path: Path) -> None:
    b = backend()
    result = run(ITEMS, CONDITIONS, [b], options=RunOptions(out=tmp_path / "r", progress=False))
    t = result.table
    # Row-count invariant: applicable (item, condition) pairs × samples, skipped counted.
    skipped = result.summary["n_skipped"]
    assert skipped == 3  # the free item under the three multiple-choice conditions
    expected = (len(ITEMS) * 4 - skipped) + len(ITEMS) * 2
    assert t.num_rows == expected
    keys = list(
        zip(
            t["item_id"].to_pylist(),
            t["condition"].to_pylist(),
            t["model"].to_pylist(),
            t["sample_index"].to_pylist(),
            strict=True,
        )
    )
    assert len(set(keys)) == len(keys)
    for name in ("results.parquet", "summary.json", "summary.md", "config.json", "provenance.json"):
        assert (tmp_path / "r" / name).exists()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (
        summary["n_rows"] == expected
        and summary["plan"]["model_calls"] == b.calls["score"] + b.calls["generate"]
    )
    assert read_results(tmp_path / "r").equals(t)
    prov = json.loads((tmp_path / "r" / "provenance.json").read_text())
    assert prov["models"] == {"scripted:a": "scripted:a"} and "dispatch" in prov["timings_s"]
    row = t.to_pylist()[0]
    assert row["schema_version"] == 3 and "subject" not in row  # study columns are declared
    assert json.loads(row["metadata"])["subject"] == "s0"


def test_declared_columns_are_lifted_typed_and_documented(tmp_path: Path) -> None:
    columns = [
        StudyColumn("subject", "string", "the item's subject"),
        StudyColumn("n", "int", "a number", key="number"),
    ]
    items = [
        dataclasses.replace(i, metadata={**i.metadata, "number": k}) for k, i in enumerate(ITEMS)
    ]
    result = run(
        items,
        CONDITIONS[:1],
        [backend()],
        options=RunOptions(out=tmp_path / "r", progress=False),
        columns=columns,
    )
    t = read_results(tmp_path / "r")
    assert t.column_names[-2:] == ["subject", "n"]
    assert t.schema.field("n").type == pa.int64() and t.schema.field("subject").metadata == {
        b"doc": b"the item's subject"
    }
    assert study_columns(t) == columns
    by_item = dict(zip(t["item_id"].to_pylist(), t["n"].to_pylist(), strict=True))
    assert by_item == {i.id: k for k, i in enumerate(ITEMS)}
    assert result.table.equals(t)
    with pytest.raises(ConfigError, match="shadow a core column"):
        StudyColumn("correct")


def test_dry_run_counts_and_warm_rerun_is_byte_identical(tmp_path: Path) -> None:
    b = backend()
    counts = run(ITEMS, CONDITIONS, [b], dry_run=True)
    assert counts.to_send == counts.unique_requests > 0 and counts.cache_hits == 0
    assert counts.input_tokens > 0 and not counts.input_tokens_estimated
    assert sum(b.calls.values()) == 0
    run(ITEMS, CONDITIONS, [b], options=RunOptions(out=tmp_path / "one", progress=False))
    first_calls = dict(b.calls)
    counts = run(ITEMS, CONDITIONS, [b], dry_run=True)
    assert counts.cache_hits == counts.unique_requests and counts.to_send == 0
    warm = run(ITEMS, CONDITIONS, [b], options=RunOptions(out=tmp_path / "two", progress=False))
    assert b.calls == first_calls and warm.summary["plan"]["model_calls"] == 0
    a_bytes = (tmp_path / "one" / "results.parquet").read_bytes()
    assert a_bytes == (tmp_path / "two" / "results.parquet").read_bytes()


def test_unsupported_kind_fails_before_any_call() -> None:
    b = backend(kinds=frozenset({"generate"}))
    with pytest.raises(UnsupportedRequestError, match=r"scripted:a does not support score"):
        run(ITEMS, CONDITIONS, [b])
    assert sum(b.calls.values()) == 0


def test_two_models_are_rows_of_one_table(tmp_path: Path) -> None:
    res = run(
        ITEMS, CONDITIONS[:2], [backend("a"), backend("b")], options=RunOptions(progress=False)
    )
    assert set(res.table["model"].to_pylist()) == {"scripted:a", "scripted:b"}
    assert res.table.num_rows == 2 * (len(ITEMS) * 2 - 1)


def _cache_count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "killed.sqlite"
    total = run(
        ITEMS,
        CONDITIONS,
        [backend("slow")],
        dry_run=True,
        options=RunOptions(cache=tmp_path / "probe.sqlite"),
    ).unique_requests
    script = Path(__file__).with_name("_scripted_run.py")
    proc = subprocess.Popen([sys.executable, str(script), str(cache), str(tmp_path / "x"), "0.02"])
    try:
        deadline = time.monotonic() + 40
        while _cache_count(cache) < max(3, total // 5):
            assert proc.poll() is None, "run finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    held = _cache_count(cache)
    assert 1 <= held < total
    resumed_backend = backend("slow")
    resumed = run(
        ITEMS,
        CONDITIONS,
        [resumed_backend],
        options=RunOptions(cache=cache, out=tmp_path / "resumed", progress=False),
    )
    assert sum(resumed_backend.calls.values()) == total - held
    assert resumed.summary["plan"]["cache_hits"] == held
    assert _cache_count(cache) == total
    fresh = run(
        ITEMS,
        CONDITIONS,
        [backend("slow")],
        options=RunOptions(cache=tmp_path / "fresh.sqlite", out=tmp_path / "fresh", progress=False),
    )
    assert resumed.table.equals(fresh.table)
    assert pq.read_table(tmp_path / "resumed" / "results.parquet").equals(
        pq.read_table(tmp_path / "fresh" / "results.parquet")
    )


def test_verbalizer_condition_runs(tmp_path: Path) -> None:
    item = Item(
        id="nli",
        question="A man sleeps. Is he awake?",
        options=("entailment", "contradiction"),
        gold_options=(1,),
    )
    cond = Condition(
        name="v",
        template=TEMPLATES["qa"],
        format=FORMATS["mc"],
        scoring="option-logprob",
        verbalizer={"entailment": "Yes", "contradiction": "No"},
        verbalizer_name="yes-no",
    )
    assert cond.to_dict()["verbalizer"] == {"entailment": "Yes", "contradiction": "No"}
    res = run([item], [cond], [backend()], options=RunOptions(progress=False))
    row = res.table.to_pylist()[0]
    assert row["options"] == ["Yes", "No"] and row["verbalizer"] == "yes-no"
