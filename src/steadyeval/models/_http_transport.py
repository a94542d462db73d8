"""httpx's transport with the one thing httpx lacks: a deadline for a whole attempt.

httpx bounds each socket operation (connect, each read, each write) by its timeouts, so a
reply that trickles in a byte at a time never trips them. :class:`Deadline` holds the
calling thread's deadline (a synchronous httpx client does all of one request's socket work
on the thread that sent it); the network streams of :class:`DeadlineTransport` cut every
operation's timeout to the time left before it, and the operation that would start after it
fails as a timeout at once. The transport also knows its open sockets, so that
:meth:`DeadlineTransport.abort` can shut them all down: a worker blocked in a read then
returns at once (Ctrl-C during a batch).

With HTTP/2 one connection carries the requests of several threads, and a read may be done
by any of them: a deadline that passes there fails the connection's other streams too (they
are retried as after a dropped connection).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
import typing
from collections.abc import Iterator

import httpcore
import httpx

__all__ = ["Deadline", "DeadlineTransport"]


class Deadline(threading.local):
    """The calling thread's deadline (``time.monotonic()`` seconds; ``None``: none) and what
    its request's socket work met on the way."""

    at: float | None = None
    hit = False  # an operation was cut by the deadline (not by its own timeout)
    connected = False  # the request opened a new connection (it did not reuse one)

    @contextlib.contextmanager
    def until(self, seconds: float) -> Iterator[Deadline]:
        """Apply a deadline ``seconds`` from now to this thread's socket work inside."""
        self.at, self.hit, self.connected = time.monotonic() + seconds, False, False
        try:
            yield self
        finally:
            self.at = None

    def cap(self, timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
        """``timeout`` cut to the time left; raises ``late`` once none is left."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            self.hit = True
            raise late("the deadline passed")
        if timeout is None or left < timeout:
            self.hit = True  # should this operation time out, the deadline did it
            return left
        self.hit = False
        return timeout


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, owner: _Backend) -> None:
        self._inner = inner
        self._owner = owner
        owner.opened(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._owner.deadline.cap(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._owner.deadline.cap(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._owner.closed(self)
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = self._owner.deadline.cap(timeout, httpcore.ConnectTimeout)
        self._owner.closed(self)  # the TLS stream wraps the same socket from now on
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._owner)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)

    def shutdown(self) -> None:
        sock = self._inner.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Backend(httpcore.NetworkBackend):
    """httpcore's synchronous sockets, each operation bounded by :attr:`deadline` too."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self._inner = httpcore.SyncBackend()
        self._lock = threading.Lock()
        self._open: set[_Stream] = set()
        self._stopped = False  # shut down: every stream opened from now on is cut at once

    def opened(self, stream: _Stream) -> None:
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._open.add(stream)
        if stopped:
            stream.shutdown()

    def closed(self, stream: _Stream) -> None:
        with self._lock:
            self._open.discard(stream)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def shutdown_all(self) -> None:
        with self._lock:
            self._stopped = True
            streams = list(self._open)
        for stream in streams:
            stream.shutdown()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = self.deadline.cap(timeout, httpcore.ConnectTimeout)
        self.deadline.connected = True
        inner = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Stream(inner, self)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:  # pragma: no cover - the layer speaks TCP only
        timeout = self.deadline.cap(timeout, httpcore.ConnectTimeout)
        self.deadline.connected = True
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options), self)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport (connection pool, keep-alive, HTTP/1.1 or HTTP/2) over sockets
    that also stop at the calling thread's :class:`Deadline`.

    httpx does not take a network backend, so the pool it builds is replaced by the same
    pool with one (``httpcore.ConnectionPool``'s public ``network_backend``). No proxy from
    the environment and no ``.netrc`` (``trust_env`` off), as the standard-library client
    this replaced; certificates are checked against the system's store.
    """

    def __init__(self, deadline: Deadline, *, http2: bool, max_keepalive: int) -> None:
        context = ssl.create_default_context()
        super().__init__(verify=context, http2=http2, trust_env=False)
        if not isinstance(self._pool, httpcore.ConnectionPool):  # pragma: no cover
            raise TypeError(f"httpx {httpx.__version__} builds no ConnectionPool here")
        self._backend = _Backend(deadline)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=None,  # the caller's worker threads bound the requests in flight
            max_keepalive_connections=max_keepalive,
            keepalive_expiry=httpx.Limits().keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=self._backend,
        )

    @property
    def stopped(self) -> bool:
        """Whether :meth:`abort` was called: every connection it opens is cut at once."""
        return self._backend.stopped

    def abort(self) -> None:
        """Shut down every open socket, and every one opened later, so a thread blocked in a
        read returns at once, and one that was about to connect (or to send again on a new
        connection) fails at once instead of waiting on a reply. The transport is done for."""
        self._backend.shutdown_all()
