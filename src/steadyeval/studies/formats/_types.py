"""The formats study's analysis as types: what ``summary.json`` holds under ``analysis``.

Outcomes are one record per model × question subset × base format; their counts and rates
have one field per outcome the subset can have (``UNANSWERABLE_OUTCOMES`` or
``ANSWERABLE_OUTCOMES``, in that order). Keys of dicts are data: condition names.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ...results import Analysis, AnalysisRecord, Design, DesignRecord, NoiseFloorFact

__all__ = [
    "Agreement",
    "AnswerableCounts",
    "AnswerableOutcome",
    "AnswerableRates",
    "DecoyRemoval",
    "DeterminismCheck",
    "DeterminismRow",
    "DeterminismRun",
    "Example",
    "ExampleOutput",
    "FormatCondition",
    "FormatPair",
    "FormatsAnalysis",
    "FormatsDesign",
    "Mismatch",
    "NoiseFloorEntry",
    "OrderStability",
    "Outcome",
    "OutcomeRate",
    "PhraseFloor",
    "SampledCondition",
    "UnanswerableCounts",
    "UnanswerableOutcome",
    "UnanswerableRates",
]

Subset = Literal["unanswerable", "answerable"]
Role = Literal["free", "list", "escape", "control"]


class FormatCondition(AnalysisRecord):
    """One condition of the design: a base format, or its ``order``/``sampled`` variant
    (``base``: the base condition it varies)."""

    name: str
    format: str
    role: Role
    escape: str | None
    variant: Literal["base", "order", "sampled"]
    base: str
    scoring: str
    order_seed: int | None


class OutcomeRate(AnalysisRecord):
    """The share of one outcome: 95% Wilson interval, standard error clustered by paragraph
    (None where it is not defined, e.g. one paragraph)."""

    count: int
    rate: float
    low: float
    high: float
    se_clustered: float | None
    n_clusters: int


class UnanswerableCounts(AnalysisRecord):
    """Rows of each outcome on the unanswerable questions (they add up to ``n``)."""

    refused: int
    decoy: int
    other: int
    answered: int
    unmatched: int
    control: int


class AnswerableCounts(AnalysisRecord):
    """Rows of each outcome on the answerable questions (they add up to ``n``)."""

    correct: int
    refused: int
    wrong: int
    unmatched: int
    control: int


class _Rates(AnalysisRecord):
    def items(self) -> list[tuple[str, OutcomeRate]]:
        """``(outcome, rate)`` in the study's order of outcomes."""
        return [(name, getattr(self, name)) for name in type(self).model_fields]


class UnanswerableRates(_Rates):
    """The rate of each outcome on the unanswerable questions."""

    refused: OutcomeRate
    decoy: OutcomeRate
    other: OutcomeRate
    answered: OutcomeRate
    unmatched: OutcomeRate
    control: OutcomeRate


class AnswerableRates(_Rates):
    """The rate of each outcome on the answerable questions."""

    correct: OutcomeRate
    refused: OutcomeRate
    wrong: OutcomeRate
    unmatched: OutcomeRate
    control: OutcomeRate


class _Outcome(AnalysisRecord):
    """What one base format did for one model on one subset of questions."""

    #: Fields only a free-form condition has (left out of the JSON for the others).
    _FREE_ONLY: ClassVar[tuple[str, ...]] = ()

    model: str
    condition: str
    format: str
    role: Role
    escape: str | None
    n: int
    truncated: int
    #: Refusals of the list without an escape option (None for the other formats).
    refused_without_escape: int | None

    @model_serializer(mode="wrap")
    def _free_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.role != "free":
            for name in self._FREE_ONLY:
                data.pop(name, None)
        return data


class UnanswerableOutcome(_Outcome):
    """Outcomes on the unanswerable questions; ``near_decoy`` (free form only): answers
    within the unmatched-F1 threshold of the decoy."""

    _FREE_ONLY = ("near_decoy",)

    subset: Literal["unanswerable"]
    counts: UnanswerableCounts
    rates: UnanswerableRates
    near_decoy: int | None = None


class AnswerableOutcome(_Outcome):
    """Outcomes on the answerable questions; ``em``/``f1`` (free form only): mean exact
    match and token F1 (None without a score)."""

    _FREE_ONLY = ("em", "f1")

    subset: Literal["answerable"]
    counts: AnswerableCounts
    rates: AnswerableRates
    em: float | None = None
    f1: float | None = None


Outcome = Annotated[UnanswerableOutcome | AnswerableOutcome, Field(discriminator="subset")]


class Agreement(AnalysisRecord):
    """A paired agreement table of two conditions on one outcome, with McNemar's exact and
    mid-p tests (None without discordant pairs)."""

    n: int
    both: int
    neither: int
    only_a: int
    only_b: int
    flips: int
    p_exact: float | None
    p_midp: float | None


class FormatPair(Agreement):
    """Two base formats ``a`` and ``b`` on ``outcome``; ``p_holm``: Holm-adjusted within the
    (model, subset, outcome) family; ``noise_floor``: the phrase floor's flips;
    ``order_floor``: the mean order flips of ``a`` and ``b`` (None where not measured)."""

    model: str
    subset: Subset
    outcome: Literal["refused", "correct"]
    a: str
    b: str
    total_a: int
    total_b: int
    noise_floor: int | None
    order_floor: float | None
    p_holm: float | None


