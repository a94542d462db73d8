"""FewNLU's framework: for each setting h and each of K splits, adapt on train, score dev and
test; choose h by mean dev score; report its K test scores. Several split strategies and
several K side by side, every (h, split, seed) unit stored as it finishes."""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from ..._errors import ConfigError
from ..._json import write_json
from ...items import Item, canonical_json
from ...models import load_backend
from ...results import read_results, write_results
from ...stats import KFold, MDLSplits, MultiSplits, StatsInputError
from ._analysis import analyze
from ._methods import Method, MethodContext, Unit, get_method, hparams_id
from ._render import hparams_label, render
from ._tasks import FewShotTask, get_task, item_groups

__all__ = [
    "STRATEGIES",
    "FewShotConfig",
    "FewShotResult",
    "build_grid",
    "load_space",
    "make_splitter",
    "reanalyze_fewshot",
    "run_fewshot",
    "unit_key",
]

STRATEGIES = ("multisplit", "cv", "mdl")
_VERSION = 1
Splitter = KFold | MultiSplits | MDLSplits


@dataclass(frozen=True)
class FewShotConfig:
    """What a few-shot protocol study compares.

    Parameters
    ----------
    task : str
        A FewGLUE task name (``RTE``, ``BoolQ``, ``CB``, ``COPA``, ``WiC``, ``WSC``,
        ``MultiRC``).
    method : str
        ``icl``, ``pet``, ``cls`` or a registered plug-in.
    strategies : tuple of str
        Split strategies to compare: ``multisplit``, ``cv``, ``mdl``.
    k : int
        Number of splits K for the main comparison.
    k_values : tuple of int
        Further K values for the stability criterion (``k`` is always included).
    ratio : float
        Multi-Splits' train share r.
    seed : int
        Seeds the splitters, the training runs and the shot choice.
    final_seeds : int
        After selection, re-adapt each strategy's chosen setting on all labelled data with
        this many seeds and score the test set (0: skip).
    space : mapping or None
        Hyperparameter values to cross (``{name: [values]}``); None: the method's defaults.
    device : str
        Where training runs (``auto``: CUDA when available).
    keep_checkpoints : bool
        Keep trained checkpoints after their unit is scored (False saves the disk space
        real models need; a rerun reads stored units and does not need them).
    """

    task: str
    method: str = "icl"
    strategies: tuple[str, ...] = STRATEGIES
    k: int = 4
    k_values: tuple[int, ...] = (2, 4, 8)
    ratio: float = 0.5
    seed: int = 0
    final_seeds: int = 0
    space: Mapping[str, Any] | None = None
    device: str = "auto"
    keep_checkpoints: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategies", tuple(dict.fromkeys(self.strategies)))
        bad = [s for s in self.strategies if s not in STRATEGIES]
        if bad or not self.strategies:
            raise ConfigError(
                f"strategy {bad[0] if bad else None!r} is unknown; choose from "
                f"{', '.join(STRATEGIES)}"
            )
        if self.k < 1 or any(k < 1 for k in self.k_values):
            raise ConfigError(f"K must be >= 1; got k={self.k}, k_values={self.k_values}")
        if not 0 < self.ratio < 1:
            raise ConfigError(f"ratio must lie in (0, 1), e.g. 0.5; got {self.ratio}")
        if self.final_seeds < 0:
            raise ConfigError(f"final_seeds must be >= 0; got {self.final_seeds}")


@dataclass(frozen=True)
class FewShotResult:
    """The combined results table, the summary written to ``summary.json`` and the analysis."""

    table: pa.Table
    summary: dict[str, Any]
    analysis: dict[str, Any]
    run_dir: Path | None


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


@dataclass
class _Usage:
    strategy: str
    k: int
    index: int
    hid: str
    key: str


