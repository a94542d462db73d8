"""FewNLU's framework: for each setting h and each of K splits, adapt on train, score dev and
test; choose h by mean dev score; report its K test scores. Several split strategies and
several K side by side; each (setting, split, seed) unit is one block for the runner."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._errors import ConfigError
from ..._extras import require
from ..._files import limit_from_env
from ...items import Item, shorten
from ...models import Backend, model_folder
from ...results import ResultsFrame, StudyColumn
from ...run import Block, RunOptions, own
from ...stats import KFold, MDLSplits, MultiSplits, StatsInputError
from ...train import CheckpointStore
from .._protocol import StudyDesign
from ._analysis import analyze
from ._combo import known_params
from ._config import STRATEGIES, FewShotConfig, SplitSizes
from ._data import TRANSDUCTIVE, TaskData, load_task_data
from ._methods import METHODS, Method, MethodContext, Split, Unit, get_method
from ._metrics import task_metric
from ._params import hparams_id
from ._space import (
    build_grid,
    fixed_for,
    fixed_setting,
    fixed_values,
    load_space,
    method_space,
    named_tasks,
)
from ._tasks import FewShotTask, get_task, item_groups
from ._types import FewShotDesign

if TYPE_CHECKING:
    pass

__all__ = [
    "COLUMNS",
    "MAX_DESIGN_ROWS",
    "build_grid",
    "fewshot_design",
    "final_design",
    "load_space",
    "make_splitter",
]

Splitter = KFold | MultiSplits | MDLSplits

#: The most rows (scored items over every unit) one design may plan before it is built;
#: ``STEADYEVAL_FEWSHOT_MAX_ROWS`` raises it. Each row is a rendered prompt the run holds.
MAX_DESIGN_ROWS = 200_000

#: The study's columns: which part of which split of which strategy a row belongs to.
COLUMNS = (
    StudyColumn("hparams", "string", "the hyperparameter setting (canonical JSON)"),
    StudyColumn("part", "string", "dev (the split's held-out part) or test"),
    StudyColumn("seed", "int", "the training/shot seed of the unit"),
    StudyColumn("method", "string", "the few-shot method (icl, pet, cls, ...)"),
    StudyColumn("task", "string", "the FewGLUE task (RTE, CB, ...)"),
    StudyColumn("hparams_id", "string", "a short id of the setting (see design.grid)"),
    StudyColumn("split", "string", "strategy/K=k/index/part, or final/seed/test"),
    StudyColumn("strategy", "string", "multisplit, cv, mdl, or final (retrained on all)"),
    StudyColumn("n_splits", "int", "K of the strategy (0 for final units)"),
    StudyColumn("split_index", "int", "which of the K splits (the seed index for final)"),
)


def make_splitter(
    strategy: str, k: int, *, ratio: float = 0.5, seed: int = 0, sizes: SplitSizes = "even"
) -> Splitter:
    """The :mod:`steadyeval.stats` splitter for a strategy name (``sizes``: how split sizes
    round when K does not divide N, ``"even"`` or FewNLU's ``"fewnlu"``)."""
    if strategy == "multisplit":
        return MultiSplits(k, train_ratio=ratio, seed=seed, sizes=sizes)
    if strategy == "cv":
        if k < 2:
            raise ConfigError("cross-validation needs K >= 2")
        return KFold(k, seed=seed, sizes=sizes)
    if strategy == "mdl":
        return MDLSplits(k, seed=seed, sizes=sizes)
    if strategy == "fixed":
        raise ConfigError("the fixed strategy does not split the labelled data (no splitter)")
    raise ConfigError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")


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
    splitter = make_splitter(strategy, k, ratio=config.ratio, seed=seed, sizes=config.split_sizes)
    groups = item_groups(labelled)
    pairs = splitter.split(groups if groups is not None else len(labelled))
    return [([labelled[int(i)] for i in tr], [labelled[int(i)] for i in dv]) for tr, dv in pairs]


@dataclass(frozen=True)
class _Usage:
    """Where a unit's rows go: a strategy's K and split index (``final``: seed index)."""

    strategy: str
    k: int
    index: int


def _blocks(block: Block, unit: Unit, e: _Experiment, usage: _Usage) -> list[Block]:
    """A unit's block as two blocks, dev and test, tagged with the usage's columns."""
    head = usage.strategy if usage.strategy == "final" else f"{usage.strategy}/K={usage.k}"
    out = []
    for part in ("dev", "test"):
        items = [i for i in block.items if i.metadata.get("part") == part]
        if not items:
            continue
        tags = {
            "task": e.task.name,
            "method": e.method.name,
            "hparams_id": hparams_id(unit.hparams),
            "split": f"{head}/{usage.index}/{part}",
            "strategy": usage.strategy,
            "n_splits": usage.k,
            "split_index": usage.index,
        }
        out.append(Block(items, block.conditions, block.models, block.shot_pools, tags))
    return out


@dataclass
class _Experiment:
    """One (task, method) pair of the run: its grid and the task's data."""

    data: TaskData
    method: Method
    grid: list[dict[str, Any]]
    #: The fixed strategy's setting (one of ``grid``; None when the run has no fixed strategy).
    fixed: dict[str, Any] | None = None

    @property
    def task(self) -> FewShotTask:
        return self.data.task

    @property
    def key(self) -> str:
        return f"{self.task.name}/{self.method.name}"


@dataclass
class _Context:
    """What the design and its follow-up share."""

    config: FewShotConfig
    experiments: list[_Experiment]
    methods: MethodContext


def _experiments(config: FewShotConfig) -> list[_Experiment]:
    tasks = [get_task(t) for t in config.tasks]
    methods = [get_method(m) for m in config.methods]
    if len({m.name for m in methods}) < len(methods):
        raise ConfigError(f"methods: {config.methods} name one method twice")
    # A shared name of the space that a method lacks is skipped for it when another method
    # of the run, or any known method, has it (one space file for many runs); others are
    # errors (typos).
    every = {p for m in (*methods, *METHODS.values()) for p in m.params} | known_params()
    semi = any(m.uses_unlabelled for m in methods)
    if config.unlabelled is not None and not semi:
        raise ConfigError(
            f"unlabelled: {shorten(config.unlabelled, 80)} is read only by the semi-supervised "
            f"methods (pet+mlm, ipet, noisy, pet-full and their combinations); none of "
            f"{', '.join(m.name for m in methods)} reads it: drop it or add such a method"
        )
    if config.transductive and not semi:
        raise ConfigError(
            "transductive: only the methods that read unlabelled examples (pet+mlm, ipet, "
            f"noisy, pet-full and their combinations) use the test inputs; none of "
            f"{', '.join(m.name for m in methods)} does: drop it or add such a method"
        )
    spaces = [method_space(config.space, method, every) for method in methods]
    in_run = {task.key for task in tasks}
    for method, space in zip(methods, spaces, strict=True):
        for key in sorted(named_tasks(space) - in_run):  # checked though this run skips them
            build_grid(method, get_task(key), space)
    wanted = (
        fixed_values(config.fixed, every, {t.name for t in tasks})
        if "fixed" in config.strategies
        else None
    )
    out = []
    loaded = [load_task_data(config, task, unlabelled=semi) for task in tasks]
    if config.transductive and all(d.unlabelled_source != TRANSDUCTIVE for d in loaded):
        found = "; ".join(f"{d.task.name}: {d.unlabelled_source}" for d in loaded)
        raise ConfigError(
            f"transductive: every task of the run has unlabelled examples ({found}), so the "
            "test inputs would not be used (a non-transductive run recorded as transductive): "
            "drop it"
        )
    for task, data in zip(tasks, loaded, strict=True):
        for method, space in zip(methods, spaces, strict=True):
            grid = build_grid(method, task, space)
            fixed = (
                None
                if wanted is None
                else fixed_setting(grid, fixed_for(wanted, task.name), method.name, task.name)
            )
            out.append(_Experiment(data, method, grid, fixed))
    if wanted is not None:
        _check_fixed_used(wanted, [(e.data.task.name, e.grid[0]) for e in out])
    return out


def _check_fixed_used(
    wanted: Mapping[str | None, Mapping[str, str]], grids: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Every fixed name is a hyperparameter of some method of the run on a task it is given
    for (``grids``: each experiment's task and a setting of its grid); else it would be
    ignored without a word."""
    plain = wanted.get(None, {})
    tasks = {t for t, _ in grids}
    shadowed = sorted(n for n in plain if tasks and all(n in wanted.get(t, {}) for t in tasks))
    if shadowed:  # a task's own entry wins on every task: the plain one is never read
        raise ConfigError(
            f"fixed: {', '.join(f'{n}={plain[n]}' for n in shadowed)} is given for every task "
            f"of the run by a TASK:NAME=VALUE entry too ({', '.join(sorted(tasks))}), so it "
            "would be ignored: drop it"
        )
    for task, names in wanted.items():
        have = {n for t, g in grids if task is None or t == task for n in g}
        unused = sorted(set(names) - have)
        if unused:
            where = f" on {task}" if task else ""
            raise ConfigError(
                f"fixed: {', '.join(unused)} is no hyperparameter of this run's methods{where} "
                f"(theirs: {', '.join(sorted(have))}), so it would be ignored: drop it or add "
                "a method that has it"
            )


def _context(config: FewShotConfig, backends: Sequence[Backend], options: RunOptions) -> _Context:
    if config.threads is not None:
        require("fewshot configs with threads", "torch")
        import torch

        torch.set_num_threads(config.threads)
    experiments = _experiments(config)
    if config.checkpoints is not None:
        root = Path(config.checkpoints)
        if os.path.exists(root) and not os.path.isdir(root):
            raise ConfigError(f"checkpoints: {root} is not a folder; expected a folder (or none)")
    elif options.out is not None:
        root = Path(options.out) / "checkpoints"
        own(Path(options.out), root.name)
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
    return _Context(config, experiments, ctx)


def _unit(
    e: _Experiment,
    h: dict[str, Any],
    splits: Sequence[tuple[Sequence[Item], Sequence[Item]]],
    index: int,
    seed: int,
) -> Unit:
    every: list[Split] = [(tuple(t), tuple(d)) for t, d in splits]
    train, dev = every[index]
    siblings = tuple(s for j, s in enumerate(every) if j != index)
    pool = e.data.unlabelled if e.method.uses_unlabelled else ()
    return Unit(e.task, h, train, dev, e.data.test, seed, siblings, pool)


def _check_size(c: _Context) -> None:
    """Refuse, before any block is built, a design that would score more than
    :data:`MAX_DESIGN_ROWS` rows: every setting is scored on the dev part of every split of
    every strategy and K, and on the test set (the count is an upper bound)."""
    config = c.config
    limit = limit_from_env("STEADYEVAL_FEWSHOT_MAX_ROWS", MAX_DESIGN_ROWS, unit=1)
    splits = len(config.strategies) * sum(set(config.k_values) | {config.k})
    rows = 0
    for e in c.experiments:
        rows += len(e.grid) * splits * (len(e.data.labelled) + len(e.data.test))
    if rows > limit:
        settings = sum(len(e.grid) for e in c.experiments)
        raise ConfigError(
            f"the design would score up to {rows:,} rows ({settings:,} settings over "
            f"{len(c.experiments)} task/method pairs, each on {splits} splits, dev and test "
            f"items), over the limit of {limit:,}; narrow it (a smaller space, fewer "
            "strategies or --k-values, a smaller test set) or raise the limit with "
            "STEADYEVAL_FEWSHOT_MAX_ROWS"
        )


def _fixed_blocks(c: _Context, e: _Experiment, units: set[tuple[Any, ...]]) -> list[Block]:
    """FewNLU's fixed hyper-parameters (``fix_setting``): the experiment's fixed setting
    trained on all labelled data, no dev part (so no early stopping: the last step's
    weights), once per seed ``seed + j`` for ``j < K`` at each K (the same seeds, so the
    same checkpoints, at every K); scored on the test set."""
    config = c.config
    assert e.fixed is not None
    out: list[Block] = []
    for k in sorted(set(config.k_values) | {config.k}):
        for j in range(k):
            unit = _unit(e, e.fixed, [(e.data.labelled, ())], 0, config.seed + j)
            units.add((e.key, hparams_id(e.fixed), "fixed", config.seed + j))
            out += _blocks(e.method.block(unit, c.methods), unit, e, _Usage("fixed", k, j))
    return out


def fewshot_design(
    config: FewShotConfig, backends: Sequence[Backend], options: RunOptions
) -> StudyDesign:
    """Every (task, method, strategy, K, split, setting) unit as blocks: the method's items,
    condition and model for the unit, tagged with the task, strategy, K and split. Trains
    nothing: a trained method's model is trained when the runner first needs its answers."""
    c = _context(config, backends, options)
    _check_size(c)
    blocks: list[Block] = []
    skipped: list[dict[str, Any]] = []
    units: set[tuple[Any, ...]] = set()
    n_usages = 0
    for e in c.experiments:
        for strategy in config.strategies:
            if strategy == "fixed":
                blocks += _fixed_blocks(c, e, units)
                n_usages += sum(set(config.k_values) | {config.k})
                continue
            for k in sorted(set(config.k_values) | {config.k}):
                try:
                    splits = _splits(strategy, k, config, e.data.labelled)
                except (StatsInputError, ConfigError) as exc:
                    if k == config.k:
                        raise ConfigError(f"{e.task.name}: {strategy} with K={k}: {exc}") from None
                    skipped.append(
                        {"task": e.task.name, "strategy": strategy, "k": k, "reason": str(exc)}
                    )
                    continue
                for index, (train, dev) in enumerate(splits):
                    for h in e.grid:
                        unit = _unit(e, h, splits, index, config.seed)
                        ids = (*(i.id for i in train), "|", *(i.id for i in dev))
                        units.add((e.key, hparams_id(h), *ids))
                        n_usages += 1
                        block = e.method.block(unit, c.methods)
                        blocks += _blocks(block, unit, e, _Usage(strategy, k, index))
    info = _info(c, skipped, n_units=len(units), n_usages=n_usages)
    return StudyDesign(blocks=tuple(blocks), info=info, columns=COLUMNS)


def final_design(
    config: FewShotConfig,
    design: StudyDesign,
    results: ResultsFrame,
    backends: Sequence[Backend],
    options: RunOptions,
) -> StudyDesign | None:
    """Each strategy's chosen setting (from the results so far), re-adapted on all labelled
    data with ``final_seeds`` seeds and scored on the test set; None when not asked for.
    Cross-split pseudo-labels of a retrained unit come from the strategy's K splits."""
    if not config.final_seeds:
        return None
    c = _context(config, backends, options)
    analysis = analyze(results, FewShotDesign.from_json(design.info, source="design"))
    blocks: list[Block] = []
    for e in c.experiments:
        # The fixed strategy's units are already trained on all labelled data: no retraining.
        rows = [r for r in analysis.experiments[e.key].side_by_side if r.strategy != "fixed"]
        by_id = {hparams_id(h): h for h in e.grid}
        for hid in dict.fromkeys(r.selected for r in rows):
            strategy = next(r.strategy for r in rows if r.selected == hid)
            splits = _splits(strategy, config.k, config, e.data.labelled)
            for j in range(config.final_seeds):
                every = [*splits, (e.data.labelled, ())]
                unit = _unit(e, by_id[hid], every, len(splits), config.seed + j)
                block = e.method.block(unit, c.methods)
                blocks += _blocks(block, unit, e, _Usage("final", 0, j))
    return StudyDesign(blocks=tuple(blocks), columns=COLUMNS)


def _info(
    c: _Context, skipped: list[dict[str, Any]], *, n_units: int, n_usages: int
) -> FewShotDesign:
    """The design facts the analysis and the report read (``summary.json`` → ``design``)."""
    config = c.config
    ks = sorted(set(config.k_values) | {config.k})
    first = c.experiments[0]
    return FewShotDesign(
        tasks=list(dict.fromkeys(e.task.name for e in c.experiments)),
        methods=list(dict.fromkeys(e.method.name for e in c.experiments)),
        experiments=[
            {
                "key": e.key,
                "task": e.task.name,
                "method": e.method.name,
                "grid": info_grid(e.grid),
                "fixed": None if e.fixed is None else hparams_id(e.fixed),
                "n_labelled": len(e.data.labelled),
                "n_test": len(e.data.test),
                "groups": item_groups(e.data.labelled) is not None,
                "metric": task_metric(e.task.key).name,
                "unlabelled": (
                    {"source": e.data.unlabelled_source, "available": len(e.data.unlabelled)}
                    if e.method.uses_unlabelled
                    else None
                ),
            }
            for e in c.experiments
        ],
        # The first experiment's facts at the top, as one-task one-method runs always had.
        task=first.task.name,
        method=first.method.name,
        grid=info_grid(first.grid),
        n_labelled=len(first.data.labelled),
        n_test=len(first.data.test),
        groups=item_groups(first.data.labelled) is not None,
        model=c.methods.base.identity(),
        strategies=list(config.strategies),
        k=config.k,
        k_values=[k for k in ks if not any(s["k"] == k for s in skipped)],
        skipped_k=skipped,
        ratio=config.ratio,
        split_sizes=config.split_sizes,
        seed=config.seed,
        final_seeds=config.final_seeds,
        transductive=config.transductive,
        units={"distinct": n_units, "usages": n_usages},
    )
