"""Run a config (a YAML file, a mapping or a :class:`RunConfig`): load data, build
conditions, call :func:`run`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from ..items import Item, load_items, sample_items
from ._config import DataConfig, RunConfig, load_run_config, validate_config
from ._executor import Executor
from ._run import PlanCounts, RunOptions, RunResult, run

__all__ = ["load_config_data", "resolve_run_config", "run_config"]


def _load(source: str | DataConfig) -> list[Item]:
    if isinstance(source, DataConfig):
        return load_items(source.path, loader=source.loader, **source.options())
    return load_items(source)


def load_config_data(config: RunConfig) -> tuple[list[Item], dict[str, Sequence[Item]]]:
    """The items to evaluate (the first ``limit``, or a ``sample`` drawn with the run's
    seed by :func:`~steadyeval.items.sample_items`) and the named shot pools.

    The ``default`` shot pool, unless the config names one, is the whole data set, read
    before ``limit`` or ``sample`` is applied: a pilot gets exactly the prompts its items
    get in the full run. (An item is never its own shot.)
    """
    everything = _load(config.data)
    items = everything
    if config.limit is not None:
        items = everything[: config.limit]
    elif config.sample is not None:
        items = sample_items(everything, config.sample, seed=config.seed)
    pools: dict[str, Sequence[Item]] = {name: _load(src) for name, src in config.shot_pools.items()}
    pools.setdefault("default", everything)
    return items, pools


def resolve_run_config(
    config: str | Path | Mapping[str, Any] | RunConfig, **overrides: Any
) -> RunConfig:
    """A validated :class:`RunConfig` from a YAML file, a mapping or a RunConfig, with
    ``overrides`` (any config key, e.g. ``models="hf:gpt2"``, ``sample=30``) applied on top.
    A single model spec may be given as a string."""
    if isinstance(overrides.get("models"), str):
        overrides["models"] = [overrides["models"]]
    if isinstance(config, RunConfig):
        config = config.model_dump(mode="json", exclude_unset=True)
    if isinstance(config, Mapping):
        given = {k: v for k, v in overrides.items() if v is not None}
        if isinstance(config.get("models"), str):
            config = {**config, "models": [config["models"]]}
        return validate_config(RunConfig, {**config, **given}, what="run config")
    return load_run_config(config, overrides)


@overload
def run_config(
    config: str | Path | Mapping[str, Any] | RunConfig,
    *,
    out: str | Path | None = ...,
    cache: str | Path | None = ...,
    dry_run: Literal[False] = ...,
    progress: bool | None = ...,
    executor: Executor | None = ...,
    overwrite: bool = ...,
    **overrides: Any,
) -> RunResult: ...
@overload
def run_config(
    config: str | Path | Mapping[str, Any] | RunConfig,
    *,
    out: str | Path | None = ...,
    cache: str | Path | None = ...,
    dry_run: Literal[True],
    progress: bool | None = ...,
    executor: Executor | None = ...,
    overwrite: bool = ...,
    **overrides: Any,
) -> PlanCounts: ...
@overload
def run_config(
    config: str | Path | Mapping[str, Any] | RunConfig,
    *,
    out: str | Path | None = ...,
    cache: str | Path | None = ...,
    dry_run: bool,
    progress: bool | None = ...,
    executor: Executor | None = ...,
    overwrite: bool = ...,
    **overrides: Any,
) -> RunResult | PlanCounts: ...


def run_config(
    config: str | Path | Mapping[str, Any] | RunConfig,
    *,
    out: str | Path | None = None,
    cache: str | Path | None = None,
    dry_run: bool = False,
    progress: bool | None = None,
    executor: Executor | None = None,
    overwrite: bool = False,
    **overrides: Any,
) -> RunResult | PlanCounts:
    """Run (or, with ``dry_run``, cost out) everything a run config describes: what
    ``steadyeval run CONFIG`` does.

    ``config`` is a YAML file, a mapping of the same keys or a :class:`RunConfig`;
    ``overrides`` set config keys on top of it, as the CLI's flags do::

        result = run_config("examples/run.yaml", models="hf:./tiny-gpt2", limit=5)
        df = result.to_pandas()

    ``out`` is the run folder to write (none: nothing is written); a folder holding a run
    of another config is refused unless ``overwrite``.
    """
    cfg = resolve_run_config(config, **overrides)
    items, pools = load_config_data(cfg)
    conditions = cfg.build_conditions()
    options = RunOptions(
        out=None if out is None else Path(out),
        cache=None if cache is None else Path(cache),
        progress=progress,
        executor=executor,
        overwrite=overwrite,
    )
    columns = cfg.build_columns()
    if dry_run:
        return run(
            items,
            conditions,
            cfg.models,
            options=options,
            shot_pools=pools,
            dry_run=True,
            columns=columns,
        )
    return run(
        items,
        conditions,
        cfg.models,
        options=options,
        shot_pools=pools,
        config=cfg.model_dump(mode="json"),
        columns=columns,
    )
