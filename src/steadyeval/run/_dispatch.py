"""Send the requests a plan still needs: group by model and kind, batch in prefix order,
commit every batch to the cache as it returns, and count what a dry run would cost."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..cache import ResponseCache
from ..models import Backend, BackendStats
from ..requests import (
    ClassifyRequest,
    Plan,
    PlannedTrial,
    Request,
    RequestKind,
    Response,
    ScoreRequest,
)
from ..scoring import get_scoring
from ._executor import Executor, LocalExecutor
from ._progress import Progress

__all__ = [
    "PlanCounts",
    "backend_stats",
    "count_plan",
    "dispatch",
    "preflight",
    "prompt_text",
    "retry_counts",
]


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


def prompt_text(req: Request) -> str:
    """The text a request feeds the model (for prefix order and token estimates)."""
    if isinstance(req, ScoreRequest):
        return req.context + req.continuation
    if isinstance(req, ClassifyRequest):
        return "\n".join(a + "\n" + (b or "") for a, b in req.inputs)
    return req.prompt


def n_rows(pt: PlannedTrial) -> int:
    """The result rows a planned trial becomes (one per sample)."""
    return len(get_scoring(pt.trial.condition.scoring).samples(len(pt.keys)))


def count_plan(
    plan: Plan,
    backends: Mapping[str, Backend],
    cached: Mapping[str, Response],
    missing: Sequence[str],
    skipped: int,
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
        texts = [prompt_text(r) for r in reqs]
        counted = backends[model].count_tokens(texts)
        if counted is None:
            estimated = True
            counted = [max(1, len(t) // 4) for t in texts]
        tokens += sum(counted)
        per_model[model]["to_send"] = len(reqs)
    return PlanCounts(
        trials=len(plan.trials),
        rows=sum(n_rows(pt) for pt in plan.trials),
        requests=plan.n_requests,
        unique_requests=plan.n_unique,
        cache_hits=len(cached),
        to_send=len(missing),
        input_tokens=tokens,
        input_tokens_estimated=estimated,
        skipped=skipped,
        per_model={m: dict(v) for m, v in per_model.items()},
    )


def preflight(plan: Plan, missing: Sequence[str], backends: Mapping[str, Backend]) -> None:
    """Let every backend check what it must answer (e.g. an API server's log-probs) before
    any work of the run is sent."""
    for name, backend in backends.items():
        todo = [plan.unique[k][1] for k in missing if plan.unique[k][0] == name]
        if todo:
            backend.preflight(todo)


def backend_stats(backends: Mapping[str, Backend]) -> dict[str, BackendStats]:
    """Each backend's counts so far (what it had to do again), by model."""
    return {name: backend.stats() for name, backend in backends.items()}


def retry_counts(
    backends: Mapping[str, Backend], before: Mapping[str, BackendStats]
) -> dict[str, dict[str, int | float]]:
    """``summary.json``'s ``retries``: per model (its identity), the retries, back-off waits
    (and their seconds) and out-of-memory halvings since ``before``."""
    return {name: (b.stats() - before[name]).to_dict() for name, b in backends.items()}


def dispatch(
    plan: Plan,
    missing: Sequence[str],
    backends: Mapping[str, Backend],
    cache: ResponseCache,
    responses: dict[str, Response],
    *,
    batch_size: int,
    progress: bool | None,
    executor: Executor | None,
) -> None:
    """Send ``missing`` requests model by model; each model's backend is told to
    ``release()`` once its last batch is back (a trained checkpoint frees its weights)."""
    executor = executor or LocalExecutor()
    groups: dict[str, dict[RequestKind, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key in missing:
        model, req = plan.unique[key]
        groups[model][req.kind].append(key)
    n_cached, n_models = plan.n_unique - len(missing), len(backends)
    with Progress(total=plan.n_unique, cached=n_cached, enabled=progress, models=n_models) as bar:
        for model, kinds in groups.items():
            backend = backends[model]
            bar.start_model(model, sum(len(keys) for keys in kinds.values()))
            for kind, keys in kinds.items():
                # A prefix sort: requests sharing a prompt prefix (one item under several
                # formats, all options of a question) land in the same batch, so a backend
                # that shares prefixes computes each once. Ties keep plan order.
                keys.sort(key=lambda k: prompt_text(plan.unique[k][1]))
                if kind == "score":  # keep prefix groups together for shared-prefix scoring
                    texts = [prompt_text(plan.unique[k][1]) for k in keys]
                    chunks = _chunks(keys, texts, batch_size)
                else:
                    chunks = [keys[i : i + batch_size] for i in range(0, len(keys), batch_size)]
                requests = [[plan.unique[k][1] for k in chunk] for chunk in chunks]
                for index, got in executor.run(backend, kind, requests):
                    chunk = chunks[index]
                    cache.put_many((k, model, kind, r) for k, r in zip(chunk, got, strict=True))
                    responses.update(zip(chunk, got, strict=True))
                    bar.advance(len(chunk), model=model)
            backend.release()


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
