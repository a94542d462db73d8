"""The study's report sections: one builder for summary.md, the CLI's tables and the
HTML/Markdown/JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import RunOptions
from steadyeval.cli import main
from steadyeval.reports import (
    BarChart,
    LineChart,
    Report,
    ReportOptions,
    build_report,
    context_from_table,
    format_cell,
    sections_markdown,
)
from steadyeval.results import ResultsFrame
from steadyeval.studies import StudyResult, read_analysis, run_study
from steadyeval.studies.knowledge import (
    KNOWLEDGE_STUDY,
    KnowledgeAnalysis,
    analyze_knowledge,
    knowledge_report_sections,
)

from ..formats.test_report import FALLBACK, row_in_all_formats
from .test_analysis import _table

CATEGORY_TABLE = "Accuracy per category"


@pytest.fixture(scope="module")
def hand() -> tuple[Report, KnowledgeAnalysis]:
    """The hand-built table of ``test_analysis`` (every number worked out by hand)."""
    table = _table()
    analysis = analyze_knowledge(ResultsFrame(table), {"seed": 0})
    summary = json.loads(json.dumps({"study": "knowledge", "analysis": analysis.to_json()}))
    ctx = context_from_table(table, summary, ReportOptions(n_resamples=50))
    return build_report(ctx), analysis


def test_category_accuracy_is_the_same_in_every_format(
    hand: tuple[Report, KnowledgeAnalysis],
) -> None:
    report, analysis = hand
    (stem,) = [r for r in analysis.per_category
               if r.condition == "letter-reference-0shot" and r.category == "STEM"]  # fmt: skip
    assert (stem.correct, stem.n) == (2, 4)
    text, raw = row_in_all_formats(
        report, "knowledge", CATEGORY_TABLE, ("letter-reference-0shot",), "STEM (n=4)"
    )
    assert text == format_cell((stem.accuracy, stem.low, stem.high), "pct_ci")
    assert text == "50.0% [15.0, 85.0]"
    assert raw == {"estimate": 0.5, "low": stem.low, "high": stem.high}
    # the CLI prints summary.md's part, which shows the same text
    assert f"| {text} |" in KNOWLEDGE_STUDY.markdown(analysis, {})


def test_study_shots_and_calibration_replace_the_generic_ones(
    hand: tuple[Report, KnowledgeAnalysis],
) -> None:
    report, analysis = hand
    ids = [s.id for s in report.sections]
    assert len(ids) == len(set(ids))
    by_id = {s.id: s for s in report.sections}
    for sid in ("knowledge", "shots", "calibration", "knowledge-rotations",
                "knowledge-templates", "knowledge-memorisation"):  # fmt: skip
        assert by_id[sid].source == "knowledge study", sid
    assert ids.index("knowledge") < ids.index("shots") < ids.index("agreement")
    shots = [b for b in by_id["shots"].blocks if isinstance(b, LineChart)]
    (series,) = [s for s in shots[0].series if s.name == "letter · reference"]
    assert [(p.x, p.y) for p in series.points] == [(0, 5 / 8), (5, 6 / 8)]
    (diagram,) = [b for b in by_id["calibration"].blocks if isinstance(b, LineChart)]
    assert diagram.diagonal and sum(p.n or 0 for p in diagram.series[0].points) == 8
    bars = [b for b in by_id["knowledge"].blocks if isinstance(b, BarChart)]
    assert [b.label for b in bars[0].bars] == [
        "STEM",
        "humanities",
        "other (business, health, misc.)",
        "all (micro)",
    ]
    # summary.md: the same sections, figures left out (their numbers are in the tables)
    lean = knowledge_report_sections(analysis, figures=False)
    assert KNOWLEDGE_STUDY.markdown(analysis, {}) == sections_markdown(lean)
    assert not any(isinstance(b, BarChart | LineChart) for s in lean for b in s.blocks)


@pytest.fixture(scope="module")
def run_dir(mini_mmlu: Path, tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("knowledge_report")
    result = run_study(
        "knowledge",
        {"models": [f"hf:{tiny_gpt2}"], "data": str(mini_mmlu), "shots": [0, 1]},
        options=RunOptions(out=tmp / "run", cache=tmp / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return tmp / "run"


def test_cli_report_shows_the_study_sections(run_dir: Path) -> None:
    analysis = read_analysis(run_dir)
    assert isinstance(analysis, KnowledgeAnalysis)
    assert (run_dir / "summary.md").read_text().endswith(KNOWLEDGE_STUDY.markdown(analysis, {}))
    result = CliRunner().invoke(main, ["report", str(run_dir), "--format", "md"])
    assert result.exit_code == 0, result.output
    md = (run_dir / "report.md").read_text()
    for heading in ("## Knowledge study (MMLU)", "### Accuracy per category",
                    "## Accuracy vs shots", "## Calibration", "### Reliability diagram"):  # fmt: skip
        assert heading in md
    assert md.count("## Calibration\n") == 1 and FALLBACK not in md
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    html = (run_dir / "report.html").read_text()
    assert '<section id="knowledge">' in html and FALLBACK not in html
    (one,) = [a for a in analysis.accuracy if a.condition == "letter-reference-1shot"]
    micro = format_cell((one.micro.accuracy, one.micro.low, one.micro.high), "pct_ci")
    assert all(micro in text for text in (md, html, (run_dir / "summary.md").read_text()))
