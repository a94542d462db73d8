"""Progress in batch jobs: log lines when stderr is not a terminal (start, every 5%, at
least every 60 s, end), on a fake clock; retries and back-off waits counted into
``summary.json``."""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from steadyeval import FORMATS, TEMPLATES, Condition, Item, RunOptions, run
from steadyeval.models import BaseBackend, Capabilities, SlotReader, load_backend, parse_model_spec
from steadyeval.models._backend import BackendStats, StatsCounter
from steadyeval.models._openai_http import ServerError
from steadyeval.requests import GenerateRequest, ScoreRequest, ScoreResponse
from steadyeval.run._progress import Pace, Progress
from tests.models.fake_openai_server import FakeOpenAIServer, Fault, ServerConfig
from tests.scripted_backend import ScriptedBackend

ITEMS = [
    Item(id=f"q{i}", question=f"Colour {i}?", options=("red", "green"), gold_options=(i % 2,))
    for i in range(6)
]
MC = Condition(name="mc", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob")
FAST = "max_concurrency=2&backoff_base=0.01&backoff_max=0.02&timeout=2"


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


NOT_A_TTY = _Stream(tty=False)


@pytest.fixture()
def lines(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """The messages the ``steadyeval.run`` logger sends, as a list that fills up."""
    caplog.set_level(logging.INFO, logger="steadyeval")
    got: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())

    handler = Keep()
    logger = logging.getLogger("steadyeval.run")
    logger.addHandler(handler)
    yield got
    logger.removeHandler(handler)


def _progress(total: int, cached: int, clock: FakeClock, **kw: object) -> Progress:
    pace = Pace(clock=clock, watch=False, **kw)  # type: ignore[arg-type]
    return Progress(total=total, cached=cached, models=2, stream=NOT_A_TTY, pace=pace)


def test_a_line_at_the_start_every_5_percent_and_at_the_end(lines: list[str]) -> None:
    clock = FakeClock()
    with _progress(100, 0, clock) as p:
        assert p.mode == "lines"
        for _ in range(100):
            clock.now += 0.1
            p.advance(1, model="hf:m")
    assert lines[0] == "run: 100 requests, 0 cached, 100 to send, 2 models"
    assert lines[1] == ("requests 5/100 (5%) · sent 5 · cached 0 · 10.0 req/s · ETA 9.5 s · hf:m")
    steps = [line for line in lines if line.startswith("requests ")]
    assert [s.split()[1] for s in steps] == [f"{n}/100" for n in range(5, 101, 5)]
    assert lines[-1] == (
        "run done: 100/100 requests · sent 100 · cached 0 · 10.0 req/s · elapsed 10.0 s"
    )


def test_cached_requests_count_towards_the_steps(lines: list[str]) -> None:
    clock = FakeClock()
    with _progress(40, 30, clock) as p:  # 75% done before anything is sent
        clock.now += 2
        p.advance(1)  # 77.5%: no new 5% step
        clock.now += 2
        p.advance(1)  # 80%
    assert lines[0] == "run: 40 requests, 30 cached, 10 to send, 2 models"
    assert lines[1:-1] == ["requests 32/40 (80%) · sent 2 · cached 30 · 0.5 req/s · ETA 16.0 s"]


def test_at_least_one_line_every_60_seconds_even_within_a_batch(lines: list[str]) -> None:
    clock = FakeClock()
    with _progress(1000, 0, clock) as p:
        clock.now += 61
        p.advance(1)  # 0.1%: only the clock asks for this line
        clock.now += 30
        p.advance(1)  # 30 s since the last line: none
        clock.now += 29
        p.heartbeat()  # 59 s: none
        clock.now += 2
        p.heartbeat()  # a long batch: 61 s without a line
        p.heartbeat()  # and not again at once
    progress = lines[1:-1]
    assert progress == [
        "requests 1/1000 (0%) · sent 1 · cached 0 · 0.016 req/s · ETA 16h55m",
        "requests 2/1000 (0%) · sent 2 · cached 0 · 0.016 req/s · ETA 16h54m",
    ]


def test_a_stopped_run_says_so(lines: list[str]) -> None:
    clock = FakeClock()
    with pytest.raises(KeyboardInterrupt), _progress(10, 0, clock) as p:
        clock.now += 4
        p.advance(2)
        raise KeyboardInterrupt
    assert lines[-1] == (
        "run stopped: 2/10 requests · sent 2 · cached 0 · 0.5 req/s · elapsed 4.0 s; "
        "the 2 responses it received are in the cache"
    )


def test_the_watching_thread_logs_during_a_long_batch(lines: list[str]) -> None:
    clock = FakeClock()
    seen = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("requests "):
                seen.set()

    handler = Seen()
    logging.getLogger("steadyeval.run").addHandler(handler)
    pace = Pace(clock=clock, poll=0.001)
    try:
        with Progress(total=10, cached=0, stream=NOT_A_TTY, pace=pace) as p:
            assert p._thread is not None and p._thread.daemon
            clock.now += 60  # a batch still running after 60 s on the clock
            assert seen.wait(timeout=60)  # the thread noticed (no timing asserted)
        assert not p._thread.is_alive()
    finally:
        logging.getLogger("steadyeval.run").removeHandler(handler)
    assert "requests 0/10 (0%) · sent 0 · cached 0 · – req/s · ETA ?" in lines


def test_the_bar_on_a_terminal_and_nothing_when_asked(lines: list[str]) -> None:
    tty = _Stream(tty=True)
    assert Progress(total=5, cached=0, stream=tty).mode == "bar"
    assert Progress(total=5, cached=0, stream=NOT_A_TTY).mode == "lines"
    assert Progress(total=5, cached=0, enabled=False, stream=NOT_A_TTY).mode == "off"
    assert Progress(total=5, cached=0, enabled=False, stream=tty).mode == "off"
    logger = logging.getLogger("steadyeval")
    logger.setLevel(logging.WARNING)  # what -q sets: no bar, no lines
    try:
        assert Progress(total=5, cached=0, stream=tty).mode == "off"
        assert Progress(total=5, cached=0, stream=NOT_A_TTY).mode == "off"
        assert Progress(total=5, cached=0, enabled=True, stream=tty).mode == "bar"
    finally:
        logger.setLevel(logging.INFO)
    with Progress(total=5, cached=0, enabled=False, stream=NOT_A_TTY) as p:
        p.advance(5)
    assert lines == []


def test_a_run_logs_its_progress_when_stderr_is_not_a_terminal(
    lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))  # as in a batch job
    a = ScriptedBackend(spec=parse_model_spec("scripted:a"))
    result = run(ITEMS, [MC], [a], options=RunOptions())
    n = result.summary["plan"]["unique"]
    assert lines[0] == f"run: {n} requests, 0 cached, {n} to send, 1 model"
    assert lines[1] == f"scripted:a: {n} requests to send"
    assert lines[-1].startswith(f"run done: {n}/{n} requests · sent {n} · cached 0 · ")
    lines.clear()
    run(ITEMS, [MC], [a], options=RunOptions(progress=False))  # --no-progress
    assert lines == []


