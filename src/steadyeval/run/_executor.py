"""Executors send batches of requests to a backend and hand the responses back.

Executors never touch the cache: the driving process writes every batch it gets back, as it
gets it. ``LocalExecutor`` runs in this process; ``RayExecutor`` (in ``_ray.py``) on a Ray
cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, Protocol, cast

from ..models import Backend
from ..requests import (
    ClassifyRequest,
    GenerateRequest,
    Request,
    RequestKind,
    Response,
    ScoreRequest,
    TopKRequest,
)

__all__ = ["JOINT", "CallKind", "Executor", "LocalExecutor", "call_backend", "joint_prefill"]

#: The call of a backend that prefills score and generate requests together
#: (``score_and_generate``): a batch holds requests of both kinds.
JOINT: Literal["score+generate"] = "score+generate"
CallKind = RequestKind | Literal["score+generate"]


def joint_prefill(backend: Backend) -> bool:
    """Whether ``backend`` declares a ``score_and_generate`` worth calling (its optional
    ``joint_prefill`` member is true)."""
    return getattr(backend, "joint_prefill", False) is True and callable(
        getattr(backend, "score_and_generate", None)
    )


def _call_jointly(backend: Backend, requests: Sequence[Request]) -> list[Response]:
    """Score and generate requests mixed: one ``score_and_generate`` call, responses put
    back in request order."""
    scores = [i for i, r in enumerate(requests) if isinstance(r, ScoreRequest)]
    generates = [i for i, r in enumerate(requests) if isinstance(r, GenerateRequest)]
    if len(scores) + len(generates) != len(requests):
        raise TypeError("a joint call takes score and generate requests only")
    s_reqs = [cast(ScoreRequest, requests[i]) for i in scores]
    g_reqs = [cast(GenerateRequest, requests[i]) for i in generates]
    # Only sent to a backend that has it (``joint_prefill``): an optional protocol member.
    got_s, got_g = backend.score_and_generate(s_reqs, g_reqs)  # type: ignore[attr-defined]
    if len(got_s) != len(scores) or len(got_g) != len(generates):
        raise RuntimeError(
            f"backend {backend.spec} returned {len(got_s)} + {len(got_g)} responses for "
            f"{len(scores)} score and {len(generates)} generate requests"
        )
    answer = dict(zip([*scores, *generates], [*got_s, *got_g], strict=True))
    return [answer[i] for i in range(len(requests))]


def call_backend(backend: Backend, kind: CallKind, requests: Sequence[Request]) -> list[Response]:
    """Call the backend method for ``kind`` (``JOINT``: ``score_and_generate``, with the
    score and generate requests of a mixed batch); checks that one response came per
    request, in request order."""
    out: Sequence[Response]
    if kind == JOINT:
        out = _call_jointly(backend, requests)
    elif kind == "score":
        out = backend.score(cast(Sequence[ScoreRequest], requests))
    elif kind == "generate":
        out = backend.generate(cast(Sequence[GenerateRequest], requests))
    elif kind == "classify":
        out = backend.classify(cast(Sequence[ClassifyRequest], requests))
    else:
        out = backend.top_k(cast(Sequence[TopKRequest], requests))
    if len(out) != len(requests):
        raise RuntimeError(
            f"backend {backend.spec} returned {len(out)} responses for {len(requests)} requests"
        )
    return list(out)


class Executor(Protocol):
    """Runs batches (``chunks``) of same-kind requests for one backend (``JOINT``: score and
    greedy generate requests mixed, for a backend that prefills them together).

    Yields ``(chunk index, responses)`` as each batch completes, in any order; every chunk
    exactly once. The caller caches each batch as it arrives.
    """

    def run(
        self, backend: Backend, kind: CallKind, chunks: Sequence[Sequence[Request]]
    ) -> Iterator[tuple[int, list[Response]]]: ...


class LocalExecutor:
    """Runs the batches one after another in this process (the backend batches inside)."""

    def run(
        self, backend: Backend, kind: CallKind, chunks: Sequence[Sequence[Request]]
    ) -> Iterator[tuple[int, list[Response]]]:
        for index, chunk in enumerate(chunks):
            yield index, call_backend(backend, kind, chunk)
