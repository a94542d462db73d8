"""The study's report sections: one builder for summary.md and the HTML/Markdown/JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.models import ModelSpec, register_backend
from steadyeval.reports import (
    BarChart,
    Heatmap,
    Preformatted,
    Report,
    ReportOptions,
    build_report,
    escape_markdown,
    format_cell,
    render_html,
    render_json,
    render_markdown,
    sections_markdown,
)
from steadyeval.run import RunOptions
from steadyeval.studies import StudyResult, run_study
from steadyeval.studies.formats import (
    FORMATS_STUDY,
    FormatsAnalysis,
    FormatsConfig,
    condition_labels,
    formats_design,
    formats_report_sections,
)

from .test_analysis import RuleScriptedBackend, _rule

FALLBACK = "registers no report sections"


class _Rows(HTMLParser):
    """Every ``<tr>`` of an HTML page as its cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _md_cell(text: str) -> str:
    return escape_markdown(text).replace("|", "\\|")


def row_in_all_formats(
    report: Report, section: str, title: str, key: Sequence[str], column: str
) -> tuple[str, Any]:
    """The cell ``column`` of the row starting with ``key`` in table ``title`` of
    ``section``, as text and raw value, after checking that the row's text is identical in
    the JSON, the Markdown and the HTML renderings of ``report``."""
    data = json.loads(render_json(report))
    (sec,) = [s for s in data["sections"] if s["id"] == section]
    (table,) = [b for b in sec["blocks"] if b["type"] == "table" and b["title"] == title]
    j = [c["name"] for c in table["columns"]].index(column)
    (i,) = [i for i, r in enumerate(table["text"]) if r[: len(key)] == list(key)]
    row = table["text"][i]
    assert "| " + " | ".join(_md_cell(c) for c in row) + " |" in render_markdown(report)
    parser = _Rows()
    parser.feed(render_html(report))
    assert row in parser.rows
    return row[j], table["rows"][i][j]


@pytest.fixture(scope="module")
def run_dir(squad_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted run of ``test_analysis`` (every count known), in its own directory."""
    cfg = FormatsConfig(models=["scripted-formats:rules"], data=str(squad_file), answerable=6,
                        unanswerable=6, seed=11, examples=3)  # fmt: skip
    backend = RuleScriptedBackend(
        spec=ModelSpec("scripted-formats", "rules"), rule=_rule(formats_design(cfg, []).items)
    )
    register_backend("scripted-formats", lambda spec: backend, replace=True)
    out = tmp_path_factory.mktemp("report") / "run"
    result = run_study(
        "formats",
        cfg,
        options=RunOptions(out=out, cache=out.parent / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return out


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Report:
    return build_report(run_dir, ReportOptions(n_resamples=50))


def _analysis(run_dir: Path) -> FormatsAnalysis:
    """The analysis as ``summary.json`` holds it, read back as its type."""
    raw = json.loads((run_dir / "summary.json").read_text())["analysis"]
    return FORMATS_STUDY.read_analysis(raw)


def test_refusal_rate_is_the_same_in_every_format(run_dir: Path, report: Report) -> None:
    (rec,) = [r for r in _analysis(run_dir).outcomes
              if r.condition == "list-nota" and r.subset == "unanswerable"]  # fmt: skip
    rate = rec.rates.refused
    text, raw = row_in_all_formats(
        report,
        "formats-model-1",
        "Every rate (95% Wilson interval; standard error clustered by paragraph)",
        ('list + "none of the above"', "unanswerable", "refused"),
        "rate [95% CI]",
    )
    assert text == format_cell((rate.rate, rate.low, rate.high), "pct_ci")
    assert text == "66.7% [30.0, 90.3]"  # 4 of 6 refused (scripted)
    assert raw == {"estimate": rate.rate, "low": rate.low, "high": rate.high}


def test_summary_md_is_the_report_sections_without_figures(run_dir: Path, report: Report) -> None:
    analysis = _analysis(run_dir)  # as summary.json stores it (keys sorted), read back
    md = (run_dir / "summary.md").read_text()
    design = json.loads((run_dir / "summary.json").read_text())["design"]
    assert md.endswith(FORMATS_STUDY.markdown(analysis, design))
    study = [s for s in report.sections if s.source == "formats study"]
    assert [s.id for s in study] == ["formats-model-1"]
    assert sections_markdown(formats_report_sections(analysis)) == sections_markdown(study)
    blocks = study[0].blocks
    assert not any(isinstance(b, Preformatted) for b in blocks)
    bars = [b for b in blocks if isinstance(b, BarChart)]
    assert [b.title for b in bars][:1] == ["Unanswerable questions: refusal rate by format"]
    assert {bar.label: bar.n for bar in bars[0].bars}["free form"] == 6
    lean = formats_report_sections(analysis, figures=False)[0].blocks
    assert not any(isinstance(b, BarChart | Heatmap) for b in lean)


def test_refusal_heatmap_outlines_cells_above_the_noise_floor(
    run_dir: Path, report: Report
) -> None:
    analysis = _analysis(run_dir)
    (sec,) = [s for s in report.sections if s.id == "formats-model-1"]
    hm = next(b for b in sec.blocks if isinstance(b, Heatmap))
    assert hm.title == "Agreement on refused, unanswerable questions"
    index = {label: i for i, label in enumerate(hm.row_labels)}
    pairs = [p for p in analysis.pairs
             if p.subset == "unanswerable" and p.outcome == "refused"]  # fmt: skip
    assert len(pairs) == 6 and {p.noise_floor for p in pairs} == {1}
    names = condition_labels(analysis)
    for p in pairs:
        i, j = index[names[p.a]], index[names[p.b]]
        assert hm.marked[i][j] == hm.marked[j][i] == (p.flips > 1)
        assert hm.text[i][j].startswith(f"{p.flips}/{p.n}\n")
    assert "noise floor (1 flips" in (hm.legend or "")
    # the generic agreement section's floors: the phrase floors, typed
    floors = analysis.noise_floors()
    assert [(f.model, f.outcome, f.flips) for f in floors] == [
        (e.model, e.outcome, e.phrase.flips) for e in analysis.noise_floor
    ]


def test_cli_report_shows_the_study_sections(run_dir: Path, tmp_path: Path) -> None:
    """A fresh interpreter: the report imports the study package, which registers."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "report.md"
    done = subprocess.run(
        [sys.executable, "-m", "steadyeval", "report", str(run_dir), "--format", "md",
         "--output", str(out), "--seed", "1"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    md = out.read_text()
    assert "## Answer format and abstention: scripted-formats:rules" in md
    assert "### Unanswerable questions (n = 6)" in md
    assert "### Agreement on refused, unanswerable questions" in md
    assert FALLBACK not in md and "```text" not in md
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    html = (run_dir / "report.html").read_text()
    assert '<section id="formats-model-1">' in html and FALLBACK not in html
