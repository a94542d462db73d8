"""Importing Inspect AI logs, from fixtures written by hand after Inspect's documented log
schema (``EvalLog``/``EvalSample``/``ModelOutput``/``Score``; the ``.eval`` zip layout of
``header.json``, ``_journal/start.json``, ``samples/<id>_epoch_<n>.json``,
``summaries.json``), for the cases real logs do not reach (legacy layouts, partial and
numeric scores, damaged files). ``test_inspect_real.py`` imports logs Inspect itself wrote.
Inspect itself is not needed."""

from __future__ import annotations

import copy
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval import read_results, stats
from steadyeval.cli import main
from steadyeval.reports import ReportOptions, Table, build_report
from steadyeval.results._import_common import write_imported_run
from steadyeval.results._import_inspect import InspectImportOptions, import_inspect

QUESTIONS = [
    ("Which gas do plants absorb?", ["Oxygen", "Carbon dioxide", "Helium", "Neon"], "B"),
    ("What is frozen water?", ["Steam", "Dew", "Ice", "Fog"], "C"),
    ("How many legs has an insect?", ["Four", "Six", "Eight", "Ten"], "B"),
    ("Which planet is largest?", ["Mars", "Venus", "Earth", "Jupiter"], "D"),
    ("What do bees make?", ["Honey", "Silk", "Wax paper", "Milk"], "A"),
]
# (task, epoch) -> answer letter per question; "?" = no answer found
ANSWERS = {
    ("arc_mini", 1): ["B", "C", "A", "D", "A"],
    ("arc_mini", 2): ["B", "C", "B", "D", "?"],
    ("arc_mini_cot", 1): ["B", "A", "B", "D", "A"],
    ("arc_mini_cot", 2): ["B", "A", "B", "C", "A"],
}
MODEL = "openai/gpt-4o-mini"


def _prompt(question: str, choices: list[str]) -> str:
    letters = "\n".join(f"{chr(65 + i)}) {c}" for i, c in enumerate(choices))
    return (
        "Answer the following multiple choice question. The entire content of your response "
        "should be of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER "
        f"is one of A,B,C,D.\n\n{question}\n\n{letters}"
    )


def _sample(task: str, sid: int, epoch: int) -> dict[str, Any]:
    question, choices, target = QUESTIONS[sid - 1]
    letter = ANSWERS[(task, epoch)][sid - 1]
    text = f"ANSWER: {letter}" if letter != "?" else "I am not sure."
    if task.endswith("cot"):
        text = "Let me think step by step.\n" + text
    value = "N" if letter == "?" else ("C" if letter == target else "I")
    assistant = {
        "id": f"m-{task}-{sid}-{epoch}-2",
        "role": "assistant",
        "source": "generate",
        "model": "gpt-4o-mini-2024-07-18",
        "content": [{"type": "text", "text": text}],
    }
    return {
        "id": sid,
        "epoch": epoch,
        "input": question,
        "choices": choices,
        "target": target,
        "messages": [
            {
                "id": f"m-{task}-{sid}-{epoch}-1",
                "role": "user",
                "source": "input",
                "content": _prompt(question, choices),
            },
            assistant,
        ],
        "output": {
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"message": assistant, "stop_reason": "stop"}],
            "completion": text,
            "usage": {"input_tokens": 80, "output_tokens": 6, "total_tokens": 86},
            "time": 0.41,
        },
        "scores": {
            "choice": {
                "value": value,
                "answer": None if letter == "?" else letter,
                "explanation": text,
            },
            "includes": {"value": 1 if target in text else 0, "answer": text},
        },
        "metadata": {"subject": "biology" if sid in (1, 3, 5) else "physics"},
        "store": {},
        "events": [],
        "model_usage": {MODEL: {"input_tokens": 80, "output_tokens": 6, "total_tokens": 86}},
        "total_time": 0.5,
        "working_time": 0.45,
        "uuid": f"u-{task}-{sid}-{epoch}",
        "attachments": {},
    }


def _log(task: str) -> dict[str, Any]:
    samples = [_sample(task, sid, ep) for ep in (1, 2) for sid in range(1, 6)]
    correct = sum(s["scores"]["choice"]["value"] == "C" for s in samples)
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": f"E-{task}",
            "run_id": "R-1",
            "created": "2025-01-15T10:00:00+00:00",
            "task": task,
            "task_id": f"T-{task}",
            "task_version": 0,
            "task_file": "arc_mini.py",
            "task_attribs": {},
            "task_args": {},
            "dataset": {
                "name": "arc_mini",
                "location": "arc_mini.jsonl",
                "samples": 5,
                "sample_ids": [1, 2, 3, 4, 5],
                "shuffled": False,
            },
            "model": MODEL,
            "model_generate_config": {},
            "model_args": {},
            "config": {
                "epochs": 2,
                "epochs_reducer": ["mean"],
                "fail_on_error": True,
                "log_samples": True,
            },
            "packages": {"inspect_ai": "0.3.90"},
            "scorers": [
                {
                    "name": "choice",
                    "options": {},
                    "metrics": [{"name": "inspect_ai/accuracy", "options": {}}],
                    "metadata": {},
                }
            ],
        },
        "plan": {
            "name": "plan",
            "steps": [{"solver": "multiple_choice", "params": {}}],
            "config": {},
        },
        "results": {
            "total_samples": 10,
            "completed_samples": 10,
            "scores": [
                {
                    "name": "choice",
                    "scorer": "choice",
                    "params": {},
                    "metrics": {
                        "accuracy": {"name": "accuracy", "value": correct / 10, "params": {}}
                    },
                }
            ],
        },
        "stats": {
            "started_at": "2025-01-15T10:00:01+00:00",
            "completed_at": "2025-01-15T10:00:09+00:00",
            "model_usage": {MODEL: {"input_tokens": 800, "output_tokens": 60, "total_tokens": 860}},
        },
        "samples": samples,
    }


