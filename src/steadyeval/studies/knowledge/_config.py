"""The knowledge study's configuration (YAML or flags), validated with pydantic."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..._limits import MAX_SEED
from ...items import shorten
from ...scoring import LETTER_LOGPROB, OPTION_LOGPROB, renamed_scoring
from .._protocol import StudyConfig

__all__ = ["MAX_SHOTS", "OPTION_ONLY_TEMPLATES", "SCORINGS", "TEMPLATE_NAMES", "KnowledgeConfig"]

#: The prompt headers' names (the templates are ``_design.TEMPLATES``).
TEMPLATE_NAMES: tuple[str, ...] = ("reference", "single-space", "unifiedqa", "unifiedqa-eos")
#: Templates scored by option text only: UnifiedQA answers with an option's text, and its input
#: has no "Answer:" for a letter to follow.
OPTION_ONLY_TEMPLATES: tuple[str, ...] = ("unifiedqa", "unifiedqa-eos")

_LABELS = {LETTER_LOGPROB: "letter", OPTION_LOGPROB: "option"}
#: The study's scorings by their short names (condition names use these; as ``--scoring``
#: values they are deprecated aliases).
SCORINGS: Mapping[str, str] = MappingProxyType({v: k for k, v in _LABELS.items()})


#: The largest shot count. MMLU's dev split holds 5 questions per subject; a subject with
#: fewer dev questions than asked uses all it has (``n_shots_used`` records it), so a count
#: beyond the largest pool adds no shot. The bound is far above any dev split.
MAX_SHOTS = 1_000


def _comma(value: Any) -> Any:
    """``"0,5"`` → ``["0", "5"]`` (flags and YAML may give a comma-separated string); an empty
    entry (``"0,,5"``, a trailing comma) is an error, never dropped."""
    if not isinstance(value, str):
        return value
    parts = [v.strip() for v in value.split(",")]
    if "" in parts:
        raise ValueError(
            f"value {parts.index('') + 1} of {shorten(repr(value), 40)} is empty; expected "
            "comma-separated values, none empty"
        )
    return parts


class KnowledgeConfig(StudyConfig):
    """What the knowledge study asks. The default is the reference setting: letter scoring,
    the reference template, 5 dev shots, original option order."""

    data: str = Field(
        description="A folder in the original MMLU layout (dev/, test/ with "
        "<subject>_<split>.csv) or a hub data set such as cais/mmlu.",
        json_schema_extra={"metavar": "DIR|HUB_NAME", "path": True},
        min_length=1,  # '' would name the current folder
    )
    subjects: list[str] | None = Field(
        None,
        description="Only these subjects (comma-separated, e.g. anatomy,virology).",
        json_schema_extra={"comma": True, "metavar": "A,B,..."},
    )
    split: Literal["test", "val"] = Field("test", description="The split to evaluate.")
    limit_per_subject: int | None = Field(
        None,
        gt=0,
        description="Evaluate only the first N questions of each subject (a file sorted by "
        "difficulty or topic makes them a biased sample; --sample-per-subject N draws a "
        "random one).",
    )
    sample_per_subject: int | None = Field(
        None,
        gt=0,
        description="Evaluate N questions of each subject drawn at random with --seed (all "
        "of a smaller subject). Not with --limit-per-subject.",
    )
    shots: list[int] = Field(
        [5],
        max_length=100,
        description=f"Shot counts, each 0..{MAX_SHOTS:,} (the first dev examples of the "
        "subject; a subject with fewer uses them all, n_shots_used says how many; MMLU has 5); "
        "one condition each.",
        json_schema_extra={"comma": True, "metavar": "K,K,..."},
    )
    templates: list[str] = Field(
        ["reference"],
        description="Prompt templates: reference (two spaces after 'about', as the reference "
        "code), single-space, unifiedqa and unifiedqa-eos (UnifiedQA's input without and "
        "with the end marker </s>).",
        json_schema_extra={"comma": True, "metavar": "NAME,..."},
    )
    scorings: list[str] = Field(
        [LETTER_LOGPROB],
        description="letter-logprob (log-probability of ' A'..' D') and/or option-logprob (of "
        "each option text); letter and option are deprecated names.",
        json_schema_extra={"flag": "scoring", "comma": True, "metavar": "SCORING,..."},
    )
    normalization: Literal["none", "token", "char"] = Field(
        "none", description="Which option score decides an option-scored answer."
    )
    rotations: bool = Field(
        False, description="Also ask every question under the 3 other cyclic rotations."
    )
    memorisation: bool = Field(
        False, description="Also score each question's log-probability (memorisation check)."
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seed of the bootstrap and of --sample-per-subject (nothing else in "
        "the design is random).",
    )

    _split_lists = field_validator("subjects", "shots", "templates", mode="before")(_comma)

    @field_validator("scorings", mode="before")
    @classmethod
    def _scoring_names(cls, value: Any) -> Any:
        """Comma-split, then every name in its registered form (old names deprecated)."""
        value = _comma(value)
        if not isinstance(value, list):
            return value
        return [renamed_scoring(s) if isinstance(s, str) else s for s in value]

    @field_validator("shots", "templates", "scorings")
    @classmethod
    def _distinct(cls, value: list[Any]) -> list[Any]:
        if not value:
            raise ValueError("is empty; give at least one")
        if len(set(value)) != len(value):
            raise ValueError(f"repeats a value: {', '.join(map(str, value))}")
        return value

    @field_validator("shots")
    @classmethod
    def _counts(cls, value: list[int]) -> list[int]:
        if any(not 0 <= k <= MAX_SHOTS for k in value):
            shown = shorten(", ".join(map(str, value)), 60)
            raise ValueError(
                f"shots must be integers in 0..{MAX_SHOTS:,}; got {shown} (e.g. 0,1,5)"
            )
        return value

    @field_validator("templates")
    @classmethod
    def _known_templates(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in TEMPLATE_NAMES]
        if unknown:
            raise ValueError(
                f"unknown template {unknown[0]!r}; choose from {', '.join(TEMPLATE_NAMES)}"
            )
        return value

    @field_validator("scorings")
    @classmethod
    def _known_scorings(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in _LABELS]
        if unknown:
            raise ValueError(f"unknown scoring {unknown[0]!r}; choose from {', '.join(_LABELS)}")
        return value

    @model_validator(mode="after")
    def _option_only_templates(self) -> KnowledgeConfig:
        """UnifiedQA's templates are scored by option text; letter scoring skips them, so a
        run whose every template is one needs option scoring."""
        if OPTION_LOGPROB not in self.scorings and all(
            t in OPTION_ONLY_TEMPLATES for t in self.templates
        ):
            given = list(dict.fromkeys(self.templates))
            which = (
                f"templates {' and '.join(given)} are"
                if len(given) > 1
                else f"template {given[0]} is"
            )
            raise ValueError(
                f"{which} scored by option text only (UnifiedQA "
                "answers with the option's text, and its input has no 'Answer:' for a letter): "
                "add option-logprob to the scorings (--scoring option-logprob on the command line, "
                "scorings: [option-logprob] in a config file)"
            )
        return self

    @model_validator(mode="after")
    def _limit_or_sample(self) -> KnowledgeConfig:
        """The first N of each subject, or N of each at random: one, not both."""
        if self.limit_per_subject is not None and self.sample_per_subject is not None:
            raise ValueError(
                "give limit_per_subject (the first N questions of each subject) or "
                "sample_per_subject (N of each drawn with the seed), not both"
            )
        return self

    def design_dict(self) -> dict[str, Any]:
        """The settings that shape the conditions (``summary.json`` → ``design.config``)."""
        return self.model_dump(
            mode="json",
            include={
                "shots", "templates", "scorings", "normalization", "rotations",
                "memorisation", "seed",
            },
        )  # fmt: skip
