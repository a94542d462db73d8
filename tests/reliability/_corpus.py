"""A corpus of malformed inputs (issue 18, point 5): each case is files to write, a command
line, and what its one-line error must name (the file, the line or row, the field).

Categories: data rows (JSONL), CSV, YAML, model specs, flags, paths, run folders and
Parquet files. ``tests/reliability/test_bad_inputs.py`` runs every case through the CLI in
process and asserts exit code 2, no traceback and the expected text.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

Setup = Callable[[Path, Path], None]  # (case folder, a good run folder to copy)

CATEGORIES = (
    "data rows",
    "csv",
    "yaml",
    "model specs",
    "flags",
    "paths",
    "run folders",
    "parquet",
)


@dataclass(frozen=True)
class Case:
    """One malformed input: ``files`` (name -> text or bytes) and ``setup`` prepare the
    case's folder; ``argv`` runs; the output must hold every string in ``expect``."""

    name: str
    category: str
    argv: tuple[str, ...]
    expect: tuple[str, ...] = ()
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    setup: Setup | None = None
    #: Why the scripted model may load before the error ("": it must not).
    loads_model: str = ""
    #: Why the case cannot pass yet (a fix outside this change's files), else "".
    pending: str = ""
    #: Run in a subprocess limited to 1 GiB of memory: a regression could take minutes
    #: and gigabytes (an alias bomb), and must fail the test, not the machine.
    isolate: bool = False


def _row(i: int) -> str:
    return json.dumps({"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b"], "answer": i % 2})


GOOD_JSONL = "".join(_row(i) + "\n" for i in range(3))
RUN = ("run", "--model", "scripted:m", "--out", "out")


def _lines(*rows: str) -> str:
    return "".join(r + "\n" for r in rows)


def _data(name: str, text: str | bytes, *expect: str, file: str = "bad.jsonl") -> Case:
    category = "csv" if file.endswith(".csv") else "data rows"
    return Case(name, category, (*RUN, "--data", file), (file, *expect), {file: text})


def _deep(n: int) -> str:
    return '{"a":' * n + "1" + "}" * n