# -- retries and back-off waits ------------------------------------------------------------------
@dataclass
class RetryingScriptedBackend(ScriptedBackend):
    """Scripted (tests only): counts one retry and a 0.25 s back-off wait per score batch,
    as a backend that met a failing server would (it waits for nothing). It fills slots
    itself, so the run asks it directly."""

    counter: StatsCounter = field(default_factory=StatsCounter)
    batches: int = 0

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(fills_slots=True)

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        self.counter.add(retries=1, waits=1, seconds=0.25)
        self.batches += 1
        return super().score(requests)

    def stats(self) -> BackendStats:
        return self.counter.snapshot()


def test_retries_are_counted_per_model_in_summary_json(tmp_path: Path) -> None:
    retrying = RetryingScriptedBackend(spec=parse_model_spec("scripted:retrying"))
    calm = ScriptedBackend(spec=parse_model_spec("scripted:calm"))
    retrying.counter.add(retries=5)  # before this run: not counted in it
    opts = RunOptions(out=tmp_path / "run", cache=tmp_path / "c.sqlite", batch_size=4)
    result = run(ITEMS, [MC], [retrying, calm], options=opts)
    batches = retrying.batches
    assert batches >= 3  # 12 score requests, about 4 per batch
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["retries"] == result.summary["retries"]
    assert summary["retries"] == {
        "scripted:retrying": {"retries": batches, "backoff_waits": batches,
                            "backoff_seconds": 0.25 * batches, "oom_backoffs": 0},
        "scripted:calm": {"retries": 0, "backoff_waits": 0, "backoff_seconds": 0.0,
                        "oom_backoffs": 0},
    }  # fmt: skip
    again = run(ITEMS, [MC], [retrying, calm], options=opts)  # all cached: nothing retried
    assert again.summary["retries"]["scripted:retrying"]["retries"] == 0


