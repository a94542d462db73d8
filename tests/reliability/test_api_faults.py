"""The ``openai:`` backend under the faults of issue 18, against the fault-injecting test
server (``fault_server.py``): a huge ``Retry-After``, a reply that drips forever, malformed
200 replies, approximate replies under ``strict=true``, and chat letter calls sent once.

Timing: every wait is configured small (deadlines, Retry-After caps, backoff), and elapsed
times are only bounded with wide margins; what is asserted is counted at the server.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from steadyeval import (
    FORMATS,
    TEMPLATES,
    Condition,
    Generation,
    Item,
    ModelSpecError,
    RunOptions,
    load_backend,
    run,
)
from steadyeval.cache import ResponseCache
from steadyeval.models import parse_model_spec
from steadyeval.models._openai_http import ServerError
from steadyeval.models._openai_options import OpenAIOptions
from steadyeval.models._openai_probe import _PROBE_PROMPT
from steadyeval.models._openai_wire import PromptLogprobs, continuation_logprob
from steadyeval.requests import GenerateRequest
from tests.reliability.fault_server import Fault, FaultServer, ServerConfig, body_key

FAST = "max_concurrency=4&backoff_base=0.01&backoff_max=0.05&timeout=120"
P = _PROBE_PROMPT


@pytest.fixture()
def serve() -> Iterator[Any]:
    servers: list[FaultServer] = []

    def start(**config: Any) -> FaultServer:
        srv = FaultServer(ServerConfig(**config)).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def spec_for(srv: FaultServer, extra: str = "") -> str:
    return f"openai:toy?base_url={srv.url}&{FAST}" + (f"&{extra}" if extra else "")


def _h(body: dict[str, Any]) -> int:
    return int(hashlib.sha256(body_key(body).encode()).hexdigest(), 16)


def _prompt(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    return str(body["messages"][-1]["content"])


MC_ITEMS = [
    Item(id=f"q{i}", question=f"Which colour is number {i}?", options=("red", "green", "blue"),
         gold_options=(i % 3,))
    for i in range(8)
]  # fmt: skip
FREE_ITEMS = [Item(id=f"f{i}", question=f"Name river {i}.", answers=("Nile",)) for i in range(6)]
OPT = Condition(name="opt", template=TEMPLATES["qa"], format=FORMATS["mc"],
                scoring="option-logprob", items="with-options")  # fmt: skip
CONDITIONS = [
    OPT,
    Condition(name="letter-chat", template=TEMPLATES["qa"], format=FORMATS["mc"],
              scoring="letter-logprob", chat=True, items="with-options"),
    Condition(name="gen", template=TEMPLATES["qa"], format=FORMATS["free"],
              generation=Generation(max_new_tokens=4, stop=("\n",)), items="without-options"),
    Condition(name="gen-chat", template=TEMPLATES["qa"], format=FORMATS["free"], chat=True,
              generation=Generation(max_new_tokens=4), items="without-options"),
    Condition(name="topk", template=TEMPLATES["qa"], format=FORMATS["free"], scoring="top-k",
              top_k=3, items="without-options"),
]  # fmt: skip


def _nan_safe(values: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


def assert_same_table(a: pa.Table, b: pa.Table) -> None:
    assert a.schema == b.schema and a.num_rows == b.num_rows
    for name in a.column_names:
        if name != "run_id":
            assert _nan_safe(a[name].to_pylist()) == _nan_safe(b[name].to_pylist()), name


# -- the spec ---------------------------------------------------------------------------------
def test_spec_numbers_are_finite_and_the_new_options_have_defaults() -> None:
    for option in ("timeout=inf", "deadline=inf", "max_retry_after=nan", "backoff_max=1e999"):
        with pytest.raises(ModelSpecError) as info:
            load_backend(f"openai:m?{option}")
        msg = str(info.value)
        name = option.split("=")[0]
        assert "\n" not in msg and f"option {name}" in msg and "finite" in msg, msg
    with pytest.raises(ModelSpecError, match="strict must be true or false"):
        load_backend("openai:m?strict=maybe")
    default = OpenAIOptions.from_spec(parse_model_spec("openai:m")).policy
    assert (default.max_retry_after, default.deadline, default.timeout) == (60.0, 600.0, 120.0)
    quick = OpenAIOptions.from_spec(parse_model_spec("openai:m?timeout=2")).policy
    assert quick.deadline == 20.0  # 10 × timeout, at most 600 s
    slow = OpenAIOptions.from_spec(parse_model_spec("openai:m?timeout=900")).policy
    assert slow.deadline == 900.0  # never below one read's timeout
    set_ = OpenAIOptions.from_spec(parse_model_spec("openai:m?deadline=5&max_retry_after=3"))
    assert (set_.policy.deadline, set_.policy.max_retry_after, set_.strict) == (5.0, 3.0, False)
    assert OpenAIOptions.from_spec(parse_model_spec("openai:m?strict=true")).strict
    # None of them changes an output: the model column stays the same.
    a, b = load_backend("openai:m"), load_backend("openai:m?deadline=5&max_retry_after=3")
    assert a.identity() == b.identity() == load_backend("openai:m?strict=true").identity()


# -- stalls -------------------------------------------------------------------------------------
def test_a_huge_retry_after_is_capped_logged_and_counted(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def faults(body: dict[str, Any], attempt: int) -> Fault | None:
        return Fault("429", retry_after="86400") if attempt == 0 and body["prompt"] == "b" else None

    srv = serve(faults=faults)
    caplog.set_level(logging.INFO, logger="steadyeval")
    b = load_backend(spec_for(srv, "max_retry_after=0.2"))
    t0 = time.monotonic()
    got = b.generate([GenerateRequest("a"), GenerateRequest("b"), GenerateRequest("c")])
    assert len(got) == 3 and time.monotonic() - t0 < 60  # not a day
    stats = b.stats()
    assert stats.retries == 1 and 0.2 <= stats.backoff_seconds < 5
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("86400" in w and "max_retry_after=0.2" in w for w in warnings), warnings
    assert sum(srv.good(P).values()) == 3


def test_a_dripping_reply_is_cut_at_the_deadline_and_retried(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def faults(body: dict[str, Any], attempt: int) -> Fault | None:
        return Fault("drip", seconds=0.05) if attempt == 0 and body["prompt"] == "b" else None

    srv = serve(faults=faults)
    caplog.set_level(logging.WARNING, logger="steadyeval")
    b = load_backend(spec_for(srv, "deadline=6"))  # ample for a local reply on a busy machine
    t0 = time.monotonic()
    got = b.generate([GenerateRequest("a"), GenerateRequest("b"), GenerateRequest("c")])
    assert len(got) == 3 and time.monotonic() - t0 < 150  # the drip alone takes 200 s
    assert b.stats().retries == 1
    assert sum(srv.good(P).values()) == 3
    srv.settle()
    assert srv.drips == ["aborted"]  # the client hung up on it
    assert any("deadline=6" in r.getMessage() for r in caplog.records)
    # A reply that drips every time: the retries run out with the reason.
    srv.config.faults = lambda body, attempt: Fault("drip", seconds=0.05)
    once = load_backend(spec_for(srv, "deadline=2&max_retries=1"))
    with pytest.raises(ServerError, match=r"after 2 attempts; last error: .*deadline=2"):
        once.generate([GenerateRequest("d")])


# -- malformed replies --------------------------------------------------------------------------
MALFORMED = ("lengths", "no-choices", "missing-fields", "not-object")


def malformed_once(body: dict[str, Any], attempt: int) -> Fault | None:
    """A third of the requests get one malformed 200 reply first."""
    h = _h(body)
    if attempt != 0 or h % 3 or _prompt(body) == P:
        return None
    kinds = MALFORMED if body.get("logprobs") else ("no-choices", "missing-fields", "not-object")
    return Fault(kinds[(h // 3) % len(kinds)])


# A question none of whose labels is in the chat top list scores NaN confidence.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_malformed_replies_are_retried_counted_and_change_nothing(
    serve: Any, tmp_path: Path
) -> None:
    srv = serve()
    items = MC_ITEMS + FREE_ITEMS
    clean = run(items, CONDITIONS, [spec_for(srv)],
                options=RunOptions(cache=tmp_path / "clean.sqlite", progress=False))  # fmt: skip
    clean_good = srv.good(P)
    srv.reset()
    srv.config.faults = malformed_once
    faulty = run(items, CONDITIONS, [spec_for(srv)],
                 options=RunOptions(cache=tmp_path / "faulty.sqlite", progress=False))  # fmt: skip
    assert_same_table(faulty.table, clean.table)
    injected = srv.n_mangled(P)
    assert injected >= 10
    kinds = {f.kind for f in map(lambda b: malformed_once(b, 0), srv.record.bodies.values()) if f}
    assert kinds == set(MALFORMED)
    assert srv.good(P) == clean_good and set(clean_good.values()) == {1}  # each once
    (counts,) = faulty.summary["retries"].values()
    assert counts["retries"] == injected


def test_a_reply_that_stays_malformed_stops_the_run_and_loses_no_paid_reply(
    serve: Any, tmp_path: Path
) -> None:
    bad = "Question: Name river 7.\nAnswer:"

    def faults(body: dict[str, Any], attempt: int) -> Fault | None:
        return Fault("no-choices") if body.get("prompt") == bad else None

    srv = serve(faults=faults, delay=0.01)
    items = [Item(id=f"f{i}", question=f"Name river {i}.", answers=("Nile",)) for i in range(40)]
    items += MC_ITEMS
    conds = [CONDITIONS[2], OPT]  # one call per request: replies and cache rows match 1:1
    cache = tmp_path / "cache.sqlite"
    opts = RunOptions(cache=cache, progress=False, batch_size=200)
    with pytest.raises(ServerError) as info:
        run(items, conds, [spec_for(srv)], options=opts)
    msg = str(info.value)
    assert "no choices" in msg and "Name river 7" in msg and "3 " in msg, msg
    bad_key = next(k for k, b in srv.record.bodies.items() if b.get("prompt") == bad)
    assert srv.record.attempts[bad_key] == 3  # two retries, then it is an error
    good = srv.good(P)
    with ResponseCache(cache) as c:
        held = len(c)
    assert held == sum(good.values()) > 0  # every paid good reply is cached: none lost
    srv.config.faults = None
    res = run(items, conds, [spec_for(srv)], options=opts)
    assert res.summary["plan"]["cache_hits"] == held
    assert set(srv.good(P).values()) == {1}  # nothing was paid for twice


# -- approximate replies ------------------------------------------------------------------------
def test_a_reply_a_token_short_is_approximate_even_when_its_end_looks_right() -> None:
    # "Q: A A" is "Q", ":", " A", " A"; the reply lists one token fewer. Read from its end,
    # the continuation " A" would get the first " A"'s log-probability: wrong, yet it spells
    # the prompt's end.
    lp = PromptLogprobs(["Q", ":", " A"], [None, -1.0, -2.0], [0, 1, 2], None)
    s = continuation_logprob(lp, prompt="Q: A A", n_context_chars=4, n_prompt_tokens=3)
    assert s.approximate
    whole = PromptLogprobs(["Q", ":", " A", " A"], [None, -1.0, -2.0, -3.0], [0, 1, 2, 4], None)
    s = continuation_logprob(whole, prompt="Q: A A", n_context_chars=4, n_prompt_tokens=4)
    assert (s.logprob, s.approximate) == (-3.0, False)


def test_a_short_reply_is_approximate_and_strict_retries_it(serve: Any, tmp_path: Path) -> None:
    short_for = {"Which colour is number 1?", "Which colour is number 2?"}

    def short_once(body: dict[str, Any], attempt: int) -> Fault | None:
        hit = any(q in _prompt(body) for q in short_for) and _prompt(body).endswith(" red")
        return Fault("short") if attempt == 0 and hit else None

    srv = serve()
    clean = run(MC_ITEMS, [OPT], [spec_for(srv)],
                options=RunOptions(cache=tmp_path / "c.sqlite", progress=False))  # fmt: skip
    assert not any(clean.table["approximate"].to_pylist())
    srv.reset()  # attempts count from 0 again
    srv.config.faults = short_once
    lax = run(MC_ITEMS, [OPT], [spec_for(srv)],
              options=RunOptions(cache=tmp_path / "lax.sqlite", progress=False))  # fmt: skip
    ids, flags = lax.table["item_id"].to_pylist(), lax.table["approximate"].to_pylist()
    flagged = [i for i, a in zip(ids, flags, strict=True) if a]
    assert flagged == ["q1", "q2"]  # counted and shown, not hidden
    srv.reset()
    strict = run(MC_ITEMS, [OPT], [spec_for(srv, "strict=true")],
                 options=RunOptions(cache=tmp_path / "strict.sqlite", progress=False))  # fmt: skip
    assert_same_table(strict.table, clean.table)
    assert srv.n_mangled(P) == 2 and set(srv.good(P).values()) == {1}
    (counts,) = strict.summary["retries"].values()
    assert counts["retries"] == 2


def test_strict_makes_a_lasting_approximate_reply_fatal_after_caching_the_rest(
    serve: Any, tmp_path: Path
) -> None:
    def short_always(body: dict[str, Any], attempt: int) -> Fault | None:
        return Fault("short") if "number 3?" in _prompt(body) else None

    srv = serve(faults=short_always)
    cache = tmp_path / "strict.sqlite"
    with pytest.raises(ServerError, match=r"approximate.*strict=true") as info:
        run(MC_ITEMS, [OPT], [spec_for(srv, "strict=true")],
            options=RunOptions(cache=cache, progress=False))  # fmt: skip
    assert "number 3?" in str(info.value)
    with ResponseCache(cache) as c:
        assert len(c) == sum(srv.good(P).values()) > 0


# -- duplicate sends ----------------------------------------------------------------------------
def test_each_chat_letter_question_is_one_paid_call(serve: Any, tmp_path: Path) -> None:
    """The labels of one chat question share one call; batches cut at four times the batch
    size used to split a question (its call was then paid once per part)."""
    srv = serve()
    stem = "Read the question below with care, then answer with the letter of one option. "
    items = [
        Item(id=f"q{i}", question=f"{stem}Which colour is number {i}?",
             options=("red", "green", "blue"), gold_options=(0,))
        for i in range(50)
    ]  # fmt: skip
    letters = Condition(name="letter-chat", template=TEMPLATES["qa"], format=FORMATS["mc"],
                        scoring="letter-logprob", chat=True)  # fmt: skip
    opts = RunOptions(cache=tmp_path / "c.sqlite", progress=False, batch_size=8)
    res = run(items, [letters, OPT], [spec_for(srv)], options=opts)
    good = srv.good(P)
    chat = {k: n for k, n in good.items() if "messages" in srv.record.bodies[k]}
    assert len(chat) == 50 and set(chat.values()) == {1}, sorted(chat.values())
    assert set(good.values()) == {1} and res.table.num_rows == 100
