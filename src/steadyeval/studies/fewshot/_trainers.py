"""The prompt-based base methods a combination builds on: PET, ADAPET and P-tuning. Each
renders a unit's items as ``[Y]`` prompts with its own template and trains a checkpoint that
an ordinary backend serves (``hf-masked``, or ``hf-causal`` for P-tuning on a causal LM)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

import numpy as np

from ..._errors import ConfigError
from ...conditions import Template, expand
from ...items import Item
from ...train import Noise, PromptExample, TrainConfig, TrainOutcome, score_masked, train_pet
from ._methods import (
    MethodContext,
    items_hash,
    pattern_template,
    slot_condition,
    split_pattern,
    task_verbalizer,
    verbalize,
)
from ._params import PATTERN, VERBALIZER, Hparams, Param, float_in, int_in, train_params
from ._tasks import FewShotTask

__all__ = [
    "BASES",
    "BaseTrainer",
    "Extras",
    "Job",
    "prompt_examples",
    "shared_params",
    "zero_shot_accuracy",
]


def shared_params() -> dict[str, Param]:
    """The space every prompt-based method shares (PET's): pattern, verbalizer, training."""
    return {"pattern": PATTERN, "verbalizer": VERBALIZER, **train_params([1e-5, 1e-4])}


@dataclass(frozen=True)
class Extras:
    """What a semi-supervised method adds to one training run: unlabelled texts for PET's
    auxiliary MLM loss, and Noisy Student's input noise (a :class:`~steadyeval.train.Noise`,
    or a number: a ``tokens`` rate)."""

    unlabelled: tuple[str, ...] = ()
    mlm_weight: float = 0.0
    mlm_probability: float = 0.15
    noise: float | Noise = 0.0


@dataclass(frozen=True)
class Job:
    """One training run of a base method."""

    base_dir: Path
    train: tuple[PromptExample, ...]
    dev: tuple[PromptExample, ...]
    config: TrainConfig
    seed: int
    hparams: Hparams
    causal: bool
    extras: Extras = Extras()


class BaseTrainer(Protocol):
    """A prompt-based base method: its own hyperparameters, template and trainer."""

    name: str
    params: Mapping[str, Param]
    #: Whether it can train a causal LM (P-tuning can; PET and ADAPET need a masked LM).
    #: Every base's ``train`` passes :class:`Extras` (PET+MLM's texts, Noisy Student's
    #: noise) to its trainer, and its trainer honours soft targets.
    causal_ok: bool

    def template(self, task: FewShotTask, h: Hparams) -> Template: ...

    def train(self, job: Job, out_dir: Path) -> TrainOutcome: ...


def prompt_examples(
    task: FewShotTask,
    h: Hparams,
    template: Template,
    items: Sequence[Item],
    soft: Sequence[Sequence[float]] | None = None,
) -> list[PromptExample]:
    """``items`` rendered as ``[Y]`` prompts (gold from the items, or the argmax of ``soft``
    with ``soft`` as the target distribution)."""
    verbalizer = None if task.kind == "choice" else h["verbalizer"]
    cond = slot_condition("render", template, verbalizer)
    trials = expand(verbalize(items, task_verbalizer(task, h["verbalizer"])), [cond]).trials
    if len(trials) != len(items):
        raise ConfigError(
            f"{task.name}: {len(items) - len(trials)} items could not be rendered "
            "(does the verbalizer cover every label?)"
        )
    out = []
    for n, t in enumerate(trials):
        if soft is None:
            out.append(PromptExample(t.prompt, t.options or (), t.gold_displayed[0]))
        else:
            p = tuple(float(x) for x in soft[n])
            out.append(
                PromptExample(t.prompt, t.options or (), max(range(len(p)), key=p.__getitem__), p)
            )
    return out


class PETBase:
    """PET (Schick & Schütze, 2021): cross-entropy over the verbalizer's scores at ``[Y]``."""

    name = "pet"
    params: Mapping[str, Param] = MappingProxyType({})
    causal_ok = False

    def template(self, task: FewShotTask, h: Hparams) -> Template:
        return pattern_template(task, h)

    def train(self, job: Job, out_dir: Path) -> TrainOutcome:
        e = job.extras
        return train_pet(
            job.base_dir, job.train, job.dev, job.config, seed=job.seed, out_dir=out_dir,
            unlabeled=e.unlabelled, mlm_weight=e.mlm_weight,
            mlm_probability=e.mlm_probability, noise=e.noise,
        )  # fmt: skip


class ADAPETBase:
    """ADAPET (Tam et al., 2021): decoupled label objective and label-conditioned MLM."""

    name = "adapet"
    params: Mapping[str, Param] = MappingProxyType(
        {
            "mask_probability": Param(
                "mask_probability", lambda t: [0.105], float_in(0.0, 1.0, open_low=True),
                "label-conditioned MLM: alpha (masks max(int(u alpha L), 2) - 1 of L tokens)",
            ),
            "lm_weight": Param(
                "lm_weight", lambda t: [1.0], float_in(0.0, 1e6),
                "weight of the label-conditioned MLM loss",
            ),
        }
    )  # fmt: skip
    causal_ok = False

    def template(self, task: FewShotTask, h: Hparams) -> Template:
        return pattern_template(task, h)

    def train(self, job: Job, out_dir: Path) -> TrainOutcome:
        from ...train import train_adapet

        h, e = job.hparams, job.extras
        return train_adapet(
            job.base_dir, job.train, job.dev, job.config, seed=job.seed, out_dir=out_dir,
            mask_probability=float(h["mask_probability"]), lm_weight=float(h["lm_weight"]),
            unlabeled=e.unlabelled, mlm_weight=e.mlm_weight,
            mlm_probability=e.mlm_probability, noise=e.noise,
        )  # fmt: skip


class PTuningBase:
    """P-tuning (Liu et al., 2021, "GPT Understands, Too"): continuous prompt tokens from an
    LSTM + MLP prompt encoder, trained with the model; masked or causal LMs."""

    name = "ptuning"
    params: Mapping[str, Param] = MappingProxyType(
        {
            "prompt_tokens": Param(
                "prompt_tokens", lambda t: [4], int_in(1, 1000), "continuous prompt tokens"
            )
        }
    )
    causal_ok = True

    def template(self, task: FewShotTask, h: Hparams) -> Template:
        from ...train import ptuning_pattern

        source = task.patterns[h["pattern"]]
        split_pattern(source)
        body = ptuning_pattern(source, int(h["prompt_tokens"]))
        return Template(
            name=f"{task.key}/{h['pattern']}/p{h['prompt_tokens']}", body=body, answer=""
        )

    def train(self, job: Job, out_dir: Path) -> TrainOutcome:
        from ...train import train_ptuning

        e = job.extras
        return train_ptuning(
            job.base_dir, job.train, job.dev, job.config, seed=job.seed, out_dir=out_dir,
            n_prompt_tokens=int(job.hparams["prompt_tokens"]),
            kind="causal" if job.causal else "masked",
            unlabeled=e.unlabelled, mlm_weight=e.mlm_weight,
            mlm_probability=e.mlm_probability, noise=e.noise,
        )  # fmt: skip


#: The base methods by name.
BASES: Mapping[str, BaseTrainer] = MappingProxyType(
    {b.name: b for b in (PETBase(), ADAPETBase(), PTuningBase())}
)


def zero_shot_accuracy(
    ctx: MethodContext, task: FewShotTask, h: Hparams, items: Sequence[Item]
) -> float:
    """The untrained base model's accuracy on ``items`` with the pattern and verbalizer of
    ``h``: PET's weight of a model in ``wmean`` (``train_set_before_training``, computed
    before the model trains, ``pet/modeling.py`` lines 433-434, read back in
    ``merge_logits``, lines 557-562). Cached per run."""
    key = (
        "zero-shot-accuracy", ctx.base.fingerprint(), task.name, h["pattern"], h["verbalizer"],
        int(h["max_length"]), items_hash(items),
    )  # fmt: skip
    if key not in ctx.cache:
        examples = prompt_examples(task, h, pattern_template(task, h), items)
        scores = score_masked(
            ctx.base_dir(), examples, max_length=int(h["max_length"]), device=ctx.device
        )
        hits = [int(np.argmax(s)) == ex.gold for s, ex in zip(scores, examples, strict=True)]
        ctx.cache[key] = sum(hits) / len(hits) if hits else 0.0
    return float(ctx.cache[key])
