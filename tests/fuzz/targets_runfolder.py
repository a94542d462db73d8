"""Fuzz targets: run folders as they are read back (``steadyeval report RUN``,
``steadyeval compare A B``, :func:`steadyeval.studies.reanalyze`, :func:`steadyeval.read_results`).

Each example copies a real run folder (a ``run`` with the scripted test backend, or an
``import lm-eval`` of the fixture, made once per process) and damages one or two of its
files: cut short, bytes flipped, replaced by random bytes or by text that is not UTF-8, a
JSON field set to a hostile value, the Parquet table rewritten with a column dropped,
retyped or doubled or with damaged schema metadata, or the file replaced by a link to
``/dev/zero``, a FIFO, a folder, a sparse 3 GiB file, or nothing. With ``remanifest`` the
manifest is rewritten to match, so the damage gets past the hash check to the readers (a
run folder from elsewhere can be consistent and still hostile).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from steadyeval import read_results
from steadyeval.studies import reanalyze
from tests.fuzz._hostile import apply_edits, depths, dump, edits, hostile_value
from tests.fuzz._registry import check_cli, expect_own_error, target

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
_FILES = ("results.parquet", "summary.json", "manifest.json", "summary.md", "config.json")
_RUN_FILES = ("results.parquet", "summary.json", "summary.md", "config.json", "provenance.json")
_SUMMARY_PATHS = [
    ("run_id",), ("models",), ("models", "*"), ("conditions",), ("conditions", "*"),
    ("by_condition",), ("by_condition", "*"), ("by_condition", "*", "accuracy"),
    ("by_condition", "*", "n"), ("plan",), ("plan", "requests"), ("n_skipped",), ("skipped",),
    ("study",), ("design",), ("analysis",), ("imported",), ("imported", "notes"),
    ("imported", "tool"), ("schema_version",), ("files",), ("files", "*"), ("run_id", "x"),
]  # fmt: skip
#: The registered studies, and one that is not (its report shows summary.md as text).
STUDIES = ["formats", "sensitivity", "knowledge", "fewshot", "spread", "disparity", "unknown"]
#: Keys the studies' analyses and designs hold (from their summary.json files).
_ANALYSIS_KEYS = [
    "conditions", "models", "accuracy", "grid", "cells", "formats", "prompt_preference",
    "seed", "pairs", "outcomes", "config", "items", "n_items", "methods", "x",
]  # fmt: skip
_ITEMS = "".join(
    json.dumps({"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b"], "answer": i % 2}) + "\n"
    for i in range(3)
)


@cache
def _base(kind: str) -> Path:
    """A good run folder of ``kind`` (made once per process, outside the examples' folders)."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"fuzz-runfolder-base-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    out = home / kind
    if not out.exists():
        here = Path.cwd()
        os.chdir(home)
        try:
            if kind == "run":
                (home / "items.jsonl").write_text(_ITEMS, encoding="utf-8")
                argv = ["run", "--model", "scripted:m", "--data", "items.jsonl", "--out", kind]
            else:
                lm = next((FIXTURES / "lmeval" / "out").iterdir())
                argv = ["import", "lm-eval", str(lm), "--out", kind]
            assert check_cli([*argv, "-q"] if kind == "run" else argv) == 0
        finally:
            os.chdir(here)
    return out


_damage = st.one_of(
    st.fixed_dictionaries({"how": st.just("cut"), "keep": st.floats(0, 1)}),
    st.fixed_dictionaries({"how": st.just("flip"), "at": st.lists(st.floats(0, 1), max_size=4)}),
    st.fixed_dictionaries({"how": st.just("bytes"), "data": st.binary(max_size=64)}),
    st.fixed_dictionaries(
        {"how": st.just("json"), "edits": edits(_SUMMARY_PATHS), "depth": depths()}
    ),
    st.fixed_dictionaries({"how": st.just("whole"), "value": hostile_value, "depth": depths()}),
    st.fixed_dictionaries(
        {
            "how": st.just("table"),
            "op": st.sampled_from(
                ["drop", "retype", "double", "version", "version-long", "columns", "metadata"]
            ),
            "column": st.sampled_from(["correct", "model", "item_id", "sample_index", "metadata"]),
            "value": hostile_value,
        }
    ),
    st.fixed_dictionaries(  # a registered study whose analysis and design are not its own
        {
            "how": st.just("study"),
            "study": st.sampled_from(STUDIES),
            "analysis": st.dictionaries(st.sampled_from(_ANALYSIS_KEYS), hostile_value),
            "design": st.dictionaries(st.sampled_from(_ANALYSIS_KEYS), hostile_value),
        }
    ),
    st.sampled_from(
        [{"how": h} for h in ("devzero", "fifo", "folder", "delete", "huge", "latin1")]
    ),
)
_runfolder = st.fixed_dictionaries(
    {
        "base": st.sampled_from(["run", "import"]),
        "damage": st.lists(st.tuples(st.sampled_from(_FILES), _damage), max_size=2),
        "remanifest": st.booleans(),
        "call": st.sampled_from(["report-json", "report-md", "compare", "reanalyze", "read"]),
        "max_results_mb": st.sampled_from([None, None, "0.001"]),
    }
)


def _table_damage(path: Path, d: dict[str, Any]) -> None:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError):
        return  # an earlier damage left no table to rewrite
    meta = dict(table.schema.metadata or {})
    op, col = d["op"], d["column"]
    if op in ("drop", "retype", "double") and col not in table.column_names:
        return  # an earlier damage dropped it
    if op == "drop":
        table = table.drop_columns([col])
    elif op == "retype":
        table = table.set_column(
            table.column_names.index(col),
            col,
            pa.array([json.dumps(d["value"], allow_nan=True)] * table.num_rows, pa.string()),
        )
    elif op == "double":
        table = table.append_column(col, table.column(col))
    elif op == "version":
        meta[b"steadyeval.schema_version"] = json.dumps(d["value"], allow_nan=True).encode()
    elif op == "version-long":
        meta[b"steadyeval.schema_version"] = b"9" * 5000
    elif op == "columns":
        meta[b"steadyeval.study_columns"] = dump(d["value"], depth=5000)
    else:  # hostile values in the metadata column (JSON text read by the analyses)
        text = dump(d["value"], depth=5000).decode("utf-8", "replace")
        table = table.set_column(
            table.column_names.index("metadata"),
            "metadata",
            pa.array([text] * table.num_rows, pa.string()),
        )
    pq.write_table(table.replace_schema_metadata(meta), path)


