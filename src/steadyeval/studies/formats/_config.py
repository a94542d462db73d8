"""The study's configuration (YAML or flags), validated with pydantic, with located errors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..._limits import MAX_SEED, MAX_TOKENS
from ...conditions import MAX_SAMPLES
from .._protocol import StudyConfig

__all__ = ["MAX_ORDERS", "FormatsConfig", "ListScoring", "SamplingConfig"]

#: The most seeded option orders (``orders``; three options and an escape have 24) and the
#: most extra escape phrasings (``escapes``): each adds a condition per list.
MAX_ORDERS = 100

#: How the option lists are answered: generation mapped to an option, or option scores.
ListScoring = Literal["generate", "option-logprob"]

#: Phrases scored as refusals for decoder models (which were never taught ``no answer>``).
DECODER_REFUSALS: tuple[str, ...] = ("no answer", "unanswerable", "none of the above")


class SamplingConfig(BaseModel):
    """Temperature sampling, in addition to greedy decoding."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(gt=0, description="Also sample at this temperature.")
    n_samples: int = Field(
        5, ge=2, le=MAX_SAMPLES, description="Samples per question when sampling."
    )
    seed: int | None = Field(None, ge=0, le=MAX_SEED)


class FormatsConfig(StudyConfig):
    """Everything that defines a run of the answer-format study.

    The defaults are the seed's: 300 answerable and 300 unanswerable SQuAD 2.0 questions,
    seed 2022, four formats (free form, a list of three options, the list + "none of the
    above", the list + the model's own refusal text), greedy decoding of up to 24 tokens.
    """

    data: str = Field(
        description="SQuAD 2.0 .json file or hub name (squad_v2).",
        json_schema_extra={"metavar": "SOURCE", "path": True},
        min_length=1,  # '' would name the current folder
    )
    split: str | None = Field(
        None,
        min_length=1,
        description="Hub split (default: validation); a local .json file has no splits.",
    )
    answerable: int = Field(300, ge=0, description="Answerable questions to sample.")
    unanswerable: int = Field(300, ge=0, description="Unanswerable questions to sample.")
    seed: int = Field(2022, ge=0, le=MAX_SEED, description="Sampling seed.")
    scoring: ListScoring = Field(
        "generate",
        description="Lists: greedy generation mapped to an option, or option log-probability "
        "(logprob: the deprecated name of option-logprob).",
        json_schema_extra={"aliases": ["logprob"]},
    )
    limit: int | None = Field(
        None,
        gt=0,
        description="Keep the first N of each sample (same questions). Each sample is "
        "already drawn at random with --seed, in draw order, so its first N are a random "
        "sample too (this study needs no --sample).",
    )
    template: Literal["auto", "unifiedqa", "unifiedqa-title", "qa"] = Field(
        "auto",
        description="Prompt encoding (auto: UnifiedQA's for models that declare it, else qa).",
    )
    refusal_text: str = Field(
        "no answer>", min_length=1, description="The model's own refusal text."
    )
    escapes: list[str] = Field(
        [],
        max_length=MAX_ORDERS,
        description="Extra escape phrasing; repeatable.",
        json_schema_extra={"flag": "escape"},
    )
    refusal_phrases: list[str] | None = Field(
        None,
        max_length=1_000,
        description="Phrases scored as refusals; repeatable.",
        json_schema_extra={"flag": "refusal-phrase"},
    )
    max_new_tokens: int = Field(24, gt=0, le=MAX_TOKENS, description="Generation limit.")
    noise_floor: tuple[str, str] = Field(
        ("list-nota", "list-refusal"),
        description="The two escape lists whose disagreement is the noise floor.",
        json_schema_extra={"cli": False},
    )
    orders: int = Field(
        0, ge=0, le=MAX_ORDERS, description="Also ask the lists under K seeded option orders."
    )
    no_decoy: bool = Field(False, description="Also ask unanswerable lists without the decoy.")
    control: bool = Field(False, description="Add a list whose last option is a random word.")
    sampling: SamplingConfig | None = Field(
        None,
        description="Temperature sampling in addition to greedy decoding.",
        json_schema_extra={"flags": {"temperature": "temperature", "n_samples": "samples"}},
    )
    determinism: int = Field(
        0,
        ge=0,
        description="Rerun N questions uncached; at most the questions sampled (answerable + "
        "unanswerable, each cut to limit).",
        json_schema_extra={"metavar": "N"},
    )
    examples: int = Field(5, ge=0, description="Flipping questions shown per model.")

    @field_validator("scoring", mode="before")
    @classmethod
    def _scoring_alias(cls, value: Any) -> Any:
        """``logprob`` is the deprecated name of ``option-logprob``."""
        from ...scoring import renamed_scoring

        return renamed_scoring(value) if isinstance(value, str) else value

    @field_validator("determinism")
    @classmethod
    def _within_the_sample(cls, value: int, info: ValidationInfo) -> int:
        """No more reruns than questions (``info.data`` lacks a field that failed)."""
        sizes = [
            n for n in map(info.data.get, ("answerable", "unanswerable")) if isinstance(n, int)
        ]
        limit = info.data.get("limit")
        if value and len(sizes) == 2:
            asked = sum(min(n, limit) if isinstance(limit, int) else n for n in sizes)
            if value > asked:
                raise ValueError(
                    f"{value:,} questions to rerun, but the sample holds {asked:,} "
                    "(answerable + unanswerable, each cut to limit); give at most that"
                )
        return value

    @model_validator(mode="after")
    def _some_items(self) -> FormatsConfig:
        if self.answerable + self.unanswerable == 0:
            raise ValueError("answerable and unanswerable are both 0; ask for some questions")
        return self

    def phrases(self, template: str) -> tuple[str, ...]:
        """Refusal phrases for scoring: as given, else the refusal text (plus, for decoder
        models, ``no answer``, ``unanswerable`` and ``none of the above``)."""
        if self.refusal_phrases is not None:
            return tuple(self.refusal_phrases)
        extra = () if template.startswith("unifiedqa") else DECODER_REFUSALS
        return tuple(dict.fromkeys((self.refusal_text, *extra)))
