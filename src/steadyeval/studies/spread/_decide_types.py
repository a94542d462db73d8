"""The decide study's design facts and analysis as types (``summary.json``'s ``design`` and
``analysis``). Differences are A − B as shares in [-1, 1]."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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

    models: list[str] = Field(min_length=2, max_length=2)
    budget: int
    batch: int
    allocation: Literal["uniform", "adaptive"]
    confidence: float = Field(gt=0, lt=1)
    seed: int
    draws: int
    formats: list[SpreadDesignFormat]
    items: list[str]
    covariates: list[list[float]] | None = None
    sequence: list[list[float]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_sequence(self) -> DecideDesign:
        """Every drawn cell names a format and an item of the design, with a weight >= 0
        and a positive bound (a hand-edited summary.json is refused here, by field)."""
        if not self.sequence:
            raise ValueError("sequence: no cell drawn (a run draws at least one)")
        for k, cell in enumerate(self.sequence):
            if len(cell) != 4:
                raise ValueError(
                    f"sequence[{k}]: {cell!r} is not [format, item, weight, weight bound]"
                )
            f, i, w, bound = cell
            for what, v, n in (("format", f, len(self.formats)), ("item", i, len(self.items))):
                if v != int(v) or not 0 <= v < n:
                    raise ValueError(
                        f"sequence[{k}]: {what} index {v:g} is not one of the design's {n} "
                        f"{what}s (0 to {n - 1})"
                    )
            if not (bound > 0 and 0 <= w <= bound):
                raise ValueError(
                    f"sequence[{k}]: weight {w:g} and bound {bound:g} are not 0 <= weight "
                    "<= bound, bound > 0"
                )
        return self


class SequentialResult(AnalysisRecord):
    """The anytime-valid test: the decision (``"A"``, ``"B"`` or ``"undecided"``), the cells
    drawn (the cost: the test looks after each batch, so a decision reached inside a batch
    is paid for the whole batch), ``decided_at`` (the cell at which the test crossed its
    threshold; None when undecided), the distinct cells among those drawn (each answered by
    both models), the anytime-valid interval of A − B after them, and the fixed design's
    cost of the same confidence: the budget, and ``fixed_cells``, the cells a fixed-size
    test at the same level needs on a difference of the size observed (None when none was
    observed)."""

    decision: Literal["A", "B", "undecided"]
    cells: int
    decided_at: int | None = None
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
    #: what the cells cannot tell (e.g. every cell correct): the report shows them as warnings
    notes: list[str] = Field(default_factory=list)