def test_the_openai_backend_logs_and_counts_each_retry(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-progress-log-test-key-0123456789"
    monkeypatch.setenv("TOY_KEY", key)

    def faults(body: dict[str, object], attempt: int) -> Fault | None:
        if attempt == 0:
            return Fault("503") if body.get("prompt") != "b" else Fault("429", retry_after="0.05")
        return None

    caplog.set_level(logging.INFO, logger="steadyeval")
    config = ServerConfig(require_key=key, faults=faults)
    with FakeOpenAIServer(config) as srv:
        backend = load_backend(f"openai:toy?base_url={srv.url}&api_key_env=TOY_KEY&{FAST}")
        backend.generate([GenerateRequest("a"), GenerateRequest("b"), GenerateRequest("c")])
        got = backend.stats()
        assert got.retries == 3 and got.backoff_waits >= 3 and got.oom_backoffs == 0
        assert got.backoff_seconds >= 0.05
        backend.release()
        srv.config.faults = lambda body, attempt: Fault("503")
        with pytest.raises(ServerError):
            load_backend(
                f"openai:toy?base_url={srv.url}&api_key_env=TOY_KEY&{FAST}&max_retries=2"
            ).generate([GenerateRequest("x")])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("HTTP 503" in w and "retry 1 of 8 in " in w for w in warnings) == 2
    assert any("HTTP 429" in w and "(the server's Retry-After)" in w for w in warnings)
    assert any("retry 2 of 2" in w for w in warnings)
    assert key not in caplog.text and key[3:] not in caplog.text


@pytest.mark.skipif(
    SlotReader.stats is BaseBackend.stats,
    reason="SlotReader does not forward stats() to the backend it reads for yet",
)
def test_retries_of_a_backend_read_through_slots_reach_the_summary(tmp_path: Path) -> None:
    def faults(body: dict[str, object], attempt: int) -> Fault | None:
        return Fault("500") if attempt == 0 and "Colour 1?" in json.dumps(body) else None

    with FakeOpenAIServer(ServerConfig(faults=faults)) as srv:
        model = f"openai:toy?base_url={srv.url}&{FAST}"
        result = run(ITEMS, [MC], [model], options=RunOptions(cache=tmp_path / "c.sqlite"))
    (counts,) = result.summary["retries"].values()
    assert counts["retries"] == 2 and counts["backoff_waits"] == 2  # both options of q1


def test_steps_log_at_most_every_interval_with_an_eta(caplog: pytest.LogCaptureFixture) -> None:
    """Long work counted in steps (the spread estimate's sweeps): a line only once
    ``interval`` seconds have passed since the last, none at the end or for quick work."""
    from steadyeval._log import ProgressLog, no_progress

    caplog.set_level(logging.INFO, logger="steadyeval")
    clock = FakeClock()
    step = ProgressLog(logging.getLogger("steadyeval.x"), "spread of m", clock=clock)
    clock.now += 500  # a fit before the first step: not counted in the pace
    for done in range(1, 101):
        clock.now += 1.0  # one second a step: a line each 30
        step(done, 100)
    got = [r.getMessage() for r in caplog.records]
    assert got == [
        "spread of m: 31/100 steps (31%) · ETA 1m09s",
        "spread of m: 61/100 steps (61%) · ETA 39.0 s",
        "spread of m: 91/100 steps (91%) · ETA 9.0 s",
    ]
    caplog.clear()
    sweeps = ProgressLog(logging.getLogger("steadyeval.x"), "m", unit="sweeps", clock=clock)
    sweeps(1, 100)
    clock.now += 49
    with no_progress():  # a run's progress=False (--no-progress) holds for its analysis
        sweeps(50, 100)
        with no_progress(False):  # an inner "not silenced" leaves the outer one
            sweeps(50, 100)
    assert not caplog.records
    sweeps(50, 100)
    assert [r.getMessage() for r in caplog.records] == ["m: 50/100 sweeps (50%) · ETA 50.0 s"]
