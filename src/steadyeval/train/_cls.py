"""CLS: fine-tuning a classification head on an encoder (the FewNLU baseline)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._extras import HF_MODEL_MODULES, require
from ..models import classifier_logits, import_transformers, loading_weights
from ._checkpoint import TrainOutcome
from ._loop import TrainConfig, fit, resolve_device
from ._pet import effective_max_length, quiet_transformers, save_checkpoint

__all__ = ["ClsExample", "cls_loss", "train_cls"]


@dataclass(frozen=True)
class ClsExample:
    """One example for a classification head.

    ``inputs`` holds one text segment pair per *input*: a classification task has one pair
    and ``n_labels`` classes; a choice task (COPA) has one pair per choice and the head
    scores each pair (a multiple-choice head). ``b`` may be None for single-text inputs.
    ``soft``, when given, is a target distribution over the classes (or choices), e.g. a PET
    ensemble's soft label: the example is then trained by distillation (see
    :func:`train_cls`) and ``gold`` is only its most likely class.
    """

    inputs: tuple[tuple[str, str | None], ...]
    gold: int
    soft: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple((a, b) for a, b in self.inputs))
        if not self.inputs:
            raise ValueError("a CLS example needs at least one input")
        if self.soft is not None:
            soft = tuple(float(p) for p in self.soft)
            if not soft or any(not 0.0 <= p <= 1.0 for p in soft) or abs(sum(soft) - 1) > 1e-6:
                raise ValueError(
                    f"a CLS example's soft label must be probabilities summing to 1; got {soft[:8]}"
                )
            object.__setattr__(self, "soft", soft)


def _load(base: str | Path, n_labels: int | None, seed: int) -> tuple[Any, Any]:
    import torch

    import_transformers()  # its first import under the loading lock
    from transformers import (
        AutoModelForMultipleChoice,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(base)
        with loading_weights(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # the new head's initialisation
            if n_labels is None:
                model = AutoModelForMultipleChoice.from_pretrained(base, dtype=torch.float32)
            else:
                model = AutoModelForSequenceClassification.from_pretrained(
                    base, num_labels=n_labels, dtype=torch.float32
                )
    return tokenizer, model


class _Encoder:
    """Encodes examples' text pairs the way the ``hf-classifier`` backend does."""

    def __init__(self, tokenizer: Any, max_length: int, choice: bool) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.choice = choice

    def logits(self, model: Any, examples: Sequence[ClsExample]) -> Any:
        logits, _, _ = classifier_logits(
            model,
            self.tokenizer,
            [ex.inputs for ex in examples],
            max_length=self.max_length,
            choices=self.choice,
        )
        return logits


def _check(examples: Sequence[ClsExample], n_labels: int | None, where: str) -> None:
    for i, ex in enumerate(examples):
        if n_labels is None:
            width = len(examples[0].inputs)
            if len(ex.inputs) != width:
                raise ValueError(
                    f"{where} example {i}: {len(ex.inputs)} choices, expected {width} "
                    "(a multiple-choice head needs the same number of choices everywhere)"
                )
            top = width
        else:
            if len(ex.inputs) != 1:
                raise ValueError(f"{where} example {i}: a classification input has one pair")
            top = n_labels
        if not 0 <= ex.gold < top:
            raise ValueError(f"{where} example {i}: gold {ex.gold} outside 0..{top - 1}")
        if ex.soft is not None and len(ex.soft) != top:
            raise ValueError(
                f"{where} example {i}: a soft label over {len(ex.soft)} classes, expected {top}"
            )


def train_cls(
    base: str | Path,
    train: Sequence[ClsExample],
    dev: Sequence[ClsExample],
    config: TrainConfig,
    *,
    n_labels: int | None,
    seed: int,
    out_dir: str | Path,
    temperature: float = 1.0,
) -> TrainOutcome:
    """Fine-tune ``base`` with a new classification head and save it to ``out_dir``.

    ``n_labels`` classes on one input per example (``AutoModelForSequenceClassification``),
    or, with ``n_labels=None``, a multiple-choice head over each example's inputs
    (``AutoModelForMultipleChoice``). Cross-entropy loss; best-dev (accuracy) weights kept
    as in :func:`steadyeval.train.train_pet`. The head is initialised from ``seed``. The
    saved checkpoint is an ``hf-classifier`` model (``hf-classifier:FOLDER?max_length=N``).

    An example with a ``soft`` label is trained by knowledge distillation as PET trains its
    final classifier: ``temperature**2 * KL(soft || softmax(logits / temperature))``
    (``distillation_loss`` in timoschick/pet ``pet/utils.py``), averaged over the batch with
    the other examples' cross-entropy. ``temperature`` changes nothing for hard examples.
    """
    require("fine-tuning runs", *HF_MODEL_MODULES)
    import torch

    if isinstance(temperature, bool) or not 0 < float(temperature) < math.inf:
        raise ValueError(f"temperature must be a positive number; got {temperature!r}")
    train_list, dev_list = list(train), list(dev)
    _check(train_list, n_labels, "train")
    _check(dev_list, n_labels, "dev")
    tokenizer, model = _load(base, n_labels, seed)
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    enc = _Encoder(tokenizer, max_length, n_labels is None)

    def loss_fn(indices: list[int]) -> Any:
        batch = [train_list[i] for i in indices]
        logits = enc.logits(model, batch)
        if all(ex.soft is None for ex in batch):
            gold = torch.tensor([ex.gold for ex in batch], device=logits.device)
            return torch.nn.functional.cross_entropy(logits.float(), gold)
        return cls_loss(logits.float(), batch, float(temperature))

    def evaluate() -> float:
        preds = _predict(model, enc, dev_list)
        hits = [
            int(max(range(len(p)), key=lambda j: (p[j], -j))) == ex.gold
            for p, ex in zip(preds, dev_list, strict=True)
        ]
        return sum(hits) / len(hits)

    outcome = fit(
        model, loss_fn, len(train_list), evaluate if dev_list else None, config, seed=seed
    )
    return save_checkpoint(model, tokenizer, out_dir, outcome, max_length)


def cls_loss(logits: Any, examples: Sequence[ClsExample], temperature: float) -> Any:
    """The batch's mean loss: cross-entropy for a hard example; for a soft one PET's
    distillation loss, ``T**2 * KL(soft || softmax(logits / T))`` (timoschick/pet
    ``pet/utils.py`` ``distillation_loss``: its ``kl_div(..., reduction='sum') * T**2 /
    batch`` is this, averaged)."""
    import torch

    losses = []
    for z, ex in zip(logits, examples, strict=True):
        if ex.soft is None:
            losses.append(-torch.log_softmax(z, dim=-1)[ex.gold])
            continue
        target = torch.tensor(ex.soft, dtype=z.dtype, device=z.device)
        logp = torch.log_softmax(z / temperature, dim=-1)
        kl = torch.nn.functional.kl_div(logp, target, reduction="sum")
        losses.append(kl * temperature**2)
    return torch.stack(losses).mean()


def _predict(model: Any, enc: _Encoder, examples: Sequence[ClsExample]) -> list[list[float]]:
    import torch

    out: list[list[float]] = []
    for start in range(0, len(examples), 32):
        logits = enc.logits(model, examples[start : start + 32])
        logp = torch.log_softmax(logits.float(), dim=-1).cpu()
        out.extend([float(x) for x in row] for row in logp)
    return out
