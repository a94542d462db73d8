"""The knowledge study's analysis as types: what ``summary.json`` holds under ``analysis``.

Accuracies and shares are in [0, 1]; a value that is not defined (a NaN: no discordant
items, a constant variable, no rows) is None. Records of a condition name its ``model`` and
``condition``; the comparisons across an axis name the setting they hold fixed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ...results import Analysis, AnalysisRecord, Design, DesignRecord

__all__ = [
    "CalibrationResult",
    "CategoryAccuracy",
    "ConditionAccuracy",
    "ConfidenceGap",
    "Correlation",
    "EndMarker",
    "Estimate",
    "KnowledgeAnalysis",
    "KnowledgeDesign",
    "LengthBin",
    "LengthTrend",
    "LetterVsOption",
    "Memorisation",
    "NormalisedAccuracy",
    "OptionScoring",
    "PairedTest",
    "Reliability",
    "RotationResult",
    "ShotCount",
    "ShotCurve",
    "ShotFitFacts",
    "SubcategoryAccuracy",
    "SubjectAccuracy",
    "SubjectCorrelation",
    "TemplateSpread",
    "WilsonAccuracy",
]


class _Omitting(AnalysisRecord):
    """A record whose optional comparison (``OMIT_NONE``) is left out of its JSON when
    absent, as ``summary.json`` has always written it (None on reading it back)."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _leave_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in self.OMIT_NONE}


class WilsonAccuracy(AnalysisRecord):
    """An accuracy with its 95% Wilson interval."""

    accuracy: float
    low: float
    high: float


class Estimate(AnalysisRecord):
    """An estimate with its 95% interval."""

    estimate: float | None
    low: float | None
    high: float | None


class PairedTest(AnalysisRecord):
    """McNemar's exact test of two correctness series paired by item (common items only)."""

    n: int
    only_first: int
    only_second: int
    pvalue: float | None


class Correlation(AnalysisRecord):
    """Pearson's r with its two-sided p-value; None with the reason (``note``) when undefined
    (fewer than 3 points, a constant variable)."""

    r: float | None
    p: float | None
    n: int
    note: str | None


class SubjectCorrelation(AnalysisRecord):
    """:class:`Correlation` within one subject."""

    subject: str
    r: float | None
    p: float | None
    n: int
    note: str | None


class _Setting(AnalysisRecord):
    """A (model, condition) and its setting, from its first row (``rotation``: the index of
    the original option shown first; None for an order that is not a rotation)."""

    model: str
    condition: str
    scoring: str
    template: str | None  # null in the table (e.g. an imported row): not an axis value
    n_shots: int
    rotation: int | None


class ConditionAccuracy(_Setting):
    """Accuracy of one condition: micro (items pooled, Wilson), macro (mean over subjects),
    clustered by subject (SE and normal interval), shots used and truncated prompts."""

    n: int
    correct: int
    micro: WilsonAccuracy
    macro: float
    n_subjects: int
    clustered_se: float | None
    clustered_low: float | None
    clustered_high: float | None
    n_shots_used_mean: float | None
    n_fewer_shots: int
    truncated: int


class CategoryAccuracy(AnalysisRecord):
    """Accuracy of one condition on one category (Wilson interval)."""

    model: str
    condition: str
    category: str
    n: int
    correct: int
    accuracy: float
    low: float
    high: float


class SubcategoryAccuracy(AnalysisRecord):
    """Accuracy of one condition on one subcategory (Wilson interval)."""

    model: str
    condition: str
    subcategory: str
    n: int
    correct: int
    accuracy: float
    low: float
    high: float


class SubjectAccuracy(AnalysisRecord):
    """Accuracy of one condition on one subject (Wilson interval)."""

    model: str
    condition: str
    subject: str
    n: int
    correct: int
    accuracy: float
    low: float
    high: float


class Reliability(AnalysisRecord):
    """Reliability-diagram data, 10 equal-width bins: per bin the mean confidence and the
    accuracy (None for an empty bin), the count and a Wilson interval."""

    confidence: list[float | None]
    accuracy: list[float | None]
    count: list[int]
    low: list[float]
    high: list[float]


class CalibrationResult(_Setting):
    """Calibration of one condition whose every row has a confidence: RMS calibration error
    (textbook and the MMLU authors' ``rmsce``), ECE, Brier, reliability bins and the
    correlation of confidence and accuracy across subjects."""

    n: int
    mean_confidence: float
    accuracy: float
    rms: float
    rms_bins: int
    rms_reference: float
    ece: float
    brier: float
    reliability: Reliability
    subject_correlation: Correlation


class ShotCount(_Omitting):
    """Accuracy at one shot count (Wilson); ``vs_fewest``: McNemar against the fewest shots
    (absent for the fewest)."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("vs_fewest",)

    n_shots: int
    n: int
    accuracy: float
    low: float
    high: float
    n_shots_used_mean: float | None
    vs_fewest: PairedTest | None = None


class ShotCurve(AnalysisRecord):
    """Accuracy vs shots of one model × scoring × template, original option order."""

    model: str
    scoring: str
    template: str
    by_shots: list[ShotCount]


class RotationResult(AnalysisRecord):
    """Option order (CircularEval) of one setting, on the items asked under every rotation."""

    model: str
    scoring: str
    template: str
    n_shots: int
    n: int
    rotations: list[int]
    original: float | None
    per_rotation: list[float | None]
    all_rotations: float | None
    any_rotation: float | None
    same_answer: float | None
    cochran_q: float | None
    pvalue: float | None


class TemplateSpread(_Omitting):
    """Template sensitivity of one setting: accuracy per template (keys: template names),
    the best − worst spread with its bootstrap interval, the std, the items that flip and,
    for exactly two templates, McNemar's test (absent otherwise)."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("mcnemar",)

    model: str
    scoring: str
    n_shots: int
    n: int
    per_template: dict[str, float | None]
    best_minus_worst: Estimate
    std: float | None
    flipped_items: int
    mcnemar: PairedTest | None = None


