"""What a section builder sees: the run's table, summary and analysis."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import ConfigError, DataError

__all__ = ["ReportContext", "ReportOptions", "read_summary"]


@dataclass(frozen=True)
class ReportOptions:
    """How a report is built (none of these change a statistic's definition).

    Attributes
    ----------
    max_item_rows : int
        Most rows of the per-item table written into the report. A larger run shows every
        row of items drawn at random (``seed``) until this many rows are reached.
    max_chars : int
        Output and parsed answers in the per-item table are cut to this many characters.
    max_conditions : int
        Agreement matrices show at most this many conditions (the first ones in run order).
    n_resamples : int
        Bootstrap resamples for the spread across conditions.
    seed : int
        Seed for the bootstrap and for sampling rows and examples.
    confidence : float
        Coverage of every interval in the report.
    """

    max_item_rows: int = 10_000
    max_chars: int = 200
    max_conditions: int = 24
    n_resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95

    def __post_init__(self) -> None:
        for name in ("max_item_rows", "max_chars", "max_conditions", "n_resamples"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"ReportOptions.{name} must be a positive integer; got {value!r}")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(
                f"ReportOptions.confidence must be in (0, 1); got {self.confidence!r}"
            )


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
    """

    table: pa.Table
    summary: Mapping[str, Any]
    options: ReportOptions = field(default_factory=ReportOptions)
    run_dir: Path | None = None

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
    """``summary.json`` of a run directory, or ``{}`` when the run has none."""
    path = run_dir / "summary.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object at the top level")
    return data
