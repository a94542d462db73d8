"""Scoring an Inspect task's generated answers with the task's own scorer (the ``inspect``
scoring mode).

An item read from an Inspect task whose scorer is ``match`` or ``includes`` records that
scorer and its options (``metadata["inspect_scorer"]``, ``inspect_location``,
``inspect_ignore_case``, ``inspect_numeric``). This mode generates an answer as ``generate``
does, then asks that very scorer, built by inspect_ai with the recorded options, whether the
answer matches the item's targets: Inspect's own rules (the answer's end, numbers compared
as numbers, case and punctuation), not a re-implementation of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .._extras import require
from ..conditions import ScoredTrial, ScoringMode, register_scoring
from ..requests import GenerateResponse, Request, Response
from ._builtin import Generate
from ._extract import split_reasoning

if TYPE_CHECKING:
    from ..conditions import Condition, Trial
    from ..items import Item

__all__ = ["INSPECT", "InspectScorer", "inspect_verdict"]

INSPECT = "inspect"
#: Generation as the built-in ``generate`` mode asks for it.
_GENERATE = Generate()
#: The Inspect scorers this mode runs, and the recorded options each takes.
_OPTIONS = {"match": ("location", "ignore_case", "numeric"), "includes": ("ignore_case",)}


def _scorer(metadata: Mapping[str, Any]) -> Any:
    """The item's Inspect scorer, built by inspect_ai with its recorded options (once for
    each scorer and options, not once a row)."""
    name = str(metadata["inspect_scorer"])
    options = tuple(
        (k, metadata[f"inspect_{k}"]) for k in _OPTIONS[name] if f"inspect_{k}" in metadata
    )
    return _built(name, options)


@lru_cache(maxsize=64)
def _built(name: str, options: tuple[tuple[str, Any], ...]) -> Any:
    from inspect_ai import scorer as inspect_scorers

    return getattr(inspect_scorers, name)(**dict(options))


def inspect_verdict(answer: str, targets: Sequence[str], metadata: Mapping[str, Any]) -> Any:
    """Inspect's own ``Score`` of ``answer`` against ``targets`` under the scorer the item
    records."""
    from inspect_ai.model import ChatMessageUser, ModelName, ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    state = TaskState(
        model=ModelName("steadyeval/answer"),
        sample_id=0,
        epoch=1,
        input="",
        messages=[ChatMessageUser(content="")],
        output=ModelOutput.from_content(model="steadyeval/answer", content=answer),
    )
    return asyncio.run(_scorer(metadata)(state, Target(list(targets))))


class InspectScorer(ScoringMode):
    """Generate, then score with the item's Inspect scorer (see the module's text)."""

    name = INSPECT
    doc = "generate, then the Inspect task's own match or includes scorer"

    def check(self, condition: Condition) -> None:
        super().check(condition)
        require("scoring 'inspect' conditions", "inspect_ai", extra="inspect")

    def skip_reason(self, item: Item, condition: Condition) -> str | None:
        if item.metadata.get("inspect_scorer") not in _OPTIONS:
            return "item has no Inspect match/includes scorer (scoring inspect)"
        return None

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        return _GENERATE.requests(trial)

    def samples(self, n_requests: int) -> list[range]:
        return _GENERATE.samples(n_requests)

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, GenerateResponse)
        answer, reasoning = split_reasoning(resp.text, resp.reasoning)
        verdict = inspect_verdict(answer, trial.item.gold_texts, trial.item.metadata)
        correct = verdict.value == "C"
        return ScoredTrial(
            output=resp.text,
            parsed=str(verdict.answer) if verdict.answer is not None else None,
            parsed_kind="free",
            correct=correct,
            em=float(correct),
            truncated=resp.truncated,
            n_input_tokens=resp.n_input_tokens,
            reasoning=reasoning,
            extractor=f"inspect:{trial.item.metadata['inspect_scorer']}",
            n_output_tokens=resp.n_output_tokens,
        )


register_scoring(InspectScorer())
