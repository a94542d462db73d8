"""Hostile logs for the importers (issue 37, classes 2-5): compression bombs, JSON nested
100,000 deep or of the wrong types, numbers and text at the edges, special files, and a
NaN log-likelihood. Each must give one located error (or, for a NaN score, an answer marked
as such), never a traceback, a hang or gigabytes of memory. Logs are made by changing the
real fixture logs of tests/importers/fixtures."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval import DataError
from steadyeval.cli import main
from steadyeval.results import InspectImportOptions, import_inspect, import_lmeval
from tests.importers._zip import DEFLATE, Member, deflate, fixture_members, write_zip, zeros, zstd

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
ARITH = sorted(FIXTURES.glob("inspect/tasks/*arith*.eval"))[0]
JSON_LOG = sorted(FIXTURES.glob("inspect/json/*.json"))[0]
LM_DIR = next((FIXTURES / "lmeval" / "out").iterdir())
SAMPLE = "samples/1_epoch_1.json"


def _eval(tmp: Path, change: Callable[[list[Member]], list[Member]], name: str = "x") -> Path:
    """The arith fixture log, its members re-packed (Zstandard) and then changed."""
    members = [zstd(n, d) for n, d in fixture_members(ARITH)]
    return write_zip(tmp / f"{name}.eval", change(members))


def _json_member(name: str, edit: Callable[[dict[str, Any]], Any]) -> Callable[..., list[Member]]:
    """A change that edits the JSON of member ``name``."""

    def change(members: list[Member]) -> list[Member]:
        data = dict(fixture_members(ARITH))[name]
        text = json.dumps(edit(json.loads(data)), allow_nan=True).encode("utf-8", "surrogatepass")
        return [zstd(name, text) if m.name == name else m for m in members]

    return change


def _error(call: Callable[[], object]) -> str:
    with pytest.raises(DataError) as info:
        call()
    text = str(info.value)
    assert len(text) < 800, text
    return text


def _cli_error(argv: list[str]) -> str:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ")
    return line


# -- class 2: bombs -----------------------------------------------------------------------------
def test_a_member_that_inflates_to_2_gib_is_refused_in_a_bounded_process(tmp_path: Path) -> None:
    # 2 GiB of zeros, declared as 100 bytes: refused while streaming, in a process that
    # could not hold the member (1.5 GiB of address space, the interpreter included)
    bomb = dataclasses.replace(zeros("samples/9_epoch_1.json", 2 << 30), size=100)
    log = _eval(tmp_path, lambda ms: [*ms, bomb])
    assert log.stat().st_size < 100_000
    script = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        from steadyeval import DataError
        from steadyeval.results import import_inspect
        try:
            import_inspect([{str(log)!r}])
        except DataError as exc:
            print(exc)
            sys.exit(0)
        sys.exit(1)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "samples/9_epoch_1.json: decompresses to more than 128 MiB" in done.stdout
    assert "STEADYEVAL_MAX_MEMBER_MB" in done.stdout


def test_a_deflated_header_bomb_and_the_log_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_MEMBER_MB", "4")
    header = dataclasses.replace(zeros("header.json", 6 << 20, DEFLATE), size=1000)
    log = _eval(tmp_path, lambda ms: [m for m in ms if m.name != "header.json"] + [header])
    text = _cli_error(["import", "inspect", str(log), "--out", str(tmp_path / "o")])
    assert "header.json" in text and ("STEADYEVAL_MAX_MEMBER_MB" in text or "CRC" in text)
    honest = zeros("header.json", 6 << 20, DEFLATE)  # declared as it is: refused up front
    log = _eval(tmp_path, lambda ms: [m for m in ms if m.name != "header.json"] + [honest])
    assert "STEADYEVAL_MAX_MEMBER_MB" in _error(lambda: import_inspect([log]))
    # each member under the member limit, together over the log's
    monkeypatch.setenv("STEADYEVAL_MAX_LOG_MB", "6")
    sample = json.loads(dict(fixture_members(ARITH))[SAMPLE])
    padded = [  # valid samples, 3 MiB each (whitespace before the object)
        zstd(f"samples/{i}_epoch_9.json", b" " * (3 << 20) + json.dumps({**sample, "id": 90 + i, "epoch": 9}).encode())
        for i in range(3)
    ]  # fmt: skip
    extra = padded
    log = _eval(tmp_path, lambda ms: ms + extra, "budget")
    text = _error(lambda: import_inspect([log]))
    assert "budget.eval: its members decompress to more than 6 MiB" in text
    assert "STEADYEVAL_MAX_LOG_MB" in text


def test_member_count_and_json_value_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _eval(tmp_path, lambda ms: ms)
    monkeypatch.setenv("STEADYEVAL_MAX_LOG_MEMBERS", "5")
    text = _error(lambda: import_inspect([log]))
    assert "more than 5 members" in text and "STEADYEVAL_MAX_LOG_MEMBERS" in text
    monkeypatch.delenv("STEADYEVAL_MAX_LOG_MEMBERS")
    many = zstd("samples/9_epoch_1.json", b"[" + b"{}," * 300_000 + b"{}]")
    log = _eval(tmp_path, lambda ms: [*ms, many], "values")
    monkeypatch.setenv("STEADYEVAL_MAX_JSON_VALUES", "100000")
    text = _error(lambda: import_inspect([log]))
    assert "samples/9_epoch_1.json: may hold up to 600,003 JSON values" in text
    assert "STEADYEVAL_MAX_JSON_VALUES" in text


def test_json_nested_100000_deep_everywhere(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    log = _eval(tmp_path, lambda ms: [zstd(SAMPLE, deep) if m.name == SAMPLE else m for m in ms])
    assert "nested deeper than 100 levels" in _error(lambda: import_inspect([log]))
    (tmp_path / "log.json").write_bytes(deep)
    assert "nested deeper" in _error(lambda: import_inspect([tmp_path / "log.json"]))
    lm = _lm_folder(tmp_path, lines=[deep])
    assert "line 11: nested deeper" in _error(lambda: import_lmeval([lm]))
    lm = _lm_folder(tmp_path / "r", results=deep)
    assert "results_" in _error(lambda: import_lmeval([lm]))


def test_existing_protections_still_hold(tmp_path: Path) -> None:
    cut = tmp_path / "cut.eval"
    cut.write_bytes(ARITH.read_bytes()[:-200])
    assert "not a readable zip archive" in _error(lambda: import_inspect([cut]))
    log = _eval(
        tmp_path, lambda ms: [deflate(m.name, b"{}") if m.name == SAMPLE else m for m in ms]
    )
    assert "samples/1_epoch_1.json" in _error(lambda: import_inspect([log]))  # not a sample
    bz = _eval(tmp_path, lambda ms: [dataclasses.replace(m, method=12) for m in ms], "bz")
    assert "zip method 12; expected Zstandard or deflate" in _error(lambda: import_inspect([bz]))
    # members named ../../x are never written anywhere: the importer does not extract
    escape = zstd("../../escaped.json", b"{}")
    log = _eval(tmp_path, lambda ms: [*ms, escape], "escape")
    out = tmp_path / "a" / "b" / "run"
    CliRunner().invoke(main, ["import", "inspect", str(log), "--out", str(out)])
    assert not list(tmp_path.rglob("escaped.json"))


# -- class 4: wrong types, numbers and text at the edges ------------------------------------
WRONG_TYPES = [
    (SAMPLE, lambda s: {**s, "choices": {"a": 1}}, "'choices': is an object (expected a list"),
    (SAMPLE, lambda s: {**s, "scores": [1]}, "'scores': is a list (expected an object"),
    (SAMPLE, lambda s: {**s, "messages": "hi"}, "'messages': is the string 'hi'"),
    (SAMPLE, lambda s: {**s, "messages": [5]}, "'messages[0]': is the integer 5"),
    (SAMPLE, lambda s: {**s, "target": [1]}, "'target[0]': is the integer 1"),
    (SAMPLE, lambda s: {**s, "output": []}, "'output': is a list"),
    (SAMPLE, lambda s: {**s, "id": [1]}, "'id': is a list (expected an integer or a string)"),
    (SAMPLE, lambda s: {**s, "metadata": 3}, "'metadata': is the integer 3"),
    (SAMPLE, lambda s: {**s, "error": "x"}, "'error': is the string 'x'"),
    ("header.json", lambda h: [h], "header.json: is not a JSON object"),
    ("header.json", lambda h: {**h, "eval": {**h["eval"], "config": [1]}}, "'eval.config': is a list"),
    ("header.json", lambda h: {**h, "status": 7}, "'status': is the integer 7"),
    ("header.json", lambda h: {**h, "results": {"scores": {}}}, "'results.scores': is an object"),
]  # fmt: skip


@pytest.mark.parametrize(
    "key", ["eval.task", "eval.model", "eval.task_id", "eval.eval_id", "eval.run_id",
            "eval.created", "status"]
)  # fmt: skip
@pytest.mark.parametrize("kind", ["eval", "json"])
def test_inspect_header_strings_are_never_null(tmp_path: Path, key: str, kind: str) -> None:
    # a null task became a condition named 'None', a null model a model named 'None'
    def null(header: dict[str, Any]) -> dict[str, Any]:
        if key == "status":
            return {**header, "status": None}
        return {**header, "eval": {**header["eval"], key.split(".")[1]: None}}

    if kind == "eval":
        log = _eval(tmp_path, _json_member("header.json", null))
    else:
        log = tmp_path / "log.json"
        log.write_text(json.dumps(null(json.loads(JSON_LOG.read_text("utf-8")))), "utf-8")
    line = _cli_error(["import", "inspect", str(log), "--out", str(tmp_path / "o")])
    assert f"field '{key}': is null (expected a string)" in line


@pytest.mark.parametrize("key", ["task", "model"])
def test_inspect_task_and_model_are_never_empty(tmp_path: Path, key: str) -> None:
    # an empty task became condition '' and item ids '/1'
    empty = _json_member("header.json", lambda h: {**h, "eval": {**h["eval"], key: ""}})
    text = _error(lambda: import_inspect([_eval(tmp_path, empty)]))
    assert f"field 'eval.{key}': is the string '' (expected a non-empty string)" in text


def test_an_inspect_header_may_leave_a_string_out(tmp_path: Path) -> None:
    # older logs lack some of EvalSpec's fields: left out is not null
    def older(header: dict[str, Any]) -> dict[str, Any]:
        spec = {k: v for k, v in header["eval"].items() if k not in ("eval_id", "run_id")}
        return {**header, "eval": spec}

    run = import_inspect([_eval(tmp_path, _json_member("header.json", older))])
    assert run.table.num_rows > 0


def test_an_unknown_status_is_named_once(tmp_path: Path) -> None:
    log = _eval(tmp_path, _json_member("header.json", lambda h: {**h, "status": "pwned"}))
    text = _error(lambda: import_inspect([log]))
    assert text.count("pwned") == 1, text
    assert "Inspect status 'pwned' (not a status Inspect writes: success, error," in text
    run = import_inspect([log], InspectImportOptions(allow_unfinished=True))
    (note,) = run.summary["imported"]["notes"]
    assert note.count("pwned") == 1 and "not a status Inspect writes" in note


def test_a_log_holding_one_sample_twice(tmp_path: Path) -> None:
    # was: "two logs hold the same task and model", of one log
    twice = _json_member("samples/2_epoch_1.json", lambda s: {**s, "id": 1})
    text = _error(lambda: import_inspect([_eval(tmp_path, twice)]))
    assert "x.eval!samples/2_epoch_1.json: the log holds sample id 1, epoch 1 twice" in text
    assert "(first at " in text and "x.eval!samples/1_epoch_1.json)" in text
    assert "two logs" not in text
    as_text = _json_member("samples/2_epoch_1.json", lambda s: {**s, "id": "1"})
    text = _error(lambda: import_inspect([_eval(tmp_path, as_text, "str")]))
    assert "sample id '1' (and 1), epoch 1 twice" in text  # both become item <task>/1
    doc = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    doc["samples"][1] = {**doc["samples"][1], "id": doc["samples"][0]["id"], "epoch": 1}
    doc["samples"][0]["epoch"] = 1
    log = tmp_path / "log.json"
    log.write_text(json.dumps(doc), encoding="utf-8")
    text = _error(lambda: import_inspect([log]))
    assert "log.json, field 'samples[1]': the log holds sample id" in text
    assert "(first at " in text and "field 'samples[0]')" in text
    # the same task in two logs (two runs, not a retry) is still the other message
    other = _json_member("header.json", lambda h: {**h, "eval": {**h["eval"], "task_id": "T2"}})
    text = _error(lambda: import_inspect([ARITH, _eval(tmp_path, other, "copy")]))
    assert "two logs give the same model, condition and sample" in text


@pytest.mark.parametrize(("member", "edit", "said"), WRONG_TYPES)
def test_inspect_fields_of_the_wrong_type(
    tmp_path: Path, member: str, edit: Callable[[Any], Any], said: str
) -> None:
    log = _eval(tmp_path, _json_member(member, edit))
    text = _error(lambda: import_inspect([log]))
    assert f"x.eval!{member}" in text and said in text


@pytest.mark.parametrize(
    ("epoch", "said"),
    [
        (0, "is the integer 0"),  # was sample index -1
        (-3, "is the integer -3"),
        (1e30, "is the number 1e+30"),
        (10**400, "(401 characters)"),
        ("1", "is the string '1'"),
        (True, "is true"),
    ],
)
def test_an_epoch_outside_1_to_2_31_is_an_error(tmp_path: Path, epoch: Any, said: str) -> None:
    log = _eval(tmp_path, _json_member(SAMPLE, lambda s: {**s, "epoch": epoch}))
    text = _error(lambda: import_inspect([log]))
    assert "field 'epoch'" in text and said in text and "an integer from 1 to" in text


def test_inspect_text_and_numbers_at_the_edges(tmp_path: Path) -> None:
    log = _eval(tmp_path, _json_member(SAMPLE, lambda s: {**s, "input": "\ud800x"}))
    assert "'input': lone surrogate" in _error(lambda: import_inspect([log]))

    def latin1(ms: list[Member]) -> list[Member]:
        data = dict(fixture_members(ARITH))[SAMPLE].replace(b'"input":"', b'"input":"\xe9', 1)
        return [zstd(SAMPLE, data) if m.name == SAMPLE else m for m in ms]

    log = _eval(tmp_path, latin1, "latin1")
    assert "line 1: not UTF-8 text at column" in _error(lambda: import_inspect([log]))
    # a 400-digit score and a NaN one (Inspect's "unscored") are read, correct left null
    big = {"value": 10**400, "answer": "4"}
    for value in (big, {"value": float("nan")}):
        edit = _json_member(SAMPLE, lambda s, v=value: {**s, "scores": {"match": v}})
        run = import_inspect([_eval(tmp_path, edit, "score")])
        assert run.table.column("correct").to_pylist()[0] is None
    long_id = "i" * 10_000  # echoed values are cut (the message names the file twice)
    edit = _json_member(SAMPLE, lambda s: {**s, "id": long_id, "epoch": 1})
    dup = _json_member("samples/2_epoch_1.json", lambda s: {**s, "id": long_id, "epoch": 1})
    log = _eval(tmp_path, lambda ms: dup(edit(ms)), "dup")
    assert "(10,002 characters)" in _error(lambda: import_inspect([log]))  # the repr, cut


def test_json_logs_and_their_samples_are_checked(tmp_path: Path) -> None:
    doc = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    doc["samples"][2]["epoch"] = 0
    log = tmp_path / "log.json"
    log.write_text(json.dumps(doc), encoding="utf-8")
    assert "field 'samples[2].epoch': is the integer 0" in _error(lambda: import_inspect([log]))
    log.write_bytes(b'{"eval": {}, "samples": [], "x": "\xff"}')
    assert "log.json, line 1: not UTF-8" in _error(lambda: import_inspect([log]))


# -- lm-eval ------------------------------------------------------------------------------------
def _lm_folder(
    tmp: Path,
    *,
    task: str = "se_plain",
    record: Callable[[dict[str, Any]], Any] | None = None,
    results: bytes | Callable[[dict[str, Any]], Any] | None = None,
    lines: list[bytes] = (),  # type: ignore[assignment]
) -> Path:
    out = tmp / "lm"
    out.mkdir(parents=True)
    samples = next(LM_DIR.glob(f"samples_{task}_*.jsonl"))
    res = next(LM_DIR.glob("results_*.json"))
    recs = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    if record is not None:
        recs[0] = record(recs[0])
    body = [json.dumps(r, allow_nan=True).encode("utf-8", "surrogatepass") for r in recs]
    (out / samples.name).write_bytes(b"\n".join([*body, *lines]))
    if isinstance(results, bytes):
        (out / res.name).write_bytes(results)
    else:
        doc = json.loads(res.read_text(encoding="utf-8"))
        (out / res.name).write_text(json.dumps(results(doc) if results else doc), encoding="utf-8")
    return out


def _first_ll(value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda r: {**r, "filtered_resps": [[value, "False"], *r["filtered_resps"][1:]]}


LM_BAD = [
    (dict(record=_first_ll("nan")), "line 1: log-likelihood 'nan' is not a number a model can give"),
    (dict(record=_first_ll(float("nan"))), "line 1: invalid JSON: NaN is not JSON"),
    (dict(record=_first_ll("inf")), "line 1: log-likelihood 'inf'"),
    (dict(record=_first_ll(10**400)), "line 1: expected a [loglikelihood, is_greedy] response"),
    (dict(record=lambda r: {**r, "acc": 10**400}), "metric 'acc' is 100000"),
    (dict(record=lambda r: {**r, "metrics": "acc"}), "field 'metrics': is the string 'acc'"),
    (dict(record=lambda r: {**r, "arguments": 5}), "field 'arguments': is the integer 5"),
    (dict(record=lambda r: {**r, "arguments": [[1, 2]]}), "arguments[0] starts with int 1"),
    (dict(record=lambda r: {**r, "doc_id": [1]}), "field 'doc_id': is a list"),
    (dict(record=lambda r: {**r, "doc_id": -1}), "field 'doc_id': is the integer -1 (expected an integer from 0 to"),
    (dict(record=lambda r: {**r, "doc_id": "3"}), "field 'doc_id': is the string '3' (expected an integer)"),
    (dict(record=lambda r: {**r, "doc_id": None}), "field 'doc_id': is null (expected an integer)"),
    (dict(record=lambda r: {**r, "doc": []}), "field 'doc': is a list (expected an object)"),
    (dict(record=lambda r: {**r, "doc": "q"}), "field 'doc': is the string 'q' (expected an object)"),
    (dict(record=lambda r: {**r, "filter": [1]}), "field 'filter': is a list"),
    (dict(record=lambda r: {**r, "doc": {"q": "\ud800"}}), "field 'doc.q': lone surrogate"),
    (dict(record=lambda r: {**r, "arguments": {"gen_args_\u00b2": {"arg_0": "a"}}}), "does not end in a number"),
    (dict(results=lambda d: {**d, "n-shot": [1]}), "field 'n-shot': is a list"),
    (dict(results=lambda d: {**d, "n-shot": {"se_plain": 10**400}}), "field 'n-shot.se_plain'"),
    (dict(results=lambda d: {**d, "configs": "x"}), "field 'configs': is the string 'x'"),
    (dict(results=lambda d: {**d, "configs": {"se_plain": [1]}}), "field 'configs.se_plain'"),
    (dict(results=lambda d: {**d, "config": {"model_args": 3}}), "field 'config.model_args'"),
    (dict(results=lambda d: [d]), "is a list (expected an object (lm-eval's results JSON))"),
    (dict(results=b"\xff{}"), "line 1: not UTF-8"),
    (dict(lines=[b'{"doc_id": "\xe9"}']), "line 11: not UTF-8 text"),
    (dict(lines=[b'{"doc_id": ' + b"9" * 5000 + b"}"]), "line 11: invalid JSON"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "said"), LM_BAD)
def test_lmeval_fields_and_values_at_the_edges(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    text = _error(lambda: import_lmeval([_lm_folder(tmp_path, **change)]))
    assert said in text


def test_lmeval_all_options_impossible_is_unmatched_not_the_first(tmp_path: Path) -> None:
    # lm-eval's arg-max took the first option, the gold one, so its acc is 1: no answer is
    # still incorrect, as the scoring modes score an all -inf response
    def impossible(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "filtered_resps": [["-inf", "False"]] * 3, "target": "0", "acc": 1.0}

    row = import_lmeval([_lm_folder(tmp_path, record=impossible)]).table.to_pylist()[0]
    assert row["parsed_kind"] == "unmatched" and row["parsed_option"] is None
    assert row["confidence"] is None and row["option_logprobs"][0] == float("-inf")
    assert row["correct"] is False and row["gold_options"] == [0]
    assert json.loads(row["metadata"])["lm_eval"]["metrics"]["acc"] == 1.0  # kept as it was


@pytest.mark.parametrize("content", [b"", b"\n  \n\n"])
def test_an_empty_samples_file_is_one_located_error(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "lm" / "m"
    folder.mkdir(parents=True)
    empty = folder / "samples_plain_2025-01-01T00-00-00.000001.jsonl"
    empty.write_bytes(content)
    line = _cli_error(["import", "lm-eval", str(tmp_path / "lm"), "--out", str(tmp_path / "o")])
    assert f"{empty}: holds no records" in line and "one lm-eval --log_samples record" in line
    lm = _lm_folder(tmp_path / "beside")  # beside real files: still refused, never skipped
    (lm / empty.name).write_bytes(content)
    assert f"{lm / empty.name}: holds no records" in _error(lambda: import_lmeval([lm]))


# -- class 3: special files -----------------------------------------------------------------
def _no_hang(argv: list[str]) -> str:
    """The CLI's error line, from a thread that must finish (a FIFO must never be opened)."""
    box: list[str] = []
    worker = threading.Thread(target=lambda: box.append(_cli_error(argv)), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"{argv} hangs"
    return box[0]


@pytest.mark.parametrize("tool", ["inspect", "lm-eval"])
def test_special_files_are_refused_unopened(tmp_path: Path, tool: str) -> None:
    name = "x.eval" if tool == "inspect" else "samples_t_2026-01-01T00-00-00.1.jsonl"
    fifo = tmp_path / "d" / name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    out = str(tmp_path / "o")
    for path in (fifo, fifo.parent):  # named, and found in a folder
        assert "is a FIFO (named pipe)" in _no_hang(["import", tool, str(path), "--out", out])
    zero = tmp_path / name
    zero.symlink_to("/dev/zero")
    assert "is a character device" in _no_hang(["import", tool, str(zero), "--out", out])
    here = Path.cwd()
    os.chdir(tmp_path)  # AF_UNIX paths are short: bind a relative name
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(f"s-{name}")
            assert "is a socket" in _no_hang(["import", tool, f"s-{name}", "--out", out])
    finally:
        os.chdir(here)


def test_a_results_json_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    lm = _lm_folder(tmp_path)
    res = next(lm.glob("results_*.json"))
    res.unlink()
    os.mkfifo(res)
    assert "is a FIFO" in _no_hang(["import", "lm-eval", str(lm), "--out", str(tmp_path / "o")])


# -- scoring: a NaN option is never the answer ---------------------------------------------
def test_a_nan_option_is_never_picked() -> None:
    from steadyeval.conditions import FORMATS, TEMPLATES, Condition, expand
    from steadyeval.items import Item
    from steadyeval.requests import ScoreResponse
    from steadyeval.scoring import best_index, option_scores, score_trial

    nan = float("nan")
    assert best_index([nan, -5.0, -1.0]) == 2  # max() kept the NaN in front
    assert best_index([nan, nan]) is None and best_index([-1.0, -1.0]) == 0
    assert option_scores([nan, -2.0, -1.0], [1, 1, 1], ["a", "b", "c"]).choice == 2
    item = Item(id="i", question="Q?", options=("a", "b", "c"), gold_options=(0,))
    cond = Condition(
        name="c", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob"
    )
    trial = expand([item], [cond]).trials[0]
    got = score_trial(
        trial, [ScoreResponse(logprob=x, n_tokens=1, is_greedy=False) for x in (nan, -9.0, -8.0)]
    )
    assert got.parsed_kind == "error" and got.correct is None and got.parsed_option is None
    assert got.option_logprobs is not None and got.option_logprobs[1:] == [-9.0, -8.0]


@pytest.mark.parametrize("tool", ["inspect", "lm-eval"])
def test_a_file_name_that_is_not_utf8(tmp_path: Path, tool: str) -> None:
    folder = os.fsencode(tmp_path / "d")
    os.mkdir(folder)
    if tool == "inspect":
        source, name = JSON_LOG, b"\xfflog.json"
    else:
        source = next(LM_DIR.glob("samples_se_plain_*.jsonl"))
        name = b"samples_se\xff_2026-12-01T21-48-37.113124.jsonl"
    with open(os.path.join(folder, name), "wb") as fh:
        fh.write(source.read_bytes())
    line = _cli_error(["import", tool, str(tmp_path / "d"), "--out", str(tmp_path / "o")])
    assert "\\xff" in line and "the file name is not UTF-8 text; rename it" in line
