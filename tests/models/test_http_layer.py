"""The provider-neutral HTTP layer (``models/_http.py`` on httpx) against small local servers
(127.0.0.1 only): one pooled keep-alive connection, the provider's own way to send a key, a
deadline that also bounds a reply whose headers trickle in, and key-free errors."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from steadyeval import SteadyevalError
from steadyeval.models._http import RESULTS_GROUP, ApiProvider, HttpClient
from steadyeval.models._http_policy import RetryPolicy, Secret, ServerError
from steadyeval.models._openai_http import bearer

# generous limits: a busy machine must not fail a correct run (the local servers answer at once)
FAST = RetryPolicy(max_retries=1, backoff_base=0.0, backoff_max=0.0, timeout=120.0, deadline=300.0)


def x_api_key(key: str) -> dict[str, str]:
    """A second provider's way to send the key (Anthropic's header)."""
    return {"x-api-key": key}


class _Echo(BaseHTTPRequestHandler):
    """Answers every POST with the headers it got; records each connection's client port."""

    protocol_version = "HTTP/1.1"
    ports: list[int]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.ports.append(self.client_address[1])
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        key = self.headers.get("x-api-key")
        status, reply = 200, {"headers": dict(self.headers)}
        if key is not None and key.startswith("zz-bad"):
            status = 400  # a proxy that echoes the key it was sent
            reply = {"error": {"message": f"bad key {self.headers.get('x-api-key')}"}}
        raw = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def echo_server() -> Iterator[tuple[str, list[int]]]:
    ports: list[int] = []
    handler = type("Handler", (_Echo,), {"ports": ports})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", ports
    httpd.shutdown()
    httpd.server_close()


def _client(url: str, secret: str | None, provider: ApiProvider, **kw: Any) -> HttpClient:
    return HttpClient(
        url,
        provider=provider,
        secret=None if secret is None else Secret(secret),
        policy=kw.pop("policy", FAST),
        max_concurrency=kw.pop("max_concurrency", 2),
        **kw,
    )


def test_requests_share_one_pooled_keep_alive_connection(echo_server: Any) -> None:
    url, ports = echo_server
    client = _client(url, None, ApiProvider(auth_headers=bearer))
    for i in range(5):
        client.post("/completions", {"prompt": f"p{i}"})
    assert len(ports) == 5 and len(set(ports)) == 1  # one connection, kept alive
    replies = client.post_many([("/completions", {"prompt": f"q{i}"}, dict) for i in range(8)])
    assert len(replies) == 8 and len(set(ports)) <= 1 + 2  # at most one per worker more
    client.close()
    client.post("/completions", {"prompt": "after close"})  # a closed client reopens
    assert len(set(ports)) >= 2
    client.close()


def test_post_many_hands_results_over_in_groups_while_the_batch_runs(echo_server: Any) -> None:
    url, _ = echo_server
    client = _client(url, None, ApiProvider(auth_headers=bearer))
    groups: list[dict[int, Any]] = []
    calls = [("/completions", {"prompt": f"q{i}"}, dict) for i in range(40)]
    replies = client.post_many(calls, on_results=lambda got: groups.append(dict(got)))
    client.close()
    handed = [i for g in groups for i in g]
    assert sorted(handed) == list(range(40))  # each result once, all before the return
    assert len(groups) >= 3 and all(len(g) <= RESULTS_GROUP + 1 for g in groups)
    assert all(replies[i] == r for g in groups for i, r in g.items())


def test_the_key_is_sent_as_the_provider_says_and_never_shown(echo_server: Any) -> None:
    url, _ = echo_server
    key = "zz-provider-key-0123456789"
    other = _client(url, key, ApiProvider(auth_headers=x_api_key, key_hint="$OTHER_KEY"))
    sent = {k.lower(): v for k, v in other.post("/messages", {"prompt": "hi"})["headers"].items()}
    assert sent["x-api-key"] == key and "authorization" not in sent
    assert sent["content-type"] == "application/json" and sent["user-agent"] == "steadyeval"
    assert key not in repr(other) + repr(vars(other))
    echoed = _client(url, "zz-bad-key-42", ApiProvider(auth_headers=x_api_key))
    with pytest.raises(ServerError, match=r"HTTP 400: bad key \*\*\*") as info:
        echoed.post("/messages", {"prompt": "hi"})
    assert info.value.permanent and "zz-bad" not in str(info.value)
    openai = _client(url, key, ApiProvider(auth_headers=bearer))
    assert openai.post("/completions", {})["headers"]["Authorization"] == f"Bearer {key}"


def test_a_key_that_cannot_be_sent_is_fatal_and_not_shown(echo_server: Any) -> None:
    url, ports = echo_server
    for key in ("zz-broken-key-0123456789\nInjected: header", "zz-clé-0123456789"):
        client = _client(url, key, ApiProvider(auth_headers=x_api_key))
        with pytest.raises(ServerError) as info:
            client.post("/messages", {"prompt": "hi"})
        assert info.value.permanent and info.value.status is None and not ports  # no retry
        assert "0123456789" not in str(info.value) and "Injected" not in str(info.value)


