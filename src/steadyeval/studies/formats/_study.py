"""The answer-format study on the study protocol: data → design → (determinism check) →
runner → analysis → report sections. This module stays light (the CLI builds the study's
command from it); each step imports its module when it runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._protocol import Study, StudyDesign
from ._config import FormatsConfig
from ._types import FormatsAnalysis, FormatsDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["FORMATS_STUDY", "FormatsStudy"]


class FormatsStudy(Study[FormatsAnalysis]):
    """Study 1: does a "none of the above" option restore the refusals a free-form answer
    has? (``docs/study-formats.md``)"""

    name = "formats"
    question = (
        'does a "none of the above" option restore the refusals free-form answers have? (SQuAD 2.0)'
    )
    config = FormatsConfig
    analysis_type = FormatsAnalysis
    design_type = FormatsDesign
    example = """
        steadyeval study formats --model hf:Qwen/Qwen2.5-0.5B --data dev-v2.0.json --out runs/formats
        steadyeval study formats --model hf:Qwen/Qwen2.5-0.5B --data squad_v2 \\
            --scoring option-logprob --orders 2 --control --out runs/formats-lp
        steadyeval study formats study.yaml --dry-run
    """

    def design(
        self, config: FormatsConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ._setup import formats_design

        return formats_design(config, backends)

    def before_run(
        self,
        config: FormatsConfig,
        design: StudyDesign,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign:
        """The optional determinism check (``config.determinism`` questions, uncached)."""
        if not config.determinism:
            return design
        facts = FormatsDesign.from_json(design.info, source="the formats study's design")
        greedy = [
            c
            for c, d in zip(design.conditions, facts.conditions, strict=True)
            if d.variant == "base"
        ]
        from ._setup import determinism_check

        check = determinism_check(design.items, greedy, backends, config.determinism, config.seed)
        info = facts.model_copy(update={"determinism": check})
        return StudyDesign(design.blocks, info, design.columns)

    def analyze(self, results: ResultsFrame, design: FormatsDesign) -> FormatsAnalysis:
        from ._analysis import analyze_formats

        return analyze_formats(results, design)

    def sections(
        self, analysis: FormatsAnalysis, design: FormatsDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import formats_report_sections

        return formats_report_sections(analysis, figures=figures)


FORMATS_STUDY = FormatsStudy()
