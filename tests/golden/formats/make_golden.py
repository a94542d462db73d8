"""Write the pinned inputs and outputs of the formats study's analysis (``analyze_formats``).

Run from the repository root:

    python tests/golden/formats/make_golden.py

Each case runs the study on the invented SQuAD file of ``tests/studies/formats/conftest.py``
with a SCRIPTED backend (answers are a hash of the prompt, the sample index and the model
name, chosen among refusals, the decoy, other options, letters, unmatched text and the gold
answer, so every outcome and every extra analysis is exercised), then stores

* ``<case>.input.json``: the results-table columns the analysis reads and the design facts
  (``summary.json["design"]``);
* ``<case>.expected.json``: ``analyze_formats(ResultsFrame(table), design)`` as
  ``summary.json`` holds it (``to_json()`` without ``schema_version``; format:
  ``tests/studies/pinned.py``).

The expected files were first written by the row-wise implementation that the vectorised one
replaced, as dicts with NaN kept (the typed analysis writes null there, as ``summary.json``
always did, and lists keys in its fields' order);
``tests/studies/formats/test_analysis_pinned.py`` asserts the analysis still gives exactly
these values. Rerun this script only when the analysis is meant to change.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402
from tests.scripted_backend import ScriptedBackend  # noqa: E402
from tests.studies.formats.conftest import squad_mini  # noqa: E402
from tests.studies.pinned import write_case  # noqa: E402

from steadyeval.models import Capabilities, ModelSpec, register_backend  # noqa: E402
from steadyeval.requests import (  # noqa: E402
    GenerateRequest,
    GenerateResponse,
    ScoreRequest,
    ScoreResponse,
)
from steadyeval.results import ResultsFrame  # noqa: E402
from steadyeval.run import RunOptions  # noqa: E402
from steadyeval.studies import StudyResult, run_study  # noqa: E402
from steadyeval.studies.formats import (  # noqa: E402
    FormatsConfig,
    analyze_formats,
    formats_design,
)

HERE = Path(__file__).resolve().parent

#: The columns ``analyze_formats`` reads.
COLUMNS = [
    "model",
    "item_id",
    "condition",
    "sample_index",
    "output",
    "parsed",
    "parsed_kind",
    "parsed_option",
    "correct",
    "refused",
    "truncated",
    "answerable",
    "em",
    "f1",
    "option_logprobs",
    "metadata",
]


def _unit(*parts: str) -> float:
    text = "\x00".join(parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") / 2**64


@dataclass
class MixedScriptedBackend(ScriptedBackend):
    """SCRIPTED test backend: answers drawn by a hash of (model, prompt, sample index) from
    refusals, the decoy, other options, letters, unmatched text and gold answers. A prompt
    seen before gets another answer one time in five (and score log-probs move by 1e-7), so
    the determinism check finds mismatches."""

    items: dict[str, Any] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)

    @property
    def capabilities(self) -> Capabilities:
        """A model named ``*unifiedqa*`` declares UnifiedQA's input format (this double's
        convention, so ``template: auto`` picks it as for the hub's UnifiedQA models)."""
        return Capabilities(input_format="unifiedqa" if "unifiedqa" in self.spec.name else None)

    def _item(self, prompt: str) -> Any:
        m = re.search(r"Question: (.*)\n", prompt) or re.search(r"^(.*\?) \\n", prompt)
        assert m is not None, prompt
        return self.items[m.group(1).lower()]

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        out = []
        for r in requests:
            self.seen[r.prompt + str(r.sample_index)] += 1
            again = self.seen[r.prompt + str(r.sample_index)] > 1
            u = _unit(self.spec.name, r.prompt, str(r.sample_index), "again" if again else "")
            if again and _unit("flip", r.prompt) > 0.2:
                u = _unit(self.spec.name, r.prompt, str(r.sample_index), "")
            item = self._item(r.prompt)
            opts = list(item.options)
            decoy = item.metadata.get("decoy")
            gold = item.answers[0] if item.answers else opts[0]
            last = re.search(r"\nD\. (.*)\n", r.prompt) or re.search(r"\(d\) (.*)$", r.prompt)
            choices = [
                "no answer>",
                "No answer.",
                "none of the above",
                "The answer is unanswerable",
                decoy or "nothing at all",
                opts[int(u * 97) % len(opts)],
                "ABCD"[int(u * 89) % 4],
                "ABCD"[int(u * 83) % 4],
                last.group(1) if last else "no answer>",
                "zzz qqq",
                gold,
                f"{gold} and more words here",
                "",
            ]
            text = choices[int(u * len(choices))]
            out.append(GenerateResponse(text=text, n_input_tokens=len(r.prompt.split())))
        return out

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        out = []
        for r in requests:
            key = r.context + "\x00" + r.continuation
            self.seen[key] += 1
            jitter = 1e-7 * (self.seen[key] - 1) if _unit("jitter", key) < 0.3 else 0.0
            out.append(
                ScoreResponse(
                    logprob=-10 * _unit(self.spec.name, key) - jitter,
                    n_tokens=max(1, len(r.continuation.split())),
                    is_greedy=False,
                    n_input_tokens=len(r.context.split()),
                )
            )
        return out