def _damage_file(path: Path, d: dict[str, Any]) -> None:
    how = d["how"]
    if os.path.lexists(path) and not path.is_file():
        return  # already replaced by a special file
    small = path.is_file() and path.stat().st_size < 1 << 20  # never a sparse huge one
    data = path.read_bytes() if small else b"{}"
    if how in ("devzero", "fifo", "folder", "delete"):
        path.unlink(missing_ok=True)
        if how == "devzero":
            path.symlink_to("/dev/zero")
        elif how == "fifo":
            os.mkfifo(path)
        elif how == "folder":
            path.mkdir()
    elif how == "huge":
        with path.open("ab") as fh:
            fh.truncate(3 << 30)  # sparse: no disk, but 3 GiB to a reader
    elif how == "latin1":
        path.write_bytes(data[:20] + b"\xe9\xff" + data[20:])
    elif how == "cut":
        path.write_bytes(data[: int(len(data) * d["keep"])])
    elif how == "flip":
        buf = bytearray(data)
        for at in d["at"]:
            if buf:
                buf[min(int(at * len(buf)), len(buf) - 1)] ^= 0xA5
        path.write_bytes(bytes(buf))
    elif how == "bytes":
        path.write_bytes(d["data"])
    elif how == "json":
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):  # an earlier damage
            doc = {}
        path.write_bytes(dump(apply_edits(doc, d["edits"]), depth=d["depth"]))
    elif how == "whole":
        path.write_bytes(dump(d["value"], depth=d["depth"]))
    elif how == "table" and path.name == "results.parquet":
        _table_damage(path, d)
    elif how == "study" and path.name == "summary.json":
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):  # an earlier damage
            doc = {}
        doc = {**doc, "study": d["study"], "analysis": d["analysis"], "design": d["design"]}
        path.write_bytes(dump(doc))


def _remanifest(run: Path) -> None:
    """A manifest that matches the (damaged) files, as a consistent hostile folder has."""
    files = {}
    for name in _RUN_FILES:
        p = run / name
        if p.is_file() and p.stat().st_size < 1 << 20:
            files[name] = hashlib.sha256(p.read_bytes()).hexdigest()
    manifest = run / "manifest.json"
    if os.path.lexists(manifest) and not manifest.is_file():
        return
    manifest.write_text(json.dumps({"run_id": "x", "files": files}), encoding="utf-8")


def build_run(example: dict[str, Any], folder: Path) -> Path:
    """The damaged run folder an example describes."""
    run = folder / "run"
    shutil.copytree(_base(example["base"]), run, symlinks=True)
    for name, damage in example["damage"]:
        _damage_file(run / name, damage)
    if example["remanifest"]:
        _remanifest(run)
    return run


@target("run-folder", "steadyeval report|compare RUN, reanalyze, read_results", _runfolder)
def run_folder(example: dict[str, Any], folder: Path) -> None:
    run = build_run(example, folder)
    call = example["call"]
    limit = example["max_results_mb"]
    if limit is not None:
        os.environ["STEADYEVAL_MAX_RESULTS_MB"] = limit
    try:
        if call.startswith("report"):
            fmt = call.split("-")[1]
            check_cli(["report", str(run), "--format", fmt, "-o", str(folder / f"r.{fmt}")])
        elif call == "compare":
            check_cli(["compare", str(_base(example["base"])), str(run)])
        elif call == "reanalyze":
            expect_own_error(lambda: reanalyze(run))
        else:
            expect_own_error(lambda: read_results(run))
    finally:
        os.environ.pop("STEADYEVAL_MAX_RESULTS_MB", None)
