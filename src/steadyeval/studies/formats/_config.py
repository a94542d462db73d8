"""The study's configuration (YAML or flags), validated with pydantic, with located errors."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...run._config import load_yaml_config
from ...scoring import canonical_scoring
from ._design import ListScoring

__all__ = ["FormatsConfig", "SamplingConfig", "load_formats_config"]

#: Phrases scored as refusals for decoder models (which were never taught ``no answer>``).
DECODER_REFUSALS: tuple[str, ...] = ("no answer", "unanswerable", "none of the above")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingConfig(_Strict):
    """Temperature sampling, in addition to greedy decoding."""

    temperature: float = Field(gt=0)
    n_samples: int = Field(5, ge=2)
    seed: int | None = None


class FormatsConfig(_Strict):
    """Everything that defines a run of the answer-format study.

    The defaults are the seed's: 300 answerable and 300 unanswerable SQuAD 2.0 questions,
    seed 2022, four formats (free form, a list of three options, the list + "none of the
    above", the list + the model's own refusal text), greedy decoding of up to 24 tokens.
    """

    models: list[str] = Field(min_length=1)
    data: str
    split: str = "validation"
    answerable: int = Field(300, ge=0)
    unanswerable: int = Field(300, ge=0)
    seed: int = 2022
    scoring: ListScoring = "generate"
    limit: int | None = Field(None, gt=0)
    template: Literal["auto", "unifiedqa", "unifiedqa-title", "qa"] = "auto"
    refusal_text: str = Field("no answer>", min_length=1)
    escapes: list[str] = []
    refusal_phrases: list[str] | None = None
    max_new_tokens: int = Field(24, gt=0)
    noise_floor: tuple[str, str] = ("list-nota", "list-refusal")
    orders: int = Field(0, ge=0)
    no_decoy: bool = False
    control: bool = False
    sampling: SamplingConfig | None = None
    determinism: int = Field(0, ge=0)
    examples: int = Field(5, ge=0)

    @field_validator("scoring", mode="before")
    @classmethod
    def _scoring_alias(cls, value: Any) -> Any:
        """``logprob`` is the deprecated name of ``option-logprob``."""
        return canonical_scoring(value) if value == "logprob" else value

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


def load_formats_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> FormatsConfig:
    """Read a YAML config (optional) and apply ``overrides`` (flags given on the command line).

    Relative data paths and model folders in the file are taken relative to the file. An
    unknown key or a wrong value raises :class:`ConfigError` naming the key, its line and
    what is allowed.
    """
    return load_yaml_config(FormatsConfig, path, overrides, what="formats-study config")
