"""The disparity study's analysis as types: what ``summary.json`` holds under ``analysis``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...results import Analysis, AnalysisRecord, Design, DesignRecord

__all__ = [
    "DisparityAnalysis",
    "DisparityDesign",
    "DisparityModel",
    "GammaCell",
    "GammaChange",
    "ModelGap",
    "PairedGap",
]


class GammaCell(AnalysisRecord):
    """P@1 of one model at one γ, with its 95% Wilson interval."""

    model: str
    gamma: str
    n: int
    correct: int
    p_at_1: float
    low: float
    high: float


class PairedGap(AnalysisRecord):
    """P@1 of A minus B on the facts both answered: the paired 95% interval of the difference
    (None when every fact agrees) and McNemar's exact test (None without discordant facts);
    None throughout when no fact is shared."""

    n: int
    p_a: float | None
    p_b: float | None
    diff: float | None
    low: float | None
    high: float | None
    only_a: int
    only_b: int
    pvalue: float | None


class ModelGap(PairedGap):
    """Model ``a`` minus model ``b`` at one γ."""

    gamma: str
    a: str
    b: str


class GammaChange(PairedGap):
    """One model at ``gamma`` minus the same model at ``reference`` (its lowest γ)."""

    model: str
    gamma: str
    reference: str


class DisparityAnalysis(Analysis):
    """P@1 per model × γ, the gaps between models per γ and each model's change across γ.
    γ labels are strings (``"none"``: the model as given); models in the design's order."""

    metric: Literal["P@1"] = "P@1"
    models: list[str]
    gammas: list[str]
    cells: list[GammaCell]
    gaps: list[ModelGap]
    changes: list[GammaChange]
    notes: list[str]


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class DisparityModel(DesignRecord):
    """One base model: its identity, its training objective and the identity of the model
    pretrained further at each γ (``checkpoints``: γ as a string → identity)."""

    model: str
    objective: str | None = None
    checkpoints: dict[str, str] = Field(default_factory=dict)


class DisparityDesign(Design):
    """What a disparity run was: the base models in order, the γ values (overlap
    percentages), whether the models as given were probed too, the corpus (size, seed, each
    mixture and where the overlap sentences came from), the training settings and the
    probes' data facts (those of the sensitivity study's design)."""

    kind: str = "disparity"
    metric: str = "P@1"
    models: list[DisparityModel] = Field(default_factory=list)
    gammas: list[int] = Field(default_factory=list)
    include_base: bool = True
    corpus: dict[str, Any] = Field(default_factory=dict)
    training: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)
