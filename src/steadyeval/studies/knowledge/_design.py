"""The knowledge study's design: MMLU items × conditions (shots, template, scoring, order)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ...conditions import Condition, Format, Shots, Template
from ...items import LETTERS, Item, MMLUData
from ...models import Backend
from ...results import StudyColumn
from ...scoring import OPTION_LOGPROB, PROMPT_LOGPROB
from .._protocol import StudyDesign
from ._config import _LABELS, OPTION_ONLY_TEMPLATES, SCORINGS, TEMPLATE_NAMES, KnowledgeConfig
from ._fit import SHOT_SET, fit_shots
from ._types import KnowledgeDesign
from ._unifiedqa import UNIFIEDQA_FORMAT, UNIFIEDQA_TEMPLATES

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

#: The prompt templates. ``reference`` is byte for byte the prompt of Hendrycks et al.'s
#: ``evaluate.py`` (its ``format_subject`` puts a space before the subject and its format
#: string another, hence two spaces after "about"); ``single-space`` is the variant most other
#: tools use; ``unifiedqa`` and ``unifiedqa-eos`` are UnifiedQA's input without and with the
#: end marker (the seed's appendix A.3; :mod:`._unifiedqa`).
TEMPLATES: Mapping[str, Template] = MappingProxyType(  # keys: _config.TEMPLATE_NAMES
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
        **UNIFIEDQA_TEMPLATES,
    }
)

assert tuple(TEMPLATES) == TEMPLATE_NAMES

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
    StudyColumn("question_chars", "int", "the question's length in characters (not its options)"),
)
#: Each template's option format: UnifiedQA's ``(a) text`` for its templates, else ``A. text``.
_FORMATS = {name: UNIFIEDQA_FORMAT for name in UNIFIEDQA_TEMPLATES}
MEMORISATION_CONDITION = "question-logprob"


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
            if scoring != OPTION_LOGPROB and template in OPTION_ONLY_TEMPLATES:
                continue  # UnifiedQA answers with the option's text
            for k in config.shots:
                for r in rotations:
                    out.append(
                        Condition(
                            name=condition_name(scoring, template, k, r),
                            template=TEMPLATES[template],
                            format=_FORMATS.get(template, MMLU_FORMAT),
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
    """The item with its shot set and its question's length in characters (the length
    analysis reads the ``question_chars`` column lifted from it)."""
    meta = {**item.metadata, SHOT_SET: value, "question_chars": len(item.question)}
    return dataclasses.replace(item, metadata=meta, **changes)


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
    info = KnowledgeDesign(
        source=data.source,
        split=data.split,
        subjects=list(data.subjects),
        uncategorised_subjects=list(data.uncategorised),
        n_items=len(items),
        n_dev=len(data.dev),
        available_per_subject=dict(data.available),
        config=config.design_dict(),
        seed=config.seed,
        shot_fit=fit.info(),
    )
    return StudyDesign.of(
        items, conditions, backends, shot_pools={"dev": dev}, info=info, columns=COLUMNS
    )
