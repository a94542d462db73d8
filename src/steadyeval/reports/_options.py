"""How a report is built (:class:`ReportOptions`): a light module, so the CLI shows the
defaults in ``--help`` without loading the report code."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ConfigError

__all__ = ["ReportOptions"]


@dataclass(frozen=True)
class ReportOptions:
    """How a report is built (none of these change a statistic's definition).

    Attributes
    ----------
    max_item_rows : int
        Most rows of the per-item table written into the report. A larger run shows every
        row of items drawn at random (``seed``) until this many rows are reached.
    max_chars : int
        Prompts, options, outputs and parsed answers in the per-item table and its
        drill-down are cut to this many characters (a prompt keeps its start and end).
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
