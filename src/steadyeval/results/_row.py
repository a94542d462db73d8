"""The one result-row type: every producer of results (the runner, importers) builds these;
:func:`rows_to_table` turns them into the results table."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..conditions import Trial
    from ..scoring import ScoredTrial

__all__ = ["ResultRow", "prompt_hash", "row_key"]


def prompt_hash(prompt: str) -> str:
    """The ``prompt_hash`` column: the first 16 hex digits of the prompt's SHA-256 (UTF-8).

    The one formula for every row, run or imported, so equal prompts compare equal."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def row_key(keys: Sequence[str]) -> str:
    """The ``request_key`` of a row: its one request's key, or a hash of its keys."""
    if len(keys) == 1:
        return keys[0]
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


@dataclass(frozen=True)
class ResultRow:
    """One row of the results table: an item asked under a condition of a model (one sample).

    Fields hold what every run shares (``docs/results.md`` describes each column).
    ``metadata`` holds the item's own fields (JSON values); ``tags`` values its run gave the
    row: those of its block (e.g. a study's split) and its scoring mode's metrics. A study's
    columns are taken from ``tags`` by name, else lifted from ``metadata`` (see
    :class:`StudyColumn`).
    ``prompt_hash`` is derived from ``prompt`` when the table is built.
    """

    run_id: str
    model: str
    item_id: str
    condition: str
    sample_index: int = 0
    item_hash: str | None = None
    condition_id: str | None = None
    template: str | None = None
    format: str | None = None
    option_order: str | None = None
    n_shots: int | None = None
    n_shots_used: int | None = None
    chat: bool | None = None
    verbalizer: str | None = None
    alias: str | None = None
    scoring: str | None = None
    prompt: str | None = None
    request_key: str | None = None
    request_keys: tuple[str, ...] | None = None
    options: tuple[str, ...] | None = None
    option_source: tuple[int, ...] | None = None
    output: str | None = None
    parsed: str | None = None
    parsed_kind: str | None = None
    parsed_option: int | None = None
    correct: bool | None = None
    refused: bool | None = None
    em: float | None = None
    f1: float | None = None
    option_logprobs: tuple[float, ...] | None = None
    option_logprobs_per_token: tuple[float, ...] | None = None
    option_logprobs_per_char: tuple[float, ...] | None = None
    confidence: float | None = None
    sequence_logprob: float | None = None
    approximate: bool | None = None
    truncated: bool | None = None
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    reasoning: str | None = None
    reasoning_chars: int | None = None
    extractor: str | None = None
    gold: tuple[str, ...] | None = None
    gold_options: tuple[int, ...] | None = None
    answerable: bool | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    tags: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def prompt_hash(self) -> str | None:
        return None if self.prompt is None else prompt_hash(self.prompt)

    @classmethod
    def for_trial(
        cls,
        trial: Trial,
        scored: ScoredTrial,
        *,
        run_id: str,
        model: str,
        sample_index: int,
        keys: Sequence[str],
        tags: Mapping[str, Any] | None = None,
    ) -> ResultRow:
        """The row of one sample of ``trial`` on ``model``, scored as ``scored``."""
        cond, item = trial.condition, trial.item
        shown = trial.options is not None
        return cls(
            run_id=run_id,
            model=model,
            item_id=item.id,
            condition=cond.name,
            sample_index=sample_index,
            item_hash=item.hash,
            condition_id=cond.id,
            template=cond.template.name,
            format=cond.format.name,
            option_order=cond.option_order,
            n_shots=cond.shots.n,
            n_shots_used=trial.n_shots_used,
            chat=cond.chat,
            verbalizer=cond.verbalizer_name,
            alias=trial.alias,
            scoring=cond.scoring,
            prompt=trial.transcript,
            request_key=row_key(keys),
            request_keys=tuple(keys),
            options=trial.options if shown else None,
            option_source=trial.option_source if shown else None,
            output=scored.output,
            parsed=scored.parsed,
            parsed_kind=scored.parsed_kind,
            parsed_option=scored.parsed_option,
            correct=scored.correct,
            refused=scored.refused,
            em=scored.em,
            f1=scored.f1,
            option_logprobs=_floats(scored.option_logprobs),
            option_logprobs_per_token=_floats(scored.option_logprobs_per_token),
            option_logprobs_per_char=_floats(scored.option_logprobs_per_char),
            confidence=scored.confidence,
            sequence_logprob=scored.sequence_logprob,
            approximate=scored.approximate,
            truncated=scored.truncated,
            n_input_tokens=scored.n_input_tokens,
            n_output_tokens=scored.n_output_tokens,
            reasoning=scored.reasoning,
            reasoning_chars=None if scored.reasoning is None else len(scored.reasoning),
            extractor=scored.extractor,
            gold=item.gold_texts,
            gold_options=item.gold_options,
            answerable=item.answerable,
            metadata=item.metadata,
            tags={**(tags or {}), **scored.metrics}
            if scored.metrics
            else tags or MappingProxyType({}),
        )


def _floats(values: Sequence[float] | None) -> tuple[float, ...] | None:
    return None if values is None else tuple(values)
