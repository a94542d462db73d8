"""plan -> dispatch -> collect: run items × conditions × models into a results table."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import numbers
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import pyarrow as pa

from .._errors import ConfigError
from .._json import write_json, write_text_atomic
from ..cache import ResponseCache
from ..conditions import Condition, Expansion, Trial, expand
from ..items import Item, canonical_json
from ..models import Backend, ModelSpec, check_backend, check_kinds, load_backend, with_slots
from ..requests import Request, RequestKind, Response
from ..results import (
    SCHEMA_VERSION,
    ResultRow,
    StudyColumn,
    rows_to_table,
    summarize,
    summary_markdown,
    write_results,
    writing_run,
)
from ..scoring import ScoringMode, get_scoring, requests_for
from ._dispatch import (
    PlanCounts,
    backend_stats,
    count_plan,
    dispatch,
    preflight,
    retry_counts,
)
from ._executor import Executor
from ._folder import claim_run_dir, config_key, locked_run_dir
from ._plan import Plan, PlannedTrial, build_plan
from ._provenance import provenance

_log = logging.getLogger(__name__)
#: The skip reason of a condition's own ``items`` filter.
_BY_FILTER = "condition is for items"

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Block", "PlanCounts", "RunOptions", "RunResult", "run", "run_blocks"]

ModelLike = str | ModelSpec | Backend


@dataclass(frozen=True)
class RunOptions:
    """How to run (none of these change a result)."""

    out: Path | None = None
    cache: Path | None = None
    batch_size: int = 64
    progress: bool | None = None  # None: a bar on a terminal, else INFO log lines (not -q)
    executor: Executor | None = None
    #: Replace a run folder that holds a different run (its files are deleted first);
    #: without it such a folder is refused. A folder holding the same run is resumed.
    overwrite: bool = False


@dataclass(frozen=True)
class RunResult:
    """A finished run: the results table (one row per item × condition × model × sample),
    the summary (``summary.json``'s content) and the run folder written (or ``None``)."""

    table: pa.Table
    summary: dict[str, Any]
    run_dir: Path | None

    def to_pandas(self) -> pd.DataFrame:
        """The results table as a pandas DataFrame (columns as in ``docs/results.md``)."""
        frame: pd.DataFrame = self.table.to_pandas()
        return frame


@dataclass(frozen=True)
class Block:
    """Items crossed with conditions and models: what one :func:`run` call asks. A run of
    several blocks (e.g. a study's splits, each with its own model) plans, dedupes, caches
    and writes them as one table."""

    items: Sequence[Item]
    conditions: Sequence[Condition]
    models: Sequence[ModelLike]
    shot_pools: Mapping[str, Sequence[Item]] = field(default_factory=dict)
    #: Values of study columns shared by every row of the block (e.g. which split it is).
    tags: Mapping[str, Any] = field(default_factory=dict)


def _as_list(models: ModelLike | Sequence[ModelLike]) -> list[ModelLike]:
    if isinstance(models, str | ModelSpec) or not isinstance(models, Sequence):
        return [models]
    return list(models)


def _pending(backend: Backend) -> bool:
    """Whether ``backend``'s fingerprint would first download its weights (the optional
    member ``fingerprint_pending``)."""
    return getattr(backend, "fingerprint_pending", False) is True


class _Models:
    """The backends of a run by identity: one per model, each reading cloze slots (a
    :class:`~steadyeval.models.SlotReader` around backends that do not fill them)."""

    def __init__(self) -> None:
        self.by_name: dict[str, Backend] = {}
        self._seen: dict[str | int, str] = {}

    def add_block(self, models: Sequence[ModelLike]) -> list[str]:
        names: list[str] = []
        for m in models:
            key: str | int = str(m) if isinstance(m, str | ModelSpec) else id(m)
            name = self._seen.get(key)
            if name is None:
                loaded = load_backend(m) if isinstance(m, str | ModelSpec) else check_backend(m)
                backend = with_slots(loaded)
                name = backend.identity()
                known = self.by_name.setdefault(name, backend)
                # a hub model's identity names its commit: no weights downloaded to compare
                pending = any(_pending(b) for b in (known, backend))
                if (
                    known is not backend
                    and not pending
                    and known.fingerprint() != backend.fingerprint()
                ):
                    raise ConfigError(
                        f"two different models have the identity {name} ({known.spec} and "
                        f"{backend.spec}); a backend's identity must tell its models apart"
                    )
                self._seen[key] = name
            if name in names:
                raise ConfigError(
                    f"a model is listed twice ({name}; specs differing only in run settings "
                    "such as batch_size are the same model); list each model once"
                )
            names.append(name)
        if not names:
            raise ConfigError(
                "no models given; pass at least one model spec such as hf:/path/to/model"
            )
        return names


@dataclass
class _Planned:
    """Every block expanded and planned: trials, the plan, skips, the backends."""

    plan: Plan
    tags: list[Mapping[str, Any]]  # per planned trial, in plan order
    models: _Models
    skipped: Counter[tuple[str, str]]
    conditions: list[str]
    items: list[str]
    body: list[dict[str, Any]]
    #: models whose cache a dry run did not read (``Backend.fingerprint_pending``)
    unread: list[str]


def _warn_unused(conditions: Sequence[Condition], expansion: Expansion) -> None:
    """Say which conditions apply to none of the items, and why (else a run can hold no row
    of a condition and say so only in its summary). A condition whose own ``items`` filter
    left nothing (the default ``free`` on items that all have options) is no surprise."""
    used = {t.condition.name for t in expansion.trials}
    for cond in conditions:
        reasons = [r for (c, r), _ in expansion.skipped.items() if c == cond.name]
        if cond.name not in used and not all(r.startswith(_BY_FILTER) for r in reasons):
            _log.warning(
                "condition %r applies to none of the items (%s)",
                cond.name,
                "; ".join(reasons[:3]) or "no items",
            )


def _plan(blocks: Sequence[Block], *, dry_run: bool = False) -> _Planned:
    """Expand and plan ``blocks``. A dry run keys a model whose fingerprint would first
    download its weights by its identity instead: its cache is not read."""
    models = _Models()
    unread: dict[str, None] = {}
    units: list[tuple[str, str, Trial, Sequence[Request]]] = []
    tags: list[Mapping[str, Any]] = []
    skipped: Counter[tuple[str, str]] = Counter()
    defined: dict[str, str] = {}  # condition name -> id, across blocks
    items: dict[str, None] = {}
    body = []
    for block in blocks:
        for cond in block.conditions:
            if defined.setdefault(cond.name, cond.id) != cond.id:
                raise ConfigError(
                    f"condition {cond.name!r} is defined twice, differently; give each its own name"
                )
        # prompts first: an error in rendering one comes before any model loads
        expansion = expand(block.items, block.conditions, shot_pools=block.shot_pools)
        names = models.add_block(_as_list(block.models))
        skipped.update(expansion.skipped)
        _warn_unused(block.conditions, expansion)
        asked = [(t, requests_for(t)) for t in expansion.trials]
        for name in names:
            backend = models.by_name[name]
            if dry_run and _pending(backend):
                unread[name] = None
                fp = f"unread:{backend.identity()}"
            else:
                fp = backend.fingerprint()
            units.extend((name, fp, t, reqs) for t, reqs in asked)
            tags.extend([block.tags] * len(asked))
        items.update(dict.fromkeys(i.id for i in block.items))
        body.append(
            {
                "items": [i.hash for i in block.items],
                "conditions": [c.to_dict() for c in block.conditions],
                "models": names,
                **({"tags": dict(block.tags)} if block.tags else {}),
            }
        )
    plan = build_plan(units)
    kinds: dict[str, set[RequestKind]] = {}
    for model, req in plan.unique.values():
        kinds.setdefault(model, set()).add(req.kind)
    for name, used in kinds.items():
        check_kinds(models.by_name[name], used)
    return _Planned(plan, tags, models, skipped, list(defined), list(items), body, [*unread])


def run_id_for(body: Sequence[Mapping[str, Any]], columns: Sequence[StudyColumn] = ()) -> str:
    """A hash of what a run asks: each block's item hashes, conditions and models, and the
    study columns; the same inputs give the same id."""
    payload = {
        "blocks": list(body),
        "columns": [c.to_dict() for c in columns],
        "schema_version": SCHEMA_VERSION,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


@overload
def run(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    models: ModelLike | Sequence[ModelLike],
    *,
    options: RunOptions | None = ...,
    shot_pools: Mapping[str, Sequence[Item]] | None = ...,
    dry_run: Literal[False] = ...,
    config: Mapping[str, Any] | None = ...,
    columns: Sequence[StudyColumn] = ...,
) -> RunResult: ...
@overload
def run(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    models: ModelLike | Sequence[ModelLike],
    *,
    options: RunOptions | None = ...,
    shot_pools: Mapping[str, Sequence[Item]] | None = ...,
    dry_run: Literal[True],
    config: Mapping[str, Any] | None = ...,
    columns: Sequence[StudyColumn] = ...,
) -> PlanCounts: ...


def run(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    models: ModelLike | Sequence[ModelLike],
    *,
    options: RunOptions | None = None,
    shot_pools: Mapping[str, Sequence[Item]] | None = None,
    dry_run: bool = False,
    config: Mapping[str, Any] | None = None,
    columns: Sequence[StudyColumn] = (),
) -> RunResult | PlanCounts:
    """Run every item under every condition on every model; return the results table.

    Steps: ``expand`` items × conditions (skips counted), plan one request list per
    (trial, model), dedupe by content key, take what the response cache has, send the
    rest in batches (each batch committed to the cache as it returns), then score every
    trial and write the run directory (``results.parquet``, ``summary.json``,
    ``summary.md``, ``config.json``, ``provenance.json``) if ``options.out`` is set.

    ``models`` is a model spec (``"hf:gpt2"``), a backend, or a list of them. ``columns``
    are study columns (:class:`~steadyeval.results.StudyColumn`) lifted from the items'
    metadata into typed columns of the table.

    With ``dry_run=True`` nothing is sent: the plan's counts are returned instead.
    An interrupted run (crash, ``kill -9``, Ctrl-C) keeps every response already cached; the
    same call again resumes and calls the model only for what is missing.
    """
    block = Block(items, conditions, _as_list(models), shot_pools or {})
    if dry_run:
        return run_blocks([block], options=options, dry_run=True, columns=columns)
    return run_blocks([block], options=options, config=config, columns=columns)


@overload
def run_blocks(
    blocks: Sequence[Block],
    *,
    options: RunOptions | None = ...,
    dry_run: Literal[False] = ...,
    config: Mapping[str, Any] | None = ...,
    columns: Sequence[StudyColumn] = ...,
) -> RunResult: ...
@overload
def run_blocks(
    blocks: Sequence[Block],
    *,
    options: RunOptions | None = ...,
    dry_run: Literal[True],
    config: Mapping[str, Any] | None = ...,
    columns: Sequence[StudyColumn] = ...,
) -> PlanCounts: ...


def run_blocks(
    blocks: Sequence[Block],
    *,
    options: RunOptions | None = None,
    dry_run: bool = False,
    config: Mapping[str, Any] | None = None,
    columns: Sequence[StudyColumn] = (),
) -> RunResult | PlanCounts:
    """Run several blocks as one run (see :func:`run`): one plan, one dispatch, one table
    (rows in block order), one run directory (locked while the run writes it)."""
    opts = options or RunOptions()
    if dry_run or opts.out is None:
        return _run_blocks(blocks, opts, dry_run=dry_run, config=config, columns=columns)
    with locked_run_dir(Path(opts.out)):
        return _run_blocks(blocks, opts, dry_run=False, config=config, columns=columns)


def _metric_columns(
    conditions: Sequence[Condition], columns: Sequence[StudyColumn] = ()
) -> list[StudyColumn]:
    """The columns of the metrics the conditions' scoring modes declare (each once, in the
    order first met), after checking none takes the name of one of ``columns``."""
    taken = {c.name for c in columns}
    out: dict[str, StudyColumn] = {}
    for cond in conditions:
        mode = get_scoring(cond.scoring)
        for name, doc in mode.metrics.items():
            if name in taken:
                raise ConfigError(
                    f"scoring {mode.name!r}: its metric {name!r} has the name of a study "
                    "column of this run; rename the metric"
                )
            try:
                out.setdefault(name, StudyColumn(name, "float", doc, summary="mean"))
            except ConfigError as exc:
                raise ConfigError(f"scoring {mode.name!r}: metric {name!r}: {exc}") from None
    return list(out.values())


def _check_tags(blocks: Sequence[Block], columns: Sequence[StudyColumn]) -> None:
    declared = {c.name for c in columns}
    for block in blocks:
        undeclared = sorted(set(block.tags) - declared)
        if undeclared:
            raise ConfigError(
                f"a block is tagged {undeclared[0]!r}, which is not a declared study column; "
                f"declared: {', '.join(sorted(declared)) or 'none'}"
            )


def _run_blocks(
    blocks: Sequence[Block],
    opts: RunOptions,
    *,
    dry_run: bool,
    config: Mapping[str, Any] | None,
    columns: Sequence[StudyColumn],
) -> RunResult | PlanCounts:
    _check_tags(blocks, columns)
    columns = [*columns, *_metric_columns([c for b in blocks for c in b.conditions], columns)]
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cache = ResponseCache(opts.cache)  # a bad cache file is refused before models load
    try:
        planned = _plan(blocks, dry_run=dry_run)
    except BaseException:
        cache.close()
        raise
    plan, backends = planned.plan, planned.models.by_name
    timings["plan"] = time.perf_counter() - t0
    try:
        cached = cache.get_many(list(plan.unique))
        missing = [k for k in plan.unique if k not in cached]
        if dry_run:
            preflight(plan, missing, backends, send=False)
            skipped = sum(planned.skipped.values())
            return count_plan(plan, backends, cached, missing, skipped, unread=planned.unread)
        rid = run_id_for(planned.body, columns)
        if opts.out is not None:
            claim_run_dir(
                Path(opts.out),
                config_key(config, rid),
                overwrite=opts.overwrite,
                keep=[cache.path],
                config=config,
            )
        before = backend_stats(backends)
        preflight(plan, missing, backends)
        t1 = time.perf_counter()
        responses = dict(cached)
        n_sent = dispatch(
            plan,
            missing,
            backends,
            cache,
            responses,
            batch_size=opts.batch_size,
            progress=opts.progress,
            executor=opts.executor,
        )
        timings["dispatch"] = time.perf_counter() - t1
        retries = retry_counts(backends, before)
    finally:
        cache.close()

    t2 = time.perf_counter()
    rows = [
        row
        for pt, tags in zip(plan.trials, planned.tags, strict=True)
        for row in _rows(pt, responses, rid, tags)
    ]
    table = rows_to_table(rows, columns)
    timings["score"] = time.perf_counter() - t2
    # requests another process sent meanwhile (a shared cache) count as cached
    n_cached = len(plan.unique) - n_sent
    summary = _summary(table, planned, rid, n_cached=n_cached, n_sent=n_sent)
    summary["retries"] = retries
    run_dir = None
    if opts.out is not None:
        run_dir = Path(opts.out)
        with writing_run(run_dir, rid):
            _write(run_dir, table, summary, planned, config)
            timings["total"] = time.perf_counter() - t0
            fingerprints = {name: b.fingerprint() for name, b in backends.items()}
            counts = {"rows": table.num_rows, "model_calls": n_sent, "cache_hits": n_cached}
            write_json(
                run_dir / "provenance.json", provenance(fingerprints, timings, counts), default=str
            )
    return RunResult(table=table, summary=summary, run_dir=run_dir)


def _summary(
    table: pa.Table, planned: _Planned, rid: str, *, n_cached: int, n_sent: int
) -> dict[str, Any]:
    plan = planned.plan
    return {
        "run_id": rid,
        "schema_version": SCHEMA_VERSION,
        "n_rows": table.num_rows,
        "n_items": len(planned.items),
        "models": list(planned.models.by_name),
        "conditions": planned.conditions,
        "n_skipped": sum(planned.skipped.values()),
        "skipped": [
            {"condition": c, "reason": r, "count": n}
            for (c, r), n in sorted(planned.skipped.items())
        ],
        "plan": {
            "trials": len(plan.trials),
            "requests": plan.n_requests,
            "unique": plan.n_unique,
            "cache_hits": n_cached,
            "model_calls": n_sent,
        },
        "by_condition": summarize(table),
    }


def _write(
    run_dir: Path,
    table: pa.Table,
    summary: dict[str, Any],
    planned: _Planned,
    config: Mapping[str, Any] | None,
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_results(table, run_dir / "results.parquet")
    write_json(run_dir / "summary.json", summary, default=str)
    write_text_atomic(run_dir / "summary.md", summary_markdown(summary))
    resolved = dict(config or {})
    resolved.setdefault("models", list(planned.models.by_name))
    if len(planned.body) == 1:
        resolved.setdefault("conditions", planned.body[0]["conditions"])
    resolved.setdefault("n_items", len(planned.items))
    write_json(run_dir / "config.json", {"run_id": summary["run_id"], **resolved}, default=str)


def _checked_metrics(mode: ScoringMode, metrics: Any) -> dict[str, float | None]:
    """``metrics`` (what ``mode.score`` gave) as floats or None, each one ``mode`` declares
    (a real number of any type, e.g. numpy's, is taken; a boolean, text, NaN, infinity or a
    number too large for a float is an error naming the mode)."""
    if not isinstance(metrics, Mapping):
        raise ConfigError(
            f"scoring {mode.name!r} gave metrics {metrics!r:.40}; expected a mapping of its "
            "metrics' names to numbers or None"
        )
    extra = sorted(map(str, metrics.keys() - mode.metrics.keys()))
    if extra:
        raise ConfigError(
            f"scoring {mode.name!r} gave metric {extra[0]!r}, which its metrics do not "
            f"declare (declared: {', '.join(mode.metrics) or 'none'})"
        )
    out: dict[str, float | None] = {}
    for name, value in metrics.items():
        number = None
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            with contextlib.suppress(OverflowError):
                number = float(value)
        if value is not None and (number is None or not math.isfinite(number)):
            raise ConfigError(
                f"scoring {mode.name!r} gave metric {name!r} the value {value!r:.40}; "
                "expected a finite number or None"
            )
        out[name] = number
    return out


def _rows(
    pt: PlannedTrial, responses: Mapping[str, Response], run_id: str, tags: Mapping[str, Any]
) -> list[ResultRow]:
    mode = get_scoring(pt.trial.condition.scoring)
    rows = []
    for index, part in enumerate(mode.samples_for(pt.trial, len(pt.keys))):
        keys = [pt.keys[i] for i in part]
        scored = mode.score(pt.trial, [responses[k] for k in keys])
        if scored.metrics or not isinstance(scored.metrics, Mapping):
            scored = replace(scored, metrics=_checked_metrics(mode, scored.metrics))
        rows.append(
            ResultRow.for_trial(
                pt.trial,
                scored,
                run_id=run_id,
                model=pt.model,
                sample_index=index,
                keys=keys,
                tags=tags,
            )
        )
    return rows
