"""The few-shot protocol study (FewNLU) on the study protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...models import Backend
from ...reports import Section
from ...run import RunOptions
from .._protocol import Study, StudyDesign
from ._analysis import analyze
from ._framework import FewShotConfig, fewshot_design, final_design
from ._report import fewshot_report_sections

__all__ = ["FEWSHOT_STUDY", "FewShotStudy"]


class FewShotStudy(Study):
    """Study 4: which few-shot selection protocol (Multi-Splits, CV, MDL) can be trusted?
    (``docs/study-fewshot.md``)"""

    name = "fewshot"
    question = "which few-shot selection protocol (Multi-Splits, CV, MDL) can be trusted? (FewGLUE)"
    config = FewShotConfig

    def design(
        self, config: FewShotConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        return fewshot_design(config, backends, options)

    def follow_up(
        self,
        config: FewShotConfig,
        design: StudyDesign,
        table: pa.Table,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign | None:
        """Each strategy's chosen setting retrained on all labelled data (``final_seeds``)."""
        return final_design(config, design, table, backends, options)

    def analyze(self, table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
        return analyze(table, info)

    def sections(
        self, analysis: Mapping[str, Any], info: Mapping[str, Any], *, figures: bool = True
    ) -> list[Section]:
        return fewshot_report_sections(analysis, info, figures=figures)


FEWSHOT_STUDY = FewShotStudy()
