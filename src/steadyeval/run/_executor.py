"""Executors send batches of requests to a backend and hand the responses back.

Executors never touch the cache: the driving process writes every response it gets back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from ..models import Backend
from ..requests import (
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
    else:
        out = backend.top_k(cast(Sequence[TopKRequest], requests))
    if len(out) != len(requests):
        raise RuntimeError(
            f"backend {backend.spec} returned {len(out)} responses for {len(requests)} requests"
        )
    return list(out)


class Executor(Protocol):
    """Runs one batch of same-kind requests for a backend and returns the responses."""

    def map(
        self, backend: Backend, kind: RequestKind, requests: Sequence[Request]
    ) -> list[Response]: ...


class LocalExecutor:
    """Runs requests in this process (the backend batches internally)."""

    def map(
        self, backend: Backend, kind: RequestKind, requests: Sequence[Request]
    ) -> list[Response]:
        return call_backend(backend, kind, requests)
