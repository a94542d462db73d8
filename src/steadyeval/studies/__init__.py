"""Studies: each a design (items + conditions) and an analysis that reads the results table."""

from ._common import StudyDesign, StudyResult, json_safe, reanalyze, run_study

__all__ = ["StudyDesign", "StudyResult", "json_safe", "reanalyze", "run_study"]
