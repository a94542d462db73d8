"""Processes that share one response cache at the same time (issue 18, point 1): no request is
sent by two of them at once. A run claims the keys it sends; another run waits for claimed
keys and reads their responses; the claims of a killed process are taken over at once, and
those of a live holder that stores nothing are taken over after the expiry.

Requests are counted at the fault-injecting test server (``fault_server.py``); a gate there
holds the first process's requests until the second one has started waiting, so the two
really overlap (no sleeps that a slow machine could outrun).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pyarrow.parquet as pq
import pytest

from steadyeval import Condition, RunOptions, run
from steadyeval.cache import ResponseCache
from steadyeval.models._openai_probe import _PROBE_PROMPT
from tests.reliability.fault_server import Fault, FaultServer, ServerConfig, body_key
from tests.reliability.shared_plan import CONDITIONS, ITEMS, model, run_plan
from tests.reliability.test_api_faults import assert_same_table

ROOT = Path(__file__).resolve().parents[2]
P = _PROBE_PROMPT
WAITING = "being sent by another process"


@pytest.fixture()
def serve() -> Iterator[Any]:
    servers: list[FaultServer] = []

    def start(**config: Any) -> FaultServer:
        srv = FaultServer(ServerConfig(**config)).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        if isinstance(srv.config.faults, Gate):
            srv.config.faults.set("drop")  # nothing stays held after a failed test
        srv.stop()
    for proc_run in list(Run.started):
        if proc_run.proc.poll() is None:
            proc_run.proc.kill()
            proc_run.proc.wait()
    Run.started.clear()


def _prompt(body: dict[str, Any]) -> str:
    return str(body["prompt"]) if "prompt" in body else str(body["messages"][-1]["content"])


class Gate:
    """A fault plan that holds work requests (not capability probes) at the server until it
    is opened (``open``: answered, a fifth of them after one HTTP 500; ``drop``: the
    connection is closed unanswered)."""

    def __init__(self) -> None:
        self.state = "hold"
        self._cond = threading.Condition()

    def set(self, state: str) -> None:
        with self._cond:
            self.state = state
            self._cond.notify_all()

    def __call__(self, body: dict[str, Any], attempt: int) -> Fault | None:
        if _prompt(body) == P:
            return None
        with self._cond:
            self._cond.wait_for(lambda: self.state != "hold", timeout=300)  # hang guard
            state = self.state
        if state == "drop":
            return Fault("drop")
        h = int(hashlib.sha256(body_key(body).encode()).hexdigest(), 16)
        return Fault("500") if attempt == 0 and h % 5 == 0 else None


def _until(done: Callable[[], bool], what: str, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 300  # a hang guard, not a timing assertion
    while not done():
        assert proc is None or proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def _held(srv: FaultServer) -> bool:
    with srv._lock:
        return any(_prompt(b) != P for b in srv.record.bodies.values())


def _sent_twice(srv: FaultServer) -> bool:
    """A work request that reached the server twice while the gate held it: two processes
    sent it."""
    with srv._lock:
        return any(
            n > 1 for k, n in srv.record.attempts.items() if _prompt(srv.record.bodies[k]) != P
        )


class Run:
    """``python -m tests.reliability.shared_plan`` in a subprocess, its stderr collected."""

    started: ClassVar[list[Run]] = []  # killed at the end of a test if still running

    def __init__(self, srv: FaultServer, cache: Path, out: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.shared_plan", srv.url, str(cache), str(out)],
            cwd=ROOT, env=dict(os.environ), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        Run.started.append(self)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def finish(self) -> str:
        out, _ = self.proc.communicate()
        self._reader.join()
        assert self.proc.returncode == 0, "".join(self.lines)
        return out


def _claims(cache: Path) -> int:
    with ResponseCache(cache) as c:
        return int(c._conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0])


def test_claims_keep_keys_apart_and_end_when_stored_or_released(tmp_path: Path) -> None:
    from steadyeval.requests import GenerateResponse

    path = tmp_path / "c.sqlite"
    one, two = ResponseCache(path), ResponseCache(path)
    assert one.claim(["a", "b"]).mine == ("a", "b")
    got = two.claim(["a", "b", "c"])
    assert (got.mine, got.busy, got.cached) == (("c",), ("a", "b"), {})
    assert got.holders == (f"pid {os.getpid()} on {socket.gethostname()}",)
    answer = GenerateResponse(text="x", n_input_tokens=1, n_output_tokens=1)
    one.put_many([("a", "m", "generate", answer)])
    got = two.claim(["a", "b"])
    assert (got.mine, got.busy, got.cached) == ((), ("b",), {"a": answer})
    one.release()  # its batch failed: b is free
    assert two.claim(["b"]).mine == ("b",)
    one.close()
    two.close()  # closing releases what it held
    assert _claims(path) == 0


def test_claim_tables_of_another_layout_are_rebuilt_and_responses_kept(tmp_path: Path) -> None:
    """A cache whose claim tables came from another build (a ``pid`` column in ``claims``)
    still opens: the claim tables are rebuilt, stored responses stay."""
    import sqlite3

    from steadyeval.requests import GenerateResponse

    path = tmp_path / "c.sqlite"
    answer = GenerateResponse(text="x", n_input_tokens=1, n_output_tokens=1)
    with ResponseCache(path) as c:
        c.put_many([("a", "m", "generate", answer)])
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE claims")
        conn.execute(
            "CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "pid INTEGER NOT NULL, claimed_at REAL NOT NULL)"
        )
    conn.close()
    with ResponseCache(path) as c:
        got = c.claim(["a", "b"])
        assert (got.mine, got.cached) == (("b",), {"a": answer})


def test_two_processes_on_one_cold_cache_send_each_request_once(serve: Any, tmp_path: Path) -> None:
    gate = Gate()
    srv = serve(faults=gate, delay=0.005)
    cache = tmp_path / "shared.sqlite"
    first = Run(srv, cache, tmp_path / "first")
    _until(lambda: _held(srv), "the first run's requests reached the server", first.proc)
    second = Run(srv, cache, tmp_path / "second")
    _until(lambda: second.said(WAITING) or _sent_twice(srv), "the second run waited", second.proc)
    assert not _sent_twice(srv)
    gate.set("open")
    first.finish()
    second.finish()
    good = srv.good(P)
    a = pq.read_table(tmp_path / "first" / "results.parquet")
    b = pq.read_table(tmp_path / "second" / "results.parquet")
    assert_same_table(a, b)
    with ResponseCache(cache) as c:
        n_keys = len(c)
    # 12 questions × 3 options + 12 chat questions (one call for 3 labels) + 24 generations
    assert len(good) == 36 + 12 + 24 and n_keys == 36 + 36 + 24
    assert set(good.values()) == {1}  # every request answered exactly once, by one process
    assert sum(srv.record.successes[k] for k in good) == len(good)  # and paid once
    assert _claims(cache) == 0


def test_claims_of_a_killed_process_are_taken_over_at_once(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gate = Gate()
    srv = serve(faults=gate)
    cache = tmp_path / "shared.sqlite"
    killed = Run(srv, cache, tmp_path / "killed")
    _until(lambda: _held(srv), "the run's requests reached the server", killed.proc)
    killed.proc.kill()
    killed.proc.wait()
    gate.set("drop")  # its requests get no reply
    srv.reset()
    assert _claims(cache) > 0  # left behind by the killed process
    gate.set("open")
    monkeypatch.setenv("STEADYEVAL_CLAIM_EXPIRY", "300")  # far longer than this test
    caplog.set_level(logging.WARNING, logger="steadyeval")
    t0 = time.monotonic()
    run_plan(srv.url, cache)
    assert time.monotonic() - t0 < 120
    assert any("taking over" in m and "no longer running" in m for m in caplog.messages)
    assert not any(WAITING in m for m in caplog.messages)
    good = srv.good(P)
    assert len(good) == 72 and set(good.values()) == {1}
    assert _claims(cache) == 0


def _all_rows(cache: Path) -> list[tuple[str, str, str, Any]]:
    with ResponseCache(cache) as c:
        rows = c._conn.execute("SELECT key, model, kind FROM responses").fetchall()
        got = c.get_many([k for k, _, _ in rows])
    return [(k, m, kind, got[k]) for k, m, kind in rows]


@contextlib.contextmanager
def _logged(text: str) -> Iterator[threading.Event]:
    """An event set when a steadyeval log record contains ``text``."""
    seen = threading.Event()

    class Spy(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if text in record.getMessage():
                seen.set()

    spy = Spy()
    logger = logging.getLogger("steadyeval")
    logger.addHandler(spy)
    try:
        yield seen
    finally:
        seen.set()  # nothing keeps waiting for it
        logger.removeHandler(spy)


def test_a_live_claim_is_waited_for_and_its_responses_read(
    serve: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    srv = serve()
    run_plan(srv.url, tmp_path / "warm.sqlite")
    rows = _all_rows(tmp_path / "warm.sqlite")
    srv.reset()
    cache = tmp_path / "shared.sqlite"
    holder = ResponseCache(cache)  # another holder, alive (this process)
    assert len(holder.claim([k for k, *_ in rows]).mine) == len(rows) == 96
    caplog.set_level(logging.WARNING, logger="steadyeval")
    with _logged(WAITING) as waiting:

        def store_when_waited_for() -> None:
            waiting.wait()
            with ResponseCache(cache) as writer:
                writer.put_many(rows)

        writer = threading.Thread(target=store_when_waited_for)
        writer.start()
        result = run_plan(srv.url, cache)
    writer.join()
    holder.close()
    assert any(WAITING in m for m in caplog.messages)
    assert not srv.work_successes(P)  # nothing was sent: every response was read
    assert result.table.num_rows == 12 * 2 + 24


def test_a_live_claim_without_progress_is_taken_over_after_the_expiry(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    srv = serve()
    # Ten generate requests: one call each (a chat letter's requests share one call; holding
    # part of such a group is the case of the test below)
    keys = _keys_of(srv, CONDITIONS[2], tmp_path)[:10]
    srv.reset()
    cache = tmp_path / "shared.sqlite"
    claimed, finished = threading.Event(), threading.Event()
    caplog.set_level(logging.WARNING, logger="steadyeval")
    with _logged(WAITING) as waiting:

        def hold() -> None:
            """Another live holder: it renews its claims until the run waits for them,
            then stores nothing (and keeps them until the run is over)."""
            holder = ResponseCache(cache)
            try:
                while not waiting.is_set():
                    holder.claim(keys)
                    claimed.set()
                    waiting.wait(0.05)
                finished.wait()
            finally:
                claimed.set()  # never leave the test waiting
                holder.close()

        thread = threading.Thread(target=hold)
        thread.start()
        try:
            claimed.wait()
            monkeypatch.setenv("STEADYEVAL_CLAIM_EXPIRY", "1")
            run_plan(srv.url, cache)
        finally:
            finished.set()
    thread.join()
    assert any(WAITING in m for m in caplog.messages)
    assert any("taking over 10 request" in m and "stored nothing for 1 s" in m
               for m in caplog.messages)  # fmt: skip
    good = srv.good(P)
    assert len(good) == 72 and set(good.values()) == {1}


def _keys_of(srv: FaultServer, condition: Condition, tmp_path: Path) -> list[str]:
    """The cache keys of the plan's requests under ``condition`` (a run of it alone)."""
    warm = tmp_path / f"warm-{condition.name}.sqlite"
    run(ITEMS, [condition], [model(srv.url)], options=RunOptions(cache=warm, progress=False))
    return [k for k, *_ in _all_rows(warm)]


def test_a_call_shared_by_requests_two_processes_split_is_made_by_each(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat model's letter log-probabilities are one call per question (several requests).
    When another holder claimed one of a question's letters and the run takes it over, the run
    has already sent the question's other letters: that one call is made twice (documented in
    docs/backends-api.md); nothing else is."""
    srv = serve()
    keys = _keys_of(srv, CONDITIONS[1], tmp_path)[:1]  # one letter of one question
    srv.reset()
    cache = tmp_path / "shared.sqlite"
    holder = ResponseCache(cache)
    holder.claim(keys)  # a holder that never stores: taken over after the expiry
    monkeypatch.setenv("STEADYEVAL_CLAIM_EXPIRY", "1")
    result = run_plan(srv.url, cache)
    holder.close()
    good = srv.good(P)
    twice = [body for body, n in good.items() if n == 2]
    assert len(good) == 72 and set(good.values()) == {1, 2} and len(twice) == 1
    assert '"logprobs": true' in twice[0] and '"messages"' in twice[0]
    assert result.table.num_rows == 12 * 2 + 24
