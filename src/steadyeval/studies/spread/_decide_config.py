"""The decide study's configuration: two to six models, one population of formats, a budget of
cells and the level at which to stop."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..._limits import MAX_SEED, MAX_TOKENS
from ._config import MAX_DRAWS, PopulationConfig, SpreadConfig
from ._decide_types import MAX_MODELS

__all__ = ["MAX_BUDGET", "DecideConfig"]

#: The most cells a run may draw (``summary.json`` lists every one, ~40 bytes each).
MAX_BUDGET = 200_000


class DecideConfig(PopulationConfig):
    """Everything that defines a run of the decide study: which of two (up to six) models
    is more accurate over a population of prompt formats, evaluated cell batch by cell batch
    until the anytime-valid tests decide at ``confidence`` (every pair's, all at once) or
    ``budget`` cells are spent."""

    budget: int | None = Field(
        None,
        gt=0,
        le=MAX_BUDGET,
        description="Most (format, item) cells to draw, each answered by every model; "
        "default: twice the number of items.",
    )
    batch: int = Field(20, gt=0, description="Cells drawn between two looks at the test.")
    allocation: Literal["uniform", "adaptive"] = Field(
        "uniform",
        description="How cells are drawn: uniformly over formats × items, or items where the "
        "models have disagreed more often (importance-weighted, so the test stays valid).",
    )
    covariates: bool = Field(
        True,
        description="Use the grammar's choices as format covariates in the comparison over "
        "formats (the report's crossed model).",
    )
    scoring: Literal["option-logprob", "generate"] = Field(
        "option-logprob", description="How an answer is read: option log-probability or generation."
    )
    max_new_tokens: int = Field(
        8, gt=0, le=MAX_TOKENS, description="Generation limit (scoring generate)."
    )
    confidence: float = Field(
        0.95, gt=0, lt=1, description="Level of the decision: wrong with probability ≤ 1 − it."
    )
    draws: int = Field(
        400, ge=50, le=MAX_DRAWS, description="Posterior draws of the comparison over formats."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of --sample and the cells drawn.")

    @model_validator(mode="after")
    def _model_count(self) -> DecideConfig:
        """Two to ``MAX_MODELS`` models (every pair is tested)."""
        if not 2 <= len(self.models) <= MAX_MODELS:
            raise ValueError(
                f"the decide study compares 2 to {MAX_MODELS} models (--model A --model B "
                f"...); got {len(self.models)}"
            )
        return self

    def spread_config(self) -> SpreadConfig:
        """The same items and formats as a spread-study config (its setup builds them)."""
        keys = (
            "models", "data", "limit", "sample", "formats", "n_formats", "grammar_seed",
            "covariates", "scoring", "max_new_tokens", "draws", "seed",
        )  # fmt: skip
        return SpreadConfig.model_validate({k: getattr(self, k) for k in keys})
