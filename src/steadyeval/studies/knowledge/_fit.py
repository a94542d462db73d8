"""Fitting few-shot prompts into each model's context: per item, the most shots whose
prompts fit every model (the reference code drops shots until the prompt fits)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..._errors import ConfigError
from ...conditions import Condition, Trial, expand
from ...items import Item
from ...models import Backend
from ...requests import ScoreRequest
from ...scoring import PROMPT_LOGPROB, requests_for
from ._types import ShotFitFacts

__all__ = ["SHOT_SET", "ShotFit", "fit_shots"]

#: The item metadata key shots are matched on (the subject, or ``subject|m`` for a cap m).
SHOT_SET = "shot_set"


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

    def info(self) -> ShotFitFacts:
        """The fit as design facts (``summary.json`` → ``design.shot_fit``)."""
        return ShotFitFacts(
            checked_models=list(self.checked),
            unchecked_models=list(self.unchecked),
            max_lengths=dict(self.max_lengths),
            n_items_capped=len(self.caps),
            caps=dict(sorted(Counter(self.caps.values()).items())),
            too_long_without_shots=list(self.too_long),
        )


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
    few = [c for c in conditions if c.shots.n > 0 and c.scoring != PROMPT_LOGPROB]
    # a count beyond the largest subject's dev pool gives that pool's prompt: never try more
    pool = max(Counter(str(d.metadata[SHOT_SET]) for d in dev).values(), default=0)
    top = min(max((c.shots.n for c in few), default=0), pool)
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
