"""The knowledge study's design: MMLU items × conditions (shots, template, scoring, order)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ..._errors import ConfigError
from ...conditions import Condition, Format, Shots, Template, Trial, expand
from ...items import Item
from ...models import Backend, ModelSpec, load_backend
from ...requests import ScoreRequest
from ...results import StudyColumn
from ...run import PlanCounts, RunOptions
from ...scoring import LETTER_LOGPROB, OPTION_LOGPROB, requests_for
from .._common import StudyDesign, StudyResult, reanalyze, run_study
from ._data import LETTERS, MMLUData, Split, load_mmlu

__all__ = [
    "MMLU_FORMAT",
    "QUESTION_ONLY",
    "SCORINGS",
    "SHOT_SET",
    "TEMPLATES",
    "KnowledgeConfig",
    "ShotFit",
    "condition_name",
    "fit_shots",
    "knowledge_conditions",
    "knowledge_design",
    "reanalyze_knowledge",
    "run_knowledge",
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

#: ``--scoring`` names → the core scoring.
SCORINGS: Mapping[str, str] = MappingProxyType({"letter": LETTER_LOGPROB, "option": OPTION_LOGPROB})

#: The metadata key shots are matched on (see :func:`knowledge_design`).
SHOT_SET = "shot_set"
#: The study's columns.
COLUMNS = (
    StudyColumn("subject", "string", "the MMLU subject (e.g. abstract_algebra)"),
    StudyColumn("split", "string", "the MMLU split the question comes from (test or val)"),
)
MEMORISATION_CONDITION = "question-logprob"


@dataclass(frozen=True)
class KnowledgeConfig:
    """What the knowledge study asks. The default is the reference setting: letter scoring,
    the reference template, 5 dev shots, original option order.

    Parameters
    ----------
    shots : tuple of int
        Shot counts; one condition each (accuracy vs shots when several).
    templates : tuple of str
        Names in :data:`TEMPLATES`.
    scorings : tuple of str
        ``"letter"`` (log-probability of `` A`` … `` D`` as the next token) and/or
        ``"option"`` (log-probability of each option's text).
    normalization : {"none", "token", "char"}
        Which option score decides an ``"option"`` answer (all three are kept per row).
    rotations : bool
        Also ask every question under the 3 other cyclic rotations of its options.
    memorisation : bool
        Also score each question's log-probability with an empty context.
    seed : int
        Seed of the analysis' bootstrap (nothing in the design is random).
    """

    shots: tuple[int, ...] = (5,)
    templates: tuple[str, ...] = ("reference",)
    scorings: tuple[str, ...] = ("letter",)
    normalization: Literal["none", "token", "char"] = "none"
    rotations: bool = False
    memorisation: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("shots", "templates", "scorings"):
            value = tuple(getattr(self, name))
            if not value:
                raise ConfigError(f"knowledge study: {name} is empty; give at least one")
            if len(set(value)) != len(value):
                raise ConfigError(f"knowledge study: {name} repeat: {', '.join(map(str, value))}")
            object.__setattr__(self, name, value)
        for k in self.shots:
            if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                raise ConfigError(
                    f"knowledge study: shots must be integers >= 0; got {k!r} (e.g. 0,1,5)"
                )
        for t in self.templates:
            if t not in TEMPLATES:
                raise ConfigError(
                    f"knowledge study: unknown template {t!r}; choose from {', '.join(TEMPLATES)}"
                )
        for s in self.scorings:
            if s not in SCORINGS:
                raise ConfigError(
                    f"knowledge study: unknown scoring {s!r}; choose from {', '.join(SCORINGS)}"
                )
        if self.normalization not in ("none", "token", "char"):
            raise ConfigError(
                f"knowledge study: normalization {self.normalization!r} not in none, token, char"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def condition_name(scoring: str, template: str, shots: int, rotation: int = 0) -> str:
    """``letter-reference-5shot`` (``-rot1`` … for rotated options)."""
    return f"{scoring}-{template}-{shots}shot" + (f"-rot{rotation}" if rotation else "")


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
                            scoring=SCORINGS[scoring],
                            option_order="rotated" if r else "original",
                            rotation=r,
                            shots=Shots(n=k, selection="first", source="dev", match=SHOT_SET),
                            normalization=config.normalization if scoring == "option" else "none",
                        )
                    )
    if config.memorisation:
        out.append(
            Condition(
                name=MEMORISATION_CONDITION,
                template=QUESTION_ONLY,
                format=_QUESTION_FORMAT,
                scoring="prompt-logprob",
            )
        )
    return out


# -- fitting the shots into the context ------------------------------------------------------


@dataclass(frozen=True)
class ShotFit:
    """Per-item shot caps so that every prompt fits every model's context.

    Attributes
    ----------
    caps : mapping of str to int
        Item id → the most shots its prompts can hold, for items that cannot hold all of
        the largest shot count asked for. Every condition uses ``min(its shots, cap)``.
    checked : tuple of str
        Models whose tokenizer and context length were used.
    unchecked : tuple of str
        Models that cannot count tokens or do not say their context length (their prompts
        may be truncated by the backend, which flags it in the ``truncated`` column).
    too_long : tuple of str
        Items whose prompt does not fit even without shots.
    max_lengths : mapping of str to int
        Context length of each checked model.
    """

    caps: Mapping[str, int]
    checked: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    too_long: tuple[str, ...] = ()
    max_lengths: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        return {
            "checked_models": list(self.checked),
            "unchecked_models": list(self.unchecked),
            "max_lengths": dict(self.max_lengths),
            "n_items_capped": len(self.caps),
            "caps": dict(sorted(Counter(self.caps.values()).items())),
            "too_long_without_shots": list(self.too_long),
        }


_MARGIN = 8  # tokens: within this of the limit, a pair is counted exactly
# Tokens never outnumber a text's UTF-8 bytes, save for the few special tokens a tokenizer adds
# (byte-level BPE, SentencePiece with byte fallback, WordPiece): a prompt with at most
# ``limit - _BYTE_SLACK`` bytes fits without being tokenized.
_BYTE_SLACK = 16


class _Counter:
    """Counts the tokens a backend's score request feeds the model (context + continuation
    minus the last token): not at all when the bytes already bound it, exactly near the
    limit, and by a cheap upper estimate (context and continuation counted apart) elsewhere."""

    def __init__(self, backend: Backend, limit: int) -> None:
        self.backend, self.limit = backend, limit
        self._cont: dict[str, int] = {}

    def _count(self, texts: Sequence[str]) -> list[int]:
        counted = self.backend.count_tokens(list(texts))
        assert counted is not None
        return counted

    def fits(self, contexts: Sequence[str], continuations: Sequence[Sequence[str]]) -> list[bool]:
        out = [True] * len(contexts)
        todo = [
            i
            for i, (ctx, conts) in enumerate(zip(contexts, continuations, strict=True))
            if len(ctx.encode()) + max((len(c.encode()) for c in conts), default=0)
            > self.limit - _BYTE_SLACK
        ]
        if not todo:
            return out
        new = sorted({c for i in todo for c in continuations[i]} - set(self._cont))
        self._cont.update(zip(new, self._count(new), strict=True))
        n_ctx = self._count([contexts[i] for i in todo])
        exact: list[tuple[int, str]] = []
        for i, n in zip(todo, n_ctx, strict=True):
            conts = continuations[i]
            estimate = n + max((self._cont[c] for c in conts), default=0) - 1
            if estimate > self.limit + _MARGIN:
                out[i] = False
            elif estimate > self.limit - _MARGIN:
                exact.extend((i, contexts[i] + c) for c in conts)
        if exact:
            counts = self._count([t for _, t in exact])
            for (i, _), n in zip(exact, counts, strict=True):
                if n - 1 > self.limit:
                    out[i] = False
        return out


def _counters(backends: Sequence[Backend]) -> tuple[list[_Counter], list[str], dict[str, int]]:
    counters, unchecked, lengths = [], [], {}
    for b in backends:
        limit = b.capabilities.max_length
        can_count = b.count_tokens(["a"]) is not None
        if limit is not None and limit > 0 and can_count:
            counters.append(_Counter(b, limit))
            lengths[b.identity()] = limit
        else:
            unchecked.append(b.identity())
    return counters, unchecked, lengths


def _score_parts(trials: Sequence[Trial]) -> tuple[list[str], list[list[str]]]:
    contexts, conts = [], []
    for t in trials:
        reqs = [r for r in requests_for(t) if isinstance(r, ScoreRequest)]
        contexts.append(reqs[0].context if reqs else t.prompt)
        conts.append([r.continuation for r in reqs])
    return contexts, conts


def _expand_by_shot_set(
    items: Sequence[Item], conditions: Sequence[Condition], dev: Sequence[Item]
) -> list[Trial]:
    """``expand`` one shot set at a time, each with only its own dev items as the pool: the
    same trials as one call with the whole pool, without scanning every subject's shots for
    every item."""
    pools: dict[str, list[Item]] = {}
    for d in dev:
        pools.setdefault(str(d.metadata.get(SHOT_SET)), []).append(d)
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(str(it.metadata.get(SHOT_SET)), []).append(it)
    trials: list[Trial] = []
    for key, group in groups.items():
        trials += expand(group, conditions, shot_pools={"dev": pools.get(key, [])}).trials
    return trials


def fit_shots(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    dev: Sequence[Item],
    backends: Sequence[Backend],
) -> ShotFit:
    """Find, per item, the most shots (up to the largest asked) whose prompts fit.

    As in the reference code (which drops shots until the prompt fits 2048 tokens), but
    checked for every model at once and for every few-shot condition, so that all conditions
    of an item use the same shots and stay paired. A prompt fits a model when the tokens its
    score requests feed the model (context + continuation, less the predicted last token) are
    at most the model's ``max_length``, the backend's own truncation rule.

    ``items`` and ``dev`` must carry ``metadata["shot_set"]`` as :func:`knowledge_design`
    sets it; ``conditions`` are the study's (shots matched on that key, taken in order).
    """
    missing = [it.id for it in [*items, *dev] if SHOT_SET not in it.metadata]
    if missing:
        raise ConfigError(
            f"fit_shots: item {missing[0]!r} has no metadata[{SHOT_SET!r}]; build the design "
            "with knowledge_design, which sets it"
        )
    few = [c for c in conditions if c.shots.n > 0 and c.scoring != "prompt-logprob"]
    top = max((c.shots.n for c in few), default=0)
    counters, unchecked, lengths = _counters(backends)
    checked = tuple(c.backend.identity() for c in counters)
    if not few or not counters:
        return ShotFit({}, checked, tuple(unchecked), (), lengths)
    caps: dict[str, int] = {}
    pending = list(items)
    too_long: list[str] = []
    for m in range(top, -1, -1):
        capped = [
            dataclasses.replace(c, shots=dataclasses.replace(c.shots, n=min(c.shots.n, m)))
            for c in few
        ]
        trials = _expand_by_shot_set(pending, capped, dev)
        ok = dict.fromkeys((it.id for it in pending), True)
        contexts, conts = _score_parts(trials)
        for counter in counters:
            for t, fits in zip(trials, counter.fits(contexts, conts), strict=True):
                if not fits:
                    ok[t.item.id] = False
        for it in pending:
            if ok[it.id] and m < top:
                caps[it.id] = m
        pending = [it for it in pending if not ok[it.id]]
        if not pending:
            break
    for it in pending:  # not even the zero-shot prompt fits: the backend truncates it
        caps[it.id] = 0
        too_long.append(it.id)
    return ShotFit(caps, checked, tuple(unchecked), tuple(too_long), lengths)


def _with_shot_set(item: Item, value: str, **changes: Any) -> Item:
    return dataclasses.replace(item, metadata={**item.metadata, SHOT_SET: value}, **changes)


def knowledge_design(
    data: MMLUData, config: KnowledgeConfig, backends: Sequence[Backend] = ()
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
        "config": config.to_dict(),
        "seed": config.seed,
        "shot_fit": fit.info(),
    }
    return StudyDesign(
        items=items, conditions=conditions, shot_pools={"dev": dev}, info=info, columns=COLUMNS
    )


# -- running ---------------------------------------------------------------------------------

STUDY_NAME = "knowledge"


def run_knowledge(
    models: Sequence[str | ModelSpec | Backend],
    data: str | Path | MMLUData,
    config: KnowledgeConfig | None = None,
    *,
    subjects: Sequence[str] | None = None,
    split: Split = "test",
    limit_per_subject: int | None = None,
    options: RunOptions | None = None,
    dry_run: bool = False,
) -> StudyResult | PlanCounts:
    """Run the knowledge study: load MMLU, build the design, run it, analyse the table.

    Parameters
    ----------
    models : sequence of model specs or backends
    data : str, Path or MMLUData
        A directory in the original layout or a hub data set (see :func:`load_mmlu`), or
        data already loaded.
    config : KnowledgeConfig, optional
        Default: the reference setting (letter scoring, reference template, 5 shots).
    subjects, split, limit_per_subject
        Passed to :func:`load_mmlu` when ``data`` is a source.
    options : RunOptions, optional
        Run directory, cache, batch size, progress.
    dry_run : bool
        Return the plan's counts; call no model.

    Returns
    -------
    StudyResult or PlanCounts
        The table, the summary (with ``analysis``) and the run directory.
    """
    from ._analysis import analyze_knowledge
    from ._render import render_knowledge

    cfg = config or KnowledgeConfig()
    if not isinstance(data, MMLUData):
        data = load_mmlu(data, subjects=subjects, split=split, limit_per_subject=limit_per_subject)
    backends = [m if isinstance(m, Backend) else load_backend(m) for m in models]
    design = knowledge_design(data, cfg, backends)
    return run_study(
        STUDY_NAME,
        design,
        backends,
        analyze=analyze_knowledge,
        render=render_knowledge,
        options=options,
        dry_run=dry_run,
        config={
            "knowledge": cfg.to_dict(),
            "data": data.source,
            "split": data.split,
            "subjects": list(data.subjects),
            "limit_per_subject": limit_per_subject,
        },
    )


def reanalyze_knowledge(run_dir: str | Path) -> dict[str, Any]:
    """Recompute the analysis of a knowledge run from its ``results.parquet`` (no model)."""
    from ._analysis import analyze_knowledge
    from ._render import render_knowledge

    return reanalyze(run_dir, analyze=analyze_knowledge, render=render_knowledge)