DATA_ROWS = [
    _data("surrogate-question", _lines('{"id":"q1","question":"bad \\ud800 x","answer":"a"}'),
          "line 1", "'question'", "surrogate"),
    _data("surrogate-option", _lines(_row(0), '{"id":"q9","question":"q","options":["a","\\udc00"],"answer":0}'),
          "line 2", "'options[1]'", "surrogate"),
    _data("surrogate-metadata", _lines('{"id":"q","question":"q","answer":"a","metadata":{"note":"\\udbff"}}'),
          "line 1", "'metadata.note'"),
    _data("surrogate-key", _lines('{"id":"q","question":"q","answer":"a","metadata":{"k\\ud800":1}}'),
          "line 1", "a key holds"),
    _data("metadata-100000-deep", _lines(f'{{"id":"q","question":"q","answer":"a","metadata":{_deep(100_000)}}}'),
          "line 1", "nested deeper"),
    _data("metadata-150-deep", _lines(_row(0), f'{{"id":"q","question":"q","answer":"a","metadata":{_deep(150)}}}'),
          "line 2", "'metadata'", "nested deeper"),
    _data("invalid-json", _lines(_row(0), _row(1), '{"id": "q3", "question": "q",}'), "line 3", "invalid JSON"),
    _data("row-is-a-list", _lines('["q1", "Q?"]'), "line 1", "JSON object"),
    _data("unknown-field", _lines(_row(0), '{"id":"q","question":"q","answer":"a","colour":"red"}'),
          "line 2", "'colour'"),
    _data("missing-id", _lines('{"question":"q","answer":"a"}'), "line 1", "'id'"),
    _data("missing-question", _lines('{"id":"q","answer":"a"}'), "line 1", "'question'"),
    _data("id-is-bool", _lines('{"id":true,"question":"q","answer":"a"}'), "'id'"),
    _data("blank-id", _lines('{"id":"  ","question":"q","answer":"a"}'), "'id'", "empty id"),
    _data("question-is-number", _lines('{"id":"q","question":7,"answer":"a"}'), "'question'"),
    _data("one-option", _lines('{"id":"q","question":"q","options":["a"],"answer":0}'), "'options'"),
    _data("options-repeat", _lines('{"id":"q","question":"q","options":["a","a"],"answer":0}'), "'options'"),
    _data("option-not-text", _lines('{"id":"q","question":"q","options":["a",2],"answer":0}'), "'options[1]'"),
    _data("answer-index-out-of-range", _lines('{"id":"q","question":"q","options":["a","b"],"answer":5}'),
          "'answer'", "0..1"),
    _data("answer-not-an-option", _lines('{"id":"q","question":"q","options":["a","b"],"answer":"c"}'),
          "'answer'"),
    _data("answer-is-bool", _lines('{"id":"q","question":"q","answer":true}'), "'answer'"),
    _data("answer-empty-list", _lines('{"id":"q","question":"q","answer":[]}'), "'answer'"),
    _data("answer-missing", _lines('{"id":"q","question":"q"}'), "'answer'", "missing answer"),
    _data("answerable-yes", _lines('{"id":"q","question":"q","answer":"a","answerable":"yes"}'),
          "'answerable'"),
    _data("metadata-is-list", _lines('{"id":"q","question":"q","answer":"a","metadata":[1]}'), "'metadata'"),
    _data("aliases-not-strings", _lines('{"id":"q","question":"q","answer":"a","aliases":[1]}'), "'aliases'"),
    _data("duplicate-id", _lines(_row(0), _row(0)), "line 2", "'id'", "duplicate id"),
    _data("empty-file", "", "no items"),
    _data("blank-lines-only", "\n\n  \n", "no items"),
    _data("not-utf8", _lines(_row(0)).encode() + b'{"id":"q9","question":"caf\xe9","answer":"a"}\n',
          "line 2", "UTF-8"),
    _data("utf16-file", GOOD_JSONL.encode("utf-16"), "line 1", "UTF-8"),
    _data("megabyte-unknown-key", _lines(json.dumps({"id": "q", "question": "q", "answer": "a", "k" * 10**6: 1})),
          "line 1", "characters)"),
]  # fmt: skip


def _csv(name: str, text: str | bytes, *expect: str) -> Case:
    return _data(name, text, *expect, file="bad.csv")


_HEAD = "id,question,option_1,option_2,answer\n"
CSV = [
    _csv("header-lacks-question", "id,answer\nq1,a\n", "line 1", "'question'"),
    _csv(
        "header-repeats-column",
        "id,question,answer,answer\nq1,q,a,b\n",
        "line 1",
        "'answer'",
        "repeats",
    ),
    _csv("more-cells", _HEAD + "q1,Q?,a,b,0\nq2,Q?,a,b,0,extra\n", "line 3", "more cells"),
    _csv("fewer-cells", _HEAD + "q1,Q?,a\n", "line 2", "fewer cells"),
    _csv(
        "answerable-maybe",
        "id,question,answer,answerable\nq1,Q?,a,maybe\n",
        "line 2",
        "'answerable'",
    ),
    _csv("answer-index-out-of-range", _HEAD + "q1,Q?,a,b,7\n", "line 2", "'answer'"),
    _csv("answer-letter-out-of-range", _HEAD + "q1,Q?,a,b,C\n", "line 2", "'answer'"),
    _csv("duplicate-id", _HEAD + "q1,Q?,a,b,0\nq1,Q?,a,b,1\n", "line 3", "'id'", "duplicate id"),
    _csv("answer-missing", _HEAD + "q1,Q?,a,b,\n", "line 2", "'answer'"),
    _csv("options-repeat", _HEAD + "q1,Q?,a,a,0\n", "line 2", "'options'"),
    _csv("blank-id", _HEAD + " ,Q?,a,b,0\n", "line 2", "'id'"),
    _csv("not-utf8", (_HEAD + "q1,Q?,a,b,0\nq2,caf").encode() + b"\xe9,a,b,0\n", "line 3", "UTF-8"),
    _csv("empty-file", "", "no items"),
    _csv("header-only", _HEAD, "no items"),
    _csv(
        "field-over-csv-limit",
        _HEAD + "q1," + "x" * 200_000 + ",a,b,0\n",
        "line 2",
        "malformed CSV",
    ),
    _csv("unterminated-quote", _HEAD + 'q1,"Q?,a,b,0\n', "line 2"),
]