def _write_json(path: Path, log: dict[str, Any]) -> Path:
    path.write_text(json.dumps(log, indent=2))
    return path


def _write_eval(path: Path, log: dict[str, Any], *, legacy: bool = False) -> Path:
    header = {k: v for k, v in log.items() if k != "samples"}
    start = {"version": log["version"], "eval": log["eval"], "plan": log["plan"]}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("start.json" if legacy else "_journal/start.json", json.dumps(start))
        for s in log["samples"]:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        summaries = [
            {k: s[k] for k in ("id", "epoch", "input", "target", "scores")} for s in log["samples"]
        ]
        zf.writestr("summaries.json", json.dumps(summaries))
        if legacy:
            zf.writestr("results.json", json.dumps({"status": "success", "stats": log["stats"]}))
        else:
            zf.writestr("header.json", json.dumps(header))
    return path


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    return {
        "json": _write_json(tmp_path / "2025-01-15T10-00-00_arc-mini_E1.json", _log("arc_mini")),
        "eval": _write_eval(
            tmp_path / "2025-01-15T10-05-00_arc-mini-cot_E2.eval", _log("arc_mini_cot")
        ),
    }


_SAME = (
    "model",
    "item_id",
    "sample_index",
    "prompt",
    "options",
    "output",
    "parsed",
    "parsed_kind",
    "parsed_option",
    "correct",
    "gold",
    "gold_options",
    "item_hash",
    "prompt_hash",
    "subject",
)


def test_json_and_eval_logs_import_the_same(tmp_path: Path) -> None:
    log = _log("arc_mini")
    a = import_inspect([_write_json(tmp_path / "a.json", log)]).table.to_pylist()
    b = import_inspect([_write_eval(tmp_path / "b.eval", log)]).table.to_pylist()
    c = import_inspect([_write_eval(tmp_path / "c.eval", log, legacy=True)]).table.to_pylist()
    assert len(a) == len(b) == len(c) == 10
    for x, y, z in zip(a, b, c, strict=True):
        assert {k: x[k] for k in _SAME} == {k: y[k] for k in _SAME} == {k: z[k] for k in _SAME}


def test_values_follow_inspect_semantics(logs: dict[str, Path]) -> None:
    imported = import_inspect([logs["json"]])
    rows = {(r["item_id"], r["sample_index"]): r for r in imported.table.to_pylist()}
    rows = {(i.removeprefix("arc_mini/"), s): r for (i, s), r in rows.items()}
    assert imported.summary["models"] == [MODEL]
    assert imported.summary["conditions"] == ["arc_mini"]
    r = rows[("1", 0)]
    assert r["options"] == QUESTIONS[0][1] and r["gold_options"] == [1]
    assert r["gold"] == ["Carbon dioxide"]
    assert r["parsed_option"] == 1 and r["parsed"] == "Carbon dioxide"
    assert r["correct"] is True and r["parsed_kind"] == "option"
    assert r["output"] == "ANSWER: B"
    assert r["prompt"].startswith("user: Answer the following multiple choice question.")
    assert r["subject"] == "biology" and r["format"] == "mc"
    wrong = rows[("3", 0)]
    assert wrong["correct"] is False and wrong["parsed"] == "Four"
    noanswer = rows[("5", 1)]  # epoch 2, score "N"
    assert noanswer["correct"] is False and noanswer["parsed_kind"] == "unmatched"
    meta = json.loads(r["metadata"])
    assert meta["subject"] == "biology"
    assert meta["inspect"]["score_value"] == "C" and meta["inspect"]["stop_reason"] == "stop"
    by_scorer = import_inspect([logs["json"]], InspectImportOptions(scorer="includes"))
    inc = {(r["item_id"], r["sample_index"]): r["correct"] for r in by_scorer.table.to_pylist()}
    assert inc[("arc_mini/1", 0)] is True and inc[("arc_mini/2", 0)] is True
    with pytest.raises(ValueError, match=r"no score named 'accuracy'.*choice, includes"):
        import_inspect([logs["json"]], InspectImportOptions(scorer="accuracy"))


