"""The sensitivity study's configuration (YAML or flags), validated with pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..._limits import MAX_SEED
from .._protocol import StudyConfig

__all__ = ["MAX_DRAWS", "MAX_NAMES", "MAX_SUBSETS", "MAX_TEMPLATES", "SensitivityConfig"]

#: Rank consistency: the most subsets (and relations per subset) drawn.
MAX_SUBSETS = 10_000
#: The sampled adjustment: the most templates or names drawn per unit or fact.
MAX_DRAWS = 1_000
#: The most names per subject (the canonical one and aliases).
MAX_NAMES = 1_000
#: The most templates per relation.
MAX_TEMPLATES = 10_000


class SensitivityConfig(StudyConfig):
    """A run of the sensitivity study (flags or YAML)."""

    data: str = Field(
        description="Probe directory (generic, LAMA or LPAQA layout) or a task directory "
        "(items.jsonl + templates.jsonl).",
        json_schema_extra={"path": True, "metavar": "DIR"},
        min_length=1,  # '' would name the current folder
    )
    prompt_set: Literal["manual_paraphrase", "paraphrase", "mine"] | None = Field(
        None, description="LPAQA layout: which prompt set (default manual_paraphrase)."
    )
    limit_per_relation: int | None = Field(
        None, ge=1, le=10_000_000, description="At most N facts per relation (a seeded sample)."
    )
    templates_per_relation: int | Literal["all"] | None = Field(
        None,
        description="Templates per relation: N (relations with more are cut to their first "
        "N, relations with fewer dropped), 'all' (every template of every relation), or by "
        "default the smallest count among the relations.",
        json_schema_extra={"metavar": "N|all"},
    )
    aliases: str | None = Field(
        None,
        description='Subject aliases: a JSON map {"Q30": ["USA", ...]} (keys: subject URIs '
        'or labels) or JSONL lines {"subject": "...", "aliases": [...]}.',
        json_schema_extra={"path": True, "metavar": "FILE"},
        min_length=1,  # '' would name the current folder
    )
    max_names: int = Field(
        5, ge=1, le=MAX_NAMES, description="Names per subject (canonical + aliases)."
    )
    candidates: Literal["vocabulary", "relation"] = Field(
        "vocabulary", description="P@1 over the vocabulary, or over the relation's objects."
    )
    vocab: str | None = Field(
        None,
        description="Keep only facts whose object is in this word list (one per line).",
        json_schema_extra={"path": True, "metavar": "FILE"},
        min_length=1,  # '' would name the current folder
    )
    scoring: str | None = Field(
        None,
        description="Generic tasks only: how answers are scored (a scoring mode, e.g. "
        "option-logprob).",
        json_schema_extra={"metavar": "SCORING"},
    )
    subsets: int = Field(
        1000, ge=1, le=MAX_SUBSETS, description="Rank consistency: number of subsets."
    )
    subset_size: int = Field(
        20, ge=1, le=MAX_SUBSETS, description="Rank consistency: relations per subset."
    )
    k_templates: int | None = Field(
        None,
        ge=1,
        le=MAX_DRAWS,
        description="Sampled adjustment: templates drawn per relation (default all).",
    )
    k_names: int | None = Field(
        None,
        ge=1,
        le=MAX_DRAWS,
        description="Sampled adjustment: names drawn per fact (default all).",
    )
    weights: Literal["uniform", "data"] = Field(
        "uniform", description="P(template): uniform or the data's template weights."
    )
    ddof: int = Field(
        0,
        ge=0,
        le=1,
        description="Std across templates: 0 (population std, the authors' np.std) or 1 "
        "(sample std).",
    )
    std_rounding: Literal["exact", "reference"] = Field(
        "exact",
        description="Std across templates: 'exact', or 'reference' (the authors' rounding: "
        "P@1 percentages and the std to 2 decimals, as their prompt_variance.py).",
    )
    stop_words: str = Field(
        "default",
        description="Verbalization stability skips stop-word predictions: 'default' (the "
        "authors' list: NLTK English + tokenizer pieces), 'none', or a file (one per line).",
        json_schema_extra={"metavar": "default|none|FILE"},
    )
    seed: int = Field(
        42, ge=0, le=MAX_SEED, description="Seed of the fact sample and of every analysis draw."
    )

    @field_validator("templates_per_relation")
    @classmethod
    def _positive(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 1 <= value <= MAX_TEMPLATES:
            raise ValueError(f"templates_per_relation must be in 1..{MAX_TEMPLATES:,} (or 'all')")
        return value

    @field_validator("scoring")
    @classmethod
    def _known_scoring(cls, value: str | None) -> str | None:
        from ...scoring import canonical_scoring

        return None if value is None else canonical_scoring(value)
