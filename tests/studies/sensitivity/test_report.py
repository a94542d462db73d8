"""The study's report sections: one builder for summary.md and the HTML/Markdown/JSON report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.reports import (
    BarChart,
    LineChart,
    Report,
    ReportOptions,
    Table,
    build_report,
    format_cell,
    sections_markdown,
)
from steadyeval.run import RunOptions
from steadyeval.studies import StudyResult, read_analysis, run_design
from steadyeval.studies.sensitivity import (
    SENSITIVITY_STUDY,
    AnalysisOptions,
    SensitivityAnalysis,
    SensitivityDesign,
    analyze_tensor,
    sensitivity_design,
    sensitivity_report_sections,
)

from ..formats.test_report import FALLBACK, row_in_all_formats
from .test_tensor import OPTS, _tensor


def _cells(table: Table, key: tuple[str, ...]) -> dict[str, str]:
    (row,) = [r for r in table.cells() if tuple(r[: len(key)]) == key]
    return dict(zip([c.name for c in table.columns], row, strict=True))


def test_sections_of_a_hand_made_tensor() -> None:
    """Two models, two units, three templates (``test_tensor``): the ranking flips with the
    template on u1, where A scores .9 .1 .5 and B .4 .4 .4."""
    u0 = np.zeros((2, 3, 1, 10))
    u0[0, :, 0, :6] = 1
    u0[1, :, 0, :2] = 1
    u1 = np.zeros((2, 3, 1, 10))
    u1[0, 0, 0, :9] = 1
    u1[0, 1, 0, :1] = 1
    u1[0, 2, 0, :5] = 1
    u1[1, :, 0, :4] = 1
    made = analyze_tensor(
        _tensor([u0, u1], models=("A", "B")),
        {**OPTS, "subset_size": 1},
        metric="P@1",
        unit="relation",
    )
    a = SENSITIVITY_STUDY.read_analysis(json.loads(json.dumps(made.to_json(), sort_keys=True)))
    assert a == made  # as summary.json holds it (keys sorted), read back
    sections = {s.id: s for s in sensitivity_report_sections(a)}
    assert list(sections) == [
        "sensitivity",
        "sensitivity-rankings",
        "rank-consistency",
        "sensitivity-verbalization",
        "sensitivity-units",
    ]
    (units,) = sections["sensitivity-units"].blocks
    assert isinstance(units, Table)
    row = _cells(units, ("u1", "A"))
    assert (row["original"], row["best"], row["best template"]) == ("90.0%", "90.0%", "t0")
    assert (row["worst"], row["worst template"], row["best−worst"]) == ("10.0%", "t1", "80.0%")
    (rankings,) = sections["sensitivity-rankings"].blocks
    assert isinstance(rankings, Table) and rankings.rows[0][:3] == (1, 2, 0.5)
    (lines,) = [b for b in sections["sensitivity"].blocks if isinstance(b, LineChart)]
    a_line = [p.y for p in lines.series[0].points]
    assert a_line == pytest.approx([(0.6 + 0.9) / 2, (0.6 + 0.1) / 2, (0.6 + 0.5) / 2])
    regimes = [b.title for b in sections["rank-consistency"].blocks if isinstance(b, BarChart)]
    assert regimes == [
        "Rank consistency: original template and name",
        "Rank consistency: random template and name per model",
        "Rank consistency: intervention (exact adjustment)",
    ]
    design = SensitivityDesign(
        kind="probes", templates=["t0", "t1", "t2"], conditions={}, max_names=1, analysis=OPTS
    )
    md = SENSITIVITY_STUDY.markdown(a, design)
    assert md == sections_markdown(sensitivity_report_sections(a, figures=False))
    assert "| u1 | A | 90.0% | 90.0% | t0 | 10.0% | t1 | 80.0% |" in md
    assert "## Verbalization\n\nNot applicable: no aliases in the data (K_x = 1)." in md


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def run_dir(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generic task of ``test_study`` (multiple choice under three wordings)."""
    tmp = tmp_path_factory.mktemp("sensitivity_report")
    questions = [
        ("What is the capital of France?", ["Paris", "Rome"], "Paris", "geo"),
        ("What is the capital of Italy?", ["Berlin", "Rome"], "Rome", "geo"),
        ("Which is larger?", ["ten", "three"], "ten", "math"),
        ("What is two plus two?", ["four", "five"], "four", "math"),
        ("Where does the sun rise?", ["east", "west"], "east", "nature"),
        ("Is the ocean salty?", ["yes", "no"], "yes", "nature"),
    ]
    _write(tmp / "items.jsonl", [
        {"id": f"q{i}", "question": q, "options": o, "answer": a, "metadata": {"subject": s}}
        for i, (q, o, a, s) in enumerate(questions)
    ])  # fmt: skip
    _write(tmp / "templates.jsonl", [
        {"name": "qa", "body": "Question: {{ question }}\nAnswer:"},
        {"name": "terse", "body": "{{ question }}"},
        {"name": "options", "body": "{{ question }}\n{{ options_block }}\nThe answer is"},
    ])  # fmt: skip
    design = sensitivity_design(
        tmp, analysis=AnalysisOptions(n_subsets=50, subset_size=2, n_resamples=50)
    )
    result = run_design(
        "sensitivity",
        design,
        [f"hf:{tiny_gpt2}", f"hf:{tiny_gpt2}?dtype=bfloat16"],
        options=RunOptions(out=tmp / "run", cache=tmp / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return tmp / "run"


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Report:
    return build_report(run_dir, ReportOptions(n_resamples=50))


def test_adjusted_score_is_the_same_in_every_format(run_dir: Path, report: Report) -> None:
    analysis = read_analysis(run_dir)
    assert isinstance(analysis, SensitivityAnalysis) and analysis.pooled is not None
    model = analysis.models[0]
    exact = analysis.adjusted.per_model[model].exact
    text, raw = row_in_all_formats(
        report, "sensitivity", "Accuracy by model", (model,), "adjusted (exact)"
    )
    assert text == format_cell(exact, "pct") and raw == exact
    qa = analysis.pooled[model].scores[0]  # the first template, all items pooled
    text, raw = row_in_all_formats(
        report,
        "sensitivity",
        "All items pooled (templates shared by every subject)",
        (model,),
        "qa",
    )
    assert text == format_cell(qa, "pct") and raw == qa
    design = json.loads((run_dir / "summary.json").read_text())["design"]
    md = SENSITIVITY_STUDY.markdown(analysis, design)
    assert (run_dir / "summary.md").read_text().endswith(md)


def test_cli_report_shows_the_study_sections(run_dir: Path, report: Report) -> None:
    ids = [s.id for s in report.sections]
    assert ids.count("rank-consistency") == 1  # the study's, in place of the generic one
    (rc,) = [s for s in report.sections if s.id == "rank-consistency"]
    assert rc.source == "sensitivity study"
    result = CliRunner().invoke(main, ["report", str(run_dir), "--format", "md"])
    assert result.exit_code == 0, result.output
    md = (run_dir / "report.md").read_text()
    for heading in ("## Prompt and verbalization sensitivity", "### Accuracy by model",
                    "## Model rankings across templates", "## Rank consistency",
                    "### Rank consistency: original template and name", "## Per subject"):  # fmt: skip
        assert heading in md
    assert FALLBACK not in md
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    html = (run_dir / "report.html").read_text()
    assert '<section id="sensitivity">' in html and FALLBACK not in html


def test_verbalization_section_headline_and_per_relation() -> None:
    """The tensor of ``test_tensor.test_verbalization_per_relation_skips_stop_words`` (u0 2/3
    stable, u1 1/2) plus a third unit whose facts have one name each: the headline is the
    mean over relations, the pooled share is labelled secondary, and the per-relation table
    lists only relations with a fact that has two names."""
    from .test_tensor import NAN

    texts = ("the", "Paris", "Rome", "Lyon", "The")
    p0 = np.full((1, 1, 3, 4), -1)
    p0[0, 0, :2, 0] = [1, 1]
    p0[0, 0, :2, 1] = [1, 2]
    p0[0, 0, :, 2] = [0, 1, 1]
    p0[0, 0, :2, 3] = [0, 1]
    p1 = np.full((1, 1, 3, 3), -1)
    p1[0, 0, :2, 0] = [3, 3]
    p1[0, 0, 0, 1] = 3
    p1[0, 0, :2, 2] = [4, 3]
    p2 = np.full((1, 1, 3, 2), -1)
    p2[0, 0, 0, :] = [1, 2]
    preds = (p0, p1, p2)
    cells = [np.where(p >= 0, 0.0, NAN) for p in preds]
    c = _tensor(cells, models=("A",), predictions=preds, prediction_texts=texts)
    a = analyze_tensor(c, {**OPTS, "stop_words": ["the"]}, metric="P@1", unit="relation")
    (verb,) = [s for s in sensitivity_report_sections(a) if s.id == "sensitivity-verbalization"]
    tables = [b for b in verb.blocks if isinstance(b, Table)]
    assert len(tables) == 2
    head = _cells(tables[0], ("A",))
    assert head["stable, mean over relations"] == format_cell((2 / 3 + 1 / 2) / 2, "pct")
    assert (head["relations"], head["pooled (original template)"]) == ("2", "60.0%")
    assert head["skipped"] == "1"
    units = tables[1]
    assert [r[0] for r in units.cells()] == ["u0", "u1"]  # u2 has no fact with two names
    assert _cells(units, ("u0", "A"))["stable (original template)"] == "66.7%"
    assert "1 stop words are skipped" in str(verb.blocks[0])
