"""What reports and comparisons say: "no discordant pairs" instead of a zero-width interval,
the count of approximate rows, Markdown escaped with backslashes (never HTML entities), and
one label per condition across a report."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from steadyeval.cli import main
from steadyeval.compare import compare_runs
from steadyeval.reports import (
    BarChart,
    Column,
    Heatmap,
    ItemTable,
    Paragraph,
    ReportOptions,
    Section,
    Table,
    build_report,
    context_from_table,
    escape_markdown,
    render_markdown,
    sections_markdown,
)
from steadyeval.reports._build import condition_labels
from steadyeval.results import summarize, summary_markdown
from steadyeval.studies import get_study
from tests.results_table import table_of

from ._studies import StudyRuns


def _rows(outcomes: dict[str, list[int]], **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "model": "m",
            "item_id": f"i{i}",
            "condition": cond,
            "sample_index": 0,
            "correct": bool(v),
            "metadata": "{}",
            **extra,
        }
        for cond, values in outcomes.items()
        for i, v in enumerate(values)
    ]


# -- no discordant pairs ------------------------------------------------------------------------
def test_compare_says_no_discordant_pairs(scripted_run: Path) -> None:
    comp = compare_runs([scripted_run, scripted_run], models=["scripted:a"])
    rows = comp.pairs[0].conditions
    assert rows and all(r.discordant == 0 and r.n > 0 for r in rows)
    done = CliRunner().invoke(
        main, ["compare", str(scripted_run), str(scripted_run), "--model", "scripted:a"]
    )
    assert done.exit_code == 0, done.output
    assert done.output.count("no discordant pairs") == len(rows) + 1  # and the pooled row
    assert "+0.0 pp" not in done.output


def test_compare_still_shows_intervals_when_units_flip(scripted_run: Path) -> None:
    done = CliRunner().invoke(main, ["compare", str(scripted_run)])  # model a vs model b
    assert done.exit_code == 0, done.output
    comp = compare_runs([scripted_run])
    flipping = [r for r in comp.pairs[0].conditions if r.discordant]
    assert flipping and " pp [" in done.output


def test_agreement_without_flips_says_so() -> None:
    same, other = [1, 0, 1, 1, 0, 1], [0, 1, 0, 1, 1, 0]
    report = build_report(context_from_table(table_of(_rows({"a": same, "b": same, "c": other}))))
    pairs = next(
        b for s in report.sections for b in s.blocks if isinstance(b, Table) and "pairs" in b.title
    )
    ab = next(r for r in pairs.rows if r[1:3] == ("a", "b"))
    assert ab[8] == 0 and ab[9] == "no discordant pairs"
    hm = next(b for s in report.sections for b in s.blocks if isinstance(b, Heatmap))
    assert hm.text[0][1] == "0/6\nno flips" and hm.text[0][2].startswith("5/6\np=")
    md = render_markdown(report)
    assert "| m | a | b | 6 | 4 | 0 | 0 | 2 | 0 | no discordant pairs | – |" in md


# -- approximate rows ---------------------------------------------------------------------------
def test_approximate_rows_are_counted_everywhere() -> None:
    rows = _rows({"a": [1, 0, 1, 1], "b": [1, 1, 0, 0]})
    for r in rows[:3] + rows[5:6]:
        r["approximate"] = True
    table = table_of(rows)
    records = {r["condition"]: r for r in summarize(table)}
    assert (records["a"]["approximate"], records["b"]["approximate"]) == (3, 1)
    summary = {
        "run_id": "r",
        "n_rows": 8,
        "n_items": 4,
        "models": ["m"],
        "conditions": ["a", "b"],
        "n_skipped": 0,
        "skipped": [],
        "plan": {"requests": 8, "unique": 8, "cache_hits": 0, "model_calls": 8},
        "by_condition": list(records.values()),
    }
    md = summary_markdown(summary)
    assert "| truncated | approximate | EM | F1 |" in md
    assert "| m | a | 4 | 75.0% (30.1%–95.4%) | 0 | 0 | 0 | 3 | – | – |" in md
    report = build_report(context_from_table(table, summary))
    head = report.sections[0].blocks[0]
    assert isinstance(head, Table)
    col = [c.name for c in head.columns].index("approximate")
    assert [r[col] for r in head.rows] == [3, 1]


# -- Markdown: backslash escapes, never HTML entities -------------------------------------------
@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("<0.001", "<0.001"),
        ("p<0.05 and a < b", "p<0.05 and a < b"),
        ("<b>bold</b>", "\\<b>bold\\</b>"),
        ("<!-- x -->", "\\<!-- x -->"),
        ("<https://example.com>", "\\<https://example.com>"),
        ("&lt;b&gt; & co", "\\&lt;b\\&gt; & co"),
        ("[click](javascript:alert(1))", "[click\\](javascript:alert(1))"),
        ("a\\b", "a\\\\b"),
    ],
)
def test_escape_markdown(text: str, escaped: str) -> None:
    assert escape_markdown(text) == escaped
    shown = MarkdownIt("commonmark").render(escaped)
    assert "<a" not in shown and "<b>" not in shown and "<!--" not in shown
    # rendered, it reads exactly as the text it came from
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)).strip() == text


def test_markdown_keeps_p_values_and_escapes_names() -> None:
    sec = Section.of(
        "demo",
        "Demo <i>x</i>",
        [
            Paragraph("> 5 flips & <b>more</b>"),
            Table(
                "Pairs",
                (Column("A"), Column("p", "pvalue")),
                (("<script>alert(1)</script>", 0.0001), ("a|b", 0.5)),
            ),
        ],
    )
    md = sections_markdown([sec])
    assert "&lt;" not in md and "&gt;" not in md
    assert "| \\<script>alert(1)\\</script> | <0.001 |" in md
    assert "| a\\|b | 0.500 |" in md
    assert "## Demo \\<i>x\\</i>" in md and "\\> 5 flips & \\<b>more\\</b>" in md
    shown = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in shown and "<i>" not in shown and "<b>" not in shown
    assert "&lt;0.001" in shown  # the renderer's own escaping of a literal "<"


def test_summary_md_escapes_names() -> None:
    summary = {
        "run_id": "r",
        "n_rows": 1,
        "n_items": 1,
        "models": ["m|<b>"],
        "conditions": ["<img src=x>"],
        "n_skipped": 0,
        "skipped": [],
        "plan": {"requests": 1, "unique": 1, "cache_hits": 0, "model_calls": 1},
        "by_condition": [
            {
                "model": "m|<b>",
                "condition": "<img src=x>",
                "n": 1,
                "accuracy": 1.0,
                "accuracy_low": 0.2,
                "accuracy_high": 1.0,
                "refused": 0,
                "unmatched": 0,
                "truncated": 0,
                "em": None,
                "f1": None,
            }
        ],
    }
    md = summary_markdown(summary)
    assert "| m\\|\\<b> | \\<img src=x> | 1 |" in md
    assert "<img" not in MarkdownIt("commonmark").enable("table").render(md)


def test_formats_summary_md_shows_small_p_values_as_is(study_runs: StudyRuns) -> None:
    summary = json.loads((study_runs["formats"] / "summary.json").read_text())
    analysis = summary["analysis"]
    pair = analysis["pairs"][0]
    pair.update(flips=5, only_a=5, p_exact=2e-5, p_midp=1e-5, p_holm=4e-5)
    study = get_study("formats")
    md = study.markdown(study.read_analysis(analysis), summary.get("design", {}))
    assert "<0.001" in md and "&lt;" not in md
    assert "&lt;" not in (study_runs["formats"] / "summary.md").read_text()


# -- one label per condition --------------------------------------------------------------------
def test_a_formats_report_shows_each_condition_by_one_label(study_runs: StudyRuns) -> None:
    run_dir = study_runs["formats"]
    analysis = json.loads((run_dir / "summary.json").read_text())["analysis"]
    from steadyeval.studies.formats import condition_labels as formats_labels

    labels = formats_labels(get_study("formats").read_analysis(analysis))
    assert labels["list-nota"] == 'list + "none of the above"'
    report = build_report(run_dir, ReportOptions(n_resamples=50))
    shown = set(labels.values())
    raw = {c for c, lab in labels.items() if c != lab}
    seen: set[str] = set()
    for s in report.sections:
        for b in s.blocks:
            if isinstance(b, Table) and b.title != "Condition labels":
                for k, c in enumerate(b.columns):
                    if c.name in ("condition", "A", "B", "worst", "best", "format"):
                        seen |= {r[k] for r in b.rows}
            elif isinstance(b, Heatmap):
                seen |= set(b.row_labels)
            elif isinstance(b, BarChart) and "by condition" in b.title:
                seen |= {bar.label for bar in b.bars}
            elif isinstance(b, ItemTable):
                assert b.conditions == tuple(labels.values())
                seen |= {r[1] for r in b.rows}
    assert seen and seen <= shown and not (seen & raw)
    key = next(
        b
        for b in report.sections[0].blocks
        if isinstance(b, Table) and b.title == "Condition labels"
    )
    assert dict((c, lab) for lab, c in key.rows) == labels


def test_condition_labels_must_agree() -> None:
    one = Section.of("x", "X", [], labels={"a": "first"})
    two = Section.of("y", "Y", [], labels={"a": "second"})
    assert condition_labels([one], ["a", "b"]) == {"a": "first"}
    assert condition_labels([one], ["b"]) == {}  # not a condition of this run
    with pytest.raises(ValueError, match="'a' is labelled 'first' in section 'x' and 'second'"):
        condition_labels([one, two], ["a"])
    with pytest.raises(ValueError, match="'b' and 'a' would both be shown as 'b'"):
        condition_labels([Section.of("z", "Z", [], labels={"a": "b"})], ["b", "a"])


def test_a_fewshot_report_shows_settings_by_their_labels(study_runs: StudyRuns) -> None:
    run_dir = study_runs["fewshot"]
    report = build_report(run_dir, ReportOptions(n_resamples=50))
    head = report.sections[0].blocks[0]
    assert isinstance(head, Table)
    grid = next(b for s in report.sections if s.id == "fewshot-grid" for b in s.blocks)
    assert isinstance(grid, Table)
    settings = {r[0] for r in grid.rows}
    assert {r[1] for r in head.rows} <= settings  # e.g. "pattern=question"
    items = next(b for s in report.sections for b in s.blocks if isinstance(b, ItemTable))
    assert set(items.conditions) <= settings
