"""The knowledge study's design: MMLU items × conditions (shots, template, scoring, order)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, field_validator

from ..._errors import SteadyevalDeprecationWarning
from ...conditions import Condition, Format, Shots, Template
from ...items import LETTERS, Item, MMLUData
from ...models import Backend
from ...results import StudyColumn
from ...scoring import LETTER_LOGPROB, OPTION_LOGPROB, PROMPT_LOGPROB, canonical_scoring
from .._protocol import StudyConfig, StudyDesign
from ._fit import SHOT_SET, fit_shots

__all__ = [
    "COLUMNS",
    "MMLU_FORMAT",
    "QUESTION_ONLY",
    "SCORINGS",
    "TEMPLATES",
    "KnowledgeConfig",
    "condition_name",
    "knowledge_conditions",
    "knowledge_design",
]

_INTRO = "The following are multiple choice questions (with answers) about"
_BODY = "{{ question }}\n{{ options_block }}\nAnswer:"

#: The two prompt headers. ``reference`` is byte for byte the prompt of Hendrycks et al.'s
#: ``evaluate.py`` (its ``format_subject`` puts a space before the subject and its format
#: string another, hence two spaces after "about"); ``single-space`` is the variant most other
#: tools use.
TEMPLATES: Mapping[str, Template] = MappingProxyType(
    {
        "reference": Template(
            name="reference",
            header=_INTRO + "  {{ subject | replace('_', ' ') }}.\n\n",
            body=_BODY,
            answer=" {{ answer }}",
            shot_separator="\n\n",
        ),
        "single-space": Template(
            name="single-space",
            header=_INTRO + " {{ subject | replace('_', ' ') }}.\n\n",
            body=_BODY,
            answer=" {{ answer }}",
            shot_separator="\n\n",
        ),
    }
)

#: The question alone, scored with an empty context for the memorisation check.
QUESTION_ONLY = Template(name="question-only", body="{{ question }}", answer="")

#: Four options lettered A-D, one per line as ``A. text``; continuations start with a space.
MMLU_FORMAT = Format(
    name="mmlu", labels="".join(LETTERS), option_style="{label}. {text}", joiner="\n"
)
_QUESTION_FORMAT = Format(name="question", kind="free")

#: The study's columns.
COLUMNS = (
    StudyColumn("subject", "string", "the MMLU subject (e.g. abstract_algebra)"),
    StudyColumn("split", "string", "the MMLU split the question comes from (test or val)"),
)
MEMORISATION_CONDITION = "question-logprob"


_LABELS = {LETTER_LOGPROB: "letter", OPTION_LOGPROB: "option"}
#: The study's scorings by their short names (condition names use these; as ``--scoring``
#: values they are deprecated aliases).
SCORINGS: Mapping[str, str] = MappingProxyType({v: k for k, v in _LABELS.items()})


def _comma(value: Any) -> Any:
    """``"0,5"`` → ``["0", "5"]`` (flags and YAML may give a comma-separated string)."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


