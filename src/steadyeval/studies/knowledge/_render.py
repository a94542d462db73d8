"""``summary.md``'s part for the study and the CLI's tables: the report's sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ...reports import Table, sections_markdown
from ._report import knowledge_report_sections

__all__ = ["Section", "knowledge_sections", "render_knowledge"]


class Section(NamedTuple):
    """One titled table of the study's report as text cells (the CLI prints these)."""

    title: str
    header: list[str]
    rows: list[list[str]]


def knowledge_sections(analysis: Mapping[str, Any]) -> list[Section]:
    """The report's tables as text, in order: categories, shots, calibration, rotations,
    templates, option scoring, letter vs option, memorisation (each only when the run has
    it). Cells are formatted by :func:`steadyeval.reports.format_cell`, as in the report."""
    out = []
    for sec in knowledge_report_sections(analysis, figures=False):
        for block in sec.blocks:
            if isinstance(block, Table):
                header = [c.name for c in block.columns]
                out.append(Section(block.title or sec.title, header, block.cells()))
    return out


def render_knowledge(analysis: Mapping[str, Any]) -> str:
    """The knowledge study's part of ``summary.md``: the sections of the study's report
    (:func:`knowledge_report_sections`) without their figures, whose numbers are in the
    tables."""
    return sections_markdown(knowledge_report_sections(analysis, figures=False))
