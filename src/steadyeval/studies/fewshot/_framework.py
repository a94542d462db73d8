"""FewNLU's framework: for each setting h and each of K splits, adapt on train, score dev and
test; choose h by mean dev score; report its K test scores. Several split strategies and
several K side by side; each (setting, split, seed) unit is one block for the runner."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..._errors import ConfigError
from ..._extras import require
from ...items import Item
from ...models import Backend, model_folder
from ...results import StudyColumn
from ...run import Block, RunOptions
from ...stats import KFold, MDLSplits, MultiSplits, StatsInputError
from ...train import CheckpointStore
from .._protocol import StudyDesign
from ._analysis import analyze
from ._config import STRATEGIES, FewShotConfig
from ._methods import Method, MethodContext, Unit, get_method
from ._params import hparams_id
from ._tasks import FewShotTask, get_task, item_groups, load_task_items, split_off_test

__all__ = [
    "COLUMNS",
    "build_grid",
    "fewshot_design",
    "final_design",
    "load_space",
    "make_splitter",
]

Splitter = KFold | MultiSplits | MDLSplits

#: The study's columns: which part of which split of which strategy a row belongs to.
COLUMNS = (
    StudyColumn("hparams", "string", "the hyperparameter setting (canonical JSON)"),
    StudyColumn("part", "string", "dev (the split's held-out part) or test"),
    StudyColumn("seed", "int", "the training/shot seed of the unit"),
    StudyColumn("method", "string", "the few-shot method (icl, pet, cls, ...)"),
    StudyColumn("hparams_id", "string", "a short id of the setting (see design.grid)"),
    StudyColumn("split", "string", "strategy/K=k/index/part, or final/seed/test"),
    StudyColumn("strategy", "string", "multisplit, cv, mdl, or final (retrained on all)"),
    StudyColumn("n_splits", "int", "K of the strategy (0 for final units)"),
    StudyColumn("split_index", "int", "which of the K splits (the seed index for final)"),
)


def make_splitter(strategy: str, k: int, *, ratio: float = 0.5, seed: int = 0) -> Splitter:
    """The :mod:`steadyeval.stats` splitter for a strategy name."""
    if strategy == "multisplit":
        return MultiSplits(k, train_ratio=ratio, seed=seed)
    if strategy == "cv":
        if k < 2:
            raise ConfigError("cross-validation needs K >= 2")
        return KFold(k, seed=seed)
    if strategy == "mdl":
        return MDLSplits(k, seed=seed)
    raise ConfigError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")


def load_space(path: str | Path, method: str | None = None) -> dict[str, Any]:
    """Read a YAML hyperparameter space: ``{name: value or [values]}``.

    A file may hold one section per method (``icl: {...}``, ``pet: {...}``); ``method``
    picks its section.
    """
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{p}: cannot read the space file ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of hyperparameter names to value lists")
    if method is not None and isinstance(data.get(method), dict):
        data = data[method]
    return {str(k): v for k, v in data.items()}


def build_grid(
    method: Method, task: FewShotTask, space: Mapping[str, Any] | None, *, where: str = "space"
) -> list[dict[str, Any]]:
    """Every combination of the space's values (defaults for names it leaves out).

    Order: the method's parameter order, values in the order given. Each value is checked by
    the method; errors name the parameter and what is allowed.
    """
    space = dict(space or {})
    unknown = sorted(set(space) - set(method.params))
    if unknown:
        raise ConfigError(
            f"{where}: method {method.name} has no hyperparameter {unknown[0]!r}; "
            f"its hyperparameters: {', '.join(method.params)}"
        )
    axes: list[list[Any]] = []
    for name, param in method.params.items():
        raw = space.get(name, param.default(task))
        values = list(raw) if isinstance(raw, list | tuple) else [raw]
        if not values:
            raise ConfigError(f"{where}: {name} has no values")
        checked = []
        for v in values:
            try:
                checked.append(param.check(v, task))
            except ValueError as exc:
                raise ConfigError(f"{where}: {name}: {exc}") from None
        axes.append(list(dict.fromkeys(checked)))
    return [dict(zip(method.params, combo, strict=True)) for combo in itertools.product(*axes)]


def info_grid(grid: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The grid as the design records it: ``[{"id", "hparams"}]`` in grid order."""
    return [{"id": hparams_id(h), "hparams": dict(h)} for h in grid]


def _splits(
    strategy: str, k: int, config: FewShotConfig, labelled: Sequence[Item]
) -> list[tuple[list[Item], list[Item]]]:
    # Each strategy draws from its own stream, so strategies share no split by construction.
    seed = int.from_bytes(
        hashlib.sha256(f"{config.seed}/{strategy}".encode()).digest()[:4], "little"
    )
    splitter = make_splitter(strategy, k, ratio=config.ratio, seed=seed)
    groups = item_groups(labelled)
    pairs = splitter.split(groups if groups is not None else len(labelled))
    return [([labelled[int(i)] for i in tr], [labelled[int(i)] for i in dv]) for tr, dv in pairs]


@dataclass(frozen=True)
class _Usage:
    """Where a unit's rows go: a strategy's K and split index (``final``: seed index)."""

    strategy: str
    k: int
    index: int