class LetterVsOption(AnalysisRecord):
    """Letter vs option scoring of one setting (original order), McNemar paired by item."""

    model: str
    template: str
    n_shots: int
    letter: float
    option: float
    mcnemar: PairedTest


class NormalisedAccuracy(AnalysisRecord):
    """Accuracy under each normalisation of the option scores (None: no row answered)."""

    none: float | None
    token: float | None
    char: float | None


class OptionScoring(AnalysisRecord):
    """Accuracy of one option-scored condition under each normalisation."""

    model: str
    condition: str
    n: int
    accuracy: NormalisedAccuracy


class Memorisation(AnalysisRecord):
    """Question log-probability per token vs correctness for one condition: across subjects
    (subject means; ``across_subjects_total_logprob``: of the summed log-probability),
    across items and within each subject."""

    model: str
    condition: str
    n: int
    across_subjects: Correlation
    across_subjects_total_logprob: Correlation
    across_items: Correlation
    per_subject: list[SubjectCorrelation]


class ConfidenceGap(AnalysisRecord):
    """One subject of one condition: mean confidence (the chosen option's probability) minus
    accuracy, with a 95% paired bootstrap interval over the subject's items (the seed's
    Figure 8 gap; positive: overconfident)."""

    model: str
    condition: str
    subject: str
    n: int
    confidence: float
    accuracy: float
    gap: float
    low: float | None
    high: float | None


class LengthBin(AnalysisRecord):
    """Questions of one condition whose length in characters is in ``[low_chars,
    high_chars)`` (``high_chars`` None: no upper bound): accuracy with its Wilson interval and
    the mean probability of the true answer (None where the rows have no letter scores)."""

    low_chars: int
    high_chars: int | None
    n: int
    accuracy: float
    low: float
    high: float
    true_label_probability: float | None


class LengthTrend(AnalysisRecord):
    """Accuracy against question length for one condition (the seed's Figure 12): per
    length bin, a logistic regression of correctness on log2(characters) (``slope``: the
    change in log-odds per doubling of length, 95% Wald interval; ``pvalue`` its Wald test;
    ``n_clusters``: the subjects its standard error is clustered by, None for the ordinary
    standard error, used with fewer than 10 subjects), and Pearson's r between length and the true
    answer's probability for questions over 280 characters (the seed's statement)."""

    model: str
    condition: str
    n: int
    bins: list[LengthBin]
    slope: Estimate
    pvalue: float | None
    n_clusters: int | None
    long_questions: Correlation
    note: str | None


class EndMarker(AnalysisRecord):
    """UnifiedQA's input with and without the end marker ``</s>`` (the seed's appendix A.3)
    for one setting, paired by item: accuracy of each, the difference (with − without) with
    a 95% paired bootstrap interval, and McNemar's exact test; items whose prompt was cut
    under either template are left out (``n_truncated``)."""

    model: str
    scoring: str
    n_shots: int
    n: int
    #: Items asked both ways but left out: the prompt was cut under one of the templates.
    n_truncated: int = 0
    without_marker: float
    with_marker: float
    difference: Estimate
    mcnemar: PairedTest


class KnowledgeAnalysis(Analysis):
    """Every number of the knowledge study (see ``docs/study-knowledge.md``): per (model,
    condition) accuracy, per category / subcategory / subject and calibration, in the order
    the conditions first appear; the comparisons across axes (empty when several conditions
    share a setting, which ``notes`` says); option scoring."""

    models: list[str]
    accuracy: list[ConditionAccuracy]
    per_category: list[CategoryAccuracy]
    per_subcategory: list[SubcategoryAccuracy]
    per_subject: list[SubjectAccuracy]
    calibration: list[CalibrationResult]
    shots: list[ShotCurve]
    rotations: list[RotationResult]
    templates: list[TemplateSpread]
    letter_vs_option: list[LetterVsOption]
    memorisation: list[Memorisation]
    option_scoring: list[OptionScoring]
    notes: list[str]
    #: Added with issue 40 (a summary.json written before reads them as empty).
    confidence_gaps: list[ConfidenceGap] = Field(default_factory=list)
    length: list[LengthTrend] = Field(default_factory=list)
    end_marker: list[EndMarker] = Field(default_factory=list)


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class ShotFitFacts(DesignRecord):
    """How the shots were fitted to the models' context lengths: the models checked (and
    not), each one's context length, how many items got fewer shots, how many got each cap
    (``caps``: shots → items) and the items too long even without shots."""

    checked_models: list[str] = Field(default_factory=list)
    unchecked_models: list[str] = Field(default_factory=list)
    max_lengths: dict[str, int] = Field(default_factory=dict)
    n_items_capped: int = 0
    caps: dict[int, int] = Field(default_factory=dict)
    too_long_without_shots: list[str] = Field(default_factory=list)


class KnowledgeDesign(Design):
    """What a knowledge run was: the data (source, split, subjects, those without a
    category), the counts of items and dev questions (and per subject), the settings that
    shape the conditions (``config``), the seed (the template-spread bootstrap's) and the
    shot fit (None in a design written before it)."""

    source: str | None = None
    split: str | None = None
    subjects: list[str] = Field(default_factory=list)
    uncategorised_subjects: list[str] = Field(default_factory=list)
    n_items: int | None = None
    n_dev: int | None = None
    available_per_subject: dict[str, int] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    shot_fit: ShotFitFacts | None = None
