"""The built-in few-shot methods: in-context learning, PET and CLS."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..._errors import ConfigError
from ..._limits import MAX_SEED
from ...conditions import Condition, Format, Template, expand
from ...items import Item
from ...models import HF_RUN_OPTIONS, Capabilities
from ...requests import RequestKind
from ...run import Block
from ...scoring import CLASSIFIER_HEAD, INPUTS_KEY
from ...train import (
    ClsExample,
    PromptExample,
    TrainedModel,
    TrainOutcome,
    train_cls,
    train_pet,
)
from ._methods import (
    MethodContext,
    Unit,
    condition_name,
    icl_condition,
    pattern_template,
    register_method,
    require_trainable,
    scored_items,
    slot_condition,
    task_verbalizer,
    verbalize,
)
from ._params import (
    PATTERN,
    VERBALIZER,
    Hparams,
    Param,
    default_shots,
    int_in,
    one_of,
    train_config,
    train_params,
    verbalizer_names,
)
from ._tasks import FewShotTask

__all__ = [
    "CLSMethod",
    "ICLMethod",
    "PETMethod",
    "classifier_condition",
    "classifier_items",
    "n_labels",
    "trained_model",
]


def trained_model(
    ctx: MethodContext,
    unit: Unit,
    method: str,
    backend: str,
    train: Callable[[Path], TrainOutcome],
    *,
    kinds: frozenset[RequestKind],
    capabilities: Capabilities | None = None,
    recipe: Mapping[str, object] | None = None,
) -> TrainedModel:
    """The unit's trained model (shared by every unit with the same recipe), served by
    ``backend`` with the base model's options and the setting's ``max_length``; ``recipe``
    adds to what decides its checkpoint (e.g. a semi-supervised method's teachers). A base
    model that cannot be fine-tuned is refused here, in the design (see
    :func:`require_trainable`)."""
    require_trainable(ctx, method, masked=False)
    base = dict(ctx.base.spec.options)
    options = {k: v for k, v in base.items() if k not in HF_RUN_OPTIONS}
    options["max_length"] = str(unit.hparams["max_length"])
    model = TrainedModel(
        recipe={**ctx.recipe(unit, method), **(recipe or {})},
        train=train,
        store=ctx.store,
        backend=backend,
        options=options,
        run_options={k: v for k, v in base.items() if k in HF_RUN_OPTIONS},
        kinds=kinds,
        name=method,
        capabilities=capabilities,
        keep=ctx.keep_checkpoints,
    )
    return ctx.trained(model)


class ICLMethod:
    """In-context learning: a pattern, a verbalizer and shots from the train part; no training.

    The pattern's text before ``[Y]`` is the prompt; each option (the verbalizer's word, or a
    COPA alternative) is scored as its continuation by log-probability (``option-logprob``),
    on any backend that scores. Shots are drawn per item from the split's train part, from
    (``shot_seed``, unit seed, item id), and shown as ``prompt answer rest-of-pattern``.
    """

    name = "icl"
    uses_unlabelled = False
    params: Mapping[str, Param] = {
        "pattern": PATTERN,
        "verbalizer": Param(
            "verbalizer", lambda t: verbalizer_names(t)[:2], VERBALIZER.check, VERBALIZER.doc
        ),
        "shots": Param("shots", default_shots, int_in(0, 1000), "number of shots"),
        "shot_seed": Param(
            "shot_seed", lambda t: [0], int_in(0, MAX_SEED), "which shots, in which order"
        ),
        "normalization": Param(
            "normalization",
            lambda t: ["none"],
            one_of("none", "token", "char"),
            "option score normalisation",
        ),
    }

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        words = task_verbalizer(unit.task, unit.hparams["verbalizer"])
        return Block(
            verbalize(scored_items(unit), words),
            [icl_condition(unit.task, unit.hparams, unit.seed)],
            [ctx.base],
            {"train": verbalize(unit.train, words)},
        )


class PETMethod:
    """PET: fine-tune a masked LM on pattern–verbalizer pairs, then score the checkpoint.

    Training minimises cross-entropy over the options' scores at the ``[Y]`` slot (see
    :mod:`steadyeval.train`), keeping the best-dev weights (``eval_every``). The checkpoint is
    served as ``hf-masked:CHECKPOINT?max_length=N`` and scored with the same pattern.
    """

    name = "pet"
    uses_unlabelled = False
    params: Mapping[str, Param] = {
        "pattern": PATTERN,
        "verbalizer": VERBALIZER,
        **train_params([1e-5, 1e-4]),
    }

    def condition(self, task: FewShotTask, h: Hparams) -> Condition:
        verbalizer = None if task.kind == "choice" else h["verbalizer"]
        return slot_condition(
            condition_name(self.name, task.key, h), pattern_template(task, h), verbalizer
        )

    def examples(self, task: FewShotTask, h: Hparams, items: Sequence[Item]) -> list[PromptExample]:
        cond = self.condition(task, h)
        trials = expand(verbalize(items, task_verbalizer(task, h["verbalizer"])), [cond]).trials
        if len(trials) != len(items):
            raise ConfigError(
                f"condition {cond.name}: {len(items) - len(trials)} items could "
                "not be rendered (does the verbalizer cover every label?)"
            )
        return [PromptExample(t.prompt, t.options or (), t.gold_displayed[0]) for t in trials]

    def trainer(self, unit: Unit, ctx: MethodContext) -> Callable[[Path], TrainOutcome]:
        """The unit's training function (also what full PET trains its ensemble with, so
        that its members are this method's checkpoints)."""
        task, h = unit.task, unit.hparams

        def train(folder: Path) -> TrainOutcome:
            return train_pet(
                ctx.base_dir(),
                self.examples(task, h, unit.train),
                self.examples(task, h, unit.dev),
                train_config(h, ctx.device),
                seed=unit.seed,
                out_dir=folder,
            )

        return train

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        task, h = unit.task, unit.hparams
        require_trainable(ctx, self.name, masked=True)
        caps = Capabilities(fills_slots=True, max_length=int(h["max_length"]))
        model = trained_model(
            ctx, unit, self.name, "hf-masked", self.trainer(unit, ctx),
            kinds=frozenset({"score", "top-k"}), capabilities=caps,
        )  # fmt: skip
        items = verbalize(scored_items(unit), task_verbalizer(task, h["verbalizer"]))
        return Block(items, [self.condition(task, h)], [model])


