"""plan -> dispatch -> collect: run items × conditions × models into a results table."""

from __future__ import annotations

import hashlib
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import pyarrow as pa

from .._json import write_json
from ..cache import ResponseCache
from ..conditions import Condition, Expansion, expand
from ..items import Item, canonical_json
from ..models import Backend, ModelSpec, check_kinds, load_backend
from ..requests import Plan, PlannedTrial, Request, RequestKind, Response, build_plan
from ..results import (
    SCHEMA_VERSION,
    ResultRow,
    StudyColumn,
    rows_to_table,
    summarize,
    summary_markdown,
    write_results,
)
from ..scoring import get_scoring, requests_for
from ._executor import Executor, LocalExecutor
from ._progress import Progress
from ._provenance import provenance

__all__ = ["PlanCounts", "RunOptions", "RunResult", "run"]


@dataclass(frozen=True)
class RunOptions:
    """How to run (none of these change a result)."""

    out: Path | None = None
    cache: Path | None = None
    batch_size: int = 64
    progress: bool | None = None  # None: only when stderr is a terminal
    executor: Executor | None = None


@dataclass(frozen=True)
class PlanCounts:
    """What a run would cost, before spending it."""

    trials: int
    rows: int
    requests: int
    unique_requests: int
    cache_hits: int
    to_send: int
    input_tokens: int
    input_tokens_estimated: bool
    skipped: int
    per_model: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    table: pa.Table
    summary: dict[str, Any]
    run_dir: Path | None


def _resolve_models(models: Sequence[str | ModelSpec | Backend]) -> dict[str, Backend]:
    out: dict[str, Backend] = {}
    for m in models:
        backend = m if isinstance(m, Backend) else load_backend(m)
        name = str(backend.spec)
        if name in out:
            raise ValueError(f"model {name} is listed twice")
        out[name] = backend
    if not out:
        raise ValueError("no models given; pass at least one model spec such as hf:/path/to/model")
    return out


def _kinds(plan: Plan) -> dict[str, set[RequestKind]]:
    kinds: dict[str, set[RequestKind]] = defaultdict(set)
    for model, req in plan.unique.values():
        kinds[model].add(req.kind)
    return kinds


def run_id_for(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    models: Sequence[str],
    columns: Sequence[StudyColumn] = (),
) -> str:
    body = {
        "items": [i.hash for i in items],
        "conditions": [c.to_dict() for c in conditions],
        "models": list(models),
        "columns": [c.to_dict() for c in columns],
        "schema_version": SCHEMA_VERSION,
    }
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]


def _prompt_text(req: Request) -> str:
    if req.kind == "score":
        return req.context + req.continuation  # type: ignore[union-attr]
    return req.prompt  # type: ignore[union-attr]


