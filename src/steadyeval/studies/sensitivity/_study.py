"""The sensitivity study on the study protocol: config → design → runner → analysis →
report sections. This module stays light (the CLI builds the study's command from it); each
step imports its module when it runs."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._protocol import Study, StudyDesign
from ._config import SensitivityConfig
from ._types import SensitivityAnalysis, SensitivityDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["SENSITIVITY_STUDY", "SensitivityStudy"]


class SensitivityStudy(Study[SensitivityAnalysis]):
    """Study 2: prompt and verbalization sensitivity of probing, and the backdoor adjustment
    (``docs/study-sensitivity.md``)."""

    name = "sensitivity"
    question = (
        "how much do prompt wording and entity names move probing scores, and does the "
        "backdoor-adjusted score give a stable model ranking? (LAMA/LPAQA)"
    )
    config = SensitivityConfig
    analysis_type = SensitivityAnalysis
    design_type = SensitivityDesign
    example = """
        steadyeval study sensitivity --model hf:bert-base-cased --model hf:roberta-base \\
            --data data/lama/lpaqa --prompt-set manual_paraphrase --out runs/lpaqa
        steadyeval study sensitivity study.yaml --dry-run
    """

    def design(
        self, config: SensitivityConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ._design import AnalysisOptions, ProbeOptions, SensitivityWarning
        from ._setup import sensitivity_design
        from ._stopwords import load_stop_words

        analysis = AnalysisOptions(
            n_subsets=config.subsets,
            subset_size=config.subset_size,
            seed=config.seed,
            k_templates=config.k_templates,
            k_names=config.k_names,
            weights=config.weights,
            ddof=config.ddof,
            std_rounding=config.std_rounding,
            stop_words=None
            if config.stop_words == "default"
            else load_stop_words(config.stop_words),
        )
        probe = ProbeOptions(
            limit_per_relation=config.limit_per_relation,
            templates_per_relation=config.templates_per_relation,
            max_names=config.max_names,
            candidates=config.candidates,
            seed=config.seed,
        )
        with warnings.catch_warnings():  # the analysis reports the same facts as notes
            warnings.simplefilter("ignore", SensitivityWarning)
            design = sensitivity_design(
                config.data,
                prompt_set=config.prompt_set,
                probe=probe,
                analysis=analysis,
                aliases=config.aliases,
                vocab=config.vocab,
                scoring=config.scoring,
            )
        return design

    def analyze(self, results: ResultsFrame, design: SensitivityDesign) -> SensitivityAnalysis:
        from ._analysis import analyze_sensitivity

        return analyze_sensitivity(results, design)

    def sections(
        self, analysis: SensitivityAnalysis, design: SensitivityDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import sensitivity_report_sections

        return sensitivity_report_sections(analysis, figures=figures)


SENSITIVITY_STUDY = SensitivityStudy()
