"""The spread study on the study protocol: formats → sparse cells → runner → (adaptive cells
or Thompson search) → analysis → report sections. Light to import: each step imports its
module when it runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..._errors import ConfigError
from .._protocol import Study, StudyDesign
from ._config import SpreadConfig
from ._types import SpreadAnalysis, SpreadDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["SPREAD_STUDY", "SpreadStudy"]


@contextmanager
def _as_config_error(study: str = "spread study") -> Iterator[None]:
    """The statistics' input errors the study's own checks did not catch first (their
    messages say what was wrong) as one ``error:`` line, never a traceback."""
    from ...stats import StatsInputError

    try:
        yield
    except StatsInputError as exc:
        raise ConfigError(f"{study}: {exc}") from None


class SpreadStudy(Study[SpreadAnalysis]):
    """How much does accuracy move across prompt formats? Estimates the distribution of
    accuracy over many formats from a few (format, item) cells (PromptEval), or searches
    the best and worst format (FormatSpread). (``docs/study-spread.md``)"""

    name = "spread"
    question = "how does accuracy spread over many prompt formats, at the cost of two?"
    config = SpreadConfig
    analysis_type = SpreadAnalysis
    design_type = SpreadDesign
    example = """
        steadyeval study spread --model hf:Qwen/Qwen2.5-0.5B --data mmlu.jsonl --sample 2000 \\
            --out runs/spread
        steadyeval study spread --model hf:./tiny-gpt2 --data items.jsonl \\
            --formats ../shared/data/prompteval/templates.json --budget 400 --out runs/pe
        steadyeval study spread --model hf:./tiny-gpt2 --data items.jsonl --method search
    """

    def design(
        self, config: SpreadConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ._design import spread_design

        with _as_config_error():
            return spread_design(config)[0]

    def plan_note(self, config: SpreadConfig) -> str | None:
        """An adaptive sampler or a search: the counts are the first pass's."""
        if config.method == "estimate" and config.sampler == "stratified":
            return None
        from ._design import budget_of, spread_setup

        with _as_config_error():
            budget = budget_of(config, spread_setup(config))
        k = len(config.models)
        after = (
            "the adaptive pass depends"
            if config.method == "estimate"
            else "the search's steps depend"
        )
        return (
            f"dry run: the counts are the first pass's; {after} on its answers: at most "
            f"{budget:,} cells × {k} model{'' if k == 1 else 's'} in all"
        )

    def follow_up(
        self,
        config: SpreadConfig,
        design: StudyDesign,
        results: ResultsFrame,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign | None:
        """Adaptive sampler: the second half of the budget where the estimate is least
        certain. Search: the Thompson-sampling steps (each step runs its cells at once)."""
        if config.method == "estimate" and config.sampler == "stratified":
            return None
        from ._follow import adaptive_follow_up, search_follow_up

        with _as_config_error():
            if config.method == "search":
                return search_follow_up(config, design, results, backends, options)
            return adaptive_follow_up(config, design, results)

    def analyze(self, results: ResultsFrame, design: SpreadDesign) -> SpreadAnalysis:
        from ._analysis import analyze_spread

        with _as_config_error():
            return analyze_spread(results, design)

    def sections(
        self, analysis: SpreadAnalysis, design: SpreadDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._report import spread_report_sections

        return spread_report_sections(analysis, design, figures=figures)


SPREAD_STUDY = SpreadStudy()
