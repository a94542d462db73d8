"""The spread study's analysis as types: what ``summary.json`` holds under ``analysis``.

Accuracies are shares in [0, 1]; every interval is at the design's ``confidence``."""

from __future__ import annotations

from typing import Literal

from ...results import Analysis, AnalysisRecord, Design, DesignRecord

__all__ = [
    "ExtremeFormat",
    "FitDiagnostic",
    "FormatEstimate",
    "ModelSpread",
    "QuantileEstimate",
    "SearchFormat",
    "SearchResult",
    "SpreadAnalysis",
    "SpreadDesign",
    "SpreadDesignFormat",
    "SpreadEstimate",
]


class SpreadEstimate(AnalysisRecord):
    """A posterior mean with its equal-tailed interval."""

    estimate: float
    low: float
    high: float


class QuantileEstimate(SpreadEstimate):
    """One quantile of the per-format accuracy distribution (``level`` in percent)."""

    level: float


class FormatEstimate(SpreadEstimate):
    """One format's estimated accuracy and the cells observed of it."""

    format: str
    observed: int
    observed_correct: int


class ExtremeFormat(FormatEstimate):
    """The format estimated best (or worst), with an example prompt ("" when the format
    has no cell; None when the results table's prompts of it are null)."""

    prompt: str | None


class SearchFormat(AnalysisRecord):
    """A format the search found: its Beta posterior mean and its cells."""

    format: str
    posterior_mean: float
    cells: int
    correct: int
    prompt: str | None  # as ExtremeFormat.prompt


class SearchResult(AnalysisRecord):
    """The Thompson search's result: the prior mean (the default format's first batch), the
    best and worst format found, their difference and how many formats were evaluated."""

    prior_mean: float
    best: SearchFormat
    worst: SearchFormat
    spread: float
    formats_evaluated: int


class FitDiagnostic(AnalysisRecord):
    """When not to trust the model's estimate (``steadyeval.stats.SpreadDiagnostic``): the
    formats' s.d. in logits with its 90% interval (always 90%) and their ratio, the cells
    per format and the share of formats with two or more, the share of the prior's mass on
    that s.d. inside its interval (``prior_mass``: None where there is no prior to compare,
    and in analyses written before it), whether the width comes from the
    prior (``prior_driven``), the posterior predictive p-values (formats' totals, items'
    totals, format × item; None where nothing could be checked), whether one rejects the
    additive model (``misfit``) and what to do (``message``, "" when nothing is flagged)."""

    format_sd: float
    format_sd_low: float
    format_sd_high: float
    width_ratio: float | None
    cells_per_format: float
    share_two_cells: float
    prior_driven: bool
    prior_mass: float | None = None
    ppc_format_p: float | None
    ppc_item_p: float | None
    ppc_interaction_p: float | None
    misfit: bool
    message: str


class ModelSpread(AnalysisRecord):
    """One model: the cells observed, the estimated distribution of accuracy over all
    formats (quantiles, spread, the sorted accuracies, every format's estimate), the best and
    worst format, what the cells cannot tell (``notes``), the fit check (``diagnostic``;
    None in analyses written before it) and, for a search, its result."""

    model: str
    cells: int
    cells_total: int
    formats_observed: int
    #: posterior mean s.d. of the formats' and the items' effects, in logits
    tau_format: float
    tau_item: float
    quantiles: list[QuantileEstimate]
    spread: SpreadEstimate
    #: posterior mean of the sorted per-format accuracies, worst to best
    distribution: list[float]
    per_format: list[FormatEstimate]
    best: ExtremeFormat
    worst: ExtremeFormat
    observed_mean: float
    notes: list[str]
    search: SearchResult | None = None
    diagnostic: FitDiagnostic | None = None


class SpreadAnalysis(Analysis):
    """Per model (sorted by name): the accuracy's spread over the formats."""

    models: list[ModelSpread]


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class SpreadDesignFormat(DesignRecord):
    """One format of the design: its condition's name and the choices that make it (the
    grammar's choices, or the template a formats file gives)."""

    name: str
    choices: dict[str, str]


class SpreadDesign(Design):
    """What a spread run was: ``estimate`` or ``search``, how cells were sampled, the cell
    budget, the seed, the intervals' confidence, the posterior draws, the search's batch,
    the formats and items (in the order of the model's axes) and the formats' covariates
    (None: none)."""

    method: Literal["estimate", "search"]
    sampler: Literal["stratified", "adaptive"] = "stratified"
    budget: int | None = None
    seed: int
    confidence: float = 0.9
    draws: int
    batch: int = 5
    formats: list[SpreadDesignFormat]
    items: list[str]
    covariates: list[list[float]] | None = None
