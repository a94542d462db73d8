"""The few-shot protocol study (FewNLU) on the study protocol. This module stays light (the
CLI builds the study's command from it); each step imports its module when it runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._protocol import Study, StudyDesign
from ._config import FewShotConfig
from ._types import FewShotAnalysis, FewShotDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["FEWSHOT_STUDY", "FewShotStudy"]


class FewShotStudy(Study[FewShotAnalysis]):
    """Study 4: which few-shot selection protocol (Multi-Splits, CV, MDL) can be trusted?
    (``docs/study-fewshot.md``)"""

    name = "fewshot"
    question = "which few-shot selection protocol (Multi-Splits, CV, MDL) can be trusted? (FewGLUE)"
    config = FewShotConfig
    analysis_type = FewShotAnalysis
    design_type = FewShotDesign
    example = """
        steadyeval study fewshot --model hf:roberta-large --task RTE \\
            --labelled FewGLUE/RTE/train.jsonl --test superglue:validation \\
            --method pet --k 4 --out runs/rte-pet
    """

    def design(
        self, config: FewShotConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ._framework import fewshot_design

        return fewshot_design(config, backends, options)

    def follow_up(
        self,
        config: FewShotConfig,
        design: StudyDesign,
        results: ResultsFrame,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign | None:
        """Each strategy's chosen setting retrained on all labelled data (``final_seeds``)."""
        from ._framework import final_design

        return final_design(config, design, results, backends, options)

    def analyze(self, results: ResultsFrame, design: FewShotDesign) -> FewShotAnalysis:
        from ._analysis import analyze

        return analyze(results, design)

    def sections(
        self, analysis: FewShotAnalysis, design: FewShotDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import fewshot_report_sections

        return fewshot_report_sections(analysis, design, figures=figures)


FEWSHOT_STUDY = FewShotStudy()
