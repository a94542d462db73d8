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

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...items import Item
from ...run import Block
from ...train import ClsExample, TrainOutcome, train_cls
from . import _methods  # noqa: F401  (first: loading it fills the method registry)
from ._builtin import CLSMethod, classifier_condition, classifier_items, n_labels, trained_model
from ._methods import MethodContext, Unit, condition_name
from ._params import Hparams, train_config
from ._tasks import FewShotTask

__all__ = ["classifier_block", "train_on_soft_labels"]


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
