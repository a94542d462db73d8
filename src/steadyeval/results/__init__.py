"""The results table: schema, Parquet I/O and summaries."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._analysis import (
        Analysis,
        AnalysisRecord,
        Design,
        DesignRecord,
        NoiseFloorFact,
        RankConsistencyFacts,
        RankConsistencySetting,
    )
    from ._export import ExportedRun, ExportOptions, export_run
    from ._frame import ResultsFrame
    from ._import_common import ImportedRun, parse_condition_map, write_imported_run
    from ._import_inspect import (
        InspectImportOptions,
        find_inspect_logs,
        import_inspect,
        read_inspect_log,
    )
    from ._import_lmeval import LmEvalImportOptions, find_lmeval_samples, import_lmeval
    from ._manifest import (
        check_rewritable,
        check_run_dir,
        recorded_hashes,
        rewrite_summaries,
        run_in_parts,
        writing_run,
    )
    from ._read import read_results
    from ._row import ResultRow, prompt_hash, row_key
    from ._schema import (
        ADDED_IN_V3,
        RESULTS_SCHEMA,
        RESULTS_SCHEMA_V1,
        SCHEMA_VERSION,
        StudyColumn,
        rows_to_table,
        study_columns,
        upgrade_table,
        with_study_columns,
        write_results,
    )
    from ._summary import read_summary, summarize, summary_markdown

# Modules load on first use: a study's typed analysis needs pydantic, not pyarrow.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": [
            "Analysis",
            "AnalysisRecord",
            "Design",
            "DesignRecord",
            "NoiseFloorFact",
            "RankConsistencyFacts",
            "RankConsistencySetting",
        ],
        "._export": ["ExportOptions", "ExportedRun", "export_run"],
        "._frame": ["ResultsFrame"],
        "._import_common": ["ImportedRun", "parse_condition_map", "write_imported_run"],
        "._import_inspect": [
            "InspectImportOptions",
            "find_inspect_logs",
            "import_inspect",
            "read_inspect_log",
        ],
        "._import_lmeval": ["LmEvalImportOptions", "find_lmeval_samples", "import_lmeval"],
        "._manifest": [
            "check_run_dir",
            "check_rewritable",
            "recorded_hashes",
            "rewrite_summaries",
            "run_in_parts",
            "writing_run",
        ],
        "._read": ["read_results"],
        "._row": ["ResultRow", "prompt_hash", "row_key"],
        "._schema": [
            "ADDED_IN_V3",
            "RESULTS_SCHEMA",
            "RESULTS_SCHEMA_V1",
            "SCHEMA_VERSION",
            "StudyColumn",
            "rows_to_table",
            "study_columns",
            "upgrade_table",
            "with_study_columns",
            "write_results",
        ],
        "._summary": ["read_summary", "summarize", "summary_markdown"],
    },
)

__all__ = [
    "ADDED_IN_V3",
    "RESULTS_SCHEMA",
    "RESULTS_SCHEMA_V1",
    "SCHEMA_VERSION",
    "Analysis",
    "AnalysisRecord",
    "Design",
    "DesignRecord",
    "ExportOptions",
    "ExportedRun",
    "ImportedRun",
    "InspectImportOptions",
    "LmEvalImportOptions",
    "NoiseFloorFact",
    "RankConsistencyFacts",
    "RankConsistencySetting",
    "ResultRow",
    "ResultsFrame",
    "StudyColumn",
    "check_rewritable",
    "check_run_dir",
    "export_run",
    "find_inspect_logs",
    "find_lmeval_samples",
    "import_inspect",
    "import_lmeval",
    "parse_condition_map",
    "prompt_hash",
    "read_inspect_log",
    "read_results",
    "read_summary",
    "recorded_hashes",
    "rewrite_summaries",
    "row_key",
    "rows_to_table",
    "run_in_parts",
    "study_columns",
    "summarize",
    "summary_markdown",
    "upgrade_table",
    "with_study_columns",
    "write_imported_run",
    "write_results",
    "writing_run",
]
