"""``summary.md``'s part for the study: the report's sections as Markdown (no figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...reports import sections_markdown
from ._report import sensitivity_report_sections

__all__ = ["render_sensitivity"]


def render_sensitivity(analysis: Mapping[str, Any]) -> str:
    """The analysis as Markdown: the sections of the study's report
    (:func:`sensitivity_report_sections`) without their figures, whose numbers are in the
    tables."""
    return sections_markdown(sensitivity_report_sections(analysis, figures=False))
