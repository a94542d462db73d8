"""The knowledge study (MMLU): accuracy per subject and category, accuracy vs shots,
calibration, option order (cyclic rotations), template sensitivity, option vs letter scoring
and a memorisation check, all computed from the results table. Its report sections
(:func:`knowledge_report_sections`) are registered for ``steadyeval report`` at import and
give ``summary.md`` and the CLI their tables."""

from ...reports import register_section
from ._analysis import analyze_knowledge, knowledge_frame
from ._data import LETTERS, MMLUData, load_mmlu
from ._design import (
    MMLU_FORMAT,
    QUESTION_ONLY,
    SCORINGS,
    SHOT_SET,
    TEMPLATES,
    KnowledgeConfig,
    ShotFit,
    condition_name,
    fit_shots,
    knowledge_conditions,
    knowledge_design,
    reanalyze_knowledge,
    run_knowledge,
)
from ._render import Section, knowledge_sections, render_knowledge
from ._report import knowledge_report, knowledge_report_sections
from ._subjects import CATEGORIES, SUBCATEGORIES, SUBJECTS, SubjectInfo, subject_info

__all__ = [
    "CATEGORIES",
    "LETTERS",
    "MMLU_FORMAT",
    "QUESTION_ONLY",
    "SCORINGS",
    "SHOT_SET",
    "SUBCATEGORIES",
    "SUBJECTS",
    "TEMPLATES",
    "KnowledgeConfig",
    "MMLUData",
    "Section",
    "ShotFit",
    "SubjectInfo",
    "analyze_knowledge",
    "condition_name",
    "fit_shots",
    "knowledge_conditions",
    "knowledge_design",
    "knowledge_frame",
    "knowledge_report",
    "knowledge_report_sections",
    "knowledge_sections",
    "load_mmlu",
    "reanalyze_knowledge",
    "render_knowledge",
    "run_knowledge",
    "subject_info",
]

register_section("knowledge", knowledge_report)
