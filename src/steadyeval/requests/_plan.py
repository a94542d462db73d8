"""Turn trials into requests, key them and deduplicate them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..conditions import Trial
from ._request import GenerateRequest, Request, ScoreRequest, TopKRequest, request_key

__all__ = ["Plan", "PlannedTrial", "build_plan", "requests_for"]


def requests_for(trial: Trial) -> tuple[Request, ...]:
    """The requests a trial needs, in a fixed order (options in displayed order)."""
    cond = trial.condition
    if cond.scoring == "generate":
        gen = cond.generation
        n = 1 if gen.temperature == 0 else gen.n_samples
        return tuple(
            GenerateRequest(
                prompt=trial.prompt,
                max_new_tokens=gen.max_new_tokens,
                temperature=gen.temperature,
                top_p=gen.top_p,
                stop=gen.stop,
                sample_index=i,
                seed=gen.seed,
                chat=cond.chat,
                system=cond.system,
            )
            for i in range(n)
        )
    if cond.scoring == "prompt-logprob":
        # The log-probability of the rendered prompt itself (empty context): used for
        # memorisation checks.
        return (ScoreRequest(context="", continuation=trial.prompt, chat=False),)
    if cond.scoring == "top-k":
        candidates = tuple(trial.item.options or ()) if cond.candidates == "options" else ()
        return (
            TopKRequest(
                prompt=trial.prompt,
                k=cond.top_k,
                chat=cond.chat,
                system=cond.system,
                candidates=candidates,
            ),
        )
    assert trial.options is not None
    prefix = cond.format.continuation_prefix
    if cond.scoring == "option-logprob":
        conts = [prefix + o for o in trial.options]
    else:
        conts = [prefix + lab for lab in trial.labels]
    return tuple(
        ScoreRequest(context=trial.prompt, continuation=c, chat=cond.chat, system=cond.system)
        for c in conts
    )


@dataclass(frozen=True)
class PlannedTrial:
    """A trial for one model, with the keys of its requests (in ``requests_for`` order)."""

    trial: Trial
    model: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Every (trial, model) with its request keys, and the unique requests to send."""

    trials: tuple[PlannedTrial, ...]
    unique: dict[str, tuple[str, Request]]  # key -> (model name, request)
    n_requests: int

    @property
    def n_unique(self) -> int:
        return len(self.unique)


def build_plan(trials: Sequence[Trial], fingerprints: dict[str, str]) -> Plan:
    """Plan ``trials`` for every model (``{model name: fingerprint}``); dedupe by key."""
    planned: list[PlannedTrial] = []
    unique: dict[str, tuple[str, Request]] = {}
    total = 0
    for model, fp in fingerprints.items():
        for trial in trials:
            reqs = requests_for(trial)
            keys = tuple(request_key(fp, r) for r in reqs)
            total += len(reqs)
            for k, r in zip(keys, reqs, strict=True):
                unique.setdefault(k, (model, r))
            planned.append(PlannedTrial(trial=trial, model=model, keys=keys))
    return Plan(trials=tuple(planned), unique=unique, n_requests=total)
