"""Hyperparameters of few-shot methods: each a :class:`Param` with default grid values and a
check; the shared ones (pattern, verbalizer, training settings) are defined here."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._limits import MAX_BATCH_SIZE, MAX_LEARNING_RATE, MAX_TOKENS, MAX_TRAIN_STEPS
from ...items import canonical_json, shorten
from ...train import TrainConfig
from ._tasks import FewShotTask

__all__ = [
    "PATTERN",
    "VERBALIZER",
    "Hparams",
    "Param",
    "as_number",
    "default_shots",
    "float_in",
    "hparams_id",
    "int_in",
    "learning_rate",
    "names_of",
    "one_of",
    "shown",
    "train_config",
    "train_params",
    "verbalizer_names",
]

Hparams = Mapping[str, Any]


def hparams_id(hparams: Hparams) -> str:
    """A short content id (10 hex digits) of a hyperparameter setting."""
    return hashlib.sha256(canonical_json(dict(hparams)).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Param:
    """One hyperparameter a method accepts.

    ``default(task)`` gives its default grid values; ``check(value, task)`` validates one
    value (raising ``ValueError`` with what is allowed) and returns it normalised.
    """

    name: str
    default: Callable[[FewShotTask], list[Any]]
    check: Callable[[Any, FewShotTask], Any]
    doc: str = ""


def names_of(
    kind: str, get: Callable[[FewShotTask], Sequence[str]]
) -> Callable[[Any, FewShotTask], Any]:
    """A check that a value is one of the task's names of ``kind`` (patterns, ...)."""

    def check(value: Any, task: FewShotTask) -> Any:
        allowed = list(get(task))
        if value not in allowed:
            raise ValueError(
                f"{task.name} has no {kind} {shown(value)}; choose from "
                f"{', '.join(map(str, allowed))}"
            )
        return value

    return check


def verbalizer_names(task: FewShotTask) -> list[str]:
    return ["none"] if task.kind == "choice" else list(task.verbalizers)


def shown(value: Any) -> str:
    """``value`` as a message shows it: its ``repr``, cut (a value may be megabytes long)."""
    return shorten(repr(value))


def int_in(minimum: int, maximum: int) -> Callable[[Any, FewShotTask], Any]:
    """A check that a value is an integer in ``minimum..maximum`` (the bound keeps a typo
    such as ``1e30`` steps from starting a run that never ends)."""

    def check(value: Any, task: FewShotTask) -> Any:
        x = as_number(value)
        if x is None or not x.is_integer() or not minimum <= x <= maximum:
            raise ValueError(f"expected an integer in {minimum}..{maximum:,}, got {shown(value)}")
        return int(x)

    return check


def as_number(value: Any) -> float | None:
    """``value`` as a finite float (numbers, and numeric text such as ``"1e-5"``, which YAML
    1.1 reads as a string), or None (also for an integer too large for a float)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if len(value) > 100:
            return None
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    try:
        x = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return x if math.isfinite(x) else None


def float_in(
    low: float, high: float, *, open_low: bool = False
) -> Callable[[Any, FewShotTask], Any]:
    """A check that a value is a number in ``[low, high]`` (``(low, high]`` if ``open_low``)."""

    def check(value: Any, task: FewShotTask) -> Any:
        x = as_number(value)
        if x is None or x > high or x < low or (open_low and x == low):
            bracket = "(" if open_low else "["
            raise ValueError(
                f"expected a number in {bracket}{low:g}, {high:g}], got {shown(value)}"
            )
        return x

    return check


def learning_rate(value: Any, task: FewShotTask) -> Any:
    """A check that a value is a peak learning rate: a number in ``(0, MAX_LEARNING_RATE]``."""
    x = as_number(value)
    if x is None or not 0 < x <= MAX_LEARNING_RATE:
        raise ValueError(
            f"expected a positive number up to {MAX_LEARNING_RATE:g}, got {shown(value)}"
        )
    return x


def one_of(*allowed: str) -> Callable[[Any, FewShotTask], Any]:
    def check(value: Any, task: FewShotTask) -> Any:
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {shown(value)}")
        return value

    return check


PATTERN = Param(
    "pattern",
    lambda t: list(t.patterns)[:2],
    names_of("pattern", lambda t: list(t.patterns)),
    "a pattern name of the task (its [Y] slot is where the answer goes)",
)
VERBALIZER = Param(
    "verbalizer",
    lambda t: verbalizer_names(t)[:1],
    names_of("verbalizer", verbalizer_names),
    "a verbalizer name of the task (choice tasks: none)",
)


def default_shots(task: FewShotTask) -> list[Any]:
    # Four settings for every task: 2 patterns x 2 verbalizers x 3 shots, or (COPA, which
    # has no verbalizer) 2 patterns x 2 shot counts.
    return [3] if len(verbalizer_names(task)) > 1 else [2, 4]


def train_params(lrs: list[float]) -> dict[str, Param]:
    """The settings every fine-tuning method has (learning rates: ``lrs`` by default)."""
    return {
        "learning_rate": Param(
            "learning_rate", lambda t: list(lrs), learning_rate, "peak AdamW learning rate"
        ),
        "steps": Param("steps", lambda t: [30], int_in(1, MAX_TRAIN_STEPS), "optimiser steps"),
        "batch_size": Param(
            "batch_size", lambda t: [4], int_in(1, MAX_BATCH_SIZE), "examples per step"
        ),
        "eval_every": Param(
            "eval_every",
            lambda t: [10],
            int_in(0, MAX_TRAIN_STEPS),
            "dev evaluation frequency for best-dev checkpointing (0: last)",
        ),
        "patience": Param(
            "patience",
            lambda t: [0],
            int_in(0, MAX_TRAIN_STEPS),
            "early stopping: evaluations without a better dev score before training stops "
            "(0: never stop early)",
        ),
        "max_length": Param("max_length", lambda t: [128], int_in(8, MAX_TOKENS), "input tokens"),
    }


def train_config(h: Hparams, device: str) -> TrainConfig:
    return TrainConfig(
        learning_rate=float(h["learning_rate"]),
        steps=int(h["steps"]),
        batch_size=int(h["batch_size"]),
        eval_every=int(h["eval_every"]),
        max_length=int(h["max_length"]),
        device=device,
        patience=int(h.get("patience", 0)),
    )
