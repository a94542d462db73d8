"""A small HTTP client for OpenAI-compatible servers (standard library only).

Bounded concurrency (a pool of ``max_concurrency`` worker threads, each with its own
keep-alive connection), retries with exponential backoff and jitter on 408/409/429/5xx,
timeouts, dropped connections and truncated or malformed bodies, and ``Retry-After``
honoured (a 429 pauses every worker, not only the one that got it). Each retry is logged at
WARNING (why, which attempt, how long it waits) and counted, with every wait, in a
``StatsCounter`` that the backend keeps (the run's ``summary.json`` reports them). The API
key is held in a :class:`Secret` that never prints, and every text that could reach an error
message or a log is scrubbed of it.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import logging
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._errors import SteadyevalError
from ._backend import StatsCounter

__all__ = ["HTTPClient", "RetryPolicy", "Secret", "ServerError", "scrub"]

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524})
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
    """``text`` with the secret, ``Bearer ...`` tokens and ``sk-...`` keys replaced by ***."""
    if secret is not None and secret.reveal():
        text = text.replace(secret.reveal(), "***")
    text = _BEARER.sub(r"\1***", text)
    return _SK.sub("sk-***", text)


class ServerError(SteadyevalError):
    """A reply that retrying will not fix (e.g. HTTP 400), or retries ran out.

    ``status`` is the HTTP status of the last reply (``None`` when the last attempt got no
    reply: timeout, dropped connection, truncated body).
    """

    def __init__(self, message: str, *, status: int | None) -> None:
        self.status = status
        super().__init__(message)


class _Cancelled(Exception):
    """A queued request was not sent because another request of its batch failed."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. ``timeout`` bounds each socket operation (connect, each read)."""

    max_retries: int = 8
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    timeout: float = 120.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Backoff before retry ``attempt`` (0-based): exponential, capped, "equal jitter"
        (half fixed, half uniform) so that workers that failed together do not retry
        together."""
        d = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        return d / 2 + rng.uniform(0.0, d / 2)


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
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_message(raw: bytes) -> str:
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


class HTTPClient:
    """POST JSON to ``base_url + path``; thread-safe; see the module docstring.

    Parameters
    ----------
    base_url
        ``http(s)://host[:port][/prefix]``, e.g. ``http://127.0.0.1:8000/v1``.
    secret
        The API key (sent as ``Authorization: Bearer``), or ``None`` to send no key.
    policy
        Retries, backoff and timeout.
    max_concurrency
        Most requests in flight at once.
    key_hint
        Where the key comes from, for the message of a 401/403 reply.
    counter
        Where retries and back-off waits are counted (a backend keeps one across clients).
    """

    def __init__(
        self,
        base_url: str,
        *,
        secret: Secret | None,
        policy: RetryPolicy,
        max_concurrency: int,
        user_agent: str = "steadyeval",
        key_hint: str = "the environment",
        counter: StatsCounter | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._secret = secret
        self.policy = policy
        self.max_concurrency = max_concurrency
        self._user_agent = user_agent
        self._key_hint = key_hint
        self.counter = counter or StatsCounter()
        self._local = threading.local()
        self._conns: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._pause_until = 0.0
        self._rng = random.Random()  # jitter only: it changes timing, never a result
        self._pool: ThreadPoolExecutor | None = None
        self._ssl = ssl.create_default_context() if self._https else None
        if secret is not None and not self._https and self._host not in _LOOPBACK:
            log.warning(
                "%s: sending the API key over plain http to %s; use https",
                self.base_url,
                self._host,
            )

    # -- connections ---------------------------------------------------------------------
    def _conn(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.policy.timeout, context=self._ssl
                )
            else:
                conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self.policy.timeout
                )
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def _drop_conn(self) -> None:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)

    def close(self) -> None:
        """Close every connection and stop the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

    def _abort(self) -> None:
        """Shut down every open socket so that workers blocked in a read return at once."""
        with self._lock:
            socks = [c.sock for c in self._conns if c.sock is not None]
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _send(self, path: str, payload: bytes) -> tuple[int, dict[str, str], bytes]:
        conn = self._conn()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self._user_agent,
        }
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret.reveal()}"
        conn.request("POST", self._prefix + path, body=payload, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, raw

    # -- one request ---------------------------------------------------------------------
    def _wait(self, seconds: float, cancel: threading.Event | None) -> None:
        if seconds <= 0:
            return
        if cancel is None:
            time.sleep(seconds)
        elif cancel.wait(seconds):
            raise _Cancelled

    def _pause(self, where: str, cancel: threading.Event | None) -> None:
        """Wait out a pause the server asked for (a 429's ``Retry-After``, set by any
        worker), counted as a back-off wait."""
        seconds = self._pause_until - time.monotonic()
        if seconds <= 0:
            return
        log.info("%s: pausing %.2f s, as the server asked (HTTP 429)", where, seconds)
        self.counter.add(waits=1, seconds=seconds)
        self._wait(seconds, cancel)

    def post(
        self, path: str, body: dict[str, Any], *, cancel: threading.Event | None = None
    ) -> dict[str, Any]:
        """POST ``body`` as JSON and return the decoded JSON object of a 200 reply.

        Retries what can succeed on another try; raises :class:`ServerError` for a reply that
        cannot (4xx other than 408/409/429, a 200 that is not a JSON object) or when
        ``policy.max_retries`` retries are used up.
        """
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        where = f"{self.base_url}{path}"
        attempts = self.policy.max_retries + 1
        last, last_status = "", None
        for attempt in range(attempts):
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            self._pause(where, cancel)
            wait_s: float | None = None
            try:
                status, headers, raw = self._send(path, payload)
            except (OSError, http.client.HTTPException) as exc:
                # Timeouts, refused/reset/dropped connections, truncated bodies
                # (IncompleteRead): the connection is unusable; open a fresh one next time.
                self._drop_conn()
                last, last_status = f"{type(exc).__name__}: {exc}", None
            else:
                if status == 200:
                    try:
                        data = json.loads(raw.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError):
                        self._drop_conn()
                        last, last_status = "a truncated or malformed JSON body", 200
                    else:
                        if not isinstance(data, dict):
                            raise ServerError(
                                f"{where}: the reply is JSON but not an object", status=200
                            )
                        return data
                elif status in RETRYABLE_STATUS:
                    last, last_status = f"HTTP {status}: {_error_message(raw)}", status
                    wait_s = retry_after_seconds(headers)
                    if wait_s is not None and status == 429:
                        with self._lock:  # every worker waits, not only this one
                            self._pause_until = max(self._pause_until, time.monotonic() + wait_s)
                else:
                    hint = ""
                    if status in (401, 403):
                        hint = f"; the key is read from {self._key_hint}" + (
                            ", which is not set" if self._secret is None else ""
                        )
                    raise ServerError(
                        scrub(
                            f"{where}: HTTP {status}: {_error_message(raw)}{_preview(body)}{hint}",
                            self._secret,
                        ),
                        status=status,
                    )
            if attempt + 1 == attempts:
                break
            asked = wait_s is not None
            if wait_s is None:
                wait_s = self.policy.delay(attempt, self._rng)
            log.warning(
                "%s: %s; retry %d of %d in %.2f s%s",
                where,
                scrub(last, self._secret),
                attempt + 1,
                self.policy.max_retries,
                wait_s,
                " (the server's Retry-After)" if asked else "",
            )
            self.counter.add(retries=1, waits=1 if wait_s > 0 else 0, seconds=wait_s)
            self._wait(wait_s, cancel)
        raise ServerError(
            scrub(
                f"{where}: no usable reply after {attempts} attempts; last error: {last}"
                f"{_preview(body)}. "
                "Is the server up and the base_url right? (retries: max_retries, "
                "backoff_base, backoff_max, timeout in the model spec)",
                self._secret,
            ),
            status=last_status,
        )

    # -- many requests -------------------------------------------------------------------
    def post_many(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        *,
        on_reply: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """POST every ``(path, body)`` with at most ``max_concurrency`` in flight; replies in
        the order of ``calls``.

        When one request fails for good, requests not yet sent are dropped, those in flight
        are waited for, and the first error is raised. ``on_reply`` is called (from a worker
        thread) with each successful reply as it arrives.
        """
        if not calls:
            return []
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.max_concurrency, thread_name_prefix="steadyeval-http"
            )
        cancel = threading.Event()

        def one(path: str, body: dict[str, Any]) -> dict[str, Any]:
            data = self.post(path, body, cancel=cancel)
            if on_reply is not None:
                on_reply(data)
            return data

        futures: list[Future[dict[str, Any]]] = [
            self._pool.submit(one, path, body) for path, body in calls
        ]
        try:
            _, pending = wait(futures, return_when=FIRST_EXCEPTION)
            if pending:
                cancel.set()
                wait(futures)
        except BaseException:  # Ctrl-C while waiting: send nothing more, stop waiting
            cancel.set()
            for f in futures:
                f.cancel()
            self._abort()
            raise
        errors = [
            f.exception()
            for f in futures
            if not f.cancelled() and not isinstance(f.exception(), _Cancelled | type(None))
        ]
        if errors:
            first = errors[0]
            assert first is not None
            raise first
        return [f.result() for f in futures]


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _preview(body: dict[str, Any]) -> str:
    """Where in the run a failing request came from: the start of its prompt."""
    text = body.get("prompt")
    if text is None and isinstance(body.get("messages"), list) and body["messages"]:
        text = body["messages"][-1].get("content")
    if not isinstance(text, str):
        return ""
    short = text[:80] + ("..." if len(text) > 80 else "")
    return f" (request prompt: {short!r})"