CASES: dict[str, dict[str, Any]] = {
    # Two models, generated lists and every extra (orders, no decoy, control, sampling,
    # determinism, an added escape).
    "generate-extras": {
        "models": ["golden-formats:alpha", "golden-formats:beta"],
        "answerable": 6,
        "unanswerable": 7,
        "seed": 7,
        "orders": 2,
        "no_decoy": True,
        "control": True,
        "escapes": ["I cannot tell"],
        "sampling": {"temperature": 1.0, "n_samples": 3},
        "determinism": 4,
        "examples": 4,
    },
    # Lists scored by option log-probability, UnifiedQA's encoding, orders and no decoy.
    "logprob-unifiedqa": {
        "models": ["golden-formats:gamma-unifiedqa"],
        "answerable": 9,
        "unanswerable": 8,
        "seed": 3,
        "scoring": "logprob",
        "orders": 3,
        "no_decoy": True,
        "control": True,
        "sampling": {"temperature": 0.7, "n_samples": 2},
        "determinism": 3,
        "examples": 2,
    },
    # The seed's plain four formats only.
    "plain": {
        "models": ["golden-formats:delta"],
        "answerable": 8,
        "unanswerable": 8,
        "seed": 2022,
    },
}


def make_case(name: str, spec: dict[str, Any], squad: Path, work: Path) -> None:
    cfg = FormatsConfig(data=str(squad), **spec)
    design = formats_design(cfg, [])
    by_question = {it.question.lower(): it for it in design.items}
    backends: dict[str, MixedScriptedBackend] = {}

    def factory(ms: ModelSpec) -> MixedScriptedBackend:
        return backends.setdefault(ms.name, MixedScriptedBackend(spec=ms, items=by_question))

    register_backend("golden-formats", factory, replace=True)
    out = work / name
    options = RunOptions(out=out, cache=work / f"{name}.sqlite", progress=False)
    result = run_study("formats", cfg, options=options)
    assert isinstance(result, StudyResult)
    table = pq.read_table(out / "results.parquet")
    design_info = json.loads((out / "summary.json").read_text())["design"]
    design_info["items"]["source"] = squad.name  # not the temporary folder: reproducible
    analysis = analyze_formats(ResultsFrame(table.select(COLUMNS)), design_info).to_json()
    del analysis["schema_version"]
    write_case(HERE, name, table, COLUMNS, design_info, analysis)
    print(f"{name}: {table.num_rows} rows")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        squad = work / "mini-v2.0.json"
        squad.write_text(json.dumps(squad_mini(), indent=1), encoding="utf-8")
        import os

        os.environ["STEADYEVAL_CACHE"] = str(work / "cache.sqlite")
        for name, spec in CASES.items():
            make_case(name, spec, squad, work)


if __name__ == "__main__":
    main()
