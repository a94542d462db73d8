"""The run's plan: each trial's requests keyed and deduplicated across trials and models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..requests import Request, request_key

if TYPE_CHECKING:
    from ..conditions import Trial

__all__ = ["Plan", "PlannedTrial", "build_plan"]


@dataclass(frozen=True)
class PlannedTrial:
    """A trial for one model, with the keys of its requests (in the order its scoring mode
    asked for them)."""

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


def build_plan(units: Sequence[tuple[str, str, Trial, Sequence[Request]]]) -> Plan:
    """Plan ``(model name, model fingerprint, trial, the trial's requests)`` units: key every
    request and dedupe by key (a key names one model's answer to one request)."""
    planned: list[PlannedTrial] = []
    unique: dict[str, tuple[str, Request]] = {}
    total = 0
    for model, fp, trial, reqs in units:
        keys = tuple(request_key(fp, r) for r in reqs)
        total += len(reqs)
        for k, r in zip(keys, reqs, strict=True):
            unique.setdefault(k, (model, r))
        planned.append(PlannedTrial(trial=trial, model=model, keys=keys))
    return Plan(trials=tuple(planned), unique=unique, n_requests=total)
