"""Write the pinned inputs and outputs of the knowledge study's analysis (``analyze_knowledge``).

Run from the repository root:

    python tests/golden/knowledge/make_golden.py

Cases (format: ``tests/studies/pinned.py``):

* ``scripted-full``: the study run on an invented mini MMLU (four subjects in four
  categories, arithmetic questions) with two SCRIPTED models (``tests/scripted_backend.py``:
  log-probabilities are a hash of the text, so answers are arbitrary but fixed), letter and
  option scoring, both prompt headers, 0 and 1 shot, the rotations and the memorisation
  check: every section of the analysis is filled.
* ``hand-built``: the hand-built table of ``tests/studies/knowledge/test_analysis.py``.
* ``ambiguous``: two conditions with the same settings (the comparisons are skipped).

The expected files were first written by the implementation before its vectorisation, as
dicts (NaN kept); ``tests/studies/knowledge/test_analysis_pinned.py`` asserts that the
typed analysis's JSON (``to_json()`` less ``schema_version``) is still exactly these dicts,
a NaN read as None. This script writes that JSON (None where the committed files hold NaN);
rerun it only when the analysis is meant to change.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
from tests.scripted_backend import ScriptedBackend  # noqa: E402
from tests.studies.knowledge.conftest import Row, write_mmlu  # noqa: E402
from tests.studies.knowledge.test_analysis import CORRECT, _row, _table  # noqa: E402
from tests.studies.pinned import write_case  # noqa: E402

from steadyeval import RunOptions  # noqa: E402
from steadyeval.models import register_backend  # noqa: E402
from steadyeval.results import ResultsFrame  # noqa: E402
from steadyeval.studies import StudyResult, run_study  # noqa: E402
from steadyeval.studies.knowledge import (  # noqa: E402
    KnowledgeConfig,
    analyze_knowledge,
)
from steadyeval.studies.knowledge._frame import _COLUMNS  # noqa: E402

HERE = Path(__file__).resolve().parent
SUBJECTS = ("abstract_algebra", "high_school_us_history", "virology", "econometrics")


def _questions(subject: str, n: int, offset: int) -> list[Row]:
    rows: list[Row] = []
    for i in range(n):
        a, b = 3 + i + offset, 2 * i + 1 + len(subject)
        right = str(a + b)
        opts = [right, str(a + b + 1), str(a + b - 2), str(a * b)]
        k = (i + offset) % 4
        opts[0], opts[k] = opts[k], opts[0]
        rows.append((f"In {subject}, what is {a} plus {b}?", *opts, "ABCD"[k]))  # type: ignore[arg-type]
    return rows


def scripted_full(work: Path) -> tuple[pa.Table, dict[str, object]]:
    data = write_mmlu(
        work / "mmlu",
        {s: _questions(s, 2, 100) for s in SUBJECTS},
        {s: _questions(s, 3 + j, j) for j, s in enumerate(SUBJECTS)},
    )
    config = KnowledgeConfig(
        models=["scripted:alpha", "scripted:beta"],
        data=str(data),
        shots=[0, 1],
        templates=["reference", "single-space"],
        scorings=["letter-logprob", "option-logprob"],
        rotations=True,
        memorisation=True,
        seed=3,
    )
    register_backend("scripted", lambda spec: ScriptedBackend(spec=spec), replace=True)
    result = run_study(
        "knowledge",
        config,
        options=RunOptions(out=work / "run", cache=work / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return result.table, {"seed": 3}


def ambiguous() -> pa.Table:
    from tests.results_table import table_of

    rows = [_row("reference", 0, 0, i, c) for i, c in enumerate(CORRECT[("reference", 0, 0)])]
    rows += [{**r, "condition": "copy"} for r in rows]
    return table_of(rows)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table, design = scripted_full(Path(tmp))
    cases = {
        "scripted-full": (table, design),
        "hand-built": (_table(), {"seed": 0}),
        "ambiguous": (ambiguous(), {}),
    }
    for name, (t, d) in cases.items():
        analysis = analyze_knowledge(ResultsFrame(t.select(_COLUMNS)), d).to_json()
        del analysis["schema_version"]
        write_case(HERE, name, t, _COLUMNS, d, analysis)
        print(f"{name}: {t.num_rows} rows")


if __name__ == "__main__":
    main()
