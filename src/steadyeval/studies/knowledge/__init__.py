"""The knowledge study (MMLU): accuracy per subject and category, accuracy vs shots,
calibration, option order (cyclic rotations), template sensitivity, option vs letter scoring
and a memorisation check, all computed from the results table. The study
(:data:`KNOWLEDGE_STUDY`) is registered as ``knowledge``; its report sections
(:func:`knowledge_report_sections`) give ``steadyeval report`` and ``summary.md`` their tables.
See ``docs/study-knowledge.md``."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from ...items import (
    CATEGORIES,
    LETTERS,
    SUBCATEGORIES,
    SUBJECTS,
    MMLUData,
    SubjectInfo,
    load_mmlu,
    subject_info,
)

if TYPE_CHECKING:
    from ._analysis import analyze_knowledge
    from ._config import SCORINGS, KnowledgeConfig
    from ._design import (
        COLUMNS,
        MMLU_FORMAT,
        QUESTION_ONLY,
        TEMPLATES,
        condition_name,
        knowledge_conditions,
        knowledge_design,
    )
    from ._fit import SHOT_SET, ShotFit, fit_shots
    from ._frame import knowledge_frame
    from ._report import knowledge_report_sections
    from ._study import KNOWLEDGE_STUDY, KnowledgeStudy
    from ._types import (
        CalibrationResult,
        CategoryAccuracy,
        ConditionAccuracy,
        Correlation,
        Estimate,
        KnowledgeAnalysis,
        KnowledgeDesign,
        LetterVsOption,
        Memorisation,
        NormalisedAccuracy,
        OptionScoring,
        PairedTest,
        Reliability,
        RotationResult,
        ShotCount,
        ShotCurve,
        ShotFitFacts,
        SubcategoryAccuracy,
        SubjectAccuracy,
        SubjectCorrelation,
        TemplateSpread,
        WilsonAccuracy,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": ["analyze_knowledge"],
        "._config": ["SCORINGS", "KnowledgeConfig"],
        "._design": [
            "COLUMNS",
            "MMLU_FORMAT",
            "QUESTION_ONLY",
            "TEMPLATES",
            "condition_name",
            "knowledge_conditions",
            "knowledge_design",
        ],
        "._fit": ["SHOT_SET", "ShotFit", "fit_shots"],
        "._frame": ["knowledge_frame"],
        "._report": ["knowledge_report_sections"],
        "._study": ["KNOWLEDGE_STUDY", "KnowledgeStudy"],
        "._types": [
            "CalibrationResult",
            "CategoryAccuracy",
            "ConditionAccuracy",
            "Correlation",
            "Estimate",
            "KnowledgeAnalysis",
            "KnowledgeDesign",
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
        ],
    },
)

__all__ = [
    "CATEGORIES",
    "COLUMNS",
    "KNOWLEDGE_STUDY",
    "LETTERS",
    "MMLU_FORMAT",
    "QUESTION_ONLY",
    "SCORINGS",
    "SHOT_SET",
    "SUBCATEGORIES",
    "SUBJECTS",
    "TEMPLATES",
    "CalibrationResult",
    "CategoryAccuracy",
    "ConditionAccuracy",
    "Correlation",
    "Estimate",
    "KnowledgeAnalysis",
    "KnowledgeConfig",
    "KnowledgeDesign",
    "KnowledgeStudy",
    "LetterVsOption",
    "MMLUData",
    "Memorisation",
    "NormalisedAccuracy",
    "OptionScoring",
    "PairedTest",
    "Reliability",
    "RotationResult",
    "ShotCount",
    "ShotCurve",
    "ShotFit",
    "ShotFitFacts",
    "SubcategoryAccuracy",
    "SubjectAccuracy",
    "SubjectCorrelation",
    "SubjectInfo",
    "TemplateSpread",
    "WilsonAccuracy",
    "analyze_knowledge",
    "condition_name",
    "fit_shots",
    "knowledge_conditions",
    "knowledge_design",
    "knowledge_frame",
    "knowledge_report_sections",
    "load_mmlu",
    "subject_info",
]
