"""Small runs of each built-in study on the tiny GPT-2, for the report layout tests: a few
questions each, with data written here (or the repository's examples), so they run offline."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

from steadyeval import RunOptions
from steadyeval.studies import run_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Two MMLU subjects in the original CSV layout (question, A, B, C, D, answer letter).
_MMLU = {
    "abstract_algebra": [
        ("What is 3+4?", "7", "6", "5", "4", "A"),
        ("What is 0*5?", "5", "1", "0", "2", "C"),
        ("What is the order of the group Z/4Z under addition?", "1", "2", "3", "4", "D"),
    ],
    "high_school_us_history": [
        ("Which war ended in 1865?", "Civil War", "War of 1812", "Revolution", "Korean", "A"),
        ("Who wrote most of the Declaration?", "Adams", "Franklin", "Jefferson", "Madison", "C"),
        (
            "Which purchase doubled the US in 1803?",
            "Alaska",
            "Gadsden",
            "Florida",
            "Louisiana",
            "D",
        ),
    ],
}


def _mmlu(root: Path) -> Path:
    for split in ("dev", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
        for subject, rows in _MMLU.items():
            with (root / split / f"{subject}_{split}.csv").open("w", newline="") as fh:
                csv.writer(fh).writerows(rows)
    return root


def _rte(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        yes = i % 3 != 0
        hypothesis = f"A cat sat on mat {i}." if yes else f"No dog ran {i}."
        lines.append(
            json.dumps(
                {
                    "premise": f"The cat sat on the mat number {i}.",
                    "hypothesis": hypothesis,
                    "idx": i,
                    "label": "entailment" if yes else "not_entailment",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


#: A folder name as long as those of models in a hub cache or a pytest temp folder: the
#: report must wrap such names at their separators, never mid-word.
LONG_NAME = "tiny-random-model-for-the-report-layout-tests-with-a-long-folder-name"


def _long_named_models(model: Path, root: Path) -> tuple[Path, Path]:
    """The tiny GPT-2 and a tiny BERT in folders with long names (their model identities
    are ``hf:FOLDER#HASH``)."""
    from steadyeval.models import build_tiny_model

    gpt2 = root / f"gpt2-{LONG_NAME}"
    if not gpt2.exists():
        shutil.copytree(model, gpt2)
    bert = root / f"bert-{LONG_NAME}"
    if not bert.exists():
        build_tiny_model(bert, "bert", seed=0)
    return gpt2, bert


def _general_corpus(path: Path) -> Path:
    """General sentences for the disparity study's corpora (the paragraphs of the example
    SQuAD file)."""
    squad = json.loads((EXAMPLES / "squad-mini.json").read_text(encoding="utf-8"))
    lines = [p["context"] for a in squad["data"] for p in a["paragraphs"]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def study_configs(model: Path, data: Path) -> dict[str, dict[str, Any]]:
    """A small config of every built-in study on ``model`` (data written under ``data``;
    the disparity study's models are made on first use)."""
    spec = f"hf:{model}"
    return {
        "formats": {
            "models": [spec],
            "data": str(EXAMPLES / "squad-mini.json"),
            "answerable": 4,
            "unanswerable": 4,
        },
        "sensitivity": {
            "models": [spec],
            "data": str(EXAMPLES / "probes-study"),
            "subset_size": 2,
        },
        "knowledge": {
            "models": [spec],
            "data": str(_mmlu(data / "mmlu")),
            "shots": [0, 1],
        },
        "fewshot": {
            "models": [spec],
            "task": "RTE",
            "labelled": str(_rte(data / "rte.jsonl", 12)),
            "test_from_labelled": 4,
            "method": "icl",
            "strategies": ["cv"],
            "k": 2,
            "space": {"pattern": ["question"], "verbalizer": ["yes-no"], "shots": [1]},
        },
    }


def disparity_config(model: Path, data: Path) -> dict[str, Any]:
    """Two tiny models with long folder names, trained two steps per γ: the report's
    layout, not the study's result."""
    gpt2, bert = _long_named_models(model, data)
    return {
        "models": [f"hf-causal:{gpt2}", f"hf-masked:{bert}"],
        "data": str(EXAMPLES / "probes-study"),
        "general": str(_general_corpus(data / "general.txt")),
        "gammas": [0, 100],
        "corpus_size": 20,
        "steps": 2,
        "batch_size": 4,
        "max_length": 32,
        "device": "cpu",
        "seed": 0,
    }


class StudyRuns:
    """Small runs of the built-in studies, each made on first use (``runs["formats"]``)."""

    def __init__(self, model: Path, root: Path) -> None:
        self.model = model
        self.root = root
        self.runs: dict[str, Path] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.runs:
            self.root.mkdir(parents=True, exist_ok=True)
            config = (
                disparity_config(self.model, self.root)
                if name == "disparity"
                else study_configs(self.model, self.root)[name]
            )
            out = self.root / name
            options = RunOptions(out=out, cache=self.root / "cache.sqlite", progress=False)
            run_study(name, config, options=options)
            self.runs[name] = out
        return self.runs[name]
