"""Studies: each a config, a design (items × conditions × models), an analysis that reads
only the results table, and report sections; all found through one registry and run by
:func:`run_study`."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
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

if TYPE_CHECKING:
    from ._run import read_analysis, read_design, reanalyze, run_design, run_study

# The runner loads on first use: building a study's CLI command needs only the registry.
__getattr__, __dir__ = lazy_exports(
    __name__, {"._run": ["read_analysis", "read_design", "reanalyze", "run_design", "run_study"]}
)

__all__ = [
    "Study",
    "StudyConfig",
    "StudyDesign",
    "StudyResult",
    "find_study",
    "get_study",
    "read_analysis",
    "read_design",
    "reanalyze",
    "register_study",
    "run_design",
    "run_study",
    "study_names",
]
