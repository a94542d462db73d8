"""Few-shot methods as plug-ins: each declares its hyperparameters and adapts-then-scores.

A method gets a :class:`Unit` (hyperparameters, a train part, the dev and test items to
score, a seed) and returns the results-table rows of the dev and test items. ICL and PET
score through :func:`steadyeval.run` (so requests are cached and rows are ordinary rows);
PET's and CLS's trained weights are content-addressed checkpoints, reused when present.
New methods (ADAPET, P-tuning, iPET, Noisy Student) implement the same :class:`Method`
protocol and are added with :func:`register_method`.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from ..._errors import ConfigError
from ...conditions import Condition, Format, Shots, Template, expand
from ...items import Item, canonical_json
from ...models import Backend, load_backend, parse_model_spec
from ...results import ResultRow, StudyColumn, rows_to_table
from ...run import RunOptions, run
from ...train import (
    MASK_SLOT,
    CheckpointInfo,
    CheckpointStore,
    ClsExample,
    PromptExample,
    TrainConfig,
    TrainOutcome,
    checkpoint_key,
    checkpoint_spec,
    cls_logprobs,
    train_cls,
    train_pet,
)
from ._tasks import FewShotTask

__all__ = [
    "METHODS",
    "Method",
    "MethodContext",
    "Param",
    "Unit",
    "get_method",
    "hparams_id",
    "register_method",
    "tag_items",
    "verbalize",
]

Hparams = Mapping[str, Any]

#: The columns a unit's rows carry (from :func:`tag_items`).
COLUMNS = (StudyColumn("hparams", "string", "the hyperparameter setting (canonical JSON)"),)


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


@dataclass(frozen=True)
class Unit:
    """One adaptation and its scoring: a setting, a train part, what to score, a seed."""

    task: FewShotTask
    hparams: Hparams
    train: tuple[Item, ...]
    dev: tuple[Item, ...]
    test: tuple[Item, ...]
    seed: int


@dataclass
class MethodContext:
    """What every unit of a run shares: the model, the caches, the checkpoint store."""

    model: str
    cache: Path | None
    checkpoints: Path
    device: str = "auto"
    keep_checkpoints: bool = True
    _backend: Backend | None = field(default=None, repr=False)

    def release(self, checkpoint: CheckpointInfo) -> None:
        """Delete a scored checkpoint unless checkpoints are kept (its unit's rows are what a
        rerun needs; with real models, checkpoints take most of the disk)."""
        if not self.keep_checkpoints:
            shutil.rmtree(checkpoint.path, ignore_errors=True)

    def backend(self) -> Backend:
        """The model's backend, loaded once and shared by every unit (ICL)."""
        if self._backend is None:
            self._backend = load_backend(self.model)
        return self._backend

    def base_dir(self) -> Path:
        """The local folder of a ``transformers`` model to fine-tune (PET, CLS)."""
        from ...models._hf_common import HFOptions, resolve_model_dir

        spec = parse_model_spec(self.model)
        if spec.backend not in ("hf", "hf-masked"):
            raise ConfigError(
                f"model {self.model}: fine-tuning needs a local or hub transformers model given "
                "as hf:PATH or hf-masked:PATH"
            )
        return resolve_model_dir(spec, HFOptions.from_spec(spec))

    def base_fingerprint(self) -> str:
        from ...models._hf_common import HFOptions, fingerprint_dir

        spec = parse_model_spec(self.model)
        return fingerprint_dir("train-base", spec, self.base_dir(), HFOptions.from_spec(spec))

    def store(self) -> CheckpointStore:
        return CheckpointStore(self.checkpoints)


class Method(Protocol):
    """A few-shot method: its hyperparameters and how it adapts and scores one unit."""

    name: str
    params: Mapping[str, Param]

    def fingerprint(self, ctx: MethodContext) -> str:
        """What identifies the model being adapted (part of every unit's key)."""
        ...

    def evaluate(self, unit: Unit, ctx: MethodContext) -> pa.Table:
        """Adapt on ``unit.train`` and return result rows for ``unit.dev`` and ``unit.test``.

        Every row's ``metadata`` carries ``part`` (``dev`` / ``test``), ``hparams`` (JSON)
        and ``seed``; :func:`tag_items` adds them.
        """
        ...