def _blocks(block: Block, unit: Unit, method: str, usage: _Usage) -> list[Block]:
    """A unit's block as two blocks, dev and test, tagged with the usage's columns."""
    head = usage.strategy if usage.strategy == "final" else f"{usage.strategy}/K={usage.k}"
    out = []
    for part in ("dev", "test"):
        items = [i for i in block.items if i.metadata.get("part") == part]
        if not items:
            continue
        tags = {
            "method": method,
            "hparams_id": hparams_id(unit.hparams),
            "split": f"{head}/{usage.index}/{part}",
            "strategy": usage.strategy,
            "n_splits": usage.k,
            "split_index": usage.index,
        }
        out.append(Block(items, block.conditions, block.models, block.shot_pools, tags))
    return out


@dataclass
class _Context:
    """What the design and its follow-up share."""

    config: FewShotConfig
    task: FewShotTask
    method: Method
    grid: list[dict[str, Any]]
    labelled: tuple[Item, ...]
    test: tuple[Item, ...]
    methods: MethodContext


def _context(config: FewShotConfig, backends: Sequence[Backend], options: RunOptions) -> _Context:
    if config.threads is not None:
        require("fewshot configs with threads", "torch")
        import torch

        torch.set_num_threads(config.threads)
    task = get_task(config.task)
    method = get_method(config.method)
    space = config.space
    if isinstance(space, str):
        space = load_space(space, method.name)
    grid = build_grid(method, task, space)
    items = load_task_items(task, config.labelled)
    if config.test_from_labelled is not None:
        labelled, test = split_off_test(items, config.test_from_labelled, seed=config.seed)
    else:
        assert config.test is not None
        labelled, test = items, load_task_items(task, config.test)
    if config.checkpoints is not None:
        root = Path(config.checkpoints)
    elif options.out is not None:
        root = Path(options.out) / "checkpoints"
    else:  # no run directory (a dry run, or Python without out): checkpoints are temporary
        root = None
    base = backends[0]
    ctx = MethodContext(
        base=base,
        store=CheckpointStore.temporary() if root is None else CheckpointStore(root),
        base_dir=lambda: model_folder(base.spec),
        device=config.device,
        keep_checkpoints=config.keep_checkpoints,
    )
    return _Context(config, task, method, grid, tuple(labelled), tuple(test), ctx)


def fewshot_design(
    config: FewShotConfig, backends: Sequence[Backend], options: RunOptions
) -> StudyDesign:
    """Every (strategy, K, split, setting) unit as blocks: the method's items, condition and
    model for the unit, tagged with the strategy, K and split. Trains nothing: a trained
    method's model is trained when the runner first needs its answers."""
    c = _context(config, backends, options)
    blocks: list[Block] = []
    skipped: list[dict[str, Any]] = []
    units: set[tuple[Any, ...]] = set()
    units_used: list[_Usage] = []
    for strategy in config.strategies:
        for k in sorted(set(config.k_values) | {config.k}):
            try:
                splits = _splits(strategy, k, config, c.labelled)
            except (StatsInputError, ConfigError) as exc:
                if k == config.k:
                    raise ConfigError(f"{strategy} with K={k}: {exc}") from None
                skipped.append({"strategy": strategy, "k": k, "reason": str(exc)})
                continue
            for index, (train, dev) in enumerate(splits):
                for h in c.grid:
                    unit = Unit(c.task, h, tuple(train), tuple(dev), c.test, config.seed)
                    units.add((hparams_id(h), *(i.id for i in train), "|", *(i.id for i in dev)))
                    block = c.method.block(unit, c.methods)
                    usage = _Usage(strategy, k, index)
                    units_used.append(usage)
                    blocks += _blocks(block, unit, c.method.name, usage)
    info = _info(c, skipped, n_units=len(units), n_usages=len(units_used))
    return StudyDesign(blocks=tuple(blocks), info=info, columns=COLUMNS)


def final_design(
    config: FewShotConfig,
    design: StudyDesign,
    table: Any,
    backends: Sequence[Backend],
    options: RunOptions,
) -> StudyDesign | None:
    """Each strategy's chosen setting (from the results so far), re-adapted on all labelled
    data with ``final_seeds`` seeds and scored on the test set; None when not asked for."""
    if not config.final_seeds:
        return None
    c = _context(config, backends, options)
    analysis = analyze(table, design.info)
    chosen = dict.fromkeys(r["selected"] for r in analysis["side_by_side"])
    by_id = {hparams_id(h): h for h in c.grid}
    blocks: list[Block] = []
    for hid in chosen:
        for j in range(config.final_seeds):
            unit = Unit(c.task, by_id[hid], c.labelled, (), c.test, config.seed + j)
            block = c.method.block(unit, c.methods)
            blocks += _blocks(block, unit, c.method.name, _Usage("final", 0, j))
    return StudyDesign(blocks=tuple(blocks), columns=COLUMNS)


def _info(
    c: _Context, skipped: list[dict[str, Any]], *, n_units: int, n_usages: int
) -> dict[str, Any]:
    """The design facts the analysis and the report read (``summary.json`` → ``design``)."""
    config = c.config
    ks = sorted(set(config.k_values) | {config.k})
    return {
        "task": c.task.name,
        "method": c.method.name,
        "model": c.methods.base.identity(),
        "grid": info_grid(c.grid),
        "strategies": list(config.strategies),
        "k": config.k,
        "k_values": [k for k in ks if not any(s["k"] == k for s in skipped)],
        "skipped_k": skipped,
        "ratio": config.ratio,
        "seed": config.seed,
        "final_seeds": config.final_seeds,
        "n_labelled": len(c.labelled),
        "n_test": len(c.test),
        "metric": "accuracy",
        "groups": item_groups(c.labelled) is not None,
        "units": {"distinct": n_units, "usages": n_usages},
    }
