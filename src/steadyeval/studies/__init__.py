"""Studies: each a config, a design (items × conditions × models), an analysis that reads
only the results table, and report sections; all found through one registry and run by
:func:`run_study`."""

from ._protocol import (
    Study,
    StudyConfig,
    StudyDesign,
    StudyResult,
    find_study,
    get_study,
    register_study,
    study_names,
)
from ._run import reanalyze, run_design, run_study

__all__ = [
    "Study",
    "StudyConfig",
    "StudyDesign",
    "StudyResult",
    "find_study",
    "get_study",
    "reanalyze",
    "register_study",
    "run_design",
    "run_study",
    "study_names",
]
