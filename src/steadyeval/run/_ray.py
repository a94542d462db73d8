"""Run a plan's batches on a Ray cluster (optional extra ``steadyeval[ray]``).

Each actor holds one model replica (the backend object is shipped to it and loads its weights
there on first use). Batches arrive prefix-sorted, so each one is a shard of requests that
share prefixes. Responses return to the driver, which alone writes the cache. A batch whose
actor dies is resubmitted to a fresh actor.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from ..models import Backend
from ..requests import Request, Response
from ._executor import CallKind, call_backend

__all__ = ["RayExecutor"]

log = logging.getLogger(__name__)


def _ray() -> Any:
    from .._extras import require

    require("--executor ray runs", "ray", extra="ray")
    import ray

    return ray


class _Worker:
    """The actor body: one backend (one model replica) per actor."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def pid(self) -> int:
        return os.getpid()

    def call(self, kind: CallKind, requests: Sequence[Request]) -> list[Response]:
        return call_backend(self.backend, kind, requests)


class RayExecutor:
    """Shard batches over ``workers`` actors on a Ray cluster.

    Parameters
    ----------
    address : str or None
        A cluster address (``ray://...`` or ``auto``); ``None`` starts a local cluster.
    workers : int
        Actors (model replicas) per backend.
    max_resubmits : int
        How many times batches may be resubmitted after actors die before the run fails.
    actor_options : dict
        Passed to ``.options()`` of each actor (e.g. ``{"num_gpus": 1}``).
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        workers: int = 2,
        max_resubmits: int = 8,
        actor_options: dict[str, Any] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.address = address
        self.workers = workers
        self.max_resubmits = max_resubmits
        self.actor_options = dict(actor_options or {"num_cpus": 0})
        self._actors: dict[str, list[Any]] = {}
        self.resubmitted = 0

    def _init(self) -> Any:
        ray = _ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                kwargs["num_cpus"] = max(self.workers, os.cpu_count() or 1)
            ray.init(address=self.address, ignore_reinit_error=True, **kwargs)
        return ray

    def _new_actor(self, ray: Any, backend: Backend) -> Any:
        cls = ray.remote(_Worker)
        return cls.options(**self.actor_options).remote(backend)

    def actors(self, backend: Backend) -> list[Any]:
        """The live actors for this backend (started on first use)."""
        ray = self._init()
        key = str(backend.spec)
        if key not in self._actors:
            self._actors[key] = [self._new_actor(ray, backend) for _ in range(self.workers)]
        return self._actors[key]

    def run(
        self, backend: Backend, kind: CallKind, chunks: Sequence[Sequence[Request]]
    ) -> Iterator[tuple[int, list[Response]]]:
        ray = self._init()
        from ray.exceptions import RayActorError

        actors = self.actors(backend)
        queue = deque(range(len(chunks)))
        pending: dict[Any, tuple[int, Any]] = {}
        idle = list(actors)
        while queue or pending:
            while queue and idle:
                actor = idle.pop()
                index = queue.popleft()
                pending[actor.call.remote(kind, list(chunks[index]))] = (index, actor)
            ready, _ = ray.wait(list(pending), num_returns=1)
            future = ready[0]
            index, actor = pending.pop(future)
            try:
                responses = ray.get(future)
            except RayActorError as exc:
                self.resubmitted += 1
                if self.resubmitted > self.max_resubmits:
                    raise RuntimeError(
                        f"ray executor: actors died {self.resubmitted} times; giving up"
                    ) from exc
                log.warning("ray actor died (%s); resubmitting batch %d", type(exc).__name__, index)
                actors.remove(actor)
                fresh = self._new_actor(ray, backend)
                actors.append(fresh)
                idle.append(fresh)
                queue.appendleft(index)
                continue
            idle.append(actor)
            yield index, responses

    def shutdown(self) -> None:
        """Kill this executor's actors (the cluster itself is left running)."""
        if not self._actors:
            return
        ray = _ray()
        for actors in self._actors.values():
            for actor in actors:
                ray.kill(actor)
        self._actors.clear()
