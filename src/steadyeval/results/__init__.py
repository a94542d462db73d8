"""The results table: schema, Parquet I/O and summaries."""

from ._schema import RESULTS_SCHEMA, SCHEMA_VERSION, read_results, rows_to_table, write_results
from ._summary import summarize, summary_markdown

__all__ = [
    "RESULTS_SCHEMA",
    "SCHEMA_VERSION",
    "read_results",
    "rows_to_table",
    "summarize",
    "summary_markdown",
    "write_results",
]