# -- shared helpers ---------------------------------------------------------------------------
def tag_items(items: Sequence[Item], part: str, unit: Unit) -> list[Item]:
    """Copies of ``items`` whose metadata says which part of which unit they are scored in."""
    extra = {"part": part, "hparams": canonical_json(dict(unit.hparams)), "seed": unit.seed}
    return [_copy(i, metadata={**i.metadata, **extra}) for i in items]


def _copy(item: Item, **changes: Any) -> Item:
    fields = {
        "id": item.id,
        "question": item.question,
        "context": item.context,
        "options": item.options,
        "answers": item.answers,
        "gold_options": item.gold_options,
        "answerable": item.answerable,
        "aliases": item.aliases,
        "metadata": item.metadata,
        **changes,
    }
    return Item(**fields)


def verbalize(items: Sequence[Item], verbalizer: Mapping[str, str] | None) -> list[Item]:
    """Items whose options are the verbalizer's words (the label name kept in metadata).

    Conditions carry only the verbalizer's *name*: ``Condition.to_dict`` cannot yet copy a
    verbalizer mapping, so the words are put into the items instead; prompts, requests and
    scores are the same either way.
    """
    if verbalizer is None:
        return list(items)
    out = []
    for i in items:
        assert i.options is not None
        missing = [o for o in i.options if o not in verbalizer]
        if missing:
            raise ConfigError(f"item {i.id}: the verbalizer has no word for {missing[0]!r}")
        out.append(
            _copy(
                i,
                options=tuple(verbalizer[o] for o in i.options),
                metadata={**i.metadata, "label": i.options[i.gold_options[0]]},
            )
        )
    return out


def _derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _split_pattern(source: str) -> tuple[str, str]:
    if source.count(MASK_SLOT) != 1:
        raise ConfigError(f"pattern {source!r} must contain the slot {MASK_SLOT} exactly once")
    left, _, right = source.partition(MASK_SLOT)
    return left, right


def _verbalizer(task: FewShotTask, name: str) -> Mapping[str, str] | None:
    return None if task.kind == "choice" else task.verbalizers[name]


def _run_rows(
    unit: Unit,
    cond: Condition,
    model: str | Backend,
    ctx: MethodContext,
    shot_pools: Mapping[str, Sequence[Item]] | None = None,
) -> pa.Table:
    words = _verbalizer(unit.task, unit.hparams["verbalizer"])
    items = verbalize(tag_items(unit.dev, "dev", unit) + tag_items(unit.test, "test", unit), words)
    result = run(
        items,
        [cond],
        [model],
        options=RunOptions(cache=ctx.cache, progress=False),
        shot_pools=shot_pools,
        columns=COLUMNS,
    )
    if result.table.num_rows != len(items):
        reasons = "; ".join(f"{s['reason']} ({s['count']})" for s in result.summary["skipped"])
        raise ConfigError(
            f"{unit.task.name}: condition {cond.name} skipped "
            f"{len(items) - result.table.num_rows} of {len(items)} items: {reasons}"
        )
    return result.table


# -- parameter checks -------------------------------------------------------------------------
def _names(
    kind: str, get: Callable[[FewShotTask], Sequence[str]]
) -> Callable[[Any, FewShotTask], Any]:
    def check(value: Any, task: FewShotTask) -> Any:
        allowed = list(get(task))
        if value not in allowed:
            raise ValueError(
                f"{task.name} has no {kind} {value!r}; choose from {', '.join(map(str, allowed))}"
            )
        return value

    return check


def _verbalizer_names(task: FewShotTask) -> list[str]:
    return ["none"] if task.kind == "choice" else list(task.verbalizers)


def _int(minimum: int) -> Callable[[Any, FewShotTask], Any]:
    def check(value: Any, task: FewShotTask) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"expected an integer >= {minimum}, got {value!r}")
        return value

    return check