@overload
def run(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    models: Sequence[str | ModelSpec | Backend],
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
    models: Sequence[str | ModelSpec | Backend],
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
    models: Sequence[str | ModelSpec | Backend],
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

    ``columns`` are study columns (:class:`~steadyeval.results.StudyColumn`) lifted from the
    items' metadata into typed columns of the table.

    With ``dry_run=True`` nothing is sent: the plan's counts are returned instead.
    An interrupted run (crash, ``kill -9``, Ctrl-C) keeps every response already cached; the
    same call again resumes and calls the model only for what is missing.
    """
    opts = options or RunOptions()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    backends = _resolve_models(models)
    expansion: Expansion = expand(items, conditions, shot_pools=shot_pools)
    fingerprints = {name: b.fingerprint() for name, b in backends.items()}
    plan = build_plan([(t, requests_for(t)) for t in expansion.trials], fingerprints)
    for name, kinds in _kinds(plan).items():
        check_kinds(backends[name], kinds)
    timings["plan"] = time.perf_counter() - t0

    cache = ResponseCache(opts.cache)
    try:
        cached = cache.get_many(list(plan.unique))
        missing = [k for k in plan.unique if k not in cached]
        if dry_run:
            return _counts(plan, expansion, backends, cached, missing)
        _preflight(plan, missing, backends)
        t1 = time.perf_counter()
        responses = dict(cached)
        _dispatch(plan, missing, backends, cache, responses, opts)
        timings["dispatch"] = time.perf_counter() - t1
    finally:
        cache.close()

    t2 = time.perf_counter()
    rid = run_id_for(items, conditions, list(backends), columns)
    rows = [row for pt in plan.trials for row in _rows(pt, responses, rid)]
    table = rows_to_table(rows, columns)
    timings["score"] = time.perf_counter() - t2
    n_sent = len(missing)
    summary = {
        "run_id": rid,
        "schema_version": SCHEMA_VERSION,
        "n_rows": table.num_rows,
        "n_items": len(items),
        "models": list(backends),
        "conditions": [c.name for c in conditions],
        "n_skipped": expansion.n_skipped,
        "skipped": [
            {"condition": c, "reason": r, "count": n}
            for (c, r), n in sorted(expansion.skipped.items())
        ],
        "plan": {
            "trials": len(plan.trials),
            "requests": plan.n_requests,
            "unique": plan.n_unique,
            "cache_hits": len(cached),
            "model_calls": n_sent,
        },
        "by_condition": summarize(table),
    }
    run_dir = None
    if opts.out is not None:
        run_dir = Path(opts.out)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_results(table, run_dir / "results.parquet")
        write_json(run_dir / "summary.json", summary, default=str)
        (run_dir / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
        resolved = dict(config or {})
        resolved.setdefault("models", list(backends))
        resolved.setdefault("conditions", [c.to_dict() for c in conditions])
        resolved.setdefault("n_items", len(items))
        write_json(run_dir / "config.json", {"run_id": rid, **resolved}, default=str)
        timings["total"] = time.perf_counter() - t0
        counts = {"rows": table.num_rows, "model_calls": n_sent, "cache_hits": len(cached)}
        write_json(
            run_dir / "provenance.json", provenance(fingerprints, timings, counts), default=str
        )
    return RunResult(table=table, summary=summary, run_dir=run_dir)


def _counts(
    plan: Plan,
    expansion: Expansion,
    backends: Mapping[str, Backend],
    cached: Mapping[str, Response],
    missing: Sequence[str],
) -> PlanCounts:
    by_model: dict[str, list[Request]] = defaultdict(list)
    per_model: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key in missing:
        model, req = plan.unique[key]
        by_model[model].append(req)
    for key, (model, _) in plan.unique.items():
        per_model[model]["unique_requests"] += 1
        per_model[model]["cache_hits"] += key in cached
    tokens, estimated = 0, False
    for model, reqs in by_model.items():
        texts = [_prompt_text(r) for r in reqs]
        counted = backends[model].count_tokens(texts)
        if counted is None:
            estimated = True
            counted = [max(1, len(t) // 4) for t in texts]
        tokens += sum(counted)
        per_model[model]["to_send"] = len(reqs)
    rows = sum(_n_samples(pt) for pt in plan.trials)
    return PlanCounts(
        trials=len(plan.trials),
        rows=rows,
        requests=plan.n_requests,
        unique_requests=plan.n_unique,
        cache_hits=len(cached),
        to_send=len(missing),
        input_tokens=tokens,
        input_tokens_estimated=estimated,
        skipped=expansion.n_skipped,
        per_model={m: dict(v) for m, v in per_model.items()},
    )


def _preflight(plan: Plan, missing: Sequence[str], backends: Mapping[str, Backend]) -> None:
    """Let backends that can check a capability up front (e.g. an API server's log-probs) do
    so before any work of the run is sent."""
    for name, backend in backends.items():
        check = getattr(backend, "preflight", None)
        if check is None:
            continue
        todo = [plan.unique[k][1] for k in missing if plan.unique[k][0] == name]
        if todo:
            check(todo)


def _n_samples(pt: PlannedTrial) -> int:
    return len(get_scoring(pt.trial.condition.scoring).samples(len(pt.keys)))


def _dispatch(
    plan: Plan,
    missing: Sequence[str],
    backends: Mapping[str, Backend],
    cache: ResponseCache,
    responses: dict[str, Response],
    opts: RunOptions,
) -> None:
    executor = opts.executor or LocalExecutor()
    groups: dict[tuple[str, RequestKind], list[str]] = defaultdict(list)
    for key in missing:
        model, req = plan.unique[key]
        groups[(model, req.kind)].append(key)
    for keys in groups.values():
        # A prefix sort: requests sharing a prompt prefix (one item under several formats,
        # all options of a question) land in the same batch, so a backend that shares
        # prefixes computes each once. Ties keep plan order, so dispatch is deterministic.
        keys.sort(key=lambda k: _prompt_text(plan.unique[k][1]))
    show = sys.stderr.isatty() if opts.progress is None else opts.progress
    with Progress(total=plan.n_unique, cached=plan.n_unique - len(missing), enabled=show) as bar:
        for (model, kind), keys in groups.items():
            backend = backends[model]
            if kind == "score":  # keep prefix groups together for shared-prefix scoring
                texts = [_prompt_text(plan.unique[k][1]) for k in keys]
                chunks = _chunks(keys, texts, opts.batch_size)
            else:
                chunks = [
                    keys[i : i + opts.batch_size] for i in range(0, len(keys), opts.batch_size)
                ]
            requests = [[plan.unique[k][1] for k in chunk] for chunk in chunks]
            for index, got in executor.run(backend, kind, requests):
                chunk = chunks[index]
                cache.put_many((k, model, kind, r) for k, r in zip(chunk, got, strict=True))
                responses.update(zip(chunk, got, strict=True))
                bar.advance(len(chunk), model=model)


def _chunks(keys: Sequence[str], texts: Sequence[str], size: int) -> list[list[str]]:
    """Batches of about ``size`` prefix-sorted requests, cut where a request shares little
    prefix with the one before (so one item's formats and options stay together), and never
    longer than four times ``size``."""

    def shared(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    chunks: list[list[str]] = []
    current: list[str] = []
    for i, key in enumerate(keys):
        if current and len(current) >= size:
            prev, text = texts[i - 1], texts[i]
            related = shared(prev, text) * 2 >= min(len(prev), len(text)) > 0
            if not related or len(current) >= 4 * size:
                chunks.append(current)
                current = []
        current.append(key)
    if current:
        chunks.append(current)
    return chunks


def _rows(pt: PlannedTrial, responses: Mapping[str, Response], run_id: str) -> list[ResultRow]:
    mode = get_scoring(pt.trial.condition.scoring)
    rows = []
    for index, part in enumerate(mode.samples(len(pt.keys))):
        keys = [pt.keys[i] for i in part]
        scored = mode.score(pt.trial, [responses[k] for k in keys])
        rows.append(
            ResultRow.for_trial(
                pt.trial, scored, run_id=run_id, model=pt.model, sample_index=index, keys=keys
            )
        )
    return rows
