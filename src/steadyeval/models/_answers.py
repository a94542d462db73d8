"""Answers as they arrive: how a backend that answers a batch's requests one by one (an API
backend, where every reply is paid for) hands each answered request to the run before the
batch ends, so that Ctrl-C, a crash or ``kill -9`` in the middle of a batch loses none of
the replies already received.

The run sets a sink around each backend call (:func:`answers_to`); a backend that can
deliver early reads it when a batch starts (:func:`answer_sink`) and calls it, from the
thread that called the backend, with ``(request, response)`` pairs as they come (grouped as
it likes; a pair may come again in the batch's result, which the run stores once). A
backend that ignores the sink loses nothing it returns: the batch's result is stored as
before. Wrappers (:class:`~steadyeval.models.SlotReader`) need not forward it, and a backend
run elsewhere (a Ray actor) sees no sink.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from ..requests import Request, Response

__all__ = ["AnswerSink", "answer_sink", "answers_to"]

#: Receives ``(request, response)`` pairs of a batch still running.
AnswerSink = Callable[[Sequence[tuple[Request, Response]]], None]

_SINK: ContextVar[AnswerSink | None] = ContextVar("steadyeval_answer_sink", default=None)


@contextmanager
def answers_to(sink: AnswerSink) -> Iterator[None]:
    """While the block runs, backends called from this thread hand ``sink`` their answers
    as they arrive (see the module docstring)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def answer_sink() -> AnswerSink | None:
    """The sink :func:`answers_to` set for this thread's backend calls, or ``None``."""
    return _SINK.get()