def _positive_float(value: Any, task: FewShotTask) -> Any:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not value > 0
        or not math.isfinite(value)
    ):
        raise ValueError(f"expected a positive number, got {value!r}")
    return float(value)


def _one_of(*allowed: str) -> Callable[[Any, FewShotTask], Any]:
    def check(value: Any, task: FewShotTask) -> Any:
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {value!r}")
        return value

    return check


_PATTERN = Param(
    "pattern",
    lambda t: list(t.patterns)[:2],
    _names("pattern", lambda t: list(t.patterns)),
    "a pattern name of the task (its [Y] slot is where the answer goes)",
)
_VERBALIZER = Param(
    "verbalizer",
    lambda t: _verbalizer_names(t)[:1],
    _names("verbalizer", _verbalizer_names),
    "a verbalizer name of the task (choice tasks: none)",
)


def _default_shots(task: FewShotTask) -> list[Any]:
    # Four settings for every task: 2 patterns x 2 verbalizers x 3 shots, or (COPA, which
    # has no verbalizer) 2 patterns x 2 shot counts.
    return [3] if len(_verbalizer_names(task)) > 1 else [2, 4]


def _train_params(lrs: list[float]) -> dict[str, Param]:
    return {
        "learning_rate": Param(
            "learning_rate", lambda t: list(lrs), _positive_float, "peak AdamW learning rate"
        ),
        "steps": Param("steps", lambda t: [30], _int(1), "optimiser steps"),
        "batch_size": Param("batch_size", lambda t: [4], _int(1), "examples per step"),
        "eval_every": Param(
            "eval_every",
            lambda t: [10],
            _int(0),
            "dev evaluation frequency for best-dev checkpointing (0: last)",
        ),
        "max_length": Param("max_length", lambda t: [128], _int(8), "input tokens"),
    }


def _train_config(h: Hparams, device: str) -> TrainConfig:
    return TrainConfig(
        learning_rate=float(h["learning_rate"]),
        steps=int(h["steps"]),
        batch_size=int(h["batch_size"]),
        eval_every=int(h["eval_every"]),
        max_length=int(h["max_length"]),
        device=device,
    )


def _ckpt_payload(unit: Unit, method: str, fingerprint: str) -> dict[str, Any]:
    return {
        "version": 1,
        "task": unit.task.name,
        "method": method,
        "hparams": dict(unit.hparams),
        "train": [i.hash for i in unit.train],
        "dev": [i.hash for i in unit.dev],
        "seed": unit.seed,
        "base": fingerprint,
    }


# -- in-context learning ----------------------------------------------------------------------
class ICLMethod:
    """In-context learning: a pattern, a verbalizer and shots from the train part; no training.

    The pattern's text before ``[Y]`` is the prompt; each option (the verbalizer's word, or a
    COPA alternative) is scored as its continuation by log-probability (``option-logprob``),
    on any backend that scores. Shots are drawn per item from the split's train part, from
    (``shot_seed``, unit seed, item id), and shown as ``prompt answer rest-of-pattern``.
    """

    name = "icl"
    params: Mapping[str, Param] = {
        "pattern": _PATTERN,
        "verbalizer": Param(
            "verbalizer", lambda t: _verbalizer_names(t)[:2], _VERBALIZER.check, _VERBALIZER.doc
        ),
        "shots": Param("shots", _default_shots, _int(0), "number of shots"),
        "shot_seed": Param("shot_seed", lambda t: [0], _int(0), "which shots, in which order"),
        "normalization": Param(
            "normalization",
            lambda t: ["none"],
            _one_of("none", "token", "char"),
            "option score normalisation",
        ),
    }

    def fingerprint(self, ctx: MethodContext) -> str:
        return ctx.backend().fingerprint()

    def condition(self, task: FewShotTask, h: Hparams, seed: int) -> Condition:
        left, right = _split_pattern(task.patterns[h["pattern"]])
        template = Template(
            name=f"{task.key}/{h['pattern']}", body=left.rstrip(), answer=" {{ answer }}" + right
        )
        return Condition(
            name=f"icl-{hparams_id(h)}",
            template=template,
            format=Format(name="slot", kind="mc"),
            scoring="option-logprob",
            shots=Shots(
                n=int(h["shots"]),
                seed=_derive_seed(h["shot_seed"], seed),
                selection="random",
                source="train",
            ),
            verbalizer_name=None if task.kind == "choice" else h["verbalizer"],
            normalization=h["normalization"],
        )

    def evaluate(self, unit: Unit, ctx: MethodContext) -> pa.Table:
        cond = self.condition(unit.task, unit.hparams, unit.seed)
        pool = verbalize(unit.train, _verbalizer(unit.task, unit.hparams["verbalizer"]))
        return _run_rows(unit, cond, ctx.backend(), ctx, shot_pools={"train": pool})


