"""The knowledge study (MMLU) on the study protocol. This module stays light (the CLI builds
the study's command from it); each step imports its module when it runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._protocol import Study, StudyDesign
from ._config import KnowledgeConfig
from ._types import KnowledgeAnalysis, KnowledgeDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["KNOWLEDGE_STUDY", "KnowledgeStudy"]


class KnowledgeStudy(Study[KnowledgeAnalysis]):
    """Study 3: MMLU-style accuracy per subject and category, accuracy vs shots,
    calibration, option order, template sensitivity, option vs letter scoring and a
    memorisation check (``docs/study-knowledge.md``)."""

    name = "knowledge"
    question = "MMLU-style accuracy per category, calibration, shots, option order, memorisation"
    config = KnowledgeConfig
    analysis_type = KnowledgeAnalysis
    design_type = KnowledgeDesign
    example = """
        steadyeval study knowledge --model hf:Qwen/Qwen2.5-0.5B --data cais/mmlu --out runs/mmlu
        steadyeval study knowledge --model hf:gpt2 --data data/mmlu --shots 0,1,5 \\
            --scoring letter-logprob,option-logprob --rotations --out runs/mmlu-full
    """

    def design(
        self, config: KnowledgeConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ...items import load_mmlu, sample_items
        from ._design import knowledge_design

        data = load_mmlu(
            config.data,
            subjects=config.subjects,
            split=config.split,
            limit_per_subject=config.limit_per_subject,
        )
        if config.sample_per_subject is not None:
            picked = sample_items(
                data.evaluated,
                config.sample_per_subject,
                seed=config.seed,
                strata="subject",
                per_stratum=True,
            )
            data = dataclasses.replace(data, evaluated=tuple(picked))
        return knowledge_design(data, config, backends)

    def analyze(self, results: ResultsFrame, design: KnowledgeDesign) -> KnowledgeAnalysis:
        from ._analysis import analyze_knowledge

        return analyze_knowledge(results, design)

    def sections(
        self, analysis: KnowledgeAnalysis, design: KnowledgeDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import knowledge_report_sections

        return knowledge_report_sections(analysis, figures=figures)


KNOWLEDGE_STUDY = KnowledgeStudy()
