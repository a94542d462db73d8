"""Study 1: does a "none of the above" option restore the refusals a free-form answer has?

SQuAD 2.0 questions (answerable and unanswerable, the latter with a decoy option) are asked
in several answer formats; the analysis reads only the results table. The study
(:data:`FORMATS_STUDY`) is registered as ``formats``; its report sections
(:func:`formats_report_sections`) give ``steadyeval report`` and ``summary.md`` their tables.
See ``docs/study-formats.md``.
"""

from ...items import (
    SquadArticle,
    SquadData,
    SquadParagraph,
    SquadQuestion,
    load_squad,
    squad_from_rows,
)
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
from ._report import condition_labels, formats_report_sections
from ._study import FORMATS_STUDY, FormatsStudy, formats_design

__all__ = [
    "ANSWERABLE_OUTCOMES",
    "CONTROL_WORDS",
    "FORMATS_STUDY",
    "UNANSWERABLE_OUTCOMES",
    "FormatsConfig",
    "FormatsDesignOptions",
    "FormatsStudy",
    "ItemsBuild",
    "Qualified",
    "SamplingConfig",
    "SquadArticle",
    "SquadData",
    "SquadParagraph",
    "SquadQuestion",
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
