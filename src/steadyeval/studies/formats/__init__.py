"""Study 1: does a "none of the above" option restore the refusals a free-form answer has?

SQuAD 2.0 questions (answerable and unanswerable, the latter with a decoy option) are asked
in several answer formats; the analysis reads only the results table. The study
(:data:`FORMATS_STUDY`) is registered as ``formats``; its report sections
(:func:`formats_report_sections`) give ``steadyeval report`` and ``summary.md`` their tables.
See ``docs/study-formats.md``.
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from ...items import (
    SquadArticle,
    SquadData,
    SquadParagraph,
    SquadQuestion,
    load_squad,
    squad_from_rows,
)

if TYPE_CHECKING:
    from ._analysis import ANSWERABLE_OUTCOMES, UNANSWERABLE_OUTCOMES, analyze_formats, classify
    from ._config import FormatsConfig, SamplingConfig
    from ._design import (
        CONTROL_WORDS,
        FormatsDesignOptions,
        ItemsBuild,
        Qualified,
        build_conditions,
        build_items,
        qualify,
        without_decoy,
    )
    from ._report import formats_report_sections
    from ._report_labels import condition_labels
    from ._setup import formats_design
    from ._study import FORMATS_STUDY, FormatsStudy
    from ._types import (
        Agreement,
        AnswerableCounts,
        AnswerableOutcome,
        AnswerableRates,
        DecoyRemoval,
        DeterminismCheck,
        DeterminismRow,
        DeterminismRun,
        Example,
        ExampleOutput,
        FormatCondition,
        FormatPair,
        FormatsAnalysis,
        FormatsDesign,
        Mismatch,
        NoiseFloorEntry,
        OrderStability,
        Outcome,
        OutcomeRate,
        PhraseFloor,
        SampledCondition,
        UnanswerableCounts,
        UnanswerableOutcome,
        UnanswerableRates,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": [
            "ANSWERABLE_OUTCOMES",
            "UNANSWERABLE_OUTCOMES",
            "analyze_formats",
            "classify",
        ],
        "._config": ["FormatsConfig", "SamplingConfig"],
        "._design": [
            "CONTROL_WORDS",
            "FormatsDesignOptions",
            "ItemsBuild",
            "Qualified",
            "build_conditions",
            "build_items",
            "qualify",
            "without_decoy",
        ],
        "._report": ["formats_report_sections"],
        "._report_labels": ["condition_labels"],
        "._setup": ["formats_design"],
        "._study": ["FORMATS_STUDY", "FormatsStudy"],
        "._types": [
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
        ],
    },
)

__all__ = [
    "ANSWERABLE_OUTCOMES",
    "CONTROL_WORDS",
    "FORMATS_STUDY",
    "UNANSWERABLE_OUTCOMES",
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
    "FormatsConfig",
    "FormatsDesign",
    "FormatsDesignOptions",
    "FormatsStudy",
    "ItemsBuild",
    "Mismatch",
    "NoiseFloorEntry",
    "OrderStability",
    "Outcome",
    "OutcomeRate",
    "PhraseFloor",
    "Qualified",
    "SampledCondition",
    "SamplingConfig",
    "SquadArticle",
    "SquadData",
    "SquadParagraph",
    "SquadQuestion",
    "UnanswerableCounts",
    "UnanswerableOutcome",
    "UnanswerableRates",
    "analyze_formats",
    "build_conditions",
    "build_items",
    "classify",
    "condition_labels",
    "formats_design",
    "formats_report_sections",
    "load_squad",
    "qualify",
    "squad_from_rows",
    "without_decoy",
]
