"""The sensitivity study's analysis as types: what ``summary.json`` holds under ``analysis``.

Scores and shares are on a 0–1 scale; ``None`` where a value is not defined (NaN). Mappings
keyed by model are keyed by the model's identity, those keyed by unit by the unit's name (a
relation, a subject, or ``"all"`` for items pooled). A section that does not apply to a run
is :class:`NotApplicable` (``applicable`` false and the reason), as the report shows it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ...results import (
    Analysis,
    AnalysisRecord,
    Design,
    DesignRecord,
    RankConsistencyFacts,
    RankConsistencySetting,
)

__all__ = [
    "Adjusted",
    "IntervalEstimate",
    "ModelAdjusted",
    "ModelPreference",
    "ModelStability",
    "NotApplicable",
    "PooledSpread",
    "PooledStability",
    "PromptPreference",
    "RankConsistency",
    "Rankings",
    "Regime",
    "RegimeConsistency",
    "SensitivityAnalysis",
    "SensitivityDesign",
    "TemplateAlias",
    "UnitAdjusted",
    "UnitPreference",
    "UnitRankings",
    "UnitStability",
    "Verbalization",
]

#: The rank-consistency regimes (see :func:`rank_consistency_regimes`).
Regime = Literal["original", "random", "intervention", "intervention_sampled"]


def _without_none(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``data`` without the optional ``keys`` whose value is None (absent from the JSON)."""
    return {k: v for k, v in data.items() if not (k in keys and v is None)}


class NotApplicable(AnalysisRecord):
    """A section that does not apply to the run, and why."""

    applicable: Literal[False] = False
    reason: str


class IntervalEstimate(AnalysisRecord):
    """An estimate with its 95% bootstrap interval (``stats.spread``'s ``Interval``)."""

    estimate: float | None
    low: float | None
    high: float | None


class UnitPreference(AnalysisRecord):
    """One model on one unit across its templates (canonical names)."""

    scores: list[float | None]  # per template of the axis; None: the unit lacks it
    std: float | None
    best: float
    worst: float
    gap: float
    best_template: str
    worst_template: str
    max_p: IntervalEstimate
    avg_p: IntervalEstimate
    cps: IntervalEstimate
    n_facts: int
    #: The unit's templates when fewer than the axis (every template kept); else absent.
    n_templates: int | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), ("n_templates",))


class ModelPreference(AnalysisRecord):
    """One model's prompt preference: means over units, and the share of units whose
    best−worst gap exceeds :attr:`PromptPreference.gap`."""

    original: float | None
    mean_std: float | None
    mean_gap: float | None
    share_gap_above: float
    mean_max_p: float | None
    mean_avg_p: float | None
    mean_cps: float | None
    mean_best: float | None
    mean_worst: float | None


class PromptPreference(AnalysisRecord):
    """Scores under every template: ``per_model[model]`` and ``per_unit[model][unit]``.

    ``std_rounding`` is ``"reference"`` when the stds follow the authors' rounding
    (``AnalysisOptions.std_rounding``); absent from the JSON when ``"exact"``."""

    applicable: Literal[True] = True
    gap: float
    std_ddof: int
    per_model: dict[str, ModelPreference]
    per_unit: dict[str, dict[str, UnitPreference]]
    std_rounding: Literal["exact", "reference"] = "exact"

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("std_rounding") == "exact":
            del data["std_rounding"]
        return data


class UnitRankings(AnalysisRecord):
    """The distinct model rankings of one unit across templates, and Kendall's W (None
    when undefined or the unit has one template)."""

    n_rankings: int
    kendall_w: float | None
    kendall_w_pvalue: float | None


class Rankings(AnalysisRecord):
    """Units whose model ranking changes with the template; ``per_unit[unit]``."""

    applicable: Literal[True] = True
    n_units: int
    units_ranking_changes: int
    share_units_ranking_changes: float
    mean_kendall_w: float | None
    per_unit: dict[str, UnitRankings]


class UnitStability(AnalysisRecord):
    """Verbalization stability of one model on one unit (None: no fact counted)."""

    stability: float | None
    n: int
    stability_all_templates: float | None
    n_all_templates: int
    skipped_stop_words: int


class PooledStability(AnalysisRecord):
    """Stable facts over all facts of all units (secondary figures)."""

    stability: float | None
    n: int
    stability_original_template: float | None
    n_original_template: int


class ModelStability(AnalysisRecord):
    """One model's verbalization stability: the mean over units (the headline), pooled
    shares, and the score by name index (None: no fact has that many names)."""

    stability: float | None
    n_units: int
    stability_all_templates: float | None
    pooled: PooledStability
    skipped_stop_words: int
    score_by_name: list[float | None]