def test_partial_and_numeric_scores(tmp_path: Path) -> None:
    log = _log("arc_mini")
    log["samples"][0]["scores"]["choice"]["value"] = "P"
    log["samples"][1]["scores"]["choice"]["value"] = 0.5
    log["samples"][2]["scores"]["choice"]["value"] = True
    rows = import_inspect([_write_json(tmp_path / "x.json", log)]).table.to_pylist()
    assert [r["correct"] for r in rows[:3]] == [None, None, True]


def test_flips_between_two_tasks_are_analysed(logs: dict[str, Path], tmp_path: Path) -> None:
    scope = InspectImportOptions(item_scope={"arc_mini": "arc", "arc_mini_cot": "arc"})
    run_dir = write_imported_run(import_inspect(list(logs.values()), scope), tmp_path / "run")
    rows = read_results(run_dir).to_pylist()
    assert {r["condition"] for r in rows} == {"arc_mini", "arc_mini_cot"}
    key = {(r["condition"], r["item_id"], r["sample_index"]): r["correct"] for r in rows}
    units = sorted({(i, s) for _, i, s in key})
    direct = stats.agreement_table(
        [key[("arc_mini", i, s)] for i, s in units], [key[("arc_mini_cot", i, s)] for i, s in units]
    )
    # by hand from ANSWERS: epoch 1 flips on q2, q3; epoch 2 on q2, q4, q5 (no answer)
    assert (direct.both, direct.only_a, direct.only_b, direct.neither) == (5, 3, 2, 0)
    report = build_report(run_dir, ReportOptions(n_resamples=100))
    pairs = next(
        b
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Table) and b.title.endswith("pairs of conditions on correct")
    )
    assert pairs.rows[0][3:9] == (10, direct.both, direct.only_a, direct.only_b, direct.neither, 5)
    assert pairs.rows[0][9] == pytest.approx(direct.mcnemar().pvalue)


def test_same_task_twice_needs_a_condition_per_file(tmp_path: Path) -> None:
    one = _write_json(tmp_path / "first.json", _log("arc_mini"))
    again = _log("arc_mini")  # a second run of the task, not a retry of the first
    again["eval"].update(task_id="T-again", eval_id="E-again")
    two = _write_eval(tmp_path / "second.eval", again)
    with pytest.raises(ValueError, match=r"duplicate row.*--condition-map FILE_NAME=condition"):
        import_inspect([one, two])
    opts = InspectImportOptions(condition_map={"first": "run-1", "second": "run-2"})
    conds = {r["condition"] for r in import_inspect([one, two], opts).table.to_pylist()}
    assert conds == {"run-1", "run-2"}


def test_rewritten_sample_last_copy_wins(tmp_path: Path) -> None:
    log = _log("arc_mini")
    path = _write_eval(tmp_path / "x.eval", log)
    fixed = copy.deepcopy(log["samples"][0])
    fixed["output"]["completion"] = "ANSWER: A"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: duplicate name
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("samples/1_epoch_1.json", json.dumps(fixed))
    rows = import_inspect([path]).table.to_pylist()
    assert len(rows) == 10 and rows[0]["output"] == "ANSWER: A"


def test_not_inspect_logs(tmp_path: Path) -> None:
    empty = _log("arc_mini")
    empty["samples"] = []
    with pytest.raises(ValueError, match="holds no samples"):
        import_inspect([_write_json(tmp_path / "e.json", empty)])
    (tmp_path / "o.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="no 'eval' object"):
        import_inspect([tmp_path / "o.json"])
    (tmp_path / "z.eval").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"z\.eval: not a readable zip archive"):
        import_inspect([tmp_path / "z.eval"])
    with zipfile.ZipFile(tmp_path / "y.eval", "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(ValueError, match=r"no header\.json"):
        import_inspect([tmp_path / "y.eval"])


def test_import_inspect_command(logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    folder = logs["json"].parent
    (folder / "logs.json").write_text("{}")  # Inspect's listing file is skipped
    done = CliRunner().invoke(
        main,
        [
            "import",
            "inspect",
            str(folder),
            "--out",
            str(out),
            "--condition-map",
            "arc_mini_cot=cot",
            "--item-scope",
            "arc_mini=arc",
            "--item-scope",
            "arc_mini_cot=arc",
        ],
    )
    assert done.exit_code == 0, done.output
    assert "imported from inspect" in done.output
    assert {r["condition"] for r in read_results(out).to_pylist()} == {"arc_mini", "cot"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["imported"]["files"] == 2 and summary["n_items"] == 5


def test_unfinished_log_without_samples(tmp_path: Path) -> None:
    log = _log("arc_mini")
    log.update(status="cancelled", samples=[])
    path = _write_json(tmp_path / "c.json", log)
    opts = InspectImportOptions(allow_unfinished=True)
    with pytest.raises(
        ValueError,
        match=r"c\.json: Inspect status 'cancelled'.*holds 0 of 10 samples.*nothing else",
    ):
        import_inspect([path], opts)
