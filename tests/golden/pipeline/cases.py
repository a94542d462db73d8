"""Whole-pipeline cases pinned before the "one shape for every study" refactor.

Each case is a command line of the ``steadyeval`` CLI (the user's surface, which the refactor
keeps) run on tiny models and small data written here. ``make_golden.py`` ran them on the
code before the refactor and stored each run's ``results.parquet`` (as columns) and
``summary.json`` in ``<case>.json``; ``tests/core/test_pinned_pipeline.py`` runs them again
and compares, after the v1 → v2 column map, failing on any difference that
``tests/golden/CHANGES.md`` does not list.

``make_golden.py`` wrote everything under one fixed folder (:data:`ROOT`), because model
paths reached run ids, request keys and seeds of the v1 code; in the pinned files that folder
reads ``<tmp>`` (the test runs in its own temporary folder, also read as ``<tmp>``), and the
repository's ``examples`` folder reads ``<examples>``.
"""

from __future__ import annotations

import csv
import json
import random
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
HERE = Path(__file__).resolve().parent
ROOT = Path(tempfile.gettempdir()) / "steadyeval-pinned"

# -- data written for the cases --------------------------------------------------------------

_MMLU_DEV = {
    "abstract_algebra": [
        ("What is 1+1?", "1", "2", "3", "4", "B"),
        ("What is 2*3?", "5", "6", "7", "8", "B"),
        ("What is 9-4?", "5", "4", "3", "2", "A"),
    ],
    "high_school_us_history": [
        ("Who was the first US president?", "Adams", "Washington", "Lincoln", "Grant", "B"),
        ("In which year did the US declare independence?", "1776", "1789", "1812", "1865", "A"),
    ],
}
_MMLU_TEST = {
    "abstract_algebra": [
        ("What is 3+4?", "7", "6", "5", "4", "A"),
        ('Which set, "N" or "Z", has\nnegatives?', "N", "Z", "both", "neither", "B"),
        ("What is 0*5?", "5", "1", "0", "2", "C"),
    ],
    "high_school_us_history": [
        ("Which war ended in 1865?", "Civil War", "War of 1812", "Revolution", "Korean War", "A"),
        ("Which purchase doubled the size of the US in 1803?", "Alaska", "Gadsden", "Florida",
         "Louisiana", "D"),
    ],
}  # fmt: skip


def write_mmlu(root: Path) -> Path:
    for split, table in (("dev", _MMLU_DEV), ("test", _MMLU_TEST)):
        (root / split).mkdir(parents=True, exist_ok=True)
        for subject, rows in table.items():
            with (root / split / f"{subject}_{split}.csv").open("w", newline="") as fh:
                csv.writer(fh).writerows(rows)
    return root


