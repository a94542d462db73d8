"""Ctrl-C and ``kill -9`` in the middle of one batch of an ``openai:`` run: every reply the run
received is in the cache (the stop message counts them), and the rerun sends only the rest.

Against the FAKE OpenAI server with a delay per request, which holds every request after the
first half until the test has sent its signal, so the batch (all the run's requests: fewer
than the default ``batch_size`` 64) is still running when the signal comes, however busy the
machine. The waits poll counts (the server's replies, the cache's rows) and bound nothing
but a hung test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from steadyeval.cache import ResponseCache
from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

ROOT = Path(__file__).resolve().parents[2]
N = 48  # one batch (batch_size 64), 6 rounds of the backend's default concurrency 8
CONCURRENCY = 8
PATIENCE = 120.0  # seconds before a wait gives up: only a hung test gets there


@pytest.fixture
def slow_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(ServerConfig(delay=0.5, max_seconds=300, hold_after=N // 2)) as srv:
        try:
            yield srv
        finally:
            srv.released.set()


def _items(tmp_path: Path) -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"What about {i}?", "answer": "x"}) + "\n"
            for i in range(N)
        )
    )
    return data


def _command(srv: FakeOpenAIServer, tmp_path: Path, out: str) -> list[str]:
    return [
        sys.executable, "-m", "steadyeval", "run", "--model", f"openai:toy?base_url={srv.url}",
        "--data", str(_items(tmp_path)), "--out", str(tmp_path / out),
        "--cache", str(tmp_path / "cache.sqlite"),
    ]  # fmt: skip


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONFAULTHANDLER": "1"}


def _ctrl_c_heard() -> None:
    """In the child before it starts: Ctrl-C acted on. A test worker process may ignore
    SIGINT (pytest-xdist's do, at times), and a child inherits an ignored signal: Python
    then installs no KeyboardInterrupt handler, as a shell's background job ignores Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _held(cache: Path) -> int:
    """Rows in the cache file (0 while it is not there yet or locked)."""
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(cache, timeout=PATIENCE) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _replies(srv: FakeOpenAIServer) -> int:
    return sum(srv.record.successes.values())


def _wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not ready():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} in {PATIENCE:g} s"
        time.sleep(0.01)


def _rerun_sends_only_the_rest(srv: FakeOpenAIServer, tmp_path: Path, held: int) -> None:
    srv.released.set()
    srv.settle()
    srv.record.n_requests = 0
    done = subprocess.run(
        [*_command(srv, tmp_path, "resumed"), "--no-progress"],
        env=_env(), cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert srv.record.n_requests == N - held  # only the missing requests were sent
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        assert len(cache) == N


def test_ctrl_c_mid_batch_caches_every_reply_received(
    slow_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    srv, cache = slow_server, tmp_path / "cache.sqlite"
    proc = subprocess.Popen(
        _command(srv, tmp_path, "stopped"),
        env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ctrl_c_heard,
    )  # fmt: skip
    try:
        _wait_for(proc, lambda: _replies(srv) >= 12, "12 replies")
        before = _replies(srv)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:  # say where it hung: every thread's stack
            proc.send_signal(signal.SIGABRT)  # faulthandler (PYTHONFAULTHANDLER) prints them
            _, err = proc.communicate(timeout=PATIENCE)
            pytest.fail(f"the run did not stop on Ctrl-C:\n{err[-8000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    held = _held(cache)
    # Every reply the server had sent when Ctrl-C came was read, except at most one per
    # connection still on its way; none of them is lost, and the batch had not ended.
    assert before - CONCURRENCY <= held <= _replies(srv) and 12 - CONCURRENCY <= held < N
    stopped = re.search(r"run stopped: (\d+)/\d+ .*; the (\d+) responses it received are in", err)
    assert stopped is not None, err
    assert int(stopped.group(1)) == int(stopped.group(2)) == held  # the message counts them
    assert "every response received so far is in the cache" in err
    _rerun_sends_only_the_rest(srv, tmp_path, held)


def test_kill_9_mid_batch_keeps_the_replies_already_received(
    slow_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    srv, cache = slow_server, tmp_path / "cache.sqlite"
    proc = subprocess.Popen(
        _command(srv, tmp_path, "killed"),
        env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        # The replies reach the cache while their batch (all N requests) still runs.
        _wait_for(proc, lambda: _held(cache) >= 10, "10 cached replies")
        proc.send_signal(signal.SIGKILL)
        proc.wait(PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
    held = _held(cache)
    # killed mid-batch: the run never wrote its table, and the replies it had are cached
    assert not (tmp_path / "killed" / "results.parquet").exists()
    assert held < N
    _rerun_sends_only_the_rest(srv, tmp_path, held)