@dataclass
class _Planner:
    task: FewShotTask
    method: Method
    fingerprint: str
    test: tuple[Item, ...]
    units: dict[str, Unit] = field(default_factory=dict)
    usages: list[_Usage] = field(default_factory=list)

    def add(
        self,
        h: Mapping[str, Any],
        train: Sequence[Item],
        dev: Sequence[Item],
        seed: int,
        strategy: str,
        k: int,
        index: int,
    ) -> None:
        unit = Unit(self.task, dict(h), tuple(train), tuple(dev), self.test, seed)
        key = unit_key(unit, self.method.name, self.fingerprint)
        self.units.setdefault(key, unit)
        self.usages.append(_Usage(strategy, k, index, hparams_id(h), key))


def info_grid(grid: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The grid as the design records it: ``[{"id", "hparams"}]`` in grid order."""
    return [{"id": hparams_id(h), "hparams": dict(h)} for h in grid]


def unit_key(unit: Unit, method: str, fingerprint: str) -> str:
    """Content key of a unit: task, method, setting, the items of each part, seed, model."""
    body = {
        "version": _VERSION,
        "task": unit.task.name,
        "method": method,
        "hparams": dict(unit.hparams),
        "train": [i.hash for i in unit.train],
        "dev": [i.hash for i in unit.dev],
        "test": [i.hash for i in unit.test],
        "seed": unit.seed,
        "model": fingerprint,
    }
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@contextmanager
def _checkpoint_root(checkpoints: Path | None, out: Path | None) -> Iterator[Path]:
    if checkpoints is not None:
        yield Path(checkpoints)
    elif out is not None:
        yield Path(out) / "checkpoints"
    else:
        with tempfile.TemporaryDirectory(prefix="steadyeval-ckpt-") as tmp:
            yield Path(tmp)


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


def _tag(table: pa.Table, method: str, hid: str) -> pa.Table:
    meta = [json.loads(m) for m in table.column("metadata").to_pylist()]
    n = table.num_rows
    return (
        table.append_column("part", pa.array([m["part"] for m in meta], pa.string()))
        .append_column("seed", pa.array([m["seed"] for m in meta], pa.int64()))
        .append_column("method", pa.array([method] * n, pa.string()))
        .append_column("hparams_id", pa.array([hid] * n, pa.string()))
    )


def _label(table: pa.Table, u: _Usage) -> pa.Table:
    n = table.num_rows
    head = u.strategy if u.strategy == "final" else f"{u.strategy}/K={u.k}"
    split = [f"{head}/{u.index}/{p}" for p in table.column("part").to_pylist()]
    return (
        table.append_column("split", pa.array(split, pa.string()))
        .append_column("strategy", pa.array([u.strategy] * n, pa.string()))
        .append_column("n_splits", pa.array([u.k] * n, pa.int32()))
        .append_column("split_index", pa.array([u.index] * n, pa.int32()))
    )


class _Units:
    """Evaluates units once each, storing every finished unit's rows under ``units/``."""

    def __init__(
        self, method: Method, ctx: MethodContext, folder: Path | None, log: Callable[[str], None]
    ) -> None:
        self.method, self.ctx, self.folder, self.log = method, ctx, folder, log
        self.tables: dict[str, pa.Table] = {}
        self.counts = {"evaluated": 0, "reused": 0}

    def get(self, key: str, unit: Unit, label: str) -> pa.Table:
        if key in self.tables:
            return self.tables[key]
        path = self.folder / f"{key[:24]}.parquet" if self.folder is not None else None
        t0 = time.perf_counter()
        if path is not None and path.is_file():
            table = read_results(path)
            self.counts["reused"] += 1
            how = "stored"
        else:
            table = _tag(
                self.method.evaluate(unit, self.ctx), self.method.name, hparams_id(unit.hparams)
            )
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_results(table, path)
            self.counts["evaluated"] += 1
            how = f"{time.perf_counter() - t0:.1f}s"
        self.tables[key] = table
        self.log(f"{label}: dev {_acc(table, 'dev')} test {_acc(table, 'test')} ({how})")
        return table


def _acc(table: pa.Table, part: str) -> str:
    rows = [
        c
        for c, p in zip(
            table.column("correct").to_pylist(), table.column("part").to_pylist(), strict=True
        )
        if p == part
    ]
    return f"{sum(bool(c) for c in rows) / len(rows):.3f}" if rows else "-"


def run_fewshot(
    labelled: Sequence[Item],
    test: Sequence[Item],
    model: str,
    config: FewShotConfig,
    *,
    out: str | Path | None = None,
    cache: str | Path | None = None,
    checkpoints: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> FewShotResult:
    """Compare split strategies for selecting a few-shot method's hyperparameters.

    For each strategy and each K (``config.k`` and ``config.k_values``), the labelled items
    are split K times (:class:`~steadyeval.stats.MultiSplits`, :class:`~steadyeval.stats.KFold`
    or :class:`~steadyeval.stats.MDLSplits`; grouped tasks split whole groups). For every
    setting h of the grid and every split, the method adapts on the train part and the dev
    part and the test set are scored. The analysis chooses h by mean dev accuracy and reports
    FewNLU's three criteria: the test score of the chosen h (mean ± std over the K splits),
    the Spearman correlation of mean dev and mean test accuracy across the grid, and how both
    move as K changes.

    Every unit (setting, split, seed) is stored in ``out/units/`` as it finishes and trained
    checkpoints live in a content-addressed store (``checkpoints``, default ``out/checkpoints``),
    so a rerun after an interruption repeats no finished training or scoring. Model answers go
    through :func:`steadyeval.run` and its response cache (``cache``).

    Writes ``results.parquet`` (every row, with ``strategy``, ``n_splits``, ``split_index``,
    ``part``, ``split``, ``hparams``, ``hparams_id`` and ``seed`` columns), ``summary.json``,
    ``summary.md`` and ``config.json`` into ``out`` when given.
    """
    say = log or (lambda _: None)
    task = get_task(config.task)
    method = get_method(config.method)
    grid = build_grid(method, task, config.space)
    labelled, test_items = tuple(labelled), tuple(test)
    if not labelled or not test_items:
        raise ConfigError("both the labelled set and the test set need items")
    out_dir = Path(out) if out is not None else None
    with _checkpoint_root(Path(checkpoints) if checkpoints else None, out_dir) as ckpt_root:
        ctx = MethodContext(
            model=model,
            cache=Path(cache) if cache else None,
            checkpoints=ckpt_root,
            device=config.device,
            keep_checkpoints=config.keep_checkpoints,
        )
        planner = _Planner(task, method, method.fingerprint(ctx), test_items)
        skipped = _plan(planner, grid, config, labelled)
        number = {hparams_id(h): n for n, h in enumerate(grid, start=1)}
        say(
            f"{len(planner.usages)} (setting, split) results from {len(planner.units)} "
            f"distinct units; {len(grid)} settings"
        )
        for h in grid:
            say(f"setting #{number[hparams_id(h)]}: {hparams_label(h, info_grid(grid))}")
        units = _Units(method, ctx, out_dir / "units" if out_dir else None, say)
        tables = []
        for n, u in enumerate(planner.usages, start=1):
            label = (
                f"[{n}/{len(planner.usages)}] {u.strategy} K={u.k} split {u.index} "
                f"setting #{number[u.hid]}"
            )
            tables.append(_label(units.get(u.key, planner.units[u.key], label), u))
        info = _design(task, method, model, grid, config, skipped, labelled, test_items)
        table = pa.concat_tables(tables, promote_options="default")
        analysis = analyze(table, info)
        if config.final_seeds:
            # Each strategy's chosen setting, re-adapted on all labelled data per seed.
            chosen = dict.fromkeys(r["selected"] for r in analysis["side_by_side"])
            by_id = {hparams_id(h): h for h in grid}
            for hid in chosen:
                for j in range(config.final_seeds):
                    seed = config.seed + j
                    unit = Unit(task, by_id[hid], labelled, (), test_items, seed)
                    key = unit_key(unit, method.name, planner.fingerprint)
                    got = units.get(key, unit, f"[final] setting #{number[hid]} seed {seed}")
                    tables.append(_label(got, _Usage("final", 0, j, hid, key)))
            table = pa.concat_tables(tables, promote_options="default")
            analysis = analyze(table, info)
    summary = {
        "study": "fewshot",
        "schema_version": 1,
        "design": info,
        "analysis": analysis,
        "n_rows": table.num_rows,
        "units": {"distinct": len(units.tables), **units.counts},
    }
    if out_dir is not None:
        _write_run(out_dir, table, summary, config, model, labelled, test_items)
    return FewShotResult(table, summary, analysis, out_dir)


def _plan(
    planner: _Planner,
    grid: Sequence[Mapping[str, Any]],
    config: FewShotConfig,
    labelled: Sequence[Item],
) -> list[dict[str, Any]]:
    """Add every (strategy, K, split, setting) to ``planner``; return the K values skipped."""
    skipped: list[dict[str, Any]] = []
    for strategy in config.strategies:
        for k in sorted(set(config.k_values) | {config.k}):
            try:
                splits = _splits(strategy, k, config, labelled)
            except (StatsInputError, ConfigError) as exc:
                if k == config.k:
                    raise ConfigError(f"{strategy} with K={k}: {exc}") from None
                skipped.append({"strategy": strategy, "k": k, "reason": str(exc)})
                continue
            for index, (train, dev) in enumerate(splits):
                for h in grid:
                    planner.add(h, train, dev, config.seed, strategy, k, index)
    return skipped


def _design(
    task: FewShotTask,
    method: Method,
    model: str,
    grid: Sequence[Mapping[str, Any]],
    config: FewShotConfig,
    skipped: list[dict[str, Any]],
    labelled: Sequence[Item],
    test: Sequence[Item],
) -> dict[str, Any]:
    """The design facts the analysis and the report read (``summary.json`` → ``design``)."""
    ks = sorted(set(config.k_values) | {config.k})
    return {
        "task": task.name,
        "method": method.name,
        "model": load_backend(model).identity(),
        "grid": info_grid(grid),
        "strategies": list(config.strategies),
        "k": config.k,
        "k_values": [k for k in ks if not any(s["k"] == k for s in skipped)],
        "skipped_k": skipped,
        "ratio": config.ratio,
        "seed": config.seed,
        "final_seeds": config.final_seeds,
        "n_labelled": len(labelled),
        "n_test": len(test),
        "metric": "accuracy",
        "groups": item_groups(labelled) is not None,
    }


def _write_run(
    out_dir: Path,
    table: pa.Table,
    summary: Mapping[str, Any],
    config: FewShotConfig,
    model: str,
    labelled: Sequence[Item],
    test: Sequence[Item],
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_results(table, out_dir / "results.parquet")
    write_json(out_dir / "summary.json", summary)
    (out_dir / "summary.md").write_text(
        render(summary["analysis"], summary["design"]), encoding="utf-8"
    )
    resolved = {
        "study": "fewshot",
        "model": model,
        "config": {
            "task": config.task,
            "method": config.method,
            "strategies": list(config.strategies),
            "k": config.k,
            "k_values": list(config.k_values),
            "ratio": config.ratio,
            "seed": config.seed,
            "final_seeds": config.final_seeds,
            "space": dict(config.space or {}),
            "device": config.device,
            "keep_checkpoints": config.keep_checkpoints,
        },
        "labelled": [i.id for i in labelled],
        "test": [i.id for i in test],
    }
    write_json(out_dir / "config.json", resolved)


def reanalyze_fewshot(run_dir: str | Path) -> dict[str, Any]:
    """Recompute the analysis from ``results.parquet`` and rewrite ``summary.json``/``.md``.

    Reads only the run directory: no model is loaded and nothing is trained.
    """
    run_dir = Path(run_dir)
    table = read_results(run_dir / "results.parquet")
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    info = summary["design"]
    analysis = analyze(table, info)
    summary["analysis"] = analysis
    write_json(run_dir / "summary.json", summary)
    (run_dir / "summary.md").write_text(render(analysis, info), encoding="utf-8")
    return analysis
