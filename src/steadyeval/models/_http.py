"""The HTTP layer of the API backends, the same for every provider, on ``httpx``.

One pooled ``httpx`` client per backend (keep-alive connections, HTTP/1.1 by default, HTTP/2
where asked and the ``h2`` package is installed), bounded concurrency (a pool of
``max_concurrency`` worker threads), and the project's own retry and deadline policy
(:mod:`._http_policy`): retries with exponential backoff and jitter on 408/409/429/5xx,
timeouts, dropped connections, truncated bodies and 200 replies that cannot be used (a
``read`` function raises :class:`BadReply`; retried a few times, then an error naming the
request and what was wrong), and ``Retry-After`` honoured up to ``max_retry_after`` (a 429
pauses every worker, not only the one that got it). Each attempt has a total ``deadline``
besides the per-operation ``timeout`` (:mod:`._http_transport`). Each retry is logged at
WARNING (why, which attempt, how long it waits) and counted, with every wait, in a
``StatsCounter`` that the backend keeps (the run's ``summary.json`` reports them). When one
request of a batch fails for good, the replies already received come back with the error
(:class:`BatchFailed`); while a batch runs, its results can be handed over as they arrive,
Ctrl-C included (``post_many``'s ``on_results``).

What differs between providers is an :class:`ApiProvider`: how the key is sent and the hints
of an error reply. The key is held in a :class:`Secret` that never prints, and every text
that could reach an error message or a log is scrubbed of it (httpx's exceptions are shown
by their message only, never with their request).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from .._errors import SteadyevalError
from .._files import limit_from_env
from ._backend import StatsCounter
from ._http_batch import RESULTS_GROUP, RESULTS_WAIT, Handover, wait_all
from ._http_policy import (
    BadReply,
    BatchFailed,
    Failure,
    RetryPolicy,
    Secret,
    ServerError,
    error_message,
    is_transient,
    preview,
    retry_after_seconds,
    scrub,
)
from ._http_transport import Deadline, DeadlineTransport

__all__ = ["RESULTS_GROUP", "RESULTS_WAIT", "ApiProvider", "HttpClient", "Reader"]

log = logging.getLogger(__name__)

T = TypeVar("T")
Reader = Callable[[dict[str, Any]], T]
_UNUSABLE = "an unusable 200 reply: "
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: Failures of the exchange that another try may fix (a reply that never came or broke off).
#: The largest reply body read (decompressed), in bytes; the variable raises it (in MB).
MAX_REPLY_BYTES = 256 * 2**20
REPLY_LIMIT_ENV = "STEADYEVAL_MAX_REPLY_MB"


class ReplyTooLarge(httpx.HTTPError):
    """A reply body over the limit (a server or proxy gone wrong): not retried."""


_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError,
              httpx.DecodingError, TimeoutError)  # fmt: skip


def _no_hint(status: int, base_url: str) -> str:
    return ""


@dataclass(frozen=True)
class ApiProvider:
    """What one API provider adds to the HTTP layer.

    ``auth_headers`` turns the key into the headers that carry it (OpenAI:
    ``{"Authorization": "Bearer KEY"}``); ``key_hint`` says where the key is read from (the
    message of a 401/403 reply); ``status_hint(status, base_url)`` adds a hint to the message
    of an error reply that the request itself caused (a wrong ``base_url``).
    """

    auth_headers: Callable[[str], Mapping[str, str]]
    key_hint: str = "the environment"
    status_hint: Callable[[int, str], str] = field(default=_no_hint)


class _Cancelled(Exception):
    """A queued request was not sent because another request of its batch failed."""


def _as_is(data: dict[str, Any]) -> dict[str, Any]:
    return data


class HttpClient:
    """POST and GET JSON under ``base_url``; thread-safe; see the module docstring.

    Parameters
    ----------
    base_url
        ``http(s)://host[:port][/prefix]``, e.g. ``http://127.0.0.1:8000/v1``.
    provider
        How the key is sent, and the hints of error messages.
    secret
        The API key, or ``None`` to send none.
    policy
        Retries, backoff, the per-operation timeout, the deadline of one attempt and the cap
        on ``Retry-After``.
    max_concurrency
        Most requests in flight at once.
    counter
        Where retries and back-off waits are counted (a backend keeps one across clients).
    http2
        Offer HTTP/2 (needs the ``h2`` package); HTTP/1.1 otherwise, as llama.cpp and vLLM
        servers speak.
    """

    def __init__(
        self,
        base_url: str,
        *,
        provider: ApiProvider,
        secret: Secret | None,
        policy: RetryPolicy,
        max_concurrency: int,
        counter: StatsCounter | None = None,
        http2: bool = False,
        user_agent: str = "steadyeval",
    ) -> None:
        if http2 and importlib.util.find_spec("h2") is None:
            raise SteadyevalError("HTTP/2 needs the h2 package: pip install h2")
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self._secret = secret
        self.policy = policy
        self.max_concurrency = max_concurrency
        self.counter = counter or StatsCounter()
        self._http2 = http2
        self.max_reply_bytes = limit_from_env(REPLY_LIMIT_ENV, MAX_REPLY_BYTES)
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": user_agent,
        }
        self._deadline = Deadline()
        self._lock = threading.Lock()
        self._renewing = threading.Lock()  # one caller renews the client and the pool
        self._http: httpx.Client | None = None
        self._transport: DeadlineTransport | None = None
        self._pause_until = 0.0
        self._rng = random.Random()  # jitter only: it changes timing, never a result
        self._pool: ThreadPoolExecutor | None = None
        host = urlsplit(base_url).hostname or ""
        if secret is not None and not self.base_url.startswith("https:") and host not in _LOOPBACK:
            log.warning(
                "%s: sending the API key over plain http to %s; use https", self.base_url, host
            )

    # -- the connection pool -------------------------------------------------------------
    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                self._transport = DeadlineTransport(
                    self._deadline, http2=self._http2, max_keepalive=self.max_concurrency + 1
                )
                self._http = httpx.Client(
                    transport=self._transport,
                    timeout=httpx.Timeout(self.policy.timeout),
                    headers=self._headers,
                    follow_redirects=False,
                    trust_env=False,
                )
            return self._http

    def close(self) -> None:
        """Stop the worker threads and close every connection (a later request opens new
        ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with self._lock:
            client, self._http, self._transport = self._http, None, None
        if client is not None:
            client.close()

    def _abort(self) -> None:
        """Shut down every socket of the batch's transport, open or opened later, so that
        workers blocked in a read return at once, and any worker still about to send fails
        at once too (it gets the same transport: :meth:`_renewed` replaces it only when the
        next batch starts, after those workers are done)."""
        with self._lock:
            transport = self._transport
        if transport is not None:
            transport.abort()

    def _renewed(self) -> ThreadPoolExecutor:
        """Before new work: after a batch stopped by Ctrl-C (its transport cut for good),
        let its workers end (they fail at once) and start afresh with a new client. Returns
        the worker pool (made on first use). One caller at a time: threads that come at once
        renew once and share the new pool."""
        with self._renewing:
            with self._lock:
                transport = self._transport
            if transport is not None and transport.stopped:
                self.close()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_concurrency, thread_name_prefix="steadyeval-http"
                )
            return self._pool

    def _send(
        self, path: str, payload: bytes | None, method: str = "POST"
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange within the policy's ``deadline`` (each socket operation is
        bounded by ``timeout`` only, so a reply that trickles in would otherwise hold the
        worker as long as the server likes). A request that could not be written to a
        kept-alive connection (the server closed it between requests) is sent once more
        on a new one, spending no retry."""
        client = self._client()
        headers = {}
        if self._secret is not None:
            headers = dict(self.provider.auth_headers(self._secret.reveal()))
        url = self.base_url + path
        with self._deadline.until(self.policy.deadline) as deadline:
            try:
                try:
                    return self._exchange(client, method, url, payload, headers)
                except httpx.WriteError:
                    if deadline.connected:
                        raise
                    return self._exchange(client, method, url, payload, headers)
            except httpx.TimeoutException:
                if deadline.hit:
                    raise TimeoutError(
                        f"no complete reply within deadline={self.policy.deadline:g} s"
                    ) from None
                raise

    def _exchange(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        payload: bytes | None,
        headers: Mapping[str, str],
    ) -> tuple[int, dict[str, str], bytes]:
        """Send and read the reply's body as it arrives (decompressed), up to
        ``max_reply_bytes``: a server or proxy that sends more is refused, not buffered."""
        with client.stream(method, url, content=payload, headers=headers) as reply:
            chunks, size = [], 0
            for chunk in reply.iter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise ReplyTooLarge(
                        f"the reply is over {self.max_reply_bytes / 2**20:g} MB (decompressed); "
                        f"{REPLY_LIMIT_ENV} raises the limit"
                    )
                chunks.append(chunk)
            return (
                reply.status_code,
                {k.lower(): v for k, v in reply.headers.items()},
                b"".join(chunks),
            )

    def _failed_exchange(self, where: str, exc: Exception) -> Failure:
        """What a failed exchange says: a :class:`Failure` that another try may fix, else a
        :class:`ServerError` raised (a request that cannot be sent as it is)."""
        why = scrub(f"{type(exc).__name__}: {exc}", self._secret)
        if isinstance(exc, _TRANSIENT):
            return Failure(why, None)
        raise ServerError(f"{where}: {why}", status=None, permanent=True) from None

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
        self._renewed()
        return self.request(path, body, _as_is, cancel=cancel, on_reply=on_reply)

    def get(self, path: str) -> dict[str, Any]:
        """GET ``path`` once (no retries): the JSON object of a 200 reply, else a
        :class:`ServerError` (a connection failure has ``status`` ``None``)."""
        where = f"{self.base_url}{path}"
        self._renewed()
        try:
            status, _, raw = self._send(path, None, method="GET")
        except (httpx.HTTPError, TimeoutError, UnicodeEncodeError) as exc:
            why = scrub(f"{type(exc).__name__}: {exc}", self._secret)
            raise ServerError(f"{where}: {why}", status=None) from None
        data: Any = None
        if status == 200:
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                data = None
        if not isinstance(data, dict):
            hint = self.provider.status_hint(status, self.base_url)
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
        last = Failure("", None)
        real: Failure | None = None  # the server's last error reply
        bad = 0
        for attempt in range(attempts):
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            self._pause(where, cancel)
            outcome = self._attempt(path, payload, body, read, on_reply)
            if not isinstance(outcome, Failure):
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
            if cancel is not None and cancel.is_set():
                raise _Cancelled  # the batch stopped (Ctrl-C cut this exchange): no retry
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
    ) -> T | Failure:
        """Send once: the read reply, a :class:`Failure` that another try may fix, or a
        :class:`ServerError` raised for a reply that no retry can fix."""
        where = f"{self.base_url}{path}"
        try:
            status, headers, raw = self._send(path, payload)
        except (httpx.HTTPError, TimeoutError, UnicodeEncodeError) as exc:
            # Timeouts, deadlines, refused/reset/dropped connections, truncated bodies.
            return self._failed_exchange(where, exc)
        if status == 200:
            return self._read(raw, read, on_reply)
        message = error_message(raw)
        if is_transient(status, message):
            why = f"HTTP {status}: {message}"
            return Failure(why, status, self._asked_wait(where, status, headers))
        hint = self.provider.status_hint(status, self.base_url)
        if status in (401, 403):
            hint = f"; the key is read from {self.provider.key_hint}" + (
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
    ) -> T | Failure:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return Failure("a truncated or malformed JSON body", 200)
        if not isinstance(data, dict):
            return Failure(f"{_UNUSABLE}JSON but not an object", 200, bad_reply=True)
        if on_reply is not None:
            on_reply(data)
        try:
            return read(data)
        except BadReply as exc:
            return Failure(f"{_UNUSABLE}{exc}", 200, bad_reply=True)

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
        self, where: str, failure: Failure, attempt: int, cancel: threading.Event | None
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
        on_results: Callable[[Mapping[int, T]], None] | None = None,
    ) -> list[T]:
        """:meth:`request` every ``(path, body, read)`` with at most ``max_concurrency`` in
        flight; results in the order of ``calls``.

        When one request fails for good, requests not yet sent are dropped, those in flight
        are waited for, and :class:`BatchFailed` is raised with the first error and the
        results of every request that was answered (so that none of them is lost).
        ``on_reply`` is called (from a worker thread) with each 200 reply as it arrives.

        ``on_results`` is called in this thread, while the batch runs, with the results
        that completed since its last call, by their index in ``calls``: once
        :data:`RESULTS_GROUP` have gathered or :data:`RESULTS_WAIT` seconds after the first
        of them completed, and with the rest before this returns or raises. On Ctrl-C
        (any exception while waiting) nothing more is sent, open connections are cut, and
        ``on_results`` gets every result already read before the exception goes on.
        """
        if not calls:
            return []
        pool = self._renewed()
        cancel = threading.Event()
        futures: list[Future[T]] = [
            pool.submit(self.request, path, body, read, cancel=cancel, on_reply=on_reply)
            for path, body, read in calls
        ]
        handed = Handover(futures, on_results)
        try:
            wait_all(futures, cancel, handed)
        except BaseException:  # Ctrl-C while waiting (or on_results failed): stop sending
            cancel.set()
            for f in futures:
                f.cancel()
            self._abort()
            handed.rest()
            raise
        errors = [
            f.exception()
            for f in futures
            if not f.cancelled() and not isinstance(f.exception(), _Cancelled | type(None))
        ]
        if errors:
            first = errors[0]
            assert first is not None
            raise BatchFailed(first, handed.results()) from first
        return [f.result() for f in futures]
