"""Full PET (``pet-full``): an ensemble of PET models, one per pattern × seed, whose merged
soft labels on the unlabelled pool are distilled into a sequence classifier, as
timoschick/pet's ``train_pet`` does it (``pet/modeling.py`` lines 216-269, commit 21d32de):
step 1 trains the ensemble, step 2 merges its logits on the unlabelled data (``wmean``),
step 3 trains the final ``SEQUENCE_CLASSIFIER_WRAPPER`` model with ``use_logits``. See
:mod:`._distil` for the merge and the classifier's loss.

Each member is exactly the ``pet`` method's checkpoint for its pattern and seed (the same
recipe), so a run of ``pet`` and ``pet-full`` trains each PET model once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..._errors import ConfigError
from ...items import Item
from ...run import Block
from ...train import TrainOutcome, checkpoint_key, score_masked
from ._committee import merge_scores
from ._methods import MethodContext, Unit, items_hash, register_method, require_trainable
from ._params import VERBALIZER, Param, float_in, int_in, one_of, train_params

if TYPE_CHECKING:
    from ._builtin import PETMethod

__all__ = ["PETFullMethod"]

#: How the ensemble's scores are merged (timoschick/pet ``cli.py``'s ``--reduction``, line 122).
REDUCTIONS = ("wmean", "mean")


def _pet() -> PETMethod:
    """The ``pet`` method (imported on use: this module loads while the registry fills)."""
    from ._builtin import PETMethod

    return PETMethod()


class PETFullMethod:
    """Full PET: an ensemble of PET models distilled into a classifier (module docstring).

    Every pattern of the task × ``ensemble_seeds`` seeds (``unit.seed + s``) is a ``pet``
    model trained on the unit's train part (selected on its dev part); their option scores
    on the first ``unlabelled_size`` unlabelled examples are merged (``reduction``) into soft
    labels at ``temperature``; a classifier trained on them alone is the unit's model,
    served by ``hf-classifier`` like ``cls``'s.
    """

    name = "pet-full"
    uses_unlabelled = True
    params: Mapping[str, Param] = {
        "verbalizer": VERBALIZER,
        **train_params([1e-5, 1e-4]),
        "ensemble_seeds": Param(
            "ensemble_seeds", lambda t: [3], int_in(1, 100),
            "PET models per pattern (seeds; timoschick/pet's --pet_repetitions, 3)",
        ),
        "temperature": Param(
            "temperature", lambda t: [2.0], float_in(0.0, 1e6, open_low=True),
            "distillation temperature (timoschick/pet's --temperature, 2)",
        ),
        "reduction": Param(
            "reduction", lambda t: ["wmean"], one_of(*REDUCTIONS),
            "merging the ensemble's scores: wmean (weights: each model's train accuracy "
            "before training) or mean",
        ),
        "unlabelled_size": Param(
            "unlabelled_size", lambda t: [200], int_in(1, 10_000_000),
            "unlabelled examples used (the first of a seeded order)",
        ),
    }  # fmt: skip

    def members(self, unit: Unit) -> list[Unit]:
        """The ensemble's units: every pattern × seed, each with ``pet``'s hyperparameters
        (so that its recipe is ``pet``'s)."""
        h = unit.hparams
        shared = {k: h[k] for k in _pet().params if k != "pattern"}
        return [
            dataclasses.replace(
                unit, hparams={**shared, "pattern": p}, seed=unit.seed + s, unlabelled=()
            )
            for p in unit.task.patterns
            for s in range(int(h["ensemble_seeds"]))
        ]

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        from ._distil import classifier_block

        require_trainable(ctx, self.name, masked=True)
        h = unit.hparams
        pool = unit.unlabelled[: int(h["unlabelled_size"])]
        if not pool:
            raise ConfigError(f"method {self.name}: {unit.task.name} has no unlabelled examples")
        members = self.members(unit)
        keys = [checkpoint_key(ctx.recipe(m, "pet")) for m in members]

        def train(out: Path) -> TrainOutcome:
            from ._distil import train_on_soft_labels
            from ._trainers import zero_shot_accuracy

            scores = [
                self._pool_scores(m, key, pool, ctx) for m, key in zip(members, keys, strict=True)
            ]
            weights = (
                [zero_shot_accuracy(ctx, unit.task, m.hparams, unit.train) for m in members]
                if h["reduction"] == "wmean"
                else None
            )
            soft = merge_scores(scores, weights, float(h["temperature"]))
            return train_on_soft_labels(ctx, unit.task, h, pool, soft, unit.dev, unit.seed, out)

        recipe = {"teachers": keys, "pool": items_hash(pool)}
        return classifier_block(ctx, unit, self.name, train, recipe)

    def _pool_scores(
        self, member: Unit, key: str, pool: Sequence[Item], ctx: MethodContext
    ) -> np.ndarray:
        """The member's option scores on the pool (its checkpoint trained, or found, first)."""

        cached = ("pool-scores", key, items_hash(pool))
        if cached not in ctx.cache:
            pet = _pet()
            path = ctx.store.get_or_train(
                key, ctx.recipe(member, pet.name), pet.trainer(member, ctx)
            ).path
            h = member.hparams
            examples = pet.examples(member.task, h, pool)
            ctx.cache[cached] = np.asarray(
                score_masked(path, examples, max_length=int(h["max_length"]), device=ctx.device)
            )
        return np.asarray(ctx.cache[cached])


register_method(PETFullMethod())
