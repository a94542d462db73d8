"""Send the requests a plan still needs: group by model and kind, claim them in the cache (so
that another process on the same cache does not send them too), batch in prefix order,
commit every batch to the cache as it returns (and, from a backend that hands over answers
as they arrive, an API backend's, each answer before its batch ends), and count what a dry
run would cost."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from ..cache import PartialBatchError, ResponseCache
from ..models import Backend, BackendStats, answers_to, shares_long_prefix
from ..requests import (
    ClassifyRequest,
    GenerateRequest,
    Request,
    RequestKind,
    Response,
    ScoreRequest,
)
from ..scoring import get_scoring
from ._executor import JOINT, CallKind, Executor, LocalExecutor, joint_prefill
from ._plan import Plan, PlannedTrial
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

log = logging.getLogger(__name__)

_POLL_FIRST, _POLL_MOST = 0.05, 1.0  # seconds between looks at requests another process sends


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
    #: models whose cached responses were not looked up (their cache key needs weights not
    #: downloaded yet): all their requests are counted as to send
    unread: list[str] = field(default_factory=list)


def prompt_text(req: Request) -> str:
    """The text a request feeds the model (for prefix order and token estimates)."""
    if isinstance(req, ScoreRequest):
        return req.context + req.continuation
    if isinstance(req, ClassifyRequest):
        return "\n".join(a + "\n" + (b or "") for a, b in req.inputs)
    return req.prompt


def n_rows(pt: PlannedTrial) -> int:
    """The result rows a planned trial becomes (one per sample)."""
    return len(get_scoring(pt.trial.condition.scoring).samples_for(pt.trial, len(pt.keys)))


def count_plan(
    plan: Plan,
    backends: Mapping[str, Backend],
    cached: Mapping[str, Response],
    missing: Sequence[str],
    skipped: int,
    *,
    unread: Sequence[str] = (),
) -> PlanCounts:
    by_model: dict[str, list[Request]] = defaultdict(list)
    per_model: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key in missing:
        model, req = plan.unique[key]
        by_model[model].append(req)
    for key, (model, _) in plan.unique.items():
        per_model[model]["unique_requests"] += 1
        per_model[model]["cache_hits"] += key in cached
        per_model[model]["to_send"] += key not in cached
    tokens, estimated = 0, False
    for model, reqs in by_model.items():
        texts = [prompt_text(r) for r in reqs]
        counted = backends[model].count_tokens(texts)
        if counted is None:
            estimated = True
            counted = [max(1, len(t) // 4) for t in texts]
        tokens += sum(counted)
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
        unread=list(unread),
    )


def preflight(
    plan: Plan, missing: Sequence[str], backends: Mapping[str, Backend], *, send: bool = True
) -> None:
    """Let every backend check what it must answer (e.g. an API server's log-probs) before
    any work of the run is sent; with ``send=False`` (a dry run) only what it can check
    without contacting anything (``Backend.precheck``), so the dry run refuses what the
    run would refuse up front."""
    for name, backend in backends.items():
        todo = [plan.unique[k][1] for k in missing if plan.unique[k][0] == name]
        if todo:
            (backend.preflight if send else backend.precheck)(todo)


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
) -> int:
    """Send ``missing`` requests model by model; each model's backend is told to
    ``release()`` once its last batch is back (a trained checkpoint frees its weights).
    Returns how many requests this process sent (fewer than ``len(missing)`` when another
    process on the same cache answered some of them).

    Each model's requests of one kind are claimed in the cache before they are sent (one
    transaction): those another live process has claimed are not sent but waited for and
    read once stored, and those it stored meanwhile are read. A backend that hands over
    answers while its batch runs (:func:`~steadyeval.models.answers_to`: the API backends)
    has each of them cached as it arrives, in groups of a few, so that Ctrl-C or ``kill -9``
    in the middle of a batch loses none. When a batch fails for good,
    the requests the backend did get answers for (:class:`~steadyeval.cache.PartialBatchError`)
    are cached before the error goes on, and every claim still held is released.
    """
    executor = executor or LocalExecutor()
    by_kind: dict[str, dict[RequestKind, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key in missing:
        model, req = plan.unique[key]
        by_kind[model][req.kind].append(key)
    groups = {
        model: _joint_groups(plan, kinds) if joint_prefill(backends[model]) else dict(kinds)
        for model, kinds in by_kind.items()
    }
    n_cached, n_models = plan.n_unique - len(missing), len(backends)
    with Progress(total=plan.n_unique, cached=n_cached, enabled=progress, models=n_models) as bar:
        sent = 0
        try:
            for model, kinds in groups.items():
                backend = backends[model]
                bar.start_model(model, sum(len(keys) for keys in kinds.values()))
                for kind, keys in kinds.items():
                    sender = _Sender(plan, model, kind, backend, cache, responses, bar, executor)
                    sent += sender.run(keys, batch_size)
                backend.release()
        finally:
            cache.release()
    return sent


def _joint_groups(plan: Plan, kinds: Mapping[RequestKind, list[str]]) -> dict[CallKind, list[str]]:
    """A joint-prefill backend's groups: its score and greedy generate requests as one group
    (``JOINT``) when it has both; sampled generate requests stay apart."""
    greedy = [k for k in kinds.get("generate", []) if _greedy(plan.unique[k][1])]
    if not kinds.get("score") or not greedy:
        return {kind: keys for kind, keys in kinds.items()}
    out: dict[CallKind, list[str]] = {}
    for kind, keys in kinds.items():
        if kind == "score":
            out[JOINT] = [*keys, *greedy]  # the sender sorts them by prompt text together
        elif kind == "generate":
            if len(greedy) < len(keys):
                taken = set(greedy)
                out["generate"] = [k for k in keys if k not in taken]
        else:
            out[kind] = keys
    return out


def _greedy(req: Request) -> bool:
    return isinstance(req, GenerateRequest) and req.temperature == 0


@dataclass
class _Sender:
    """Sends one model's requests of one kind (or, for a joint-prefill backend, its score
    and greedy generate requests together), claiming them in the cache first."""

    plan: Plan
    model: str
    kind: CallKind
    backend: Backend
    cache: ResponseCache
    responses: dict[str, Response]
    bar: Progress
    executor: Executor
    stored: set[str] = field(default_factory=set)  # keys this sender cached

    def run(self, keys: Sequence[str], batch_size: int) -> int:
        """Claim, send and store ``keys``; wait for (then read) those another process has
        claimed. Returns how many were sent here."""
        todo, pause, told, sent = list(keys), _POLL_FIRST, False, 0
        while todo:
            got = self.cache.claim(todo)
            if got.cached:
                self.responses.update(got.cached)
                self.bar.advance(len(got.cached), model=self.model)
            if got.mine:
                self.send(list(got.mine), batch_size)
                sent += len(got.mine)
                pause = _POLL_FIRST
            todo = list(got.busy)
            if todo and not got.mine:
                if not told:
                    log.warning(
                        "%d %s requests of %s are being sent by another process (%s) on the "
                        "same cache; waiting for their responses (a claim is taken over after "
                        "%g s without progress)",
                        len(todo),
                        self.kind,
                        self.model,
                        ", ".join(got.holders),
                        self.cache.claim_expiry,
                    )
                    told = True
                time.sleep(pause)
                pause = min(2 * pause, _POLL_MOST)
        return sent

    def send(self, keys: list[str], batch_size: int) -> None:
        unique = self.plan.unique
        # A prefix sort: requests sharing a prompt prefix (one item under several formats,
        # all options of a question) land in the same batch, so a backend that shares
        # prefixes computes each once. Ties keep plan order.
        keys.sort(key=lambda k: prompt_text(unique[k][1]))
        if self.kind in ("score", JOINT):  # keep prefix groups together (shared prefixes)
            reqs = [unique[k][1] for k in keys]
            weights = _joint_weights(reqs) if self.kind == JOINT else None
            texts = [prompt_text(r) for r in reqs]
            chunks = _chunks(keys, texts, batch_size, _calls(reqs), weights)
        else:
            chunks = [keys[i : i + batch_size] for i in range(0, len(keys), batch_size)]
        requests = [[unique[k][1] for k in chunk] for chunk in chunks]
        sent = {unique[k][1]: k for k in keys}
        try:
            with answers_to(_Early(self, sent)):
                for index, got in self.executor.run(self.backend, self.kind, requests):
                    self.store(chunks[index], got)
        except PartialBatchError as exc:
            answered = [(sent[r], resp) for r, resp in exc.answered if r in sent]
            self.store([k for k, _ in answered], [resp for _, resp in answered])
            if answered:
                log.warning(
                    "%s: a batch failed; the %d requests of it that were answered are cached",
                    self.model,
                    len(answered),
                )
            raise exc.error from None

    def store(self, keys: Sequence[str], got: Sequence[Response]) -> int:
        """Cache the responses of ``keys`` not stored yet (one transaction); return how many
        were new."""
        # Each row with its own request's kind (a joint batch mixes score and generate).
        unique = self.plan.unique
        new = [(k, r) for k, r in zip(keys, got, strict=True) if k not in self.stored]
        if not new:
            return 0
        self.cache.put_many([(k, self.model, unique[k][1].kind, r) for k, r in new])
        self.stored.update(k for k, _ in new)
        self.responses.update(new)
        self.bar.advance(len(new), model=self.model)
        return len(new)


@dataclass(frozen=True)
class _Early:
    """The run's answer sink for one :meth:`_Sender.send`: each request a backend answers
    before its batch ends is cached at once (the backend groups them; see
    :mod:`steadyeval.models`' ``answers_to``). A pair from another thread, or for a request
    the backend made itself (a slot reader's), is left to the batch's result."""

    sender: _Sender
    sent: Mapping[Request, str]
    thread: int = field(default_factory=threading.get_ident)

    def __call__(self, pairs: Sequence[tuple[Request, Response]]) -> None:
        if threading.get_ident() != self.thread:
            return  # the cache's connection belongs to the run's thread
        mine = [(self.sent[r], resp) for r, resp in pairs if r in self.sent]
        self.sender.store([k for k, _ in mine], [resp for _, resp in mine])


def _calls(requests: Sequence[Request]) -> list[Hashable]:
    """What makes score requests one call to a backend that asks a chat label's
    log-probability once per question (the context, chat flag and system prompt): a batch is
    never cut inside such a group, so no call is sent twice."""
    return [
        (r.context, r.chat, r.system) if isinstance(r, ScoreRequest) else id(r) for r in requests
    ]


def _joint_weights(requests: Sequence[Request]) -> list[float]:
    """Sizes of score and generate requests in a joint batch: a batch of ``size`` holds
    about ``size`` generate requests (the backend decodes a batch's prompts together, as it
    would a generate batch) and the score requests in proportion (an item's options)."""
    n_gen = sum(1 for r in requests if isinstance(r, GenerateRequest))
    n_score = len(requests) - n_gen
    per_score = 0.5 * n_gen / n_score if n_score and n_gen else 1.0
    return [0.5 if isinstance(r, GenerateRequest) else per_score for r in requests]


def _chunks(
    keys: Sequence[str],
    texts: Sequence[str],
    size: int,
    calls: Sequence[Hashable] | None = None,
    weights: Sequence[float] | None = None,
) -> list[list[str]]:
    """Batches of about ``size`` prefix-sorted requests, cut where a request shares little
    prefix with the one before (so one item's formats and options stay together), and never
    longer than four times ``size`` — except that a batch is never cut between two requests
    of one call (``calls``, e.g. the labels of one chat question), which stay together.
    ``weights``: each request's share of ``size`` (default 1)."""

    chunks: list[list[str]] = []
    current: list[str] = []
    filled = 0.0  # the current batch's weight (a little over, so that 3 x 1/3 fills 1)
    for i, key in enumerate(keys):
        same_call = calls is not None and i > 0 and calls[i] == calls[i - 1]
        if current and filled >= size and not same_call:
            related = shares_long_prefix(texts[i - 1], texts[i])
            if not related or filled >= 4 * size:
                chunks.append(current)
                current, filled = [], 0.0
        current.append(key)
        filled += 1.0 if weights is None else weights[i] + 1e-9
    if current:
        chunks.append(current)
    return chunks