#: Renders a classifier's text pairs as the row's prompt: ``a | b [SEP] a | b``.
CLASSIFIER_TEMPLATE = Template(
    name="classifier-inputs",
    body=(
        "{% for pair in metadata." + INPUTS_KEY + " %}{% if not loop.first %} [SEP] "
        "{% endif %}{{ pair | reject('none') | join(' | ') }}{% endfor %}"
    ),
    answer="",
)


def classifier_condition(name: str) -> Condition:
    """A classifier checkpoint's condition: the items' text pairs scored by the head."""
    return Condition(
        name=name,
        template=CLASSIFIER_TEMPLATE,
        format=Format(name="classifier", kind="mc"),
        scoring=CLASSIFIER_HEAD,
    )


def classifier_items(unit: Unit) -> list[Item]:
    """The unit's scored items with their text pairs for a classification head
    (``metadata["classifier_inputs"]``)."""
    return [
        dataclasses.replace(
            i, metadata={**i.metadata, INPUTS_KEY: [list(p) for p in unit.task.cls_inputs(i)]}
        )
        for i in scored_items(unit)
    ]


def n_labels(task: FewShotTask) -> int | None:
    """The classification head's classes (None: a multiple-choice head, for COPA)."""
    return None if task.kind == "choice" else len(task.labels)


class CLSMethod:
    """CLS: fine-tune a classification head (the FewNLU baseline).

    ``AutoModelForSequenceClassification`` on the task's input pair (or a multiple-choice
    head over COPA's alternatives), best-dev weights kept. The checkpoint is served as
    ``hf-classifier:CHECKPOINT`` and scored by the ``classifier-head`` scoring mode from the
    items' text pairs (``metadata["classifier_inputs"]``).
    """

    name = "cls"
    uses_unlabelled = False
    params: Mapping[str, Param] = train_params([1e-5, 5e-5, 1e-4])

    @staticmethod
    def examples(task: FewShotTask, items: Sequence[Item]) -> list[ClsExample]:
        return [ClsExample(task.cls_inputs(i), i.gold_options[0]) for i in items]

    def condition(self, task: FewShotTask, h: Hparams) -> Condition:
        return classifier_condition(condition_name(self.name, task.key, h))

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        task = unit.task

        def train(folder: Path) -> TrainOutcome:
            return train_cls(
                ctx.base_dir(),
                self.examples(task, unit.train),
                self.examples(task, unit.dev),
                train_config(unit.hparams, ctx.device),
                n_labels=n_labels(task),
                seed=unit.seed,
                out_dir=folder,
            )

        model = trained_model(
            ctx, unit, self.name, "hf-classifier", train, kinds=frozenset({"classify"})
        )
        return Block(classifier_items(unit), [self.condition(task, unit.hparams)], [model])


for _method in (ICLMethod(), PETMethod(), CLSMethod()):
    register_method(_method)
