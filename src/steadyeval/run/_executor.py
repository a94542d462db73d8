"""Executors send batches of requests to a backend and hand the responses back.

Executors never touch the cache: the driving process writes every batch it gets back, as it
gets it. ``LocalExecutor`` runs in this process; ``RayExecutor`` (in ``_ray.py``) on a Ray
cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, cast

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

__all__ = ["Executor", "LocalExecutor", "call_backend"]


def call_backend(
    backend: Backend, kind: RequestKind, requests: Sequence[Request]
) -> list[Response]:
    """Call the backend method for ``kind``; checks that one response came per request."""
    out: Sequence[Response]
    if kind == "score":
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
    """Runs batches (``chunks``) of same-kind requests for one backend.

    Yields ``(chunk index, responses)`` as each batch completes, in any order; every chunk
    exactly once. The caller caches each batch as it arrives.
    """

    def run(
        self, backend: Backend, kind: RequestKind, chunks: Sequence[Sequence[Request]]
    ) -> Iterator[tuple[int, list[Response]]]: ...


class LocalExecutor:
    """Runs the batches one after another in this process (the backend batches inside)."""

    def run(
        self, backend: Backend, kind: RequestKind, chunks: Sequence[Sequence[Request]]
    ) -> Iterator[tuple[int, list[Response]]]:
        for index, chunk in enumerate(chunks):
            yield index, call_backend(backend, kind, chunk)
