"""Progress of a run's dispatch: requests done (sent vs cached), rate and ETA.

Shown one of three ways, chosen when the run starts:

* **a rich bar** when stderr is a terminal (and the ``steadyeval`` logger is not set above
  INFO, as ``steadyeval -q`` sets it);
* **log lines** at INFO on the ``steadyeval.run`` logger when stderr is not a terminal (a
  batch job, ``nohup``, a redirect): one at the start, one each time another 5% of the
  requests is done, one at least every 60 s even while a long batch runs (a daemon thread
  watches the clock), and one at the end;
* **nothing** with ``progress=False`` (``--no-progress``).

The lines go through :mod:`logging`, so they show where the application sends steadyeval's
records (the command line: stderr); a library user who configured no logging sees none.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, TextIO

from .._log import duration, quiet

__all__ = ["Pace", "Progress"]

log = logging.getLogger("steadyeval.run")

Mode = Literal["bar", "lines", "off"]


@dataclass(frozen=True)
class Pace:
    """When log lines come: every ``step_percent`` of the requests and at least every
    ``interval`` seconds of ``clock`` (the background thread looks every ``poll`` real
    seconds). Tests pass a fake clock and ``watch=False`` and call
    :meth:`Progress.heartbeat` themselves."""

    step_percent: int = 5
    interval: float = 60.0
    poll: float = 5.0
    clock: Callable[[], float] = time.monotonic
    watch: bool = True


def _mode(enabled: bool | None, stream: TextIO) -> Mode:
    """``enabled``: None (the default) shows progress unless the log level is above INFO;
    True always; False never."""
    if enabled is False or (enabled is None and quiet()):
        return "off"
    if stream.isatty():
        return "bar"
    return "lines" if log.isEnabledFor(logging.INFO) else "off"


class Progress:
    """``with Progress(total=..., cached=..., enabled=None) as p: p.advance(n, model=...)``.

    ``total`` counts the run's unique requests, ``cached`` those the cache already had;
    ``models`` is how many models the run has (for the first line).
    """

    def __init__(
        self,
        *,
        total: int,
        cached: int,
        enabled: bool | None = None,
        models: int = 1,
        stream: TextIO | None = None,
        pace: Pace | None = None,
    ) -> None:
        self.total = total
        self.cached = cached
        self.sent = 0
        self.models = models
        self.model = ""
        self.pace = pace or Pace()
        self.mode: Mode = _mode(enabled, stream or sys.stderr)
        self.enabled = self.mode != "off"
        self._lock = threading.Lock()
        self._start = self._last = 0.0
        self._step = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: _Bar | None = None

    # -- the run's side ------------------------------------------------------------------
    def __enter__(self) -> Progress:
        self._start = self._last = self.pace.clock()
        self._step = self._steps(self.cached)
        if self.mode == "bar":
            self._bar = _Bar(self.total, self.cached)
        elif self.mode == "lines":
            to_send = self.total - self.cached
            log.info(
                "run: %d requests, %d cached, %d to send, %d model%s",
                self.total, self.cached, to_send, self.models, "" if self.models == 1 else "s",
            )  # fmt: skip
            if self.pace.watch and to_send:
                self._thread = threading.Thread(
                    target=self._watch, name="steadyeval-progress", daemon=True
                )
                self._thread.start()
        return self

    def start_model(self, model: str, to_send: int) -> None:
        """The run turns to ``model``, which has ``to_send`` requests to answer."""
        with self._lock:
            self.model = model
            if self.mode == "lines":
                log.info("%s: %d requests to send", model, to_send)
            elif self._bar is not None:
                self._bar.update(0, self._detail())

    def advance(self, n: int, *, model: str = "") -> None:
        """``n`` more requests were answered and are in the cache (the run calls this only
        once they are stored, so that the count a stopped run reports is what it kept)."""
        with self._lock:
            self.sent += n
            self.model = model or self.model
            if self._bar is not None:
                self._bar.update(n, self._detail())
            elif self.mode == "lines":
                now = self.pace.clock()
                step = self._steps(self.cached + self.sent)
                if step > self._step or now - self._last >= self.pace.interval:
                    self._step = max(step, self._step)
                    self._line(now)

    def heartbeat(self) -> None:
        """A line if none came for ``pace.interval`` seconds (the watching thread calls
        this; so can tests)."""
        with self._lock:
            now = self.pace.clock()
            if self.mode == "lines" and now - self._last >= self.pace.interval:
                self._line(now)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._bar is not None:
            self._bar.stop()
        if self.mode != "lines":
            return
        with self._lock:
            elapsed = self.pace.clock() - self._start
            head = "run done" if exc_type is None else "run stopped"
            log.info(
                "%s: %d/%d requests · sent %d · cached %d · %s · elapsed %s%s",
                head, self.cached + self.sent, self.total, self.sent, self.cached,
                self._rate(elapsed), duration(elapsed),
                "" if exc_type is None else f"; the {self.sent} responses it received are in the cache",
            )  # fmt: skip

    # -- inside --------------------------------------------------------------------------
    def _steps(self, done: int) -> int:
        """How many whole ``step_percent`` steps of the total ``done`` requests make."""
        if self.total <= 0:
            return 0
        return done * 100 // (self.total * self.pace.step_percent)

    def _rate(self, elapsed: float) -> str:
        if elapsed <= 0 or not self.sent:
            return "– req/s"
        rate = self.sent / elapsed
        return f"{rate:.1f} req/s" if rate >= 0.1 else f"{rate:.2g} req/s"

    def _line(self, now: float) -> None:
        """One progress line (the lock is held)."""
        self._last = now
        elapsed = now - self._start
        done = self.cached + self.sent
        left = self.total - done
        if left <= 0:
            eta = "0 s"
        elif self.sent and elapsed > 0:
            eta = duration(left * elapsed / self.sent)
        else:
            eta = "?"
        percent = 100 * done // self.total if self.total else 100
        log.info(
            "requests %d/%d (%d%%) · sent %d · cached %d · %s · ETA %s%s",
            done, self.total, percent, self.sent, self.cached, self._rate(elapsed), eta,
            f" · {self.model}" if self.model else "",
        )  # fmt: skip

    def _watch(self) -> None:
        while not self._stop.wait(self.pace.poll):
            self.heartbeat()

    def _detail(self) -> str:
        return f"sent {self.sent} · cached {self.cached}" + (
            f" · {self.model}" if self.model else ""
        )


class _Bar:
    """The rich progress bar on stderr (rich is imported only when a bar is shown)."""

    def __init__(self, total: int, cached: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar: Any = RichProgress(
            TextColumn("[bold]requests"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task(
            "run", total=total, completed=cached, detail=f"sent 0 · cached {cached}"
        )
        self._bar.start()

    def update(self, n: int, detail: str) -> None:
        self._bar.update(self._task, advance=n, detail=detail)

    def stop(self) -> None:
        self._bar.stop()
