"""Paired comparison of runs (models, or the same model across runs) on shared units.

See ``docs/reports.md`` and ``steadyeval compare``.
"""

from ._compare import (
    Arm,
    Comparison,
    ConditionDifference,
    PairComparison,
    cluster_labels,
    compare_runs,
)

__all__ = [
    "Arm",
    "Comparison",
    "ConditionDifference",
    "PairComparison",
    "cluster_labels",
    "compare_runs",
]
