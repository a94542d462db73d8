"""How :meth:`~._http.HttpClient.post_many` waits for a batch's requests: each completion is
queued once (a large batch costs nothing per request still pending), and the results are
handed to the caller's ``on_results`` in groups while the batch runs, and on Ctrl-C (see
``post_many``)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["RESULTS_GROUP", "RESULTS_WAIT", "Handover", "wait_all"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ``HttpClient.post_many`` hands completed results over in groups of this many ...
RESULTS_GROUP = 16
#: ... or this many seconds after the first of a group completed.
RESULTS_WAIT = 0.5


class Handover(Generic[T]):
    """The results of a batch's futures handed to ``on_results`` in groups (the batch's
    thread calls every method)."""

    def __init__(
        self, futures: Sequence[Future[T]], on_results: Callable[[Mapping[int, T]], None] | None
    ) -> None:
        self._index = {f: i for i, f in enumerate(futures)}
        self._futures = futures
        self._on_results = on_results
        self._ready: dict[int, T] = {}
        self._handed: set[int] = set()
        self._since = 0.0

    def results(self) -> dict[int, T]:
        """Every result read so far, by index."""
        return {
            i: f.result()
            for i, f in enumerate(self._futures)
            if f.done() and not f.cancelled() and f.exception() is None
        }

    def timeout(self) -> float | None:
        """How long to wait before the group gathered so far is due."""
        if not self._ready:
            return None
        return max(0.0, self._since + RESULTS_WAIT - time.monotonic())

    def collect(self, done: Sequence[Future[T]], *, final: bool) -> None:
        if self._on_results is None:
            return
        for f in done:
            if not f.cancelled() and f.exception() is None:
                if not self._ready:
                    self._since = time.monotonic()
                self._ready[self._index[f]] = f.result()
        due = len(self._ready) >= RESULTS_GROUP or self.timeout() == 0.0
        if self._ready and (final or due):
            self._hand(dict(self._ready))

    def rest(self) -> None:
        """Hand over every result read and not handed yet (the batch stops: an error from
        ``on_results`` now is logged, and the batch's own exception goes on)."""
        left = {i: r for i, r in self.results().items() if i not in self._handed}
        if self._on_results is None or not left:
            return
        try:
            self._hand(left)
        except Exception as exc:
            log.error("%d answered requests could not be handed over: %s", len(left), exc)

    def _hand(self, got: dict[int, T]) -> None:
        assert self._on_results is not None
        self._on_results(got)  # marked handed only once taken (an interrupt may cut it)
        self._handed.update(got)
        for i in got:
            self._ready.pop(i, None)


def wait_all(futures: Sequence[Future[T]], cancel: threading.Event, handed: Handover[T]) -> None:
    """Wait for every future, handing results over as they complete; the first failure
    stops what is not sent yet (``cancel``)."""
    finished: queue.SimpleQueue[Future[T]] = queue.SimpleQueue()
    for f in futures:
        f.add_done_callback(finished.put)
    left = len(futures)
    while left:
        done: list[Future[T]] = []
        try:
            done.append(finished.get(timeout=handed.timeout()))
            while True:
                done.append(finished.get_nowait())
        except queue.Empty:
            pass
        left -= len(done)
        if any(f.exception() is not None for f in done if not f.cancelled()):
            cancel.set()
        handed.collect(done, final=not left)
