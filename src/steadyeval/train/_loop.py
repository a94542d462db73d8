"""The seeded fine-tuning loop shared by PET and CLS, with best-dev checkpoint selection."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigError
from .._limits import (
    DEVICE_PATTERN,
    MAX_BATCH_SIZE,
    MAX_LEARNING_RATE,
    MAX_TOKENS,
    MAX_TRAIN_STEPS,
)
from ..items import shorten
from ._checkpoint import TrainOutcome

__all__ = ["TrainConfig", "fit", "resolve_device"]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (every field changes the trained weights, except ``device``).

    Parameters
    ----------
    learning_rate : float
        Peak AdamW learning rate; it decays linearly to 0 at ``steps``.
    steps : int
        Optimiser steps (batches), drawn from a seeded reshuffle of the training set each
        epoch.
    batch_size : int
        Training examples per step.
    eval_every : int
        Evaluate on the dev set every this many steps (and after the last step) and keep the
        weights with the best dev score (earliest on ties). 0: evaluate once, at the end.
    weight_decay : float
        AdamW weight decay (not applied to biases and LayerNorm weights).
    warmup_steps : int
        Linear warm-up steps.
    max_length : int
        Tokens per input; longer inputs are truncated (see the method's encoder).
    max_grad_norm : float
        Gradient clipping norm (0 disables clipping).
    device : str
        ``auto`` (CUDA when available), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
    patience : int
        Early stopping (needs ``eval_every > 0``): stop once this many evaluations in a row
        have not improved on the best dev score; the best-dev weights are kept as always.
        0 (the default) never stops early. The learning-rate schedule still spans ``steps``.

    Raises
    ------
    ConfigError
        A setting of the wrong type or out of range (the bounds of
        :mod:`steadyeval._limits`: a run that would never end is refused before it starts).
    """

    learning_rate: float = 1e-5
    steps: int = 250
    batch_size: int = 4
    eval_every: int = 0
    weight_decay: float = 0.01
    warmup_steps: int = 0
    max_length: int = 256
    max_grad_norm: float = 1.0
    device: str = "auto"
    patience: int = 0

    def __post_init__(self) -> None:
        ints = ("steps", "batch_size", "eval_every", "warmup_steps", "max_length", "patience")
        for k in ints:
            value = getattr(self, k)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(
                    f"training setting {k}={shorten(repr(value))}: expected an integer"
                )
        for k in ("learning_rate", "weight_decay", "max_grad_norm"):
            value = getattr(self, k)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"training setting {k}={shorten(repr(value))}: expected a number")
        checks = {
            "learning_rate": 0 < self.learning_rate <= MAX_LEARNING_RATE,
            "steps": 1 <= self.steps <= MAX_TRAIN_STEPS,
            "batch_size": 1 <= self.batch_size <= MAX_BATCH_SIZE,
            "eval_every": 0 <= self.eval_every <= MAX_TRAIN_STEPS,
            "weight_decay": 0 <= self.weight_decay < math.inf,
            "warmup_steps": 0 <= self.warmup_steps < self.steps,
            "max_length": 8 <= self.max_length <= MAX_TOKENS,
            "max_grad_norm": 0 <= self.max_grad_norm < math.inf,
            "patience": 0 <= self.patience <= MAX_TRAIN_STEPS
            and (self.patience == 0 or self.eval_every > 0),
            "device": re.fullmatch(DEVICE_PATTERN, self.device) is not None,
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            k = bad[0]
            raise ConfigError(
                f"training setting {k}={shorten(repr(getattr(self, k)))} is out of range "
                f"(0 < learning_rate <= {MAX_LEARNING_RATE:g}; 1 <= steps <= {MAX_TRAIN_STEPS:,}; "
                f"1 <= batch_size <= {MAX_BATCH_SIZE:,}; eval_every, patience in "
                f"0..{MAX_TRAIN_STEPS:,}; weight_decay, max_grad_norm finite and >= 0; "
                f"0 <= warmup_steps < steps; 8 <= max_length <= {MAX_TOKENS:,}; patience > 0 "
                "needs eval_every > 0; device auto, cpu, cuda, cuda:N or mps)"
            )

    def fingerprint(self) -> dict[str, Any]:
        """The fields that change the weights (everything but ``device``; ``patience`` only
        when set, so that keys made before it existed stay valid)."""
        out: dict[str, Any] = {
            "learning_rate": self.learning_rate,
            "steps": self.steps,
            "batch_size": self.batch_size,
            "eval_every": self.eval_every,
            "weight_decay": self.weight_decay,
            "warmup_steps": self.warmup_steps,
            "max_length": self.max_length,
            "max_grad_norm": self.max_grad_norm,
        }
        if self.patience:
            out["patience"] = self.patience
        return out


def resolve_device(device: str) -> str:
    """The torch device ``device`` names (``auto``: CUDA when available, else the CPU), or a
    :class:`ConfigError` when this machine has no such device (imports torch)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if re.fullmatch(DEVICE_PATTERN, device) is None:
        raise ConfigError(
            f"device {shorten(repr(device))}: expected auto, cpu, cuda, cuda:N or mps"
        )
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            raise ConfigError(
                f"device {device!r}: torch sees {count} CUDA device(s) here; use --device "
                "cpu (or auto)"
            )
    elif device == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device 'mps': torch sees no MPS device here; use --device cpu")
    return device


def _param_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    decay: list[Any] = []
    no_decay: list[Any] = []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def fit(
    model: Any,
    loss_fn: Callable[[list[int]], Any],
    n_train: int,
    evaluate: Callable[[], float] | None,
    config: TrainConfig,
    *,
    seed: int,
) -> TrainOutcome:
    """Train ``model`` in place; with ``evaluate``, leave it holding the best-dev weights.

    ``loss_fn(indices)`` returns the mean loss over those training examples. Dropout and
    batch order are seeded from ``seed``; the callers' global RNG state is restored after.
    With ``config.patience``, training stops after that many evaluations without a new best.
    """
    import torch

    if n_train < 1:
        raise ValueError("no training examples")
    device = next(model.parameters()).device
    devices = [device.index or 0] if device.type == "cuda" else []
    optimizer = torch.optim.AdamW(
        _param_groups(model, config.weight_decay), lr=config.learning_rate
    )

    def schedule(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / (config.warmup_steps + 1)
        span = max(1, config.steps - config.warmup_steps)
        return max(0.0, (config.steps - step) / span)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    history: list[tuple[int, float]] = []
    best: tuple[float, int, dict[str, Any]] | None = None
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        order_gen = torch.Generator().manual_seed(seed)
        queue: list[int] = []
        for step in range(1, config.steps + 1):
            batch: list[int] = []
            while len(batch) < min(config.batch_size, n_train):
                if not queue:
                    queue = torch.randperm(n_train, generator=order_gen).tolist()
                batch.append(queue.pop(0))
            model.train()
            loss = loss_fn(batch)
            loss.backward()
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            due = step == config.steps or (config.eval_every > 0 and step % config.eval_every == 0)
            if evaluate is not None and due:
                model.eval()
                with torch.no_grad():
                    score = float(evaluate())
                history.append((step, score))
                if best is None or score > best[0]:
                    state = {
                        k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()
                    }
                    best = (score, step, state)
                best_step = best[1] if best is not None else 0
                stale = sum(1 for at, _ in history if at > best_step)
                if config.patience and stale >= config.patience:
                    break
    model.eval()
    if best is None:
        return TrainOutcome(best_step=config.steps, best_dev=None, history=())
    model.load_state_dict(best[2])
    return TrainOutcome(best_step=best[1], best_dev=best[0], history=tuple(history))
