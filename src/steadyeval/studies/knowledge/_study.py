"""The knowledge study (MMLU) on the study protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...items import load_mmlu
from ...models import Backend
from ...reports import Section
from ...run import RunOptions
from .._protocol import Study, StudyDesign
from ._design import KnowledgeConfig, knowledge_design
from ._report import knowledge_report_sections

__all__ = ["KNOWLEDGE_STUDY", "KnowledgeStudy"]


class KnowledgeStudy(Study):
    """Study 3: MMLU-style accuracy per subject and category, accuracy vs shots,
    calibration, option order, template sensitivity, option vs letter scoring and a
    memorisation check (``docs/study-knowledge.md``)."""

    name = "knowledge"
    question = "MMLU-style accuracy per category, calibration, shots, option order, memorisation"
    config = KnowledgeConfig

    def design(
        self, config: KnowledgeConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        data = load_mmlu(
            config.data,
            subjects=config.subjects,
            split=config.split,
            limit_per_subject=config.limit_per_subject,
        )
        return knowledge_design(data, config, backends)

    def analyze(self, table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
        from ._analysis import analyze_knowledge

        return analyze_knowledge(table, info)

    def sections(
        self, analysis: Mapping[str, Any], info: Mapping[str, Any], *, figures: bool = True
    ) -> list[Section]:
        return knowledge_report_sections(analysis, figures=figures)


KNOWLEDGE_STUDY = KnowledgeStudy()
