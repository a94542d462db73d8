"""What a section builder sees: the run's table, summary and analysis."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..results import Analysis
from ..results import read_summary as _read_summary
from ._options import ReportOptions

__all__ = ["ReportContext", "ReportOptions", "read_summary"]


_FRAME_COLUMNS = (
    "model",
    "item_id",
    "condition",
    "sample_index",
    "n_shots",
    "correct",
    "refused",
    "confidence",
    "parsed_kind",
    "item_hash",
)


@dataclass(frozen=True)
class ReportContext:
    """The run a report describes: its results table, its ``summary.json`` and options.

    Section builders read only this (never a model), so a report re-renders offline.
    ``labels`` maps a condition to the label the report shows it by (a study's readable
    names; a condition without one is shown by its name): see :meth:`label`.
    """

    table: pa.Table
    summary: Mapping[str, Any]
    options: ReportOptions = field(default_factory=ReportOptions)
    run_dir: Path | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    #: The study's typed analysis the report shows (set once the study's sections are
    #: built: the stored one, or the one recomputed from the table); None for a plain run or
    #: a study the registry does not know, whose ``summary.json`` :attr:`analysis` is read.
    study_analysis: Analysis | None = None

    def label(self, condition: str) -> str:
        """The one label ``condition`` has everywhere in the report."""
        return self.labels.get(condition, condition)

    @property
    def analysis(self) -> Mapping[str, Any]:
        """The study's ``analysis`` dict from ``summary.json`` (empty for a plain run)."""
        a = self.summary.get("analysis")
        return a if isinstance(a, Mapping) else {}

    @property
    def study(self) -> str | None:
        """The study name recorded in ``summary.json``, if any."""
        s = self.summary.get("study")
        return s if isinstance(s, str) else None

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Analysis columns as a DataFrame; booleans become floats (1, 0, NaN for null)."""
        data: dict[str, Any] = {}
        n = self.table.num_rows
        for name in _FRAME_COLUMNS:
            if name not in self.table.column_names:
                data[name] = np.full(n, np.nan) if name != "model" else [""] * n
                continue
            col = self.table.column(name)
            if pa.types.is_boolean(col.type) or pa.types.is_integer(col.type):
                col = pc.cast(col, pa.float64())
            data[name] = col.to_numpy(zero_copy_only=False)
        frame = pd.DataFrame(data)
        frame["item_code"] = pd.factorize(frame["item_id"])[0]
        return frame

    @cached_property
    def models(self) -> list[str]:
        """Models in run order."""
        return _ordered(self.summary.get("models"), self.frame["model"])

    @cached_property
    def conditions(self) -> list[str]:
        """Conditions in run order (the order of ``summary.json``, else of the table)."""
        return _ordered(self.summary.get("conditions"), self.frame["condition"])


def _ordered(declared: Any, column: pd.Series) -> list[str]:  # type: ignore[type-arg]
    present = [str(x) for x in column.dropna().unique()]
    if isinstance(declared, list):
        have = set(present)
        first = [str(x) for x in declared if str(x) in have]
        taken = set(first)
        return first + [x for x in present if x not in taken]
    return present


def read_summary(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a run directory, or ``{}`` when the run has none (read as
    untrusted input: :func:`steadyeval.results.read_summary`)."""
    return _read_summary(run_dir)