def write_rte(path: Path, n: int = 12, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("w") as fh:
        for i in range(n):
            yes = rng.random() < 0.5
            rec = {
                "premise": f"The cat sat on the mat number {i}.",
                "hypothesis": f"A cat sat on mat {i}." if yes else f"No dog ran {i}.",
                "idx": i,
                "label": "entailment" if yes else "not_entailment",
            }
            fh.write(json.dumps(rec) + "\n")
    return path


def write_lmeval(folder: Path) -> Path:
    """Two hand-written lm-eval sample files (log-likelihood multiple choice, two prompts)."""
    folder.mkdir(parents=True, exist_ok=True)
    for task, shift in (("toy_a", 0.0), ("toy_b", 1.5)):
        lines = []
        for doc_id in range(4):
            ctx = f"Q{doc_id}?\nA:"
            a, b = -2.0 - doc_id * 0.25, -1.0 - shift * (doc_id % 2)
            rec = {
                "doc_id": doc_id,
                "doc": {"q": f"Q{doc_id}?", "choices": ["x", "y"], "label": doc_id % 2},
                "target": str(doc_id % 2),
                "arguments": {
                    "gen_args_0": {"arg_0": ctx, "arg_1": " x"},
                    "gen_args_1": {"arg_0": ctx, "arg_1": " y"},
                },
                "resps": [[[str(a), "False"]], [[str(b), "True"]]],
                "filtered_resps": [[str(a), "False"], [str(b), "True"]],
                "filter": "none",
                "metrics": ["acc"],
                "doc_hash": f"d{doc_id}",
                "prompt_hash": f"p{doc_id}",
                "target_hash": "t",
                "acc": float((b > a) == bool(doc_id % 2)),
            }
            lines.append(json.dumps(rec))
        (folder / f"samples_{task}_2024-01-01T00-00-00.000001.jsonl").write_text(
            "\n".join(lines) + "\n"
        )
    return folder


def write_inspect(folder: Path) -> Path:
    """An Inspect JSON log written after Inspect's documented format (two epochs)."""
    folder.mkdir(parents=True, exist_ok=True)
    questions = [
        ("Which gas do plants take in?", ["Oxygen", "Carbon dioxide", "Helium"], "B"),
        ("What is 2+2?", ["3", "4", "5"], "B"),
        ("Which planet is red?", ["Mars", "Venus", "Earth"], "A"),
    ]
    answers = {1: ["B", "A", "A"], 2: ["B", "B", "?"]}
    samples = []
    for epoch in (1, 2):
        for sid, (question, choices, target) in enumerate(questions, start=1):
            letter = answers[epoch][sid - 1]
            text = f"ANSWER: {letter}" if letter != "?" else "I am not sure."
            value = "N" if letter == "?" else ("C" if letter == target else "I")
            msg = {"role": "assistant", "content": [{"type": "text", "text": text}]}
            samples.append(
                {
                    "id": sid,
                    "epoch": epoch,
                    "input": question,
                    "choices": choices,
                    "target": target,
                    "messages": [{"role": "user", "content": question}, msg],
                    "output": {
                        "model": "m",
                        "choices": [{"message": msg, "stop_reason": "stop"}],
                        "completion": text,
                        "usage": {"input_tokens": 20, "output_tokens": 3},
                    },
                    "scores": {"choice": {"value": value, "answer": letter}},
                    "metadata": {"subject": "science"},
                }
            )
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "task": "mini",
            "model": "openai/gpt-4o-mini",
            "created": "2025-01-15T10:00:00+00:00",
            "dataset": {"name": "mini", "samples": 3},
            "config": {"epochs": 2},
        },
        "plan": {"steps": [{"solver": "multiple_choice"}]},
        "results": {"total_samples": 6, "completed_samples": 6, "scores": []},
        "samples": samples,
    }
    path = folder / "2025-01-15T10-00-00_mini_E1.json"
    path.write_text(json.dumps(log))
    return path


# -- the cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    command: str  # a shell-quoted command line; "{key}" placeholders: models, data, out