class KnowledgeConfig(StudyConfig):
    """What the knowledge study asks. The default is the reference setting: letter scoring,
    the reference template, 5 dev shots, original option order."""

    data: str = Field(
        description="A folder in the original MMLU layout (dev/, test/ with "
        "<subject>_<split>.csv) or a hub data set such as cais/mmlu.",
        json_schema_extra={"metavar": "DIR|HUB_NAME", "path": True},
    )
    subjects: list[str] | None = Field(
        None,
        description="Only these subjects (comma-separated, e.g. anatomy,virology).",
        json_schema_extra={"comma": True, "metavar": "A,B,..."},
    )
    split: Literal["test", "val"] = Field("test", description="The split to evaluate.")
    limit_per_subject: int | None = Field(
        None, gt=0, description="Evaluate only the first N questions of each subject."
    )
    shots: list[int] = Field(
        [5],
        description="Shot counts (first dev examples of the subject); one condition each.",
        json_schema_extra={"comma": True, "metavar": "K,K,..."},
    )
    templates: list[str] = Field(
        ["reference"],
        description="Prompt headers: reference (two spaces after 'about', as the reference "
        "code) and/or single-space.",
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
    seed: int = Field(0, description="Seed of the bootstrap (nothing in the design is random).")

    _split_lists = field_validator("subjects", "shots", "templates", mode="before")(_comma)

    @field_validator("scorings", mode="before")
    @classmethod
    def _scoring_names(cls, value: Any) -> Any:
        """Comma-split, then every name in its registered form (short names deprecated)."""
        value = _comma(value)
        if not isinstance(value, list):
            return value
        out = []
        for s in value:
            if s in SCORINGS:  # the old short names
                warnings.warn(
                    f"scoring {s!r} is deprecated; use {SCORINGS[s]!r}",
                    SteadyevalDeprecationWarning,
                    stacklevel=2,
                )
                s = SCORINGS[s]
            out.append(canonical_scoring(s) if isinstance(s, str) and s in ("logprob",) else s)
        return out

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
        if any(k < 0 for k in value):
            raise ValueError(f"shots must be integers >= 0; got {value} (e.g. 0,1,5)")
        return value

    @field_validator("templates")
    @classmethod
    def _known_templates(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in TEMPLATES]
        if unknown:
            raise ValueError(f"unknown template {unknown[0]!r}; choose from {', '.join(TEMPLATES)}")
        return value

    @field_validator("scorings")
    @classmethod
    def _known_scorings(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in _LABELS]
        if unknown:
            raise ValueError(f"unknown scoring {unknown[0]!r}; choose from {', '.join(_LABELS)}")
        return value

    def design_dict(self) -> dict[str, Any]:
        """The settings that shape the conditions (``summary.json`` → ``design.config``)."""
        return self.model_dump(
            mode="json",
            include={
                "shots", "templates", "scorings", "normalization", "rotations",
                "memorisation", "seed",
            },
        )  # fmt: skip


def condition_name(scoring: str, template: str, shots: int, rotation: int = 0) -> str:
    """``letter-reference-5shot`` (``-rot1`` … for rotated options) for scoring
    ``letter-logprob``."""
    label = _LABELS.get(scoring, scoring)
    return f"{label}-{template}-{shots}shot" + (f"-rot{rotation}" if rotation else "")


def knowledge_conditions(config: KnowledgeConfig) -> list[Condition]:
    """Every condition of the study: scoring × template × shots × rotation, then the
    question-only condition when ``config.memorisation``."""
    out: list[Condition] = []
    rotations = range(len(LETTERS)) if config.rotations else range(1)
    for scoring in config.scorings:
        for template in config.templates:
            for k in config.shots:
                for r in rotations:
                    out.append(
                        Condition(
                            name=condition_name(scoring, template, k, r),
                            template=TEMPLATES[template],
                            format=MMLU_FORMAT,
                            scoring=scoring,
                            option_order="rotated" if r else "original",
                            rotation=r,
                            shots=Shots(n=k, selection="first", source="dev", match=SHOT_SET),
                            normalization=config.normalization
                            if scoring == OPTION_LOGPROB
                            else "none",
                        )
                    )
    if config.memorisation:
        out.append(
            Condition(
                name=MEMORISATION_CONDITION,
                template=QUESTION_ONLY,
                format=_QUESTION_FORMAT,
                scoring=PROMPT_LOGPROB,
            )
        )
    return out


def _with_shot_set(item: Item, value: str, **changes: Any) -> Item:
    return dataclasses.replace(item, metadata={**item.metadata, SHOT_SET: value}, **changes)


def knowledge_design(
    data: MMLUData, config: KnowledgeConfig, backends: Sequence[Backend]
) -> StudyDesign:
    """Build the study's items, conditions and shot pool.

    Shots are the first k dev items of the item's subject, in file order (the reference's
    choice). When ``backends`` are given, shots are cut per item until every prompt fits
    every model's context (:func:`fit_shots`); the ``n_shots_used`` column records it.

    How the cut is expressed with today's core: each item carries ``metadata["shot_set"]``,
    the subject itself, or ``"<subject>|<m>"`` for an item capped at m shots; conditions
    match shots on that key, and the pool holds, next to each subject's dev items, copies of
    its first m dev items under ``"<subject>|<m>"`` for each cap m in use.
    """
    conditions = knowledge_conditions(config)
    dev = [_with_shot_set(it, str(it.metadata["subject"])) for it in data.dev]
    items = [_with_shot_set(it, str(it.metadata["subject"])) for it in data.evaluated]
    fit = fit_shots(items, conditions, dev, backends)
    if fit.caps:
        items = [
            _with_shot_set(it, f"{it.metadata['subject']}|{fit.caps[it.id]}")
            if it.id in fit.caps
            else it
            for it in items
        ]
        by_subject: dict[str, list[Item]] = {}
        for d in dev:
            by_subject.setdefault(str(d.metadata["subject"]), []).append(d)
        for key in sorted({str(it.metadata[SHOT_SET]) for it in items if it.id in fit.caps}):
            subject, m = key.rsplit("|", 1)
            dev.extend(
                _with_shot_set(d, key, id=f"{d.id}|{key}")
                for d in by_subject.get(subject, [])[: int(m)]
            )
    info = {
        "source": data.source,
        "split": data.split,
        "subjects": list(data.subjects),
        "uncategorised_subjects": list(data.uncategorised),
        "n_items": len(items),
        "n_dev": len(data.dev),
        "available_per_subject": dict(data.available),
        "config": config.design_dict(),
        "seed": config.seed,
        "shot_fit": fit.info(),
    }
    return StudyDesign.of(
        items, conditions, backends, shot_pools={"dev": dev}, info=info, columns=COLUMNS
    )