# -- PET ----------------------------------------------------------------------------------------
class PETMethod:
    """PET: fine-tune a masked LM on pattern–verbalizer pairs, then score the checkpoint.

    Training minimises cross-entropy over the options' scores at the ``[Y]`` slot (see
    :mod:`steadyeval.train`), keeping the best-dev weights (``eval_every``). The checkpoint is
    saved under its content key and scored through the pipeline as
    ``hf-masked:CHECKPOINT?max_length=N`` with the same pattern, so its answers are cached
    like any model's.
    """

    name = "pet"
    params: Mapping[str, Param] = {
        "pattern": _PATTERN,
        "verbalizer": _VERBALIZER,
        **_train_params([1e-5, 1e-4]),
    }

    def fingerprint(self, ctx: MethodContext) -> str:
        return ctx.base_fingerprint()

    def condition(self, task: FewShotTask, h: Hparams) -> Condition:
        source = task.patterns[h["pattern"]]
        _split_pattern(source)
        return Condition(
            name=f"pet-{hparams_id(h)}",
            template=Template(name=f"{task.key}/{h['pattern']}", body=source, answer=""),
            format=Format(name="slot", kind="mc", continuation_prefix=""),
            scoring="option-logprob",
            verbalizer_name=None if task.kind == "choice" else h["verbalizer"],
        )

    def examples(self, task: FewShotTask, h: Hparams, items: Sequence[Item]) -> list[PromptExample]:
        cond = self.condition(task, h)
        trials = expand(verbalize(items, _verbalizer(task, h["verbalizer"])), [cond]).trials
        if len(trials) != len(items):
            raise ConfigError(
                f"condition {cond.name}: {len(items) - len(trials)} items could "
                "not be rendered (does the verbalizer cover every label?)"
            )
        return [PromptExample(t.prompt, t.options or (), t.gold_displayed[0]) for t in trials]

    def checkpoint(self, unit: Unit, ctx: MethodContext) -> CheckpointInfo:
        payload = _ckpt_payload(unit, self.name, self.fingerprint(ctx))
        base = ctx.base_dir()
        task, h = unit.task, unit.hparams

        def train(folder: Path) -> TrainOutcome:
            return train_pet(
                base,
                self.examples(task, h, unit.train),
                self.examples(task, h, unit.dev),
                _train_config(unit.hparams, ctx.device),
                seed=unit.seed,
                out_dir=folder,
            )

        return ctx.store().get_or_train(checkpoint_key(payload), payload, train)

    def evaluate(self, unit: Unit, ctx: MethodContext) -> pa.Table:
        info = self.checkpoint(unit, ctx)
        options = dict(parse_model_spec(ctx.model).options)
        options["max_length"] = str(info.extra.get("max_length", unit.hparams["max_length"]))
        spec = checkpoint_spec(info.path, "hf-masked", **options)
        table = _run_rows(unit, self.condition(unit.task, unit.hparams), spec, ctx)
        ctx.release(info)
        return table