CASES: tuple[Case, ...] = (
    Case(
        "quickstart",
        "run {examples}/run.yaml --model hf:{gpt2} --out {out}",
    ),
    Case(
        "probes-masked",
        "run {examples}/probes.yaml --model hf-masked:{bert} --out {out}",
    ),
    Case(
        "formats-generate",
        "study formats --model hf:{gpt2} --data {examples}/squad-mini.json "
        "--answerable 6 --unanswerable 6 --orders 1 --no-decoy --control --temperature "
        "0.8 --samples 2 --determinism 2 --out {out}",
    ),
    Case(
        "formats-logprob-t5",
        "study formats --model hf-seq2seq:{t5} --data {examples}/squad-mini.json "
        "--answerable 6 --unanswerable 6 --scoring logprob --template unifiedqa "
        '--escape "I don\'t know" --out {out}',
    ),
    Case(
        "sensitivity-probes",
        "study sensitivity --model hf:{bert} --model hf:{gpt2} --data "
        "{examples}/probes-study --subset-size 2 --subsets 50 --out {out}",
    ),
    Case(
        "knowledge",
        "study knowledge --model hf:{gpt2} --data {mmlu} --shots 0,1 --scoring "
        "letter,option --templates reference,single-space --rotations --memorisation "
        "--out {out}",
    ),
    Case(
        "fewshot-icl",
        "study fewshot --model hf:{gpt2} --task rte --labelled {rte} "
        "--test-from-labelled 4 --method icl --strategy cv --strategy mdl --k 2 "
        "--k-values 2 --final-seeds 1 --threads 1 --out {out} --quiet",
    ),
    Case(
        "fewshot-pet",
        "study fewshot --model hf:{bert} --task rte --labelled {rte} "
        "--test-from-labelled 4 --method pet --strategy multisplit --k 2 --k-values 2 "
        "--space {space} --threads 1 --out {out} --quiet",
    ),
    Case(
        "fewshot-cls",
        "study fewshot --model hf:{bert} --task rte --labelled {rte} "
        "--test-from-labelled 4 --method cls --strategy multisplit --k 2 --k-values 2 "
        "--space {space} --threads 1 --out {out} --quiet",
    ),
    Case(
        "import-lmeval",
        "import lm-eval {lmeval} --model m --out {out}",
    ),
    Case(
        "import-inspect",
        "import inspect {inspect} --out {out}",
    ),
)

SPACE = {
    "pet": {
        "pattern": ["question", "based-on"],
        "steps": [3],
        "eval_every": [0],
        "batch_size": [4],
        "learning_rate": [1e-3],
        "max_length": [64],
    },
    "cls": {"steps": [2], "max_length": [64], "learning_rate": [1e-4, 1e-3]},
}


def write_inputs(root: Path, build_model: Callable[[Path, str], Path]) -> dict[str, str]:
    """Write every model and data file the cases use under ``root``; return the placeholders."""
    space = root / "space.yaml"
    space.write_text(json.dumps(SPACE))  # JSON is YAML
    return {
        "examples": str(EXAMPLES),
        "gpt2": str(build_model(root / "models" / "gpt2", "gpt2")),
        "bert": str(build_model(root / "models" / "bert", "bert")),
        "t5": str(build_model(root / "models" / "t5", "t5")),
        "mmlu": str(write_mmlu(root / "mmlu")),
        "rte": str(write_rte(root / "rte.jsonl")),
        "space": str(space),
        "lmeval": str(write_lmeval(root / "lmeval")),
        "inspect": str(write_inspect(root / "inspect")),
    }


def argv(case: Case, values: Mapping[str, str], out: Path) -> list[str]:
    return [a.format(**values, out=str(out)) for a in shlex.split(case.command)]


# -- what a run is reduced to ------------------------------------------------------------------

#: Columns left out of the pinned files: the prompt text is pinned by ``prompt_hash``.
SKIPPED_COLUMNS = ("prompt",)


def _scrub(value: Any, replace: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in replace.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, Mapping):
        return {_scrub(k, replace): _scrub(v, replace) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, replace) for v in value]
    return value


def snapshot(run_dir: Path, replace: Mapping[str, str]) -> dict[str, Any]:
    """``{"results": {column: values}, "summary": summary.json}``, with paths scrubbed."""
    import pyarrow.parquet as pq

    out: dict[str, Any] = {}
    table = pq.read_table(run_dir / "results.parquet")
    out["results"] = {
        name: _scrub(table.column(name).to_pylist(), replace)
        for name in table.column_names
        if name not in SKIPPED_COLUMNS
    }
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    out["summary"] = _scrub(summary, replace)
    return out


def dumps(snap: Mapping[str, Any]) -> str:
    """One line per results column; the summary indented (NaN kept as JSON's NaN)."""
    cols = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in snap["results"].items())
    summary = json.dumps(snap["summary"], indent=1, sort_keys=True)
    return '{\n "results": {\n' + cols + '\n },\n "summary": ' + summary + "\n}\n"
