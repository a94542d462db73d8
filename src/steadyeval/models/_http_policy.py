"""The project's own retry and deadline policy of the HTTP layer (:mod:`._http`), the same for
every API provider: the key that never shows itself (:class:`Secret`, :func:`scrub`), the
errors (:class:`ServerError`; :class:`BadReply` for a 200 reply that cannot be used;
:class:`BatchFailed` for a batch cut short, carrying the replies it did get), how hard to try
(:class:`RetryPolicy`), which replies another try may fix (:func:`is_transient`) and the
server's ``Retry-After`` (:func:`retry_after_seconds`). Standard library only.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import SteadyevalError

__all__ = [
    "BadReply",
    "BatchFailed",
    "Failure",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "error_message",
    "is_transient",
    "preview",
    "retry_after_seconds",
    "scrub",
]

_MAX_MESSAGE = 400
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")


class Secret:
    """A credential that never shows itself: ``repr``/``str`` print ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled; read it from the environment instead")


def scrub(text: str, secret: Secret | None = None) -> str:
    """``text`` with the secret (also as Python escapes it: an exception may show the bytes
    of a header), ``Bearer ...`` tokens and ``sk-...`` keys replaced by ***."""
    value = "" if secret is None else secret.reveal()
    if value:
        escaped = (repr(value)[1:-1], repr(value.encode("utf-8", "surrogatepass"))[2:-1])
        for form in sorted({value, *escaped}, key=len, reverse=True):
            text = text.replace(form, "***")
    text = _BEARER.sub(r"\1***", text)
    return _SK.sub("sk-***", text)


class ServerError(SteadyevalError):
    """A reply that retrying will not fix (e.g. HTTP 400), or retries ran out.

    ``status`` is the HTTP status of the last reply (``None`` when the last attempt got no
    reply: timeout, dropped connection, truncated body).
    """

    def __init__(self, message: str, *, status: int | None, permanent: bool = False) -> None:
        self.status = status
        self.permanent = permanent  # the reply says no retry can succeed
        super().__init__(message)

    def __reduce__(self) -> Any:
        return (_server_error, (type(self), str(self), self.status))


def _server_error(cls: type[ServerError], message: str, status: int | None) -> ServerError:
    err = ServerError.__new__(cls)
    ServerError.__init__(err, message, status=status)
    return err


class BadReply(ServerError):
    """A 200 reply that cannot be used: malformed (log-probability lists of different
    lengths, no choices, missing fields, not a JSON object) or, under ``strict=true``,
    approximate. The message says what is wrong. The client retries such a reply as a
    transient fault, at most :attr:`RetryPolicy.bad_reply_retries` times."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, status=200)


class BatchFailed(SteadyevalError):
    """One request of a batch failed for good (``error``); ``done`` holds the results of the
    requests that were answered before the batch stopped, by their index in the batch."""

    def __init__(self, error: BaseException, done: Mapping[int, Any]) -> None:
        super().__init__(str(error))
        self.error = error
        self.done = dict(done)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try.

    ``timeout`` bounds each socket operation (connect, each read); ``deadline`` bounds one
    attempt as a whole, from sending to the reply's last byte (a server that drips a byte
    every few seconds never trips ``timeout``). ``max_retry_after`` caps the wait a server's
    ``Retry-After`` can impose. A 200 reply that cannot be used (:class:`BadReply`) is
    retried at most ``bad_reply_retries`` times (each such reply is paid for).
    """

    max_retries: int = 8
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    timeout: float = 120.0
    deadline: float = 600.0
    max_retry_after: float = 60.0
    bad_reply_retries: int = 2

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Backoff before retry ``attempt`` (0-based): exponential, capped, "equal jitter"
        (half fixed, half uniform) so that workers that failed together do not retry
        together."""
        d = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        return d / 2 + rng.uniform(0.0, d / 2)


#: Error texts that no retry fixes, whatever the status says (llama-cpp-python answers 500
#: "logprobs is not supported for models created with logits_all=False").
_PERMANENT = re.compile(
    r"(?i)not supported|unsupported|does not support|not implemented|logits_all|"
    r"not a valid|invalid (?:request|value|argument|parameter)|no such model|model .*not found"
)
TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524})


def is_transient(status: int, message: str) -> bool:
    """Whether another try may succeed: a transient status (408/409/429/5xx) whose error
    text does not say that the request itself cannot be served."""
    return status in TRANSIENT_STATUS and not _PERMANENT.search(message)


def retry_after_seconds(headers: dict[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_message(raw: bytes) -> str:
    """The server's error text: ``error.message`` of a JSON body, else the body itself."""
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
        elif isinstance(err, str):
            text = err
        elif isinstance(data.get("message"), str):
            text = data["message"]
    text = " ".join(text.split())
    return text[:_MAX_MESSAGE] + ("..." if len(text) > _MAX_MESSAGE else "")


def preview(body: dict[str, Any]) -> str:
    """Where in the run a failing request came from: the start of its prompt."""
    text = body.get("prompt")
    if text is None and isinstance(body.get("messages"), list) and body["messages"]:
        text = body["messages"][-1].get("content")
    if not isinstance(text, str):
        return ""
    short = text[:80] + ("..." if len(text) > 80 else "")
    return f" (request prompt: {short!r})"


@dataclass(frozen=True)
class Failure:
    """One attempt that another may fix: why, the reply's status (``None``: no reply), the
    wait the server asked for (capped), and whether it was an unusable 200 reply."""

    why: str
    status: int | None
    asked_wait: float | None = None
    bad_reply: bool = False
