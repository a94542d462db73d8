"""A small HTTP client for OpenAI-compatible servers (standard library only).

Bounded concurrency (a pool of ``max_concurrency`` worker threads, each with its own
keep-alive connection), retries with exponential backoff and jitter on 408/409/429/5xx,
timeouts, dropped connections, truncated bodies and 200 replies that cannot be used (a
``read`` function raises :class:`BadReply`; retried a few times, then an error naming the
request and what was wrong), and ``Retry-After`` honoured up to ``max_retry_after`` (a 429
pauses every worker, not only the one that got it). Each attempt has a total ``deadline``
besides the per-read ``timeout``. Each retry is logged at WARNING (why, which attempt, how
long it waits) and counted, with every wait, in a ``StatsCounter`` that the backend keeps
(the run's ``summary.json`` reports them). When one request of a batch fails for good, the
replies already received come back with the error (:class:`BatchFailed`). The API key is held
in a :class:`Secret` that never prints, and every text that could reach an error message or a
log is scrubbed of it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ._backend import StatsCounter
from ._openai_policy import (
    BadReply,
    BatchFailed,
    RetryPolicy,
    Secret,
    ServerError,
    error_message,
    is_transient,
    preview,
    retry_after_seconds,
    scrub,
    status_hint,
)
from ._openai_policy import Failure as _Failure
from ._openai_policy import closed_by_peer as _closed_by_peer

__all__ = [
    "BadReply",
    "BatchFailed",
    "HTTPClient",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "retry_after_seconds",
    "scrub",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
Reader = Callable[[dict[str, Any]], T]
_UNUSABLE = "an unusable 200 reply: "


class _Cancelled(Exception):
    """A queued request was not sent because another request of its batch failed."""


def _as_is(data: dict[str, Any]) -> dict[str, Any]:
    return data


class HTTPClient:
    """POST JSON to ``base_url + path``; thread-safe; see the module docstring.

    Parameters
    ----------
    base_url
        ``http(s)://host[:port][/prefix]``, e.g. ``http://127.0.0.1:8000/v1``.
    secret
        The API key (sent as ``Authorization: Bearer``), or ``None`` to send no key.
    policy
        Retries, backoff, the per-read timeout, the deadline of one attempt and the cap on
        ``Retry-After``.
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
        if conn is not None and conn.sock is not None and _closed_by_peer(conn.sock):
            conn.close()  # the server closed it while idle: the next request reconnects
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

    def _send(
        self, path: str, payload: bytes | None, method: str = "POST"
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange. A timer shuts the socket down when the policy's ``deadline``
        passes (each read is bounded by ``timeout`` only, so a reply that trickles in would
        otherwise hold the worker as long as the server likes)."""
        conn = self._conn()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self._user_agent,
        }
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret.reveal()}"
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.policy.deadline, expire)
        timer.daemon = True
        timer.start()
        try:
            try:
                reused = conn.sock is not None
                conn.request(method, self._prefix + path, body=payload, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                if not reused or expired.is_set():
                    raise
                conn.close()  # closed by the server between requests: no retry spent
                conn.request(method, self._prefix + path, body=payload, headers=headers)
            if expired.is_set():  # it passed while connecting, before there was a socket
                raise TimeoutError
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            if expired.is_set():
                raise TimeoutError(
                    f"no complete reply within deadline={self.policy.deadline:g} s"
                ) from None
            raise
        finally:
            timer.cancel()
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
        self,
        path: str,
        body: dict[str, Any],
        *,
        cancel: threading.Event | None = None,
        on_reply: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """POST ``body`` as JSON and return the decoded JSON object of a 200 reply (see
        :meth:`request`)."""
        return self.request(path, body, _as_is, cancel=cancel, on_reply=on_reply)

    def get(self, path: str) -> dict[str, Any]:
        """GET ``path`` once (no retries): the JSON object of a 200 reply, else a
        :class:`ServerError` (a connection failure has ``status`` ``None``)."""
        where = f"{self.base_url}{path}"
        try:
            status, _, raw = self._send(path, None, method="GET")
        except (OSError, http.client.HTTPException) as exc:
            self._drop_conn()
            raise ServerError(f"{where}: {type(exc).__name__}: {exc}", status=None) from None
        data: Any = None
        if status == 200:
            with contextlib.suppress(UnicodeDecodeError, ValueError):
                data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            hint = status_hint(status, self.base_url)
            raise ServerError(
                scrub(f"{where}: HTTP {status}: {error_message(raw)}{hint}", self._secret),
                status=status,
            )
        return data

    def request(
        self,
        path: str,
        body: dict[str, Any],
        read: Reader[T],
        *,
        cancel: threading.Event | None = None,
        on_reply: Callable[[dict[str, Any]], None] | None = None,
    ) -> T:
        """POST ``body`` as JSON and return ``read`` of the JSON object of a 200 reply.

        ``on_reply`` sees every 200 JSON object (each is paid for), usable or not. Retries
        what can succeed on another try: a ``read`` that raises :class:`BadReply` (and a
        reply that is JSON but no object) at most ``policy.bad_reply_retries`` times.
        Raises :class:`ServerError` for a reply that cannot succeed (4xx other than
        408/409/429), when the unusable replies or ``policy.max_retries`` retries run out.
        """
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        where = f"{self.base_url}{path}"
        attempts = self.policy.max_retries + 1
        last = _Failure("", None)
        real: _Failure | None = None  # the server's last error reply
        bad = 0
        for attempt in range(attempts):
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            self._pause(where, cancel)
            outcome = self._attempt(path, payload, body, read, on_reply)
            if not isinstance(outcome, _Failure):
                return outcome
            last = outcome
            real = last if last.status is not None else real
            bad += last.bad_reply
            if bad > min(self.policy.bad_reply_retries, self.policy.max_retries):
                raise ServerError(
                    scrub(
                        f"{where}: the server's reply was unusable {bad} "
                        f"time{'s' if bad > 1 else ''} in a row: "
                        f"{last.why.removeprefix(_UNUSABLE)}{preview(body)}",
                        self._secret,
                    ),
                    status=200,
                )
            if attempt + 1 < attempts:
                self._before_retry(where, last, attempt, cancel)
        why = last.why if real is None or real is last else f"{real.why} (then: {last.why})"
        raise ServerError(
            scrub(
                f"{where}: no usable reply after {attempts} attempts; last error: {why}"
                f"{preview(body)}. "
                "Is the server up and the base_url right? (retries: max_retries, "
                "backoff_base, backoff_max, timeout, deadline in the model spec)",
                self._secret,
            ),
            status=last.status if real is None else real.status,
        )

    def _attempt(
        self,
        path: str,
        payload: bytes,
        body: dict[str, Any],
        read: Reader[T],
        on_reply: Callable[[dict[str, Any]], None] | None,
    ) -> T | _Failure:
        """Send once: the read reply, a :class:`_Failure` that another try may fix, or a
        :class:`ServerError` raised for a reply that no retry can fix."""
        where = f"{self.base_url}{path}"
        try:
            status, headers, raw = self._send(path, payload)
        except (OSError, http.client.HTTPException) as exc:
            # Timeouts, deadlines, refused/reset/dropped connections, truncated bodies
            # (IncompleteRead): the connection is unusable; open a fresh one next time.
            self._drop_conn()
            return _Failure(f"{type(exc).__name__}: {exc}", None)
        if status == 200:
            return self._read(raw, read, on_reply)
        message = error_message(raw)
        if is_transient(status, message):
            why = f"HTTP {status}: {message}"
            return _Failure(why, status, self._asked_wait(where, status, headers))
        hint = status_hint(status, self.base_url)
        if status in (401, 403):
            hint = f"; the key is read from {self._key_hint}" + (
                ", which is not set" if self._secret is None else ""
            )
        raise ServerError(
            scrub(
                f"{where}: HTTP {status}: {message}{preview(body)}{hint}",
                self._secret,
            ),
            status=status,
            permanent=True,
        )

    def _read(
        self,
        raw: bytes,
        read: Reader[T],
        on_reply: Callable[[dict[str, Any]], None] | None,
    ) -> T | _Failure:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._drop_conn()
            return _Failure("a truncated or malformed JSON body", 200)
        if not isinstance(data, dict):
            return _Failure(f"{_UNUSABLE}JSON but not an object", 200, bad_reply=True)
        if on_reply is not None:
            on_reply(data)
        try:
            return read(data)
        except BadReply as exc:
            return _Failure(f"{_UNUSABLE}{exc}", 200, bad_reply=True)

    def _asked_wait(self, where: str, status: int, headers: dict[str, str]) -> float | None:
        """The server's ``Retry-After``, cut to ``policy.max_retry_after`` (logged); a 429's
        pauses every worker."""
        asked = retry_after_seconds(headers)
        if asked is None:
            return None
        cap = self.policy.max_retry_after
        if asked > cap:
            log.warning(
                "%s: the server asked to wait %.0f s (Retry-After); waiting "
                "max_retry_after=%g s instead",
                where,
                asked,
                cap,
            )
            asked = cap
        if status == 429:
            with self._lock:  # every worker waits, not only this one
                self._pause_until = max(self._pause_until, time.monotonic() + asked)
        return asked

    def _before_retry(
        self, where: str, failure: _Failure, attempt: int, cancel: threading.Event | None
    ) -> None:
        wait_s = failure.asked_wait
        asked = wait_s is not None
        if wait_s is None:
            wait_s = self.policy.delay(attempt, self._rng)
        log.warning(
            "%s: %s; retry %d of %d in %.2f s%s",
            where,
            scrub(failure.why, self._secret),
            attempt + 1,
            self.policy.max_retries,
            wait_s,
            " (the server's Retry-After)" if asked else "",
        )
        self.counter.add(retries=1, waits=1 if wait_s > 0 else 0, seconds=wait_s)
        self._wait(wait_s, cancel)

    # -- many requests -------------------------------------------------------------------
    def post_many(
        self,
        calls: Sequence[tuple[str, dict[str, Any], Reader[T]]],
        *,
        on_reply: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[T]:
        """:meth:`request` every ``(path, body, read)`` with at most ``max_concurrency`` in
        flight; results in the order of ``calls``.

        When one request fails for good, requests not yet sent are dropped, those in flight
        are waited for, and :class:`BatchFailed` is raised with the first error and the
        results of every request that was answered (so that none of them is lost).
        ``on_reply`` is called (from a worker thread) with each 200 reply as it arrives.
        """
        if not calls:
            return []
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.max_concurrency, thread_name_prefix="steadyeval-http"
            )
        cancel = threading.Event()
        futures: list[Future[T]] = [
            self._pool.submit(self.request, path, body, read, cancel=cancel, on_reply=on_reply)
            for path, body, read in calls
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
            done = {
                i: f.result()
                for i, f in enumerate(futures)
                if not f.cancelled() and f.exception() is None
            }
            raise BatchFailed(first, done) from first
        return [f.result() for f in futures]


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
