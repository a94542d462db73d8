"""The spread study: accuracy across many prompt formats from a few (format, item) cells
(PromptEval's estimator) and the search for the best and the worst format (FormatSpread).
See ``docs/study-spread.md``.

Names load on first use, so building the study's CLI command (``study --help``) imports no
statistics or report library."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from ._analysis import analyze_spread, model_cells
    from ._config import SpreadConfig
    from ._design import SpreadSetup, spread_design, spread_setup
    from ._formats_file import FileFormat, load_format_file
    from ._grammar import DIMENSIONS, GrammarFormat, generate_formats
    from ._report import spread_report_sections
    from ._study import SPREAD_STUDY, SpreadStudy
    from ._types import (
        ExtremeFormat,
        FitDiagnostic,
        FormatEstimate,
        ModelSpread,
        QuantileEstimate,
        SearchFormat,
        SearchResult,
        SpreadAnalysis,
        SpreadDesign,
        SpreadDesignFormat,
        SpreadEstimate,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": ["analyze_spread", "model_cells"],
        "._config": ["SpreadConfig"],
        "._design": ["SpreadSetup", "spread_design", "spread_setup"],
        "._formats_file": ["FileFormat", "load_format_file"],
        "._grammar": ["DIMENSIONS", "GrammarFormat", "generate_formats"],
        "._report": ["spread_report_sections"],
        "._study": ["SPREAD_STUDY", "SpreadStudy"],
        "._types": [
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
        ],
    },
)

__all__ = [
    "DIMENSIONS",
    "SPREAD_STUDY",
    "ExtremeFormat",
    "FileFormat",
    "FitDiagnostic",
    "FormatEstimate",
    "GrammarFormat",
    "ModelSpread",
    "QuantileEstimate",
    "SearchFormat",
    "SearchResult",
    "SpreadAnalysis",
    "SpreadConfig",
    "SpreadDesign",
    "SpreadDesignFormat",
    "SpreadEstimate",
    "SpreadSetup",
    "SpreadStudy",
    "analyze_spread",
    "generate_formats",
    "load_format_file",
    "model_cells",
    "spread_design",
    "spread_report_sections",
    "spread_setup",
]