def _cfg(
    name: str, text: str | bytes, *expect: str, file: str = "bad.yaml", isolate: bool = False
) -> Case:
    files = {file: text, "items.jsonl": GOOD_JSONL}
    argv = ("run", file, "--out", "out")
    return Case(name, "yaml", argv, (file, *expect), files, isolate=isolate)


HEAD = "data: items.jsonl\nmodels: [scripted:m]\n"
COND = HEAD + "conditions:\n  - name: a\n"
#: 387 bytes of merge-key aliases under ``scoring:`` (9 copies per level, 8 levels):
#: PyYAML alone spends minutes and gigabytes expanding them.
MERGE_BOMB = (
    COND
    + "    scoring:\n      a: &a {x: 1}\n"
    + "".join(
        f"      {n}: &{n} {{<<: [{','.join([f'*{p}'] * 9)}]}}\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
)
LIST_BOMB = COND + "    scoring: [&a [l,l,l,l,l,l,l,l,l], " + ", ".join(
    f"&{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
) + "]\n"  # fmt: skip

YAML = [
    _cfg("alias-bomb-merge-keys", MERGE_BOMB, "line 11", "aliases", isolate=True),
    _cfg("alias-bomb-lists", LIST_BOMB, "line 5", "aliases", isolate=True),
    _cfg("recursive-alias", HEAD + "seed: &a [1, *a]\n", "line 3", "recursive alias", isolate=True),
    _cfg("bad-indentation", HEAD + "conditions:\n  - name: a\n   scoring: generate\n", "line 5", "invalid YAML"),
    _cfg("tab-indentation", HEAD + "conditions:\n\t- name: a\n", "line 4", "invalid YAML"),
    _cfg("control-character", HEAD + "seed: 1\x01\n", "line 3", "invalid YAML"),
    _cfg("not-utf8", (HEAD + "conditions:\n  - name: caf").encode() + b"\xe9\n", "line 4", "UTF-8"),
    _cfg("lone-surrogate", HEAD + 'conditions:\n  - name: "x\\ud800"\n', "line 4", "surrogate"),
    _cfg("nested-100000-deep", HEAD + "seed: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    _cfg("nested-150-deep", HEAD + "seed: " + "[" * 150 + "]" * 150 + "\n", "line 3", "nested deeper"),
    _cfg("top-level-list", "- data: items.jsonl\n", "must be a mapping"),
    _cfg("unknown-top-level-key", HEAD + "modles: [x]\n", "line 3", "modles", "unknown key"),
    _cfg("unknown-condition-key", COND + "    scorng: generate\n", "line 5", "conditions.0.scorng"),
    _cfg("duplicate-condition-names", COND + "  - name: b\n  - name: a\n", "line 6", "conditions.2.name", "conditions[0]"),
    _cfg("template-syntax-error", COND + '    scoring: generate\n    template: {name: t, body: "Q: {{ question }"}\n',
         "line 6", "conditions.0.template.body", "unexpected '}'"),
    _cfg("template-unknown-filter", COND + '    scoring: generate\n    template:\n      name: t\n      body: "{{ question | shout }}"\n',
         "line 8", "conditions.0.template.body", "shout"),
    _cfg("template-undefined-variable", COND + '    scoring: generate\n    template: {name: t, body: "{{ qestion }}"}\n',
         "line 6", "conditions.0.template.body", "qestion"),
    _cfg("template-answer-error", COND + '    scoring: generate\n    template: {name: t, body: "{{ question }}", answer: "{% if %}"}\n',
         "line 6", "conditions.0.template.answer"),
    _cfg("unknown-shot-pool", COND + "    scoring: generate\n    shots: {n: 1, source: dev}\n",
         "line 6", "conditions.0.shots.source", "'dev'"),
    _cfg("unknown-scoring", COND + "    scoring: vibes\n", "line 5", "conditions.0.scoring"),
    _cfg("unknown-template-name", COND + "    template: fancy\n", "line 5", "conditions.0.template"),
    _cfg("negative-shots", COND + "    shots: {n: -1}\n", "line 5", "conditions.0.shots.n"),
    _cfg("negative-temperature", COND + "    generation: {temperature: -1}\n", "line 5", "temperature"),
    _cfg("model-listed-twice", "data: items.jsonl\nmodels:\n  - scripted:m\n  - scripted:m\n", "line 4", "models.1", "twice"),
    _cfg("limit-zero", HEAD + "limit: 0\n", "line 3", "limit"),
    _cfg("two-documents", HEAD + "---\nseed: 1\n", "invalid YAML"),
    _cfg("data-missing", "models: [scripted:m]\n", "data", "Field required"),
    _cfg("megabyte-value", HEAD + "seed: " + "9" * 10**6 + "x\n", "line 3", "1,000,001 characters"),
]  # fmt: skip


def _spec(name: str, *models: str, expect: tuple[str, ...], pending: str = "") -> Case:
    argv = ["run", "--data", "items.jsonl", "--out", "out"]
    for m in models:
        argv += ["--model", m]
    return Case(name, "model specs", tuple(argv), expect, {"items.jsonl": GOOD_JSONL},
                pending=pending)  # fmt: skip


MODEL_SPECS = [
    _spec("empty", "", expect=("a model spec is empty",)),
    _spec("no-colon", "scripted", expect=("has no backend",)),
    _spec("no-backend-name", ":m", expect=("BACKEND:NAME",)),
    _spec("unknown-backend", "scripted:m", "nobackend:x", expect=("models.1", "unknown backend")),
    _spec("options-not-key-value", "scripted:m?x", expect=("key=value",)),
    _spec("same-model-twice", "scripted:m", "scripted:m", expect=("models.1", "listed twice")),
    _spec("not-utf8-bytes", "scripted:m", "scripted:m\udcff", expect=("models.1", "UTF-8")),
    _spec("timeout-inf", "openai:gpt?base_url=http://127.0.0.1:9/v1&max_retries=0&timeout=inf",
          expect=("timeout",)),
    _spec("timeout-nan", "openai:gpt?timeout=nan", expect=("timeout",)),
    _spec("timeout-negative", "openai:gpt?timeout=-1", expect=("timeout",)),
    _spec("timeout-1e999", "openai:gpt?timeout=1e999", expect=("timeout",)),
    _spec("retries-fraction", "openai:gpt?max_retries=1.5", expect=("max_retries",)),
    _spec("option-twice", "openai:gpt?timeout=100&timeout=200", expect=("twice",)),
    _spec("bad-base-url", "openai:gpt?base_url=notaurl", expect=("base_url",)),
]  # fmt: skip


def _flag(name: str, argv: tuple[str, ...], *expect: str, setup: Setup | None = None) -> Case:
    files = {"items.jsonl": GOOD_JSONL}
    return Case(name, "flags", argv, expect, files, setup=setup)


def _two_runs(tmp: Path, good: Path) -> None:
    shutil.copytree(good, tmp / "a")
    shutil.copytree(good, tmp / "b")


def _lm_record(**changes: object) -> str:
    """One lm-eval ``--log_samples`` record (a two-choice task), with ``changes``."""
    rec = {
        "doc_id": 0,
        "doc": {"q": "x"},
        "target": 0,
        "arguments": {
            "gen_args_0": {"arg_0": "Q: x\nA:", "arg_1": " a"},
            "gen_args_1": {"arg_0": "Q: x\nA:", "arg_1": " b"},
        },
        "resps": [[["-1.0", "False"]], [["-2.0", "False"]]],
        "filtered_resps": [["-1.0", "False"], ["-2.0", "False"]],
        "filter": "none",
        "metrics": ["acc"],
        "acc": 1.0,
        **changes,
    }
    return json.dumps(rec) + "\n"


LM_SAMPLES = "samples_arc_2024-01-01T00-00-00.000000.jsonl"


def _lm_eval(tmp: Path, good: Path) -> None:
    """A minimal lm-eval ``--log_samples`` file of task ``arc``, in ``lm/``."""
    (tmp / "lm").mkdir()
    (tmp / "lm" / LM_SAMPLES).write_text(_lm_record())


def _imported(name: str, file: str, text: str, *expect: str, tool: str = "lm-eval") -> Case:
    """A malformed record of another tool's log (``import``'s data rows)."""
    argv = ("import", tool, file, "--out", "imp")
    return Case(name, "data rows", argv, (file, *expect), {file: text})


_INSPECT = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}
IMPORTED = [
    _imported(
        "lm-eval-missing-doc",
        LM_SAMPLES,
        _lm_record(doc=None).replace('"doc": null, ', ""),
        "line 1",
        "'doc'",
    ),
    _imported(
        "lm-eval-arguments-key",
        LM_SAMPLES,
        _lm_record(arguments={"gen_args_x": {"arg_0": "a"}}),
        "line 1",
        "gen_args_x",
    ),
    _imported(
        "lm-eval-response-not-a-number",
        LM_SAMPLES,
        _lm_record(filtered_resps=[["x", "y"], ["z"]]),
        "line 1",
        "loglikelihood",
    ),
    _imported(
        "lm-eval-surrogate", LM_SAMPLES, _lm_record(doc={"q": "\ud800"}), "line 1", "'doc.q'"
    ),
    _imported(
        "inspect-samples-not-a-list",
        "log.json",
        json.dumps({**_INSPECT, "samples": 5}),
        "'samples'",
        tool="inspect",
    ),
    _imported(
        "inspect-epoch-not-a-number",
        "log.json",
        json.dumps({**_INSPECT, "samples": [{"id": 1, "epoch": "x", "input": "q", "target": "A"}]}),
        "samples[0].epoch",
        "an integer",
        tool="inspect",
    ),
    _imported("inspect-not-json", "log.json", "{bad", "line 1", "invalid JSON", tool="inspect"),
]


FLAGS = [
    _flag("limit-zero", (*RUN, "--data", "items.jsonl", "--limit", "0"), "--limit"),
    _flag("limit-not-a-number", (*RUN, "--data", "items.jsonl", "--limit", "ten"), "--limit"),
    _flag("seed-float", (*RUN, "--data", "items.jsonl", "--seed", "1e3"), "--seed"),
    _flag("unknown-executor", (*RUN, "--data", "items.jsonl", "--executor", "slurm"), "--executor"),
    _flag("workers-not-a-number", (*RUN, "--data", "items.jsonl", "--workers", "x"), "--workers"),
    _flag("no-model-no-data", ("run",), "--model is required", "--data is required"),
    _flag("no-data", ("run", "--model", "scripted:m"), "--data is required (or give a config file with data:)"),
    _flag("model-args-two-models", ("run", "--model", "a:x", "--model", "b:y", "--model_args", "k=v",
                                    "--data", "items.jsonl"), "--model_args"),
    _flag("model-args-not-key-value", ("run", "--model", "hf", "--model_args", "pretrained",
                                       "--data", "items.jsonl"), "--model_args", "key=value"),
    _flag("unknown-flag", (*RUN, "--data", "items.jsonl", "--temperature", "1"), "--temperature"),
    _flag("compare-confidence-1.5", ("compare", "a", "b", "--confidence", "1.5"), "--confidence",
          setup=_two_runs),
    _flag("compare-unknown-outcome", ("compare", "a", "b", "--outcome", "f1"), "--outcome", setup=_two_runs),
    _flag("compare-one-arm", ("compare", "a"), "needs two", setup=_two_runs),
    _flag("compare-unknown-cluster", ("compare", "a", "b", "--cluster", "paragraph"), "paragraph",
          setup=_two_runs),
    _flag("compare-unknown-model", ("compare", "a", "b", "--model", "gpt9"), "gpt9", setup=_two_runs),
    _flag("report-unknown-format", ("report", "a", "--format", "pdf"), "--format", setup=_two_runs),
    _flag("report-max-rows-zero", ("report", "a", "--max-rows", "0"), "--max-rows", setup=_two_runs),
    _flag("condition-map-no-equals", ("import", "lm-eval", "lm", "--out", "imp", "--condition-map", "arc"),
          "'arc'", "SOURCE=CONDITION", setup=_lm_eval),
    _flag("condition-map-unknown-task", ("import", "lm-eval", "lm", "--out", "imp", "--condition-map",
                                         "mmlu=x"), "'mmlu'", setup=_lm_eval),
    _flag("cache-clear-model-no-value", ("cache", "clear", "--model"), "--model"),
]  # fmt: skip


def _file(tmp: Path, good: Path) -> None:
    (tmp / "afile").write_text("not a folder\n")


def _garbage_cache(tmp: Path, good: Path) -> None:
    (tmp / "garbage.sqlite").write_bytes(bytes(range(256)) * 12)


def _foreign_db(tmp: Path, good: Path) -> None:
    with sqlite3.connect(tmp / "other.db") as conn:
        conn.execute("CREATE TABLE users (name TEXT)")


_DATA = ("--data", "items.jsonl")
#: The response cache opens after the models load (run/_run.py: run_blocks); opening it
#: before _plan() would refuse a bad --cache first.
_CACHE_LATE = "run_blocks opens the cache after _plan() loads the models (run/_run.py)"
PATHS = [
    Case("data-is-a-folder", "paths", (*RUN, "--data", "adir"), ("adir", "is a folder"),
         setup=lambda t, g: (t / "adir").mkdir()),
    Case("data-missing-file", "paths", (*RUN, "--data", "missing.jsonl"), ("missing.jsonl", "not found")),
    Case("data-unknown-suffix", "paths", (*RUN, "--data", "items.txt"), ("items.txt", "unknown file type"),
         {"items.txt": "x\n"}),
    Case("config-missing", "paths", ("run", "missing.yaml"), ("missing.yaml", "no such file")),
    Case("config-is-a-folder", "paths", ("run", "adir"), ("adir",), setup=lambda t, g: (t / "adir").mkdir()),
    Case("shot-pool-file-missing", "paths", ("run", "c.yaml", "--out", "out"), ("dev.jsonl", "not found"),
         {"c.yaml": HEAD + "shot_pools: {dev: dev.jsonl}\n", "items.jsonl": GOOD_JSONL}),
    Case("cache-garbage-run", "paths", (*RUN, *_DATA, "--cache", "garbage.sqlite"),
         ("garbage.sqlite", "not a response cache"), {"items.jsonl": GOOD_JSONL}, _garbage_cache, loads_model=_CACHE_LATE),
    Case("cache-garbage-info", "paths", ("cache", "info", "--cache", "garbage.sqlite"),
         ("garbage.sqlite", "not a response cache"), setup=_garbage_cache),
    Case("cache-garbage-clear", "paths", ("cache", "clear", "--yes", "--cache", "garbage.sqlite"),
         ("garbage.sqlite", "not a response cache"), setup=_garbage_cache),
    Case("cache-another-programs-db", "paths", ("cache", "info", "--cache", "other.db"),
         ("other.db", "something else"), setup=_foreign_db),
    Case("cache-under-a-file", "paths", (*RUN, *_DATA, "--cache", "afile/c.sqlite"),
         ("afile/c.sqlite", "afile is a file"), {"items.jsonl": GOOD_JSONL}, _file, loads_model=_CACHE_LATE),
    Case("cache-in-proc", "paths", (*RUN, *_DATA, "--cache", "/proc/c.sqlite"), ("/proc/c.sqlite",),
         {"items.jsonl": GOOD_JSONL}, loads_model=_CACHE_LATE),
    Case("cache-is-a-folder", "paths", (*RUN, *_DATA, "--cache", "adir"), ("--cache",),
         {"items.jsonl": GOOD_JSONL}, lambda t, g: (t / "adir").mkdir()),
    Case("out-is-a-file", "paths", ("run", "--model", "scripted:m", *_DATA, "--out", "afile"),
         ("afile",), {"items.jsonl": GOOD_JSONL}, _file),
    Case("out-under-a-file", "paths", ("run", "--model", "scripted:m", *_DATA, "--out", "afile/run"),
         ("--out afile/run", "afile is a file"), {"items.jsonl": GOOD_JSONL}, _file),
    Case("out-not-writable", "paths", ("run", "--model", "scripted:m", *_DATA, "--out", "/proc/run"),
         ("--out /proc/run", "cannot write"), {"items.jsonl": GOOD_JSONL}),
    Case("report-output-under-a-file", "paths", ("report", "a", "-o", "afile/r.html"),
         ("afile/r.html", "afile is a file"), setup=lambda t, g: (_two_runs(t, g), _file(t, g))),
    Case("compare-json-under-a-file", "paths", ("compare", "a", "b", "--json", "afile/c.json"),
         ("afile/c.json", "afile is a file"), setup=lambda t, g: (_two_runs(t, g), _file(t, g))),
    Case("import-out-under-a-file", "paths", ("import", "lm-eval", "lm", "--out", "afile/imp"),
         ("afile/imp", "afile is a file"), setup=lambda t, g: (_lm_eval(t, g), _file(t, g))),
    Case("data-name-not-utf8", "paths", (*RUN, "--data", "it\udcffems.jsonl"), ("--data", "not UTF-8"),
         {"it\udcffems.jsonl": GOOD_JSONL}),
    Case("out-name-not-utf8", "paths", ("run", "--model", "scripted:m", *_DATA, "--out", "o\udcffut"),
         ("--out", "not UTF-8"), {"items.jsonl": GOOD_JSONL}),
    Case("import-out-name-not-utf8", "paths", ("import", "lm-eval", "lm", "--out", "i\udcffmp"),
         ("--out", "not UTF-8"), setup=_lm_eval),
    Case("import-nothing-there", "paths", ("import", "lm-eval", "nothing", "--out", "imp"),
         ("nothing", "no such file")),
    Case("import-folder-without-samples", "paths", ("import", "lm-eval", "adir", "--out", "imp"),
         ("adir", "no samples_"), setup=lambda t, g: (t / "adir").mkdir()),
    Case("import-inspect-not-a-log", "paths", ("import", "inspect", "x.json", "--out", "imp"),
         ("x.json",), {"x.json": '{"a": 1}'}),
]  # fmt: skip


def _copy(good: Path, dest: Path, *, manifest: bool = True) -> Path:
    shutil.copytree(good, dest)
    if not manifest:
        for name in ("manifest.json", ".steadyeval-run"):
            (dest / name).unlink(missing_ok=True)
    return dest


def _folder(edit: Callable[[Path], object], *, manifest: bool = False) -> Setup:
    def setup(tmp: Path, good: Path) -> None:
        edit(_copy(good, tmp / "a", manifest=manifest))
        _copy(good, tmp / "b")

    return setup


def _folder_case(name: str, edit: Callable[[Path], object], *expect: str, manifest: bool = False,
                 command: str = "report") -> Case:  # fmt: skip
    argv = ("report", "a", "--format", "md") if command == "report" else ("compare", "a", "b")
    return Case(name, "run folders", argv, ("a", *expect), setup=_folder(edit, manifest=manifest))


def _results_dir(p: Path) -> None:
    (p / "results.parquet").unlink()
    (p / "results.parquet").mkdir()


RUN_FOLDERS = [
    Case("report-missing-folder", "run folders", ("report", "nowhere"), ("nowhere", "not a run directory")),
    Case("report-empty-folder", "run folders", ("report", "adir"), ("adir", "no results.parquet"),
         setup=lambda t, g: (t / "adir").mkdir()),
    Case("compare-missing-runs", "run folders", ("compare", "gone1", "gone2"), ("gone1", "no results")),
    Case("compare-one-run-missing", "run folders", ("compare", "b", "gone"), ("gone", "no results"),
         setup=_folder(lambda p: None)),
    _folder_case("summary-json-broken", lambda p: (p / "summary.json").write_text("{bad"),
                 "summary.json", "line 1"),
    _folder_case("summary-json-a-list", lambda p: (p / "summary.json").write_text("[1, 2]"),
                 "summary.json", "JSON object"),
    _folder_case("manifest-damaged", lambda p: (p / "manifest.json").write_text('{"files": 3}'),
                 "manifest", manifest=True),
    _folder_case("results-changed-after-manifest", lambda p: (p / "results.parquet").write_bytes(b"PAR1"),
                 "results.parquet", manifest=True, command="compare"),
    _folder_case("results-is-a-folder", _results_dir, "results.parquet", command="compare"),
    _folder_case("run-did-not-finish", lambda p: (p / "manifest.json").unlink(), "did not finish",
                 manifest=True),
    Case("out-holds-other-files", "run folders", ("run", "--model", "scripted:m", *_DATA, "--out", "adir"),
         ("adir", "holds no steadyeval run"), {"items.jsonl": GOOD_JSONL, "adir/notes.txt": "mine\n"}),
    Case("out-holds-another-run", "run folders", ("run", "--model", "scripted:m", *_DATA, "--out", "a",
                                                  "--seed", "7"),
         ("--out a", "different config"), {"items.jsonl": GOOD_JSONL}, _folder(lambda p: None, manifest=True),
         loads_model="the run id (a hash of the plan) decides it"),
]  # fmt: skip


def _table(edit: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def write(p: Path) -> None:
        table = pq.read_table(p / "results.parquet")
        pq.write_table(edit(table), p / "results.parquet")

    return write


def _meta(**changes: bytes | None) -> Callable[[pa.Table], pa.Table]:
    def edit(t: pa.Table) -> pa.Table:
        meta = dict(t.schema.metadata or {})
        for key, value in changes.items():
            k = f"steadyeval.{key}".encode()
            if value is None:
                meta.pop(k, None)
            else:
                meta[k] = value
        return t.replace_schema_metadata(meta)

    return edit


def _parquet(
    name: str,
    edit: Callable[[Path], object],
    *expect: str,
    command: str = "report",
    where: str = "a/results.parquet",
) -> Case:
    argv = ("report", "a", "--format", "md") if command == "report" else ("compare", "a", "b")
    return Case(name, "parquet", argv, (where, *expect), setup=_folder(edit))


def _raw(data: bytes) -> Callable[[Path], None]:
    return lambda p: (p / "results.parquet").write_bytes(data)


def _foreign_parquet(tmp: Path, good: Path) -> None:
    _copy(good, tmp / "b")
    pq.write_table(pa.table({"x": [1, 2]}), tmp / "other.parquet")


PARQUET = [
    _parquet("truncated", lambda p: (p / "results.parquet").write_bytes((p / "results.parquet").read_bytes()[:300]),
             "not a readable Parquet"),
    _parquet("empty-file", _raw(b""), "not a readable Parquet"),
    _parquet("csv-text", _raw(b"a,b\n1,2\n"), "not a readable Parquet", command="compare"),
    _parquet("no-schema-version", _table(_meta(schema_version=None)), "no schema_version"),
    _parquet("schema-version-not-a-number", _table(_meta(schema_version=b"abc")), "not a number"),
    _parquet("schema-version-0", _table(_meta(schema_version=b"0")), "schema_version 0", command="compare"),
    _parquet("schema-version-99", _table(_meta(schema_version=b"99")), "newer"),
    _parquet("column-missing", _table(lambda t: t.drop(["correct"])), "'correct'"),
    _parquet("version-1-column-missing", _table(lambda t: _meta(schema_version=b"1")(t.drop(["prompt"]))),
             "'prompt'"),
    _parquet("column-wrong-type", _table(lambda t: t.set_column(
        t.column_names.index("correct"), "correct", pa.array(["x"] * t.num_rows))), "'correct'", "string",
        command="compare"),
    _parquet("study-columns-not-json", _table(_meta(study_columns=b"{nope")), "study columns"),
    _parquet("study-columns-wrong-shape", _table(_meta(study_columns=b'[{"x": 1}]')), "study columns",
             command="compare"),
    _parquet("no-rows", _table(lambda t: t.slice(0, 0)), "no rows", where="a: "),
    Case("standalone-foreign-parquet", "parquet", ("compare", "other.parquet", "b"),
         ("other.parquet", "no schema_version"), setup=_foreign_parquet),
]  # fmt: skip

CASES: list[Case] = [
    *DATA_ROWS,
    *IMPORTED,
    *CSV,
    *YAML,
    *MODEL_SPECS,
    *FLAGS,
    *PATHS,
    *RUN_FOLDERS,
    *PARQUET,
]