# -- CLS ------------------------------------------------------------------------------------------
class CLSMethod:
    """CLS: fine-tune a classification head (the FewNLU baseline).

    ``AutoModelForSequenceClassification`` on the task's input pair (or a multiple-choice
    head over COPA's alternatives), best-dev weights kept. A classifier is not a language
    model, so it is scored by :func:`steadyeval.train.cls_logprobs` and its rows are built
    here (``scoring = "classifier-head"``, ``option_logprobs`` = the head's log-softmax,
    ``model = "cls:CHECKPOINT"``); they join the same results table.
    """

    name = "cls"
    params: Mapping[str, Param] = _train_params([1e-5, 5e-5, 1e-4])

    def fingerprint(self, ctx: MethodContext) -> str:
        return ctx.base_fingerprint()

    @staticmethod
    def examples(task: FewShotTask, items: Sequence[Item]) -> list[ClsExample]:
        return [ClsExample(task.cls_inputs(i), i.gold_options[0]) for i in items]

    def evaluate(self, unit: Unit, ctx: MethodContext) -> pa.Table:
        task = unit.task
        n_labels = None if task.kind == "choice" else len(task.labels)
        payload = _ckpt_payload(unit, self.name, self.fingerprint(ctx))
        base = ctx.base_dir()
        config = _train_config(unit.hparams, ctx.device)

        def train(folder: Path) -> TrainOutcome:
            return train_cls(
                base,
                self.examples(task, unit.train),
                self.examples(task, unit.dev),
                config,
                n_labels=n_labels,
                seed=unit.seed,
                out_dir=folder,
            )

        key = checkpoint_key(payload)
        info = ctx.store().get_or_train(key, payload, train)
        items = tag_items(unit.dev, "dev", unit) + tag_items(unit.test, "test", unit)
        logps = cls_logprobs(
            info.path,
            self.examples(task, items),
            n_labels=n_labels,
            max_length=int(info.extra.get("max_length", config.max_length)),
            device=ctx.device,
        )
        ctx.release(info)
        hid = hparams_id(unit.hparams)
        rows = [
            _cls_row(task, item, lp, f"cls:{info.path}", f"cls-{hid}", hid, key[:16])
            for item, lp in zip(items, logps, strict=True)
        ]
        return rows_to_table(rows, COLUMNS)


def _cls_row(
    task: FewShotTask,
    item: Item,
    logprobs: Sequence[float],
    model: str,
    condition: str,
    hid: str,
    run_id: str,
) -> ResultRow:
    assert item.options is not None
    choice = max(range(len(logprobs)), key=lambda j: (logprobs[j], -j))
    prompt = " [SEP] ".join(
        " | ".join(x for x in pair if x is not None) for pair in task.cls_inputs(item)
    )
    return ResultRow(
        run_id=run_id,
        model=model,
        item_id=item.id,
        item_hash=item.hash,
        condition=condition,
        condition_id=hid,
        format="classifier",
        option_order="original",
        n_shots=0,
        n_shots_used=0,
        chat=False,
        scoring="classifier-head",
        prompt=prompt,
        request_keys=(),
        options=item.options,
        option_source=tuple(range(len(item.options))),
        output=item.options[choice],
        parsed=item.options[choice],
        parsed_kind="option",
        parsed_option=choice,
        correct=choice in item.gold_options,
        refused=False,
        option_logprobs=tuple(float(x) for x in logprobs),
        confidence=math.exp(logprobs[choice]),
        approximate=False,
        gold=item.gold_texts,
        gold_options=item.gold_options,
        answerable=item.answerable,
        metadata=item.metadata,
    )


METHODS: dict[str, Method] = {"icl": ICLMethod(), "pet": PETMethod(), "cls": CLSMethod()}


def register_method(method: Method, *, replace: bool = False) -> None:
    """Add a method (e.g. ADAPET) under ``method.name``."""
    if method.name in METHODS and not replace:
        raise ValueError(f"method {method.name!r} is already registered; pass replace=True")
    METHODS[method.name] = method


def get_method(name: str) -> Method:
    method = METHODS.get(name.lower())
    if method is None:
        raise ConfigError(f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}")
    return method
