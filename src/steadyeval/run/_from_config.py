"""Run a validated :class:`RunConfig`: load data, build conditions, call :func:`run`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..items import Item, load_items
from ._config import DataConfig, RunConfig
from ._executor import Executor
from ._run import PlanCounts, RunOptions, RunResult, run

__all__ = ["load_config_data", "run_config"]


def _load(source: str | DataConfig) -> list[Item]:
    if isinstance(source, DataConfig):
        return load_items(source.path, loader=source.loader, **source.options())
    return load_items(source)


def load_config_data(config: RunConfig) -> tuple[list[Item], dict[str, Sequence[Item]]]:
    """The items to evaluate (first ``limit``) and the named shot pools."""
    items = _load(config.data)
    if config.limit is not None:
        items = items[: config.limit]
    pools: dict[str, Sequence[Item]] = {name: _load(src) for name, src in config.shot_pools.items()}
    return items, pools


def run_config(
    config: RunConfig,
    *,
    out: Path | None = None,
    cache: Path | None = None,
    dry_run: bool = False,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> RunResult | PlanCounts:
    """Run (or, with ``dry_run``, cost out) everything a config describes."""
    items, pools = load_config_data(config)
    conditions = config.build_conditions()
    options = RunOptions(out=out, cache=cache, progress=progress, executor=executor)
    columns = config.build_columns()
    if dry_run:
        return run(
            items,
            conditions,
            config.models,
            options=options,
            shot_pools=pools,
            dry_run=True,
            columns=columns,
        )
    return run(
        items,
        conditions,
        config.models,
        options=options,
        shot_pools=pools,
        config=config.model_dump(mode="json"),
        columns=columns,
    )
