"""The decide study's design facts and analysis as types (``summary.json``'s ``design`` and
``analysis``). Models are labelled A, B, C, ... in the order given; a pair's difference is
first − second, a share in [-1, 1]."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ...results import Analysis, AnalysisRecord, Design
from ._types import SpreadDesign, SpreadDesignFormat, SpreadEstimate

__all__ = [
    "MAX_MODELS",
    "DecideAnalysis",
    "DecideDesign",
    "FormatDifference",
    "ModelAccuracy",
    "PairDecision",
    "PairOverFormats",
    "RankingProbability",
]

#: The most models one decide run compares (every pair is tested: 15 pairs at 6).
MAX_MODELS = 6


class DecideDesign(Design):
    """What a decide run was: the models (A, B, ... in order), the formats and items, the budget,
    the batch, the allocation, the level, the seed, the posterior draws, the covariates and
    ``sequence``: every cell drawn, in order, as [format, item, weight, weight bound] (the
    importance weight p/q of the draw and the bound on it fixed before the draw; 1 and 1
    with uniform allocation)."""

    models: list[str] = Field(min_length=2, max_length=MAX_MODELS)
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

    def spread_design(self) -> SpreadDesign:
        """The same formats, items and covariates as a spread design (what
        :func:`._analysis.model_cells` reads)."""
        return SpreadDesign(
            method="estimate",
            seed=self.seed,
            draws=self.draws,
            formats=self.formats,
            items=self.items,
            covariates=self.covariates,
        )

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


class PairDecision(AnalysisRecord):
    """One pair's anytime-valid test (``a`` − ``b``, labels): ``winner`` (the better model's
    label; None while undecided; ``implied`` when the other pairs' decisions give it),
    ``decided_at`` (the cell at which its test crossed its
    threshold; None when undecided), the anytime-valid interval of the difference after
    every cell drawn, at the pair's own level (``level``: the run's confidence shared out
    over the pairs, so that every decision of the run holds at once), and ``fixed_cells``:
    the cells a fixed-size test at that level needs for its interval, centred on the
    observed difference, to exclude 0 (None when none was observed)."""

    a: str
    b: str
    winner: str | None
    #: the winner follows from other pairs' decisions (A > B and B > C: A > C), not its own
    implied: bool = False
    decided_at: int | None
    #: by its own test, the winner is better by more than this (a share; None unless the
    #: pair's own test decided): the bound that test inverts, consistent with its decision
    margin: float | None = None
    difference: SpreadEstimate
    level: float
    fixed_cells: int | None


class FormatDifference(SpreadEstimate):
    """One format's difference: the crossed model's estimate with its interval, the cells
    both models answered on it and their observed mean difference (None with none)."""

    format: str
    cells: int
    observed: float | None


class PairOverFormats(AnalysisRecord):
    """One pair over the population of formats (``steadyeval.stats.compare_formats``):
    ``a`` − ``b``'s expected difference over the formats, the share of formats on which
    ``a`` is better (the probability that it is on a format drawn at random), the share on
    which the other model wins than the expected difference favours, P(a − b > 0), and each
    format's difference."""

    a: str
    b: str
    difference: SpreadEstimate
    p_better: SpreadEstimate
    flip_share: SpreadEstimate
    prob_positive: float
    formats: list[FormatDifference]


class ModelAccuracy(SpreadEstimate):
    """A model's mean accuracy over the formats (the crossed model's), with its label."""

    label: str
    model: str


class RankingProbability(AnalysisRecord):
    """A ranking of the models by mean accuracy over the formats (labels, best first, e.g.
    ``"B > A > C"``) and its posterior probability."""

    ranking: str
    probability: float


class DecideAnalysis(Analysis):
    """The decision and what it cost, and the comparison over formats.

    ``decision``: the ranking the tests decided (``"A > B"``; with more models the pairs
    decided, e.g. ``"A > B, A > C"``), or ``"undecided"``; ``cells`` drawn (the cost: the
    tests look after each batch, so the last batch is paid for whole) of ``budget``, and
    the ``distinct_cells`` among them (each answered by every model); ``pairs``: each
    pair's test; ``accuracy``, ``over_formats`` and ``rankings``: the crossed model's
    comparison; ``notes``: what the cells cannot tell."""

    models: list[str]
    decision: str
    cells: int
    distinct_cells: int
    budget: int
    confidence: float
    pairs: list[PairDecision]
    accuracy: list[ModelAccuracy]
    over_formats: list[PairOverFormats]
    rankings: list[RankingProbability]
    #: what the cells cannot tell (e.g. every cell correct): the report shows them as warnings
    notes: list[str] = Field(default_factory=list)
