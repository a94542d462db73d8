"""The decide study's design facts and analysis as types (``summary.json``'s ``design`` and
``analysis``). Differences are A − B as shares in [-1, 1]."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...results import Analysis, AnalysisRecord, Design
from ._types import SpreadDesignFormat, SpreadEstimate

__all__ = [
    "DecideAnalysis",
    "DecideDesign",
    "FormatDifference",
    "OverFormatsResult",
    "SequentialResult",
]


class DecideDesign(Design):
    """What a decide run was: the two models (A first), the formats and items, the budget,
    the batch, the allocation, the level, the seed, the posterior draws, the covariates and
    ``sequence``: every cell drawn, in order, as [format, item, weight, weight bound] (the
    importance weight p/q of the draw and the bound on it fixed before the draw; 1 and 1
    with uniform allocation)."""

    models: list[str]
    budget: int
    batch: int
    allocation: Literal["uniform", "adaptive"]
    confidence: float
    seed: int
    draws: int
    formats: list[SpreadDesignFormat]
    items: list[str]
    covariates: list[list[float]] | None = None
    sequence: list[list[float]] = Field(default_factory=list)


class SequentialResult(AnalysisRecord):
    """The anytime-valid test: the decision (``"A"``, ``"B"`` or ``"undecided"``), the cells
    drawn when it was reached (all drawn when undecided) and the model calls they cost, the
    anytime-valid interval of A − B there, and the fixed design's cost of the same
    confidence: the budget, and ``fixed_cells``, the cells a fixed-size test at the same
    level needs on a difference of the size observed (None when none was observed)."""

    decision: Literal["A", "B", "undecided"]
    cells: int
    distinct_cells: int
    budget: int
    difference: SpreadEstimate
    fixed_cells: int | None
    confidence: float


class FormatDifference(SpreadEstimate):
    """One format's A − B: the crossed model's estimate with its interval, the cells both
    models answered on it and their observed mean difference (None with none)."""

    format: str
    cells: int
    observed: float | None


class OverFormatsResult(AnalysisRecord):
    """The comparison over the population of formats (``steadyeval.stats.compare_formats``):
    each model's mean accuracy over the formats, A − B's expected difference, the share of
    formats on which A is better, the share on which the ranking flips, P(A − B > 0), and
    each format's difference."""

    accuracy_a: SpreadEstimate
    accuracy_b: SpreadEstimate
    difference: SpreadEstimate
    p_better: SpreadEstimate
    flip_share: SpreadEstimate
    prob_positive: float
    formats: list[FormatDifference]


class DecideAnalysis(Analysis):
    """The decision and what it cost (``sequential``) and the comparison over formats."""

    model_a: str
    model_b: str
    sequential: SequentialResult
    over_formats: OverFormatsResult
