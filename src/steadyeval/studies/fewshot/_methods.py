"""Few-shot methods as plug-ins: each declares its hyperparameters and, for one unit (a
setting, a split's train part, the items to score, a seed), the block the runner asks: its
items, its condition and its model.

ICL scores the base model with shots from the train part. PET and CLS fine-tune: their model
is a :class:`~steadyeval.train.TrainedModel`, trained on first use into a content-addressed
checkpoint and served as ``hf-masked`` (PET) or ``hf-classifier`` (CLS); a rerun from a warm
response cache trains nothing. New methods (ADAPET, P-tuning, iPET, Noisy Student) implement
:class:`Method` and are added with :func:`register_method`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ... import _seeds as seeds
from ..._errors import ConfigError
from ...conditions import Condition, Format, Shots, Template
from ...items import Item, canonical_json, shorten
from ...models import HF_BACKENDS, SLOT, Backend, model_folder
from ...run import Block
from ...scoring import OPTION_LOGPROB
from ...train import CheckpointStore, TrainedModel, resolve_device
from ._params import Hparams, Param, hparams_id
from ._tasks import FewShotTask

__all__ = [
    "METHODS",
    "Method",
    "MethodContext",
    "Unit",
    "condition_name",
    "get_method",
    "register_method",
    "require_trainable",
    "tag_items",
    "verbalize",
]


#: A split: its train part and its dev part.
Split = tuple[tuple[Item, ...], tuple[Item, ...]]


@dataclass(frozen=True)
class Unit:
    """One adaptation and its scoring: a setting, a train part, what to score, a seed.

    ``siblings`` are the other splits of the same strategy and K (cross-split
    pseudo-labelling reads them); ``unlabelled`` the task's unlabelled examples in a seeded
    order (filled only for methods that declare ``uses_unlabelled``)."""

    task: FewShotTask
    hparams: Hparams
    train: tuple[Item, ...]
    dev: tuple[Item, ...]
    test: tuple[Item, ...]
    seed: int
    siblings: tuple[Split, ...] = ()
    unlabelled: tuple[Item, ...] = ()


@dataclass
class MethodContext:
    """What every unit of a study shares: the base model, its folder (for fine-tuning), the
    checkpoint store and the training settings."""

    base: Backend
    store: CheckpointStore
    base_dir: Callable[[], Path]
    device: str = "auto"
    keep_checkpoints: bool = True
    #: In-memory results shared by a run's units (e.g. a chain model's scores on the pool).
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)
    _trained: dict[str, TrainedModel] = field(default_factory=dict, repr=False)

    def trained(self, model: TrainedModel) -> TrainedModel:
        """One model per recipe: units that share a recipe share its checkpoint."""
        return self._trained.setdefault(model.key, model)

    def recipe(self, unit: Unit, method: str) -> dict[str, Any]:
        """What decides a unit's checkpoint (``version`` 3: ADAPET's losses follow the
        authors' code, issue 40; checkpoints of earlier versions are not reused)."""
        return {
            "version": 3,
            "task": unit.task.name,
            "method": method,
            "hparams": dict(unit.hparams),
            "train": [i.hash for i in unit.train],
            "dev": [i.hash for i in unit.dev],
            "seed": unit.seed,
            "base": self.base.fingerprint(),
        }


class Method(Protocol):
    """A few-shot method: its hyperparameters, and the block that adapts and scores a unit."""

    name: str
    params: Mapping[str, Param]
    #: Whether the method reads unlabelled examples (``Unit.unlabelled``).
    uses_unlabelled: bool

    def block(self, unit: Unit, ctx: MethodContext) -> Block:
        """The items to score (dev and test, tagged by :func:`tag_items`), the condition and
        the model adapted on ``unit.train``."""
        ...


# -- shared helpers ---------------------------------------------------------------------------
def require_trainable(ctx: MethodContext, method: str, *, masked: bool) -> None:
    """Refuse a base model ``method`` cannot fine-tune, while the design is built, so that a
    dry run refuses what the run would: a model that is not a ``transformers`` model (the
    error training would give), a device this machine does not have or, when ``masked``, a
    model that does not fill the ``[Y]`` slot itself (a causal LM)."""
    spec = ctx.base.spec
    if spec.backend not in HF_BACKENDS:
        model_folder(spec)  # raises the one error for a backend that has no model folder
    if ctx.device != "auto":
        resolve_device(ctx.device)  # a device this machine lacks: training's own error
    if masked and not ctx.base.capabilities.fills_slots:
        raise ConfigError(
            f"method {method} needs a masked LM; {ctx.base.identity()} is causal (only "
            "ptuning trains a causal LM)"
        )


def tag_items(items: Sequence[Item], part: str, unit: Unit) -> list[Item]:
    """Copies of ``items`` whose metadata says which part of which unit they are scored in."""
    extra = {"part": part, "hparams": canonical_json(dict(unit.hparams)), "seed": unit.seed}
    return [dataclasses.replace(i, metadata={**i.metadata, **extra}) for i in items]


