"""The formats analysis' view of the results: the numpy frame
(:class:`~._frame.FormatsFrame`, a view of the :class:`~steadyeval.results.ResultsFrame`)
plus the design facts, selected by (model, condition, variant, subset); and the helpers
every part of the analysis shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._frame import FormatsFrame, Ints

if TYPE_CHECKING:
    from ...results import ResultsFrame
    from ._types import FormatCondition, FormatsDesign

#: The two question subsets, in the order the analysis lists them.
SUBSETS = ("unanswerable", "answerable")

Row = dict[str, Any]


class _Table:
    """The frame plus the design facts, indexed by (model, condition, variant, subset)."""

    def __init__(self, results: ResultsFrame, design: FormatsDesign) -> None:
        self.f = FormatsFrame(results)
        self.conditions: dict[str, FormatCondition] = {c.name: c for c in design.conditions}
        self.models: list[str] = list(self.f.models)

    def base_names(self) -> list[str]:
        return [n for n, c in self.conditions.items() if c.variant == "base"]

    def select(
        self, model: str, condition: str, subset: str | None = None, variant: str = "base"
    ) -> Ints:
        """Rows of one (model, condition), first sample, items of one variant and subset."""
        return self.f.select(model, condition, subset, variant)

    def samples(self, model: str, condition: str) -> Ints:
        """Rows of one (model, condition), every sample, items of the base variant."""
        return self.f.select(model, condition, None, "base", first_sample=False)