class PhraseFloor(AnalysisRecord):
    """Flips between the two conditions of the design's ``noise_floor`` (None: not run)."""

    a: str | None
    b: str | None
    flips: int | None


class NoiseFloorEntry(AnalysisRecord):
    """One model's noise floor on one subset and outcome: the phrase floor, and per list
    format its flips against itself under each option order (and their mean). The report's
    generic agreement section reads these entries from ``summary.json``."""

    model: str
    subset: Subset
    outcome: Literal["refused", "correct"]
    phrase: PhraseFloor
    order: dict[str, list[int]]
    order_mean: dict[str, float]


class OrderStability(AnalysisRecord):
    """Questions of one list format that keep their refusal (and answer) in every option
    order; ``orders``: shuffled orders besides the original."""

    model: str
    subset: Subset
    condition: str
    orders: int
    n: int
    refusal_stable: int
    refusal_stable_rate: float
    low: float
    high: float
    same_answer: int
    refusals_per_order: list[int]


class DecoyRemoval(Agreement):
    """Refusals of one list format on the unanswerable questions with and without the
    decoy option (paired by base question)."""

    model: str
    condition: str
    refused_with_decoy: int
    refused_without_decoy: int


class SampledCondition(AnalysisRecord):
    """A sampled condition: refusal rate over samples, and greedy vs majority of samples."""

    model: str
    subset: Subset
    condition: str
    base: str
    n_items: int
    n_samples: int
    refusal_rate: float
    se_clustered: float | None
    unanimous: int
    greedy_refused: int
    majority_refused: int
    greedy_vs_majority_flips: int


class Mismatch(AnalysisRecord):
    """A rerun answer that differs from the main run's (``main_output``)."""

    model: str
    item_id: str
    condition: str
    output: str | None
    parsed: str | None
    option_logprobs: list[float | None] | None
    main_output: str | None


class DeterminismCheck(AnalysisRecord):
    """The rerun of a few questions with an empty cache; ``max_logprob_diff`` is None when a
    log-probability was a number in one run only (an infinite difference)."""

    questions: int
    compared: int
    identical: int
    max_logprob_diff: float | None
    model_calls: int
    mismatches: list[Mismatch]


class ExampleOutput(AnalysisRecord):
    """One format's output for an example question."""

    output: str | None
    refused: bool | None


class Example(AnalysisRecord):
    """A seeded question whose refusal flips between formats; ``outputs`` per condition."""

    model: str
    item_id: str
    title: str | None
    question: str | None
    answerable: bool | None
    decoy: str | None
    n_flipping: int
    outputs: dict[str, ExampleOutput]


class FormatsAnalysis(Analysis):
    """Everything the formats study reports: per model × subset × base format the outcomes,
    the paired tables of every two formats with McNemar and Holm, the noise floor, option
    order stability, decoy removal, sampling, the determinism check (None when not run) and
    seeded examples. Models in the table's order; conditions as the design lists them."""

    models: list[str]
    conditions: list[FormatCondition]
    outcomes: list[Outcome]
    pairs: list[FormatPair]
    noise_floor: list[NoiseFloorEntry]
    orders: list[OrderStability]
    no_decoy: list[DecoyRemoval]
    sampling: list[SampledCondition]
    determinism: DeterminismCheck | None
    examples: list[Example]

    def noise_floors(self) -> list[NoiseFloorFact]:
        """The phrase floors: flips between the two wordings of one format, per model,
        subset and outcome (a model's floor sums its subsets)."""
        return [
            NoiseFloorFact(
                model=e.model, outcome=e.outcome, flips=e.phrase.flips, a=e.phrase.a, b=e.phrase.b
            )
            for e in self.noise_floor
        ]


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class DeterminismRow(DesignRecord):
    """One answer of the determinism rerun (the results table's columns)."""

    model: str
    item_id: str
    condition: str
    output: str | None
    parsed: str | None
    option_logprobs: list[float | None] | None = None


class DeterminismRun(DesignRecord):
    """The determinism rerun, before the run: ``questions`` rerun with an empty cache, the
    model calls it made and its answers."""

    questions: int
    model_calls: int
    rows: list[DeterminismRow]


class FormatsDesign(Design):
    """What a formats run was: the seed, the template and scoring, the refusal phrases, the
    control word, how the items were chosen (``items``: counts of qualifying, skipped and
    article-fallback questions), the conditions, the noise-floor pair of conditions (empty:
    none), how many examples to draw, and the determinism rerun (None: not run)."""

    seed: int = 0
    template: str | None = None
    scoring: str | None = None
    refusal_phrases: list[str] = Field(default_factory=list)
    control_word: str | None = None
    items: dict[str, Any] = Field(default_factory=dict)
    conditions: list[FormatCondition]
    noise_floor: list[str] = Field(default_factory=list)
    examples: int = 5
    determinism: DeterminismRun | None = None
