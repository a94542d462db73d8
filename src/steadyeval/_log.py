"""Logging: one ``steadyeval`` logger hierarchy, plain lines on stderr when the CLI asks.

Every module logs to ``logging.getLogger(__name__)``, under the ``steadyeval`` logger.
Importing the library configures nothing (logging belongs to the application): records go
wherever the application sends them, and Python's default shows only warnings and errors.
The command line calls :func:`configure` once, from its global ``--log-level``/``-v``/``-q``
options, which sends steadyeval's records to stderr as plain lines::

    2026-12-01 18:52:03 INFO requests 120/2400 (5%) · sent 100 · cached 20 · 3.1 req/s · ETA 12m10s

stdout stays for results. A library user who wants the same lines calls :func:`configure`
too, or adds a handler to ``logging.getLogger("steadyeval")``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, TextIO

__all__ = [
    "LEVELS",
    "LOGGER",
    "LogLevel",
    "ProgressLog",
    "configure",
    "duration",
    "no_progress",
    "quiet",
    "timed_steps",
]

#: The logger every module of the package logs under.
LOGGER = "steadyeval"
LogLevel = Literal["debug", "info", "warning", "error"]
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes each record to ``sys.stderr`` as it is when the record comes (test runners
    swap it, and a progress bar on the terminal routes it above the bar)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure(level: LogLevel | int = "info") -> Callable[[], None]:
    """Send the ``steadyeval`` logger's records at ``level`` and above to stderr, one plain
    line each (time, level, message); return a function that restores the logger as it was.

    The logger stops propagating to the root logger meanwhile, so an application's own root
    handler does not print each line twice. Calling it again replaces the earlier handler.
    A ``level`` above INFO (``warning``, ``error``) also hides the progress bar (see
    :func:`quiet`).
    """
    number = LEVELS[level] if isinstance(level, str) else level
    logger = logging.getLogger(LOGGER)
    before = (logger.level, logger.propagate, list(logger.handlers))
    for old in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(old)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(number)
    logger.propagate = False

    def restore() -> None:
        logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]
        for h in before[2]:
            if h not in logger.handlers:
                logger.addHandler(h)

    return restore


def quiet() -> bool:
    """Whether the ``steadyeval`` logger is set above INFO (``-q``): no progress bar then.
    An unset level (a library user who configured nothing) is not quiet."""
    level = logging.getLogger(LOGGER).level
    return level > logging.INFO


def duration(seconds: float) -> str:
    """``0.42 s``, ``3.2 s``, ``12m10s``, ``2h05m``: short and unambiguous in a log line."""
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


#: Set within :func:`no_progress`: :class:`ProgressLog` stays silent.
_SILENT: ContextVar[bool] = ContextVar("steadyeval_no_progress", default=False)


@contextmanager
def no_progress(silent: bool = True) -> Iterator[None]:
    """Within it, :class:`ProgressLog` logs nothing (a run's ``progress=False``, the command
    line's ``--no-progress``, holds for its analysis too). ``silent=False`` leaves the
    setting as it is (an outer ``no_progress`` still holds)."""
    token = _SILENT.set(True) if silent else None
    try:
        yield
    finally:
        if token is not None:
            _SILENT.reset(token)


class ProgressLog:
    """A ``progress(done, total)`` callback for long work counted in ``unit`` (a sampler's
    sweeps), not requests: one INFO line on ``logger`` at most every ``interval`` seconds
    of ``clock``, ``WHAT: DONE/TOTAL UNIT (P%) · ETA T``; none for work done sooner, and
    none within :func:`no_progress`."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        *,
        unit: str = "steps",
        interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger, self.what, self.unit = logger, what, unit
        self.interval, self._clock = interval, clock
        self._first: tuple[float, int] | None = None  # when the first step was told
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if _SILENT.get():
            return
        now = self._clock()
        if self._first is None:  # the pace from here: what ran before (a fit) is not a step
            self._first, self._last = (now, done), now
            return
        if done >= total or now - self._last < self.interval or done <= self._first[1]:
            return
        self._last = now
        start, done_then = self._first
        eta = duration((now - start) * (total - done) / (done - done_then))
        self.logger.info(
            "%s: %d/%d %s (%d%%) · ETA %s",
            self.what, done, total, self.unit, 100 * done // total, eta,
        )  # fmt: skip


@contextmanager
def timed_steps(
    logger: logging.Logger, what: str, doing: str, *, done: str = "done", unit: str = "steps"
) -> Iterator[ProgressLog]:
    """Long work counted in ``unit``: ``WHAT: DOING…`` at INFO, a :class:`ProgressLog` to
    tell the steps to, then ``WHAT: DONE in T`` when the work returns."""
    logger.info("%s: %s…", what, doing)
    start = time.monotonic()
    yield ProgressLog(logger, what, unit=unit)
    logger.info("%s: %s in %s", what, done, duration(time.monotonic() - start))
