"""Study 1: does a "none of the above" option restore the refusals a free-form answer has?

SQuAD 2.0 questions (answerable and unanswerable, the latter with a decoy option) are asked
in several answer formats; the analysis reads only the results table. Its report sections
(:func:`formats_report_sections`) are registered for ``steadyeval report`` at import and give
``summary.md`` its tables. See ``docs/study-formats.md``.
"""

from ...reports import register_section
from ._analysis import ANSWERABLE_OUTCOMES, UNANSWERABLE_OUTCOMES, analyze_formats, classify
from ._config import FormatsConfig, SamplingConfig, load_formats_config
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
from ._render import render_formats
from ._report import condition_labels, formats_report, formats_report_sections
from ._squad import (
    SquadArticle,
    SquadData,
    SquadParagraph,
    SquadQuestion,
    load_squad,
    squad_from_rows,
)
from ._study import formats_design, reanalyze_formats, run_formats_study

__all__ = [
    "ANSWERABLE_OUTCOMES",
    "CONTROL_WORDS",
    "UNANSWERABLE_OUTCOMES",
    "FormatsConfig",
    "FormatsDesignOptions",
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
    "formats_report",
    "formats_report_sections",
    "load_formats_config",
    "load_squad",
    "qualify",
    "reanalyze_formats",
    "render_formats",
    "run_formats_study",
    "squad_from_rows",
    "without_decoy",
]

register_section("formats", formats_report)