def verbalize(items: Sequence[Item], verbalizer: Mapping[str, str] | None) -> list[Item]:
    """Items whose options are the verbalizer's words (the label name kept in metadata)."""
    if verbalizer is None:
        return list(items)
    out = []
    for i in items:
        assert i.options is not None
        missing = [o for o in i.options if o not in verbalizer]
        if missing:
            raise ConfigError(
                f"item {shorten(i.id)}: the verbalizer has no word for {shorten(repr(missing[0]))}"
            )
        out.append(
            dataclasses.replace(
                i,
                options=tuple(verbalizer[o] for o in i.options),
                metadata={**i.metadata, "label": i.options[i.gold_options[0]]},
            )
        )
    return out


def scored_items(unit: Unit) -> list[Item]:
    """The unit's dev items then its test items, tagged with their part."""
    return tag_items(unit.dev, "dev", unit) + tag_items(unit.test, "test", unit)


def condition_name(method: str, task: str, h: Hparams) -> str:
    """A setting's condition name, ``METHOD-TASK-ID`` (``pet-rte-0123456789``): unique across
    the tasks and methods of a run, so each condition has one template."""
    return f"{method}-{task.lower()}-{hparams_id(h)}"


def items_hash(items: Sequence[Item]) -> str:
    """The content hash of an ordered list of items (a split's or a pool's part of a recipe)."""
    return hashlib.sha256("".join(i.hash for i in items).encode()).hexdigest()


def derive_seed(*parts: object) -> int:
    """A 32-bit seed for the few-shot runs (training seeds fit torch's generators)."""
    return seeds.derive_seed(*parts, nbytes=4)


def split_pattern(source: str) -> tuple[str, str]:
    if source.count(SLOT) != 1:
        raise ConfigError(f"pattern {source!r} must contain the slot {SLOT} exactly once")
    left, _, right = source.partition(SLOT)
    return left, right


def task_verbalizer(task: FewShotTask, name: str) -> Mapping[str, str] | None:
    return None if task.kind == "choice" else task.verbalizers[name]


def pattern_template(task: FewShotTask, h: Hparams) -> Template:
    """The pattern ``h["pattern"]`` as a cloze template (its ``[Y]`` kept)."""
    source = task.patterns[h["pattern"]]
    split_pattern(source)
    return Template(name=f"{task.key}/{h['pattern']}", body=source, answer="")


_METHODS: dict[str, Method] = {}


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add a method (e.g. ADAPET) under ``method.name``."""
    if method.name in _METHODS and not replace:
        raise ValueError(f"method {method.name!r} is already registered; pass replace=True")
    _METHODS[method.name] = method
    return method


#: Makes a method from a spelling no method is registered under (a combination such as
#: ``ipet+adapet/cross-split``), or returns None; set by the combination module.
_spellings: list[Callable[[str], Method | None]] = []


def get_method(name: str) -> Method:
    """The method registered as ``name``, or the combination it spells (registered on first
    use under its canonical spelling)."""
    key = name.strip().lower()
    method = _METHODS.get(key)
    for parse in _spellings if method is None else ():
        made = parse(key)
        if made is not None:
            method = _METHODS.setdefault(made.name, made)
            break
    if method is None:
        raise ConfigError(
            f"unknown method {shorten(repr(name))}; choose one of {', '.join(sorted(_METHODS))}, or a "
            "combination BASE[+mlm|ipet|noisy][/single-split|/cross-split] such as "
            "ipet+adapet/cross-split"
        )
    return method


#: The registered methods by name (read-only view; add with :func:`register_method`).
METHODS: Mapping[str, Method] = _METHODS


def slot_condition(name: str, template: Template, verbalizer: str | None) -> Condition:
    """Options scored at the pattern's ``[Y]`` slot (PET's scoring)."""
    return Condition(
        name=name,
        template=template,
        format=Format(name="slot", kind="mc", continuation_prefix=""),
        scoring=OPTION_LOGPROB,
        verbalizer_name=verbalizer,
    )


def icl_condition(task: FewShotTask, h: Hparams, seed: int) -> Condition:
    """The pattern's text before ``[Y]`` as the prompt, each option scored after it; shots
    from the train part shown as ``prompt answer rest-of-pattern``, chosen from
    (``shot_seed``, ``seed``): a seed other than 0 is part of the condition's name."""
    left, right = split_pattern(task.patterns[h["pattern"]])
    template = Template(
        name=f"{task.key}/{h['pattern']}", body=left.rstrip(), answer=" {{ answer }}" + right
    )
    return Condition(
        name=condition_name("icl", task.key, h) + (f"-seed{seed}" if seed else ""),
        template=template,
        format=Format(name="slot", kind="mc"),
        scoring=OPTION_LOGPROB,
        shots=Shots(
            n=int(h["shots"]),
            seed=derive_seed(h["shot_seed"], seed),
            selection="random",
            source="train",
        ),
        verbalizer_name=None if task.kind == "choice" else h["verbalizer"],
        normalization=h["normalization"],
    )


# The built-in methods (ICL, PET, CLS, full PET, the combinations) register themselves when
# their module loads; loading it here means every way into the registry sees them.
from . import _builtin, _combo, _petfull  # noqa: E402, F401
