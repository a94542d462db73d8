"""``summary.md``'s part for the study: the report's sections as Markdown (no figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...reports import sections_markdown
from ._report import formats_report_sections

__all__ = ["render_formats"]


def render_formats(analysis: Mapping[str, Any]) -> str:
    """Render :func:`analyze_formats`' result as Markdown: the sections of the study's
    report (:func:`formats_report_sections`) without their figures, whose numbers are in the
    tables."""
    return sections_markdown(formats_report_sections(analysis, figures=False))