def _trickle_headers(listener: socket.socket, stop: threading.Event) -> None:
    """Accept one connection, read the request, then send the status line and one byte of
    header every 50 ms: each read succeeds, so only a deadline ends the reply."""
    conn, _ = listener.accept()
    with conn:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.is_set():
            try:
                conn.sendall(b"X")
            except OSError:
                return
            time.sleep(0.05)


def test_the_deadline_cuts_a_reply_whose_headers_trickle_in() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    thread = threading.Thread(target=_trickle_headers, args=(listener, stop), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    # a byte arrives every 50 ms, so no read ever times out: only the deadline (named in
    # the message) can end the reply, however busy the machine
    policy = RetryPolicy(max_retries=0, timeout=600.0, deadline=2.0)
    client = _client(url, None, ApiProvider(auth_headers=bearer), policy=policy)
    try:
        with pytest.raises(ServerError, match=r"TimeoutError: .*deadline=2 s"):
            client.post("/completions", {"prompt": "hi"})
    finally:
        stop.set()
        listener.close()
        client.close()


def test_http2_is_an_option_only_where_h2_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(SteadyevalError, match="pip install h2"):
        _client("http://127.0.0.1:9/v1", None, ApiProvider(auth_headers=bearer), http2=True)


def test_the_openai_spec_offers_http2_only_where_h2_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from steadyeval import ModelSpecError, load_backend

    plain = load_backend("openai:m?http2=false")
    assert plain.identity() == load_backend("openai:m").identity()  # a run-only option
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ModelSpecError, match=r"http2=true needs the h2 package: pip install h2"):
        load_backend("openai:m?http2=true")


def test_a_reply_over_the_size_limit_is_refused_not_buffered(echo_server: Any) -> None:
    url, ports = echo_server
    client = _client(url, None, ApiProvider(auth_headers=bearer))
    client.max_reply_bytes = 64  # the echoed headers are longer
    with pytest.raises(ServerError, match=r"the reply is over .* MB \(decompressed\)") as info:
        client.post("/completions", {"prompt": "hi"})
    assert info.value.permanent and len(ports) == 1  # not retried
    assert "STEADYEVAL_MAX_REPLY_MB" in str(info.value)


@pytest.mark.parametrize("key", ["sk-real\nkey", " sk-key", "sk-clé", "sk-\x07"])
def test_an_api_key_no_header_can_carry_is_refused_when_the_model_loads(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steadyeval.models import load_backend

    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(SteadyevalError, match="holds characters an HTTP header cannot carry") as e:
        load_backend("openai:toy?base_url=http://127.0.0.1:9/v1")
    assert key.strip() not in str(e.value)


def test_an_aborted_transport_cuts_connections_opened_after_it() -> None:
    """Ctrl-C aborts the batch's transport: a worker that connects afterwards (it had just
    passed its cancel check, or it sends again on a new connection because its kept-alive
    one was cut) must fail at once, not wait on a reply the server holds back (the run hung
    until the request timed out)."""
    import httpx

    from steadyeval.models._http_transport import Deadline, DeadlineTransport

    release = threading.Event()
    got: list[str] = []

    class Holding(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            got.append(self.path)
            release.wait(300)  # held until the test ends

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Holding)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    transport = DeadlineTransport(Deadline(), http2=False, max_keepalive=2)
    try:
        transport.abort()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1/x"
        with (
            httpx.Client(transport=transport, timeout=120) as client,
            pytest.raises(httpx.TransportError) as caught,
        ):
            client.post(url, json={})
        assert not isinstance(caught.value, httpx.TimeoutException)  # cut, not timed out
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


def _stopped_client(url: str, n: int) -> tuple[HttpClient, list[tuple[str, Any, Any]]]:
    """A client whose batch of ``n`` calls was stopped by a Ctrl-C its caller caught (raised
    from ``on_results`` while the batch ran), and those calls."""
    client = _client(url, None, ApiProvider(auth_headers=bearer))

    def stop(got: Any) -> None:
        raise KeyboardInterrupt

    calls: list[tuple[str, Any, Any]] = [
        ("/completions", {"prompt": f"q{i}"}, dict) for i in range(n)
    ]
    with pytest.raises(KeyboardInterrupt):
        client.post_many(calls, on_results=stop)
    return client, calls


def test_a_client_whose_batch_was_stopped_works_again(echo_server: Any) -> None:
    """Ctrl-C cuts a batch's transport for good (connections opened later too); a caller
    that catches it and sends again gets a new client, once the stopped batch's workers
    have ended (none of them can take the new one)."""
    client, calls = _stopped_client(echo_server[0], 40)
    assert client.post("/completions", {"prompt": "again"})["headers"]
    assert len(client.post_many(calls[:5])) == 5
    client.close()


def test_threads_sending_at_once_after_a_stopped_batch_all_succeed(echo_server: Any) -> None:
    """After a caught Ctrl-C, several threads sending at once renew the client once and
    share it (one thread's renewal once closed the pool another was about to use)."""
    client, calls = _stopped_client(echo_server[0], 20)
    errors: list[BaseException] = []

    def send(i: int) -> None:
        try:
            if i % 2:
                assert len(client.post_many(calls[:4])) == 4
            else:
                client.post("/completions", {"prompt": f"t{i}"})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()
    assert errors == []
