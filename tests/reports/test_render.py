"""One data model, three renderers: the same numbers in HTML, Markdown and JSON; escaping."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from steadyeval.reports import (
    Bar,
    BarChart,
    Column,
    Heatmap,
    Paragraph,
    Report,
    ReportOptions,
    Section,
    Table,
    build_report,
    escape_markdown,
    format_cell,
    render_html,
    render_json,
    render_markdown,
    report_to_dict,
    script_json,
    sections_markdown,
    write_report,
)

from .conftest import PAYLOAD_CONDITION, PAYLOAD_ID, PAYLOADS


def test_format_cell_every_kind() -> None:
    assert format_cell(0.25, "pct") == "25.0%"
    assert format_cell((0.25, 0.089, 0.532), "pct_ci") == "25.0% [8.9, 53.2]"
    assert format_cell((0.25, math.nan, math.nan), "pct_ci") == "25.0%"
    assert format_cell((-0.0833, -0.25, 0.1), "diff_ci") == "-8.3 pp [-25.0, 10.0]"
    assert format_cell(0.0004, "pvalue") == "<0.001"
    assert format_cell(0.04999, "pvalue") == "0.050"
    assert format_cell(12, "int") == "12"
    assert format_cell(True, "bool") == "yes"
    assert format_cell(None, "pct") == "–"
    assert format_cell(math.nan, "float") == "–"
    assert format_cell(0.12345, "float") == "0.123"
    with pytest.raises(ValueError, match="unknown cell kind"):
        format_cell(1, "percent")  # type: ignore[arg-type]


def test_table_rows_must_match_columns() -> None:
    with pytest.raises(ValueError, match="row 1 has 1 cells; expected 2"):
        Table("t", (Column("a"), Column("b")), (("x", "y"), ("z",)))


def test_heatmap_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="text must be 2×2"):
        Heatmap("h", ("a", "b"), ("a", "b"), ((0.0, 0.1), (0.1, 0.0)), (("", ""),))


def test_script_json_cannot_close_the_script_element() -> None:
    text = str(script_json({"x": "</script><!-- <b>&\u2028\u2029", "n": math.nan}))
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"x": "</script><!-- <b>&\u2028\u2029", "n": None}


def _tables(report: Report) -> list[Table]:
    return [b for s in report.sections for b in s.blocks if isinstance(b, Table)]


def test_the_three_formats_carry_the_same_numbers(scripted_run: Path) -> None:
    report = build_report(scripted_run, ReportOptions(n_resamples=200))
    page = render_html(report)
    md = render_markdown(report)
    data = json.loads(render_json(report))
    assert data["schema"] == "steadyeval.report/1"
    json_tables = [b for s in data["sections"] for b in s["blocks"] if b["type"] == "table"]
    tables = _tables(report)
    assert len(tables) == len(json_tables) >= 5
    md_cells = {
        c.strip()
        for line in md.splitlines()
        if line.startswith("|")
        for c in re.split(r"(?<!\\)\|", line)
    }
    page_text = html.unescape(re.sub(r"<[^>]+>", "", page))  # an interval is two spans
    for t, jt in zip(tables, json_tables, strict=True):
        assert jt["text"] == t.cells()
        for row in t.cells():
            for cell in row:
                assert cell in page_text, cell
                assert escape_markdown(cell).replace("|", "\\|") in md_cells, cell
    # the headline holds summarize()'s numbers, so summary.json and the report agree
    summary = json.loads((scripted_run / "summary.json").read_text())
    head = tables[0]
    for rec in summary["by_condition"]:
        row = next(r for r in head.rows if r[0] == rec["model"] and r[1] == rec["condition"])
        assert row[2] == rec["n"] and row[4] == rec["refused"]
        assert row[3][0] == pytest.approx(rec["accuracy"])
        assert row[3][1] == pytest.approx(rec["accuracy_low"])


def test_untrusted_text_is_escaped_everywhere(scripted_run: Path) -> None:
    report = build_report(scripted_run, ReportOptions(n_resamples=100))
    page = render_html(report)
    for payload in [*PAYLOADS, PAYLOAD_ID, PAYLOAD_CONDITION]:
        assert payload not in page
    assert "<img" not in page and "<svg onload" not in page and "<b>" not in page
    # two script elements: the per-item data (inert JSON) and the report's own code
    assert page.count("<script") == 2
    data = page.split('<script type="application/json" id="items-data">', 1)[1]
    body = data.split("</script>", 1)[0]
    assert "<" not in body
    items = json.loads(body)
    outputs = {r[4] for r in items["rows"]}
    assert set(PAYLOADS) <= outputs  # shown verbatim as text
    # the Markdown, rendered by a CommonMark renderer, holds no tag from the data: every
    # payload is escaped with backslashes and comes out as text
    shown = MarkdownIt("commonmark").enable("table").render(render_markdown(report))
    assert "<script" not in shown and "<img" not in shown and "<svg" not in shown
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in shown


def test_markdown_of_study_sections_alone() -> None:
    sec = Section.of(
        "demo",
        "Demo",
        [
            Paragraph("A study's own section."),
            Table("Counts", (Column("format"), Column("refused", "int")), (("a|b", 3),)),
            BarChart("Refusals", (Bar("a|b", 0.25, 0.1, 0.5, n=12),)),
        ],
    )
    md = sections_markdown([sec])
    assert md.startswith("## Demo\n")
    assert "| a\\|b | 3 |" in md
    assert "| a\\|b | 25.0% [10.0, 50.0] | 12 |" in md


def test_write_report_default_paths_and_formats(scripted_run: Path, tmp_path: Path) -> None:
    opts = ReportOptions(n_resamples=100)
    html_path = write_report(scripted_run, options=opts)
    assert html_path == scripted_run / "report.html"
    assert "http://" not in html_path.read_text().replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html_path.read_text()
    md_path = write_report(scripted_run, fmt="md", output=tmp_path / "r.md", options=opts)
    assert md_path.read_text().startswith("# steadyeval run ")
    js = write_report(scripted_run, fmt="json", output=tmp_path / "r.json", options=opts)
    assert report_to_dict(build_report(scripted_run, opts)) == json.loads(js.read_text())
    with pytest.raises(ValueError, match="unknown report format"):
        write_report(scripted_run, fmt="pdf")  # type: ignore[arg-type]


def test_breakable_names_wrap_at_separators_and_stay_escaped() -> None:
    from steadyeval.reports._html import breakable

    assert breakable("hf:/tmp/pytest-of-root/gpt2-tiny@abcdef123456") == (
        "hf:/<wbr>tmp/<wbr>pytest-<wbr>of-<wbr>root/<wbr>gpt2-<wbr>tiny@<wbr>abcdef123456"
    )
    assert breakable("hf-masked:pet-0?max_length=128") == (
        "hf-<wbr>masked:<wbr>pet-<wbr>0?<wbr>max_<wbr>length=<wbr>128"
    )
    assert breakable("+1.0 pp [-3.4, 5.6]") == "+1.0 pp [-3.4, 5.6]"  # no sign is split off
    assert breakable("a-b<c>&d") == "a-<wbr>b&lt;c&gt;&amp;d"  # escaped piece by piece
    assert (
        breakable("<img src=x onerror=alert(1)>") == "&lt;img src=<wbr>x onerror=<wbr>alert(1)&gt;"
    )