class Verbalization(AnalysisRecord):
    """Verbalization stability: ``per_model[model]`` and ``per_unit[model][unit]``."""

    applicable: Literal[True] = True
    facts_with_aliases: int
    n_stop_words: int
    per_model: dict[str, ModelStability]
    per_unit: dict[str, dict[str, UnitStability]]


class UnitAdjusted(AnalysisRecord):
    """One model on one unit: original template, exact and sampled adjustment."""

    original: float
    exact: float
    sampled: float


class ModelAdjusted(AnalysisRecord):
    """One model's means over units."""

    original: float
    mean_over_templates: float
    exact: float
    sampled: float


class Adjusted(AnalysisRecord):
    """The backdoor adjustment: ``per_model[model]`` and ``per_unit[model][unit]``."""

    weights: Literal["uniform", "data"]
    k_templates: int
    k_names: int
    per_model: dict[str, ModelAdjusted]
    per_unit: dict[str, dict[str, UnitAdjusted]]


class RegimeConsistency(AnalysisRecord):
    """``stats.rank_consistency``'s result under one regime, keyed by model; the share of
    subsets with tied models for the regimes of fixed scores (else None)."""

    tied_subsets: float | None
    overall: float
    per_model: dict[str, float]
    modal_rank: dict[str, int]
    modal_ranking: dict[str, int]


class RankConsistency(AnalysisRecord):
    """Rank consistency over ``n_subsets`` subsets of ``subset_size`` of the units."""

    applicable: Literal[True] = True
    n_subsets: int
    subset_size: int
    n_units: int
    regimes: dict[Regime, RegimeConsistency]


class PooledSpread(AnalysisRecord):
    """``stats.spread`` over every unit's items pooled (templates shared by all units)."""

    scores: list[float]
    std: IntervalEstimate
    best_minus_worst: IntervalEstimate
    max_p: IntervalEstimate
    avg_p: IntervalEstimate
    cps: IntervalEstimate
    n_items: int


class SensitivityAnalysis(Analysis):
    """Prompt preference, rankings across templates, verbalization stability, the backdoor
    adjustment and rank consistency (see ``docs/study-sensitivity.md``). ``pooled`` (by
    model) is there for a generic task with units and several templates; else absent."""

    models: list[str]
    units: list[str]
    templates: list[str]
    n_names: int
    n_facts: int
    prompt_preference: Annotated[
        PromptPreference | NotApplicable, Field(discriminator="applicable")
    ]
    rankings: Annotated[Rankings | NotApplicable, Field(discriminator="applicable")]
    verbalization: Annotated[Verbalization | NotApplicable, Field(discriminator="applicable")]
    adjusted: Adjusted
    rank_consistency: Annotated[RankConsistency | NotApplicable, Field(discriminator="applicable")]
    pooled: dict[str, PooledSpread] | None = None
    notes: list[str]
    metric: Literal["P@1", "accuracy", "score"]
    unit: Literal["relation", "subject", "item", "unit"]

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), ("pooled",))

    def rank_consistency_facts(self) -> RankConsistencyFacts | None:
        """Rank consistency under each regime (None: not applicable to this run)."""
        rc = self.rank_consistency
        if not isinstance(rc, RankConsistency):
            return None
        return RankConsistencyFacts(
            n_subsets=rc.n_subsets,
            subset_size=rc.subset_size,
            n_units=rc.n_units,
            settings=[
                RankConsistencySetting(
                    setting=name,
                    per_model=r.per_model,
                    modal_rank=r.modal_rank,
                    overall=r.overall,
                )
                for name, r in rc.regimes.items()
            ],
        )


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class TemplateAlias(DesignRecord):
    """What one condition asks: its template's name and the subject's name (alias) index."""

    template: str
    alias: int


class SensitivityDesign(Design):
    """What a sensitivity run was: factual ``probes`` or a generic ``task``, its metric and
    unit (``relation``, ``subject`` or ``item``), the template names (and each unit's template
    texts: ``*`` for every unit of a task; whether each template ends with the answer slot),
    each condition's template and name, the names per subject, template weights per unit
    (None: uniform), the resolved analysis options (``AnalysisOptions.resolved``) and how the
    data were reduced (``data``, for the report)."""

    kind: Literal["probes", "task"]
    metric: Literal["P@1", "accuracy", "score"] = "score"
    unit: Literal["relation", "subject", "item", "unit"] = "unit"
    templates: list[str]
    template_text: dict[str, list[str]] = Field(default_factory=dict)
    slot_final: dict[str, list[bool]] | None = None
    conditions: dict[str, TemplateAlias]
    max_names: int
    weights: dict[str, list[float]] | None = None
    analysis: dict[str, Any]
    data: dict[str, Any] = Field(default_factory=dict)
