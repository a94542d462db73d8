"""PET's distillation into a sequence classifier (Schick & Schütze, 2021, "Exploiting Cloze
Questions for Few Shot Text Classification and Natural Language Inference"; timoschick/pet
``pet/modeling.py``, commit 21d32de): the option scores an ensemble of PET models gives the
unlabelled pool are merged into one score per option, a mean weighted by each model's
accuracy on the labelled train part *before* training (``reduction='wmean'``, PET's
default; ``mean``: unweighted), turned into soft labels ``softmax(merged / T)`` and
distilled into a fresh ``AutoModelForSequenceClassification`` trained on the soft-labelled
pool alone with ``T**2 * KL``. Full PET (``pet-full``) and iPET with ``final: classifier``
end this way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._errors import ConfigError
from ...items import Item
from ...run import Block
from ...train import ClsExample, TrainOutcome, score_masked, train_cls
from . import _methods  # noqa: F401  (first: loading it fills the method registry)
from ._builtin import CLSMethod, classifier_condition, classifier_items, n_labels, trained_model
from ._methods import MethodContext, Unit, condition_name, pattern_template
from ._params import Hparams, train_config
from ._tasks import FewShotTask
from ._trainers import prompt_examples

__all__ = [
    "classifier_block",
    "merge_scores",
    "pool_hash",
    "train_on_soft_labels",
    "zero_shot_accuracy",
]


def merge_scores(
    scores: Sequence[np.ndarray] | Sequence[Sequence[Sequence[float]]],
    weights: Sequence[float] | None,
    temperature: float,
) -> np.ndarray:
    """The ensemble's soft labels: ``softmax(merged / temperature)`` per example, where
    ``merged`` is the members' scores (members × examples × options) averaged with
    ``weights`` (None: unweighted).

    As timoschick/pet does it: ``merge_logits_lists`` (``pet/modeling.py``, lines 579-600)
    averages the members' *logits* (``np.average(..., weights=...)``), and
    ``distillation_loss`` (``pet/utils.py``, line 341) takes ``softmax(targets / T)`` of the
    result: the scores are averaged before the softmax, not the members' probabilities.
    A member's score per option may be shifted by a constant per example (a log-probability
    instead of a logit) without changing the result.

    Raises
    ------
    ConfigError
        Weights that sum to 0 (every member wrong on every train example before training:
        PET's ``np.average`` fails there too), or members of different shapes.
    """
    arr = np.asarray([np.asarray(s, dtype=float) for s in scores])
    if arr.ndim != 3 or not arr.size:
        raise ConfigError(
            f"merge_scores: expected members x examples x options scores; got shape {arr.shape}"
        )
    if weights is None:
        merged = arr.mean(axis=0)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (arr.shape[0],) or not np.all(w >= 0) or not w.sum() > 0:
            raise ConfigError(
                f"PET's weighted mean (reduction wmean) needs one weight >= 0 per model, "
                f"not all 0; got {w.tolist()} (every model scored 0 on the train part before "
                "training): use reduction: mean"
            )
        merged = np.average(arr, axis=0, weights=w)
    z = merged / float(temperature)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    probs: np.ndarray = z / z.sum(axis=1, keepdims=True)
    return probs


def pool_hash(items: Sequence[Item]) -> str:
    """The content hash of an ordered pool of unlabelled items (part of a recipe)."""
    return hashlib.sha256("".join(i.hash for i in items).encode()).hexdigest()


def zero_shot_accuracy(
    ctx: MethodContext, task: FewShotTask, h: Hparams, items: Sequence[Item]
) -> float:
    """The untrained base model's accuracy on ``items`` with the pattern and verbalizer of
    ``h``: PET's weight of a model in ``wmean`` (``train_set_before_training``, computed
    before the model trains, ``pet/modeling.py`` lines 433-434, read back in
    ``merge_logits``, lines 557-562). Cached per run."""
    key = (
        "zero-shot-accuracy", ctx.base.fingerprint(), task.name, h["pattern"], h["verbalizer"],
        int(h["max_length"]), tuple(i.hash for i in items),
    )  # fmt: skip
    if key not in ctx.cache:
        examples = prompt_examples(task, h, pattern_template(task, h), items)
        scores = score_masked(
            ctx.base_dir(), examples, max_length=int(h["max_length"]), device=ctx.device
        )
        hits = [int(np.argmax(s)) == ex.gold for s, ex in zip(scores, examples, strict=True)]
        ctx.cache[key] = sum(hits) / len(hits) if hits else 0.0
    return float(ctx.cache[key])


def train_on_soft_labels(
    ctx: MethodContext,
    task: FewShotTask,
    h: Hparams,
    pool: Sequence[Item],
    soft: np.ndarray,
    dev: Sequence[Item],
    seed: int,
    out: Path,
) -> TrainOutcome:
    """PET's final classifier: a new classification head on the base model, trained on the
    soft-labelled pool alone (``use_logits``: the unlabelled set replaces the training set,
    ``pet/wrapper.py`` lines 246-247) with ``T**2 * KL(soft || softmax(logits / T))``,
    ``T = h["temperature"]``; best-dev weights kept on ``dev`` as for CLS."""
    if len(pool) != len(soft):
        raise ValueError(f"{len(pool)} pool items but {len(soft)} soft labels")
    train = [
        ClsExample(task.cls_inputs(i), int(np.argmax(q)), tuple(float(p) for p in q))
        for i, q in zip(pool, soft, strict=True)
    ]
    return train_cls(
        ctx.base_dir(),
        train,
        CLSMethod.examples(task, dev),
        train_config(h, ctx.device),
        n_labels=n_labels(task),
        seed=seed,
        out_dir=out,
        temperature=float(h["temperature"]),
    )


def classifier_block(
    ctx: MethodContext,
    unit: Unit,
    method: str,
    train: Callable[[Path], TrainOutcome],
    recipe: Mapping[str, Any],
) -> Block:
    """The unit's block when its model is a distilled classifier: the items with their text
    pairs, the classifier condition, the checkpoint served by ``hf-classifier``."""
    model = trained_model(
        ctx, unit, method, "hf-classifier", train, kinds=frozenset({"classify"}), recipe=recipe
    )
    condition = classifier_condition(condition_name(method, unit.task.key, unit.hparams))
    return Block(classifier_items(unit), [condition], [model])
