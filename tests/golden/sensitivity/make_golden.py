"""Write the pinned inputs and outputs of the sensitivity study's analysis
(``analyze_sensitivity``).

Run from the repository root:

    python tests/golden/sensitivity/make_golden.py

Cases (format: ``tests/studies/pinned.py``), each the study run on invented data with
SCRIPTED models (answers are a hash of the model name and the prompt):

* ``probes``: four relations × seven facts, three templates each, subjects with 0–3 aliases
  (so names are crossed with templates and some (fact, name) cells are not asked), three
  models, sampled adjustment (2 templates, 1 name per fact): every section is filled.
* ``probes-samples``: ``probes`` with every row again as a second sample, a third of them
  changed (cells average samples; a cell's prediction is its first row's).
* ``task-subjects``: a multiple-choice task under three templates, units = subjects, three
  models, options scored by log-probability.
* ``task-items``: the same task without subjects: units are the items, analysed pooled.

The expected files were first written by the implementation before its vectorisation;
``tests/studies/sensitivity/test_analysis_pinned.py`` asserts the analysis still returns
exactly these dicts (the typed analysis's ``to_json()`` without its ``schema_version``).
Rerun this script only when the analysis is meant to change.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
from tests.scripted_backend import ScriptedBackend  # noqa: E402
from tests.studies.pinned import write_case  # noqa: E402

from steadyeval.models import Capabilities, ModelSpec  # noqa: E402
from steadyeval.requests import (  # noqa: E402
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from steadyeval.results import ResultsFrame  # noqa: E402
from steadyeval.run import RunOptions  # noqa: E402
from steadyeval.studies import StudyResult, run_design  # noqa: E402
from steadyeval.studies.sensitivity import (  # noqa: E402
    AnalysisOptions,
    analyze_sensitivity,
    sensitivity_design,
)

HERE = Path(__file__).resolve().parent
#: The columns ``analyze_sensitivity`` reads (``subject`` for subject units).
COLUMNS = ["model", "condition", "item_id", "correct", "parsed", "sample_index", "relation",
           "subject"]  # fmt: skip
OPTIONS = AnalysisOptions(
    n_subsets=40, subset_size=2, n_resamples=60, k_templates=2, k_names=1, seed=5
)

RELATIONS = {
    "founded_by": ["[X] was founded by [Y] .", "The founder of [X] is [Y] .", "[Y] founded [X] ."],
    "river": ["[X] lies on the [Y] .", "The river of [X] is the [Y] .", "[X] is on the [Y] ."],
    "known_for": ["[X] is known for [Y] .", "[X] is famous for [Y] .", "People buy [Y] in [X] ."],
    "region": ["[X] is in [Y] .", "[X] lies in [Y] .", "[X] belongs to [Y] ."],
}
TOWNS = ["Harnwick", "Osterby", "Calder", "Brimsford", "Wenlow", "Ashgate", "Fenn"]
OBJECTS = {
    "founded_by": ["Cedric", "Maren", "Aldo", "Brann", "Odile", "Per", "Ines"],
    "river": ["Velm", "Lunn", "Tave", "Orrel", "Pike", "Morrow", "Sall"],
    "known_for": ["wool", "salt", "linen", "copper", "cheese", "timber", "glass"],
    "region": ["Northmark", "Eastvale", "Northmark", "Southmoor", "Eastvale", "Westfold",
               "Southmoor"],
}  # fmt: skip
ALIASES = {
    "Harnwick": ["Old Harnwick", "Harnwick Town", "the wool town"],
    "Osterby": ["Osterby-on-Lunn"],
    "Calder": [],
    "Brimsford": ["Brim", "Brimsford Market"],
    "Wenlow": [],
    "Ashgate": ["the ferry town"],
    "Fenn": ["Little Fenn", "Fenn Hamlet"],
}


def _unit(*parts: str) -> float:
    text = "\x00".join(parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") / 2**64


@dataclass
class ProbeScriptedBackend(ScriptedBackend):
    """SCRIPTED test backend filling ``[Y]`` itself: the top token is the fact's object or
    another object of the data, chosen by a hash of (model, prompt)."""

    objects: dict[str, list[str]] = field(default_factory=dict)  # name -> objects asked

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(fills_slots=True)

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        pool = sorted({o for objs in OBJECTS.values() for o in objs})
        out = []
        for r in requests:
            u = _unit(self.spec.name, r.prompt)
            golds = [o for name, objs in self.objects.items() if name in r.prompt for o in objs]
            if golds and u < 0.45:
                top = golds[int(u * 1000) % len(golds)]
            else:
                top = pool[int(u * 7919) % len(pool)]
            other = pool[int(u * 104729) % len(pool)]
            out.append(TopKResponse(tokens=(top, other), logprobs=(-0.5, -1.5)))
        return out


@dataclass
class TaskScriptedBackend(ScriptedBackend):
    """SCRIPTED test backend: option log-probabilities are a hash of (model, text)."""

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        return [
            ScoreResponse(
                logprob=-10 * _unit(self.spec.name, r.context, r.continuation),
                n_tokens=1,
                is_greedy=False,
            )
            for r in requests
        ]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def probes(work: Path) -> tuple[Any, dict[str, Any]]:
    data = work / "probes"
    data.mkdir()
    _write(
        data / "relations.jsonl", [{"relation": r, "templates": t} for r, t in RELATIONS.items()]
    )
    facts = []
    names: dict[str, list[str]] = {}
    for r, objects in OBJECTS.items():
        for town, obj in zip(TOWNS, objects, strict=True):
            facts.append({"relation": r, "subject": town, "object": obj,
                          "subject_aliases": ALIASES[town]})  # fmt: skip
            for name in (town, *ALIASES[town]):
                names.setdefault(f"{name} ", []).append(obj)
    _write(data / "facts.jsonl", facts)
    design = sensitivity_design(data, analysis=OPTIONS)
    models = [ProbeScriptedBackend(spec=ModelSpec("scripted", n), objects=names)
              for n in ("alpha", "beta", "gamma")]  # fmt: skip
    return design, models


def task(work: Path, subjects: bool) -> tuple[Any, list[TaskScriptedBackend]]:
    data = work / f"task-{subjects}"
    data.mkdir()
    items = []
    for i in range(12):
        a, b = 3 + i, 4 + 2 * i
        rec: dict[str, Any] = {"id": f"q{i}", "question": f"What is {a} plus {b}?",
                               "options": [str(a + b), str(a + b + 1), str(a * b)],
                               "answer": str(a + b)}  # fmt: skip
        if subjects:
            rec["metadata"] = {"subject": ["sums", "more sums", "big sums"][i % 3]}
        items.append(rec)
    _write(data / "items.jsonl", items)
    _write(
        data / "templates.jsonl",
        [
            {"name": "qa", "body": "Question: {{ question }}\nAnswer:"},
            {"name": "terse", "body": "{{ question }}"},
            {"name": "options", "body": "{{ question }}\n{{ options_block }}\nThe answer is"},
        ],
    )
    design = sensitivity_design(data, analysis=OPTIONS)
    models = [TaskScriptedBackend(spec=ModelSpec("scripted", n)) for n in ("one", "two", "six")]
    return design, models


def with_samples(table: pa.Table) -> pa.Table:
    """Every row again as sample 1 with its correctness and prediction changed on a third of
    the rows; the sample-1 copies of the first half of the rows come before their sample 0
    (cells average their samples; a cell's prediction is that of its first row)."""
    n = table.num_rows
    flip = [_unit("flip", str(i)) < 1 / 3 for i in range(n)]
    correct = [(not c) if f else c for c, f in zip(table["correct"].to_pylist(), flip, strict=True)]
    parsed = [
        f"other-{p}" if f else p for p, f in zip(table["parsed"].to_pylist(), flip, strict=True)
    ]
    again = table.set_column(table.schema.get_field_index("sample_index"), "sample_index",
                             pa.array([1] * n, pa.int32()))  # fmt: skip
    again = again.set_column(again.schema.get_field_index("correct"), "correct",
                             pa.array(correct, pa.bool_()))  # fmt: skip
    again = again.set_column(again.schema.get_field_index("parsed"), "parsed",
                             pa.array(parsed, pa.string()))  # fmt: skip
    half = n // 2
    return pa.concat_tables([again.slice(0, half), table, again.slice(half)])


def analysis_json(table: pa.Table, info: dict[str, Any]) -> dict[str, Any]:
    """The analysis of ``table`` as ``summary.json`` holds it, less its schema version."""
    data = analyze_sensitivity(ResultsFrame(table), info).to_json()
    return {k: v for k, v in data.items() if k != "schema_version"}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        made = {
            "probes": probes(work),
            "task-subjects": task(work, subjects=True),
            "task-items": task(work, subjects=False),
        }
        for name, (design, models) in made.items():
            result = run_design(
                "sensitivity",
                design,
                models,
                options=RunOptions(cache=work / f"{name}.sqlite", progress=False),
            )
            assert isinstance(result, StudyResult)
            table = result.table
            info = dict(result.summary["design"])  # the design facts as summary.json holds them
            for key in ("data",):  # paths of the temporary folder: not read by the analysis
                info.pop(key, None)
            columns = [c for c in COLUMNS if c in table.column_names]
            analysis = analysis_json(table.select(columns), info)
            write_case(HERE, name, table, columns, info, analysis)
            print(f"{name}: {table.num_rows} rows")
            if name == "probes":
                table = with_samples(table)
                analysis = analysis_json(table.select(columns), info)
                write_case(HERE, "probes-samples", table, columns, info, analysis)
                print(f"probes-samples: {table.num_rows} rows")


if __name__ == "__main__":
    main()
