"""Paired comparison of runs (models, or the same model across runs) on shared units.

See ``docs/reports.md``, ``docs/compare-formats.md`` and ``steadyeval compare``.
"""

from ._compare import (
    Arm,
    Comparison,
    ConditionDifference,
    PairComparison,
    cluster_labels,
    compare_runs,
)
from ._over_formats import (
    FormatDifference,
    FormatsArm,
    FormatsPair,
    OverFormats,
    compare_over_formats,
)

__all__ = [
    "Arm",
    "Comparison",
    "ConditionDifference",
    "FormatDifference",
    "FormatsArm",
    "FormatsPair",
    "OverFormats",
    "PairComparison",
    "cluster_labels",
    "compare_over_formats",
    "compare_runs",
]
