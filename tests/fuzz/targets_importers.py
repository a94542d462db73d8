"""Fuzz targets: the importers (``steadyeval import inspect`` with ``.eval`` and ``.json``
logs, ``steadyeval import lm-eval`` with output folders) and the public importer functions.

Every example starts from a real fixture log (tests/importers/fixtures) and changes part of
it: a field at a path the importer reads set to a hostile value or removed, a member's
bytes replaced (binary, not UTF-8, nested 100,000 deep, cut short), an archive member
renamed (``../../x``), compressed another way or declaring another size (a compression bomb
of zeros, built in a streaming way), or the whole file cut or flipped. Examples with no
change import successfully, so the target checks both sides. The limits are lowered for
the target's process (``STEADYEVAL_MAX_MEMBER_MB`` and friends) so that a bomb is cheap
to build and still passes them; the code paths are those of the defaults.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from steadyeval.results import import_inspect, import_lmeval
from tests.fuzz._hostile import apply_edits, depths, dump, edits
from tests.fuzz._registry import check_cli, expect_own_error, target
from tests.importers._zip import DEFLATE, STORED, ZSTD, Member, fixture_members, write_zip, zeros

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
#: Lowered for the targets' processes: a bomb over them is a few MiB, cheap to build.
LIMITS = {
    "STEADYEVAL_MAX_MEMBER_MB": "4",
    "STEADYEVAL_MAX_LOG_MB": "12",
    "STEADYEVAL_MAX_LOG_MEMBERS": "64",
    "STEADYEVAL_MAX_JSON_VALUES": "200000",
}

_SAMPLE_PATHS = [
    ("id",), ("epoch",), ("input",), ("input", "*"), ("input", "*", "content"), ("choices",),
    ("choices", "*"), ("target",), ("target", "*"), ("messages",), ("messages", "*"),
    ("messages", "*", "role"), ("messages", "*", "content"), ("messages", "*", "content", "*"),
    ("output",), ("output", "completion"), ("output", "choices"), ("output", "choices", "*"),
    ("output", "choices", "*", "message"), ("output", "choices", "*", "message", "content"),
    ("output", "choices", "*", "stop_reason"), ("scores",), ("scores", "*"),
    ("scores", "*", "value"), ("scores", "*", "answer"), ("metadata",), ("metadata", "*"),
    ("metadata", "inspect"), ("error",), ("error", "message"), ("events",), ("attachments",),
]  # fmt: skip
_HEADER_PATHS = [
    ("eval",), ("eval", "task"), ("eval", "model"), ("eval", "task_id"), ("eval", "created"),
    ("eval", "config"), ("eval", "config", "epochs"), ("eval", "config", "epochs_reducer"),
    ("eval", "dataset"), ("eval", "dataset", "samples"), ("status",), ("error",),
    ("error", "message"), ("results",), ("results", "scores"), ("results", "scores", "*"),
    ("results", "scores", "*", "name"), ("results", "scores", "*", "metrics"),
    ("results", "scores", "*", "metrics", "*"), ("results", "scores", "*", "metrics", "*", "value"),
]  # fmt: skip
_EVAL_LOGS = ("tasks/*arith*.eval", "epochs/*.eval", "errors/*.eval", "killed/*.eval")


def _one(pattern: str) -> Path:
    return sorted(FIXTURES.glob(f"inspect/{pattern}"))[0]


@cache
def _members(pattern: str) -> tuple[tuple[str, bytes], ...]:
    return tuple(fixture_members(_one(pattern)))


def _with_limits(call: Any) -> None:
    """Run ``call`` with :data:`LIMITS` in the environment (restored after)."""
    saved = {k: os.environ.get(k) for k in LIMITS}
    os.environ.update(LIMITS)
    try:
        call()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# -- .eval archives ---------------------------------------------------------------------------
_json_member = st.fixed_dictionaries(
    {"kind": st.just("json"), "edits": edits(_SAMPLE_PATHS + _HEADER_PATHS), "depth": depths()}
)
_raw_member = st.fixed_dictionaries(
    {
        "kind": st.just("raw"),
        "data": st.binary(max_size=64)
        | st.sampled_from([b"", b"{", b"\xff\xfe{}", b"[" * 100_000, b"[{},{},{}]", b"null"]),
    }
)
_bomb = st.fixed_dictionaries(
    {
        "kind": st.just("bomb"),
        "mib": st.sampled_from([1, 5, 13]),
        "method": st.sampled_from([ZSTD, DEFLATE]),
        "declared": st.sampled_from(["true", "small", "huge"]),
    }
)
_packing = st.fixed_dictionaries(
    {
        "kind": st.just("packing"),
        "method": st.sampled_from([STORED, DEFLATE, 12, 14, 99]),
        "size_delta": st.sampled_from([0, 0, 1, -1, 2**32]),
        "crc_flip": st.booleans(),
    }
)
_change = st.tuples(st.integers(0, 40), _json_member | _raw_member | _bomb | _packing)
_eval = st.fixed_dictionaries(
    {
        "log": st.sampled_from(_EVAL_LOGS),
        "changes": st.lists(_change, max_size=2),
        "rename": st.none()
        | st.tuples(
            st.integers(0, 40),
            st.sampled_from(
                [
                    "../../x",
                    "/abs.json",
                    "samples/../header.json",
                    "header.json",
                    "samples/a\\b.json",
                    "samples/\ud800.json",
                    "samples/x_epoch_0.json",
                    "",
                ]
            ),
        ),
        "extra": st.integers(0, 3),
        "cut": st.none() | st.integers(1, 20_000),
    }
)


def _changed(name: str, data: bytes, change: dict[str, Any]) -> Member:
    kind = change["kind"]
    if kind == "json":
        try:
            doc = json.loads(data)
        except ValueError:
            doc = {}
        return _zstd(name, dump(apply_edits(doc, change["edits"]), depth=change["depth"]))
    if kind == "raw":
        return _zstd(name, change["data"])
    if kind == "bomb":
        m = zeros(name, change["mib"] << 20, change["method"])
        declared = {"true": m.size, "small": 100, "huge": 2**33}[change["declared"]]
        return replace(m, size=declared)
    raw = zlib.compress(data)[2:-4] if change["method"] == DEFLATE else data
    size = max(0, len(data) + change["size_delta"])
    crc = zlib.crc32(data) ^ (1 if change["crc_flip"] else 0)
    return Member(name, raw, change["method"], size, crc)


def _zstd(name: str, data: bytes) -> Member:
    from tests.importers._zip import zstd

    return zstd(name, data)


def build_eval(example: dict[str, Any], path: Path) -> Path:
    """The ``.eval`` archive an example describes."""
    members = [_zstd(n, d) for n, d in _members(example["log"])]
    members += [members[-1]] * example["extra"]  # a rewritten member appears twice
    for index, change in example["changes"]:
        i = index % len(members)
        members[i] = _changed(
            members[i].name, dict(_members(example["log"])).get(members[i].name, b"{}"), change
        )
    if example["rename"] is not None:
        index, name = example["rename"]
        i = index % len(members)
        members[i] = replace(members[i], name=name)
    write_zip(path, members)
    if example["cut"] is not None:
        data = path.read_bytes()
        path.write_bytes(data[: max(0, len(data) - example["cut"])])
    return path


@target("import-inspect-eval", "steadyeval import inspect LOG.eval", _eval)
def import_inspect_eval(example: dict[str, Any], folder: Path) -> None:
    log = build_eval(example, folder / "log.eval")
    _with_limits(lambda: check_cli(["import", "inspect", str(log), "--out", "out"]))


# -- .json logs ---------------------------------------------------------------------------------
@cache
def _json_log() -> Any:
    return json.loads(_one("json/*.json").read_text(encoding="utf-8"))


_JSON_PATHS = [*_HEADER_PATHS, ("samples",), ("samples", "*")] + [
    ("samples", "*", *p) for p in _SAMPLE_PATHS
]
_json_log_example = st.one_of(
    st.fixed_dictionaries({"edits": edits(_JSON_PATHS), "depth": depths()}),
    st.binary(max_size=200),
)


@target("import-inspect-json", "steadyeval.results.import_inspect(LOG.json)", _json_log_example)
def import_inspect_json(example: Any, folder: Path) -> None:
    log = folder / "log.json"
    if isinstance(example, bytes):
        log.write_bytes(example)
    else:
        log.write_bytes(dump(apply_edits(_json_log(), example["edits"]), depth=example["depth"]))
    _with_limits(lambda: expect_own_error(lambda: import_inspect([log])))


# -- lm-eval output folders -------------------------------------------------------------------
_RECORD_PATHS = [
    ("doc_id",), ("doc",), ("doc", "*"), ("doc", "lm_eval"), ("target",), ("arguments",),
    ("arguments", "*"), ("arguments", "*", "*"), ("arguments", "*", "arg_1"), ("resps",),
    ("resps", "*"), ("filtered_resps",), ("filtered_resps", "*"), ("filtered_resps", "*", "*"),
    ("filtered_resps", "1", "0"), ("filter",), ("metrics",), ("metrics", "*"), ("acc",),
    ("exact_match",), ("doc_hash",), ("prompt_hash",),
]  # fmt: skip
_RESULTS_PATHS = [
    ("config",), ("config", "model"), ("config", "model_args"), ("config", "model_args", "*"),
    ("configs",), ("configs", "*"), ("configs", "*", "output_type"),
    ("configs", "*", "target_delimiter"), ("configs", "*", "num_fewshot"), ("n-shot",),
    ("n-shot", "*"), ("model_name",), ("chat_template",),
]  # fmt: skip
_LM_DIR = next((FIXTURES / "lmeval" / "out").iterdir())
_lmeval = st.fixed_dictionaries(
    {
        "task": st.sampled_from(["se_plain", "se_gen", "se_fancy"]),
        "records": st.lists(st.tuples(st.integers(0, 9), edits(_RECORD_PATHS, 2)), max_size=2),
        "results": edits(_RESULTS_PATHS, 2),
        "depth": depths(),
        "lines": st.lists(
            st.binary(max_size=40) | st.sampled_from([b"[" * 100_000, b"\xff", b"{}", b"1" * 5000]),
            max_size=1,
        ),
        "results_file": st.sampled_from(["json", "json", "missing", "binary", "list", "fifo"]),
    }
)


def build_lmeval(example: dict[str, Any], folder: Path) -> Path:
    """The lm-eval output folder an example describes (one task's samples + results)."""
    out = folder / "lm"
    out.mkdir()
    samples = next(_LM_DIR.glob(f"samples_{example['task']}_*.jsonl"))
    results = next(_LM_DIR.glob("results_*.json"))
    records = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    for i, changes in example["records"]:
        records[i % len(records)] = apply_edits(records[i % len(records)], changes)
    lines = [dump(r, depth=example["depth"]) for r in records] + example["lines"]
    (out / samples.name).write_bytes(b"\n".join(lines))
    res = out / results.name
    kind = example["results_file"]
    if kind == "json":
        doc = apply_edits(json.loads(results.read_text(encoding="utf-8")), example["results"])
        res.write_bytes(dump(doc, depth=example["depth"]))
    elif kind == "binary":
        res.write_bytes(b"\xff\x00{")
    elif kind == "list":
        res.write_bytes(b"[]")
    elif kind == "fifo":
        os.mkfifo(res)
    return out


@target("import-lmeval", "steadyeval import lm-eval FOLDER", _lmeval)
def import_lmeval_folder(example: dict[str, Any], folder: Path) -> None:
    out = build_lmeval(example, folder)
    _with_limits(lambda: check_cli(["import", "lm-eval", str(out), "--out", "run"]))


@target("import-lmeval-api", "steadyeval.results.import_lmeval", _lmeval)
def import_lmeval_api(example: dict[str, Any], folder: Path) -> None:
    out = build_lmeval(example, folder)
    _with_limits(lambda: expect_own_error(lambda: import_lmeval([out])))


# -- special files ----------------------------------------------------------------------------
_special = st.tuples(
    st.sampled_from(["inspect", "lm-eval"]),
    st.sampled_from(["fifo", "devzero", "socket", "folder", "dangling", "fifo-in-folder"]),
)


@target("import-special-files", "steadyeval import inspect|lm-eval SPECIAL", _special)
def import_special(example: tuple[str, str], folder: Path) -> None:
    tool, kind = example
    name = "log.eval" if tool == "inspect" else "samples_t_2026-01-01T00-00-00.1.jsonl"
    path = folder / name
    if kind in ("fifo", "fifo-in-folder"):
        (folder / "d").mkdir()
        path = folder / "d" / name
        os.mkfifo(path)
        if kind == "fifo-in-folder":
            path = folder / "d"
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "socket":
        import socket

        with socket.socket(socket.AF_UNIX) as s:  # relative: AF_UNIX paths are short
            s.bind(name)  # the runner's working directory is ``folder``
            check_cli(["import", tool, name, "--out", "out"])
            return
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(folder / "nothing")
    check_cli(["import", tool, str(path), "--out", "out"])
