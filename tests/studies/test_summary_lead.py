"""summary.md puts a study's lead sections (its answer, or a warning that changes what the
numbers mean) right after the title, before the per-condition table, as the HTML report does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from steadyeval.document import Note, Paragraph, Section, sections_markdown
from steadyeval.studies._run import _write

SUMMARY: dict[str, Any] = {
    "run_id": "r1", "n_rows": 2, "n_items": 1, "conditions": ["c"], "models": ["m"],
    "plan": {"requests": 2, "unique": 2, "cache_hits": 0, "model_calls": 2},
    "n_skipped": 0, "skipped": [], "study": "x", "design": {}, "analysis": {},
    "by_condition": [
        {"model": "m", "condition": "c", "n": 2, "accuracy": 0.5, "accuracy_low": 0.1,
         "accuracy_high": 0.9, "refused": 0, "unmatched": 0, "truncated": 0, "em": None,
         "f1": None},
    ],
}  # fmt: skip


class _Study:
    """A study whose sections are given (the part of the Study protocol ``_write`` uses)."""

    def __init__(self, sections: list[Section]) -> None:
        self.sections = sections

    def markdown(self, analysis: Any, design: Any, *, lead: bool | None = None) -> str:
        chosen = [s for s in self.sections if lead is None or s.lead == lead]
        return sections_markdown(chosen) if chosen else ""


def _summary_md(tmp_path: Path, sections: list[Section]) -> str:
    _write(tmp_path, _Study(sections), dict(SUMMARY), None, None)  # type: ignore[arg-type]
    return (tmp_path / "summary.md").read_text()


def test_a_lead_section_comes_before_the_per_condition_table(tmp_path: Path) -> None:
    warning = Section.of("w", "Transductive run", [Note("test inputs were read", "warning")], "x", lead=True)  # fmt: skip
    body = Section.of("b", "Strategies", [Paragraph("the comparison")], "x")
    md = _summary_md(tmp_path, [body, warning])
    assert md.startswith("# steadyeval run `r1`\n\n")
    order = [
        md.index(t)
        for t in ("Transductive run", "## Run\n\n- rows", "| model | condition", "Strategies")
    ]
    assert order == sorted(order), md
    assert md.count("Transductive run") == 1
    assert "\n\n\n" not in md, md  # one blank line between the lead and the run's facts


def test_without_a_lead_section_the_layout_is_unchanged(tmp_path: Path) -> None:
    from steadyeval.results import summary_markdown

    body = Section.of("b", "Strategies", [Paragraph("the comparison")], "x")
    md = _summary_md(tmp_path, [body])
    assert md == summary_markdown(SUMMARY) + "\n" + sections_markdown([body])
