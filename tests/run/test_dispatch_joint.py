"""The dispatcher and a backend that prefills score and generate requests together (issue 22,
fix 6): one model's score and greedy generate requests go in mixed, prefix-sorted batches to
``score_and_generate``, each response is cached with its own request's kind, and a backend
without the joint call gets one call per kind as before."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from steadyeval.cache import PartialBatchError, ResponseCache
from steadyeval.models import BaseBackend, ModelSpec
from steadyeval.models._spec import parse_model_spec
from steadyeval.requests import (
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    Response,
    ScoreRequest,
    ScoreResponse,
    request_key,
)
from steadyeval.run import Plan
from steadyeval.run._dispatch import dispatch
from steadyeval.run._executor import JOINT, call_backend


class Recorder(BaseBackend):
    """Answers from the request text; records every call (method, request kinds)."""

    def __init__(self, joint: bool, fail_after: int | None = None) -> None:
        self.spec: ModelSpec = parse_model_spec("fake:model")
        self.joint = joint
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_after = fail_after

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"score", "generate"})

    @property
    def joint_prefill(self) -> bool:
        return self.joint

    def fingerprint(self) -> str:
        return "fp"

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        self.calls.append(("score", [r.continuation for r in requests]))
        return [_scored(r) for r in requests]

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        self.calls.append(("generate", [r.prompt for r in requests]))
        return [_generated(r) for r in requests]

    def score_and_generate(
        self, scores: Sequence[ScoreRequest], generates: Sequence[GenerateRequest]
    ) -> tuple[list[ScoreResponse], list[GenerateResponse]]:
        texts = [r.context + r.continuation for r in scores] + [r.prompt for r in generates]
        self.calls.append(("joint", texts))
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            answered: list[tuple[Request, Response]] = [(r, _scored(r)) for r in scores[:1]]
            raise PartialBatchError(RuntimeError("boom"), answered)
        return [_scored(r) for r in scores], [_generated(r) for r in generates]


def _scored(r: ScoreRequest) -> ScoreResponse:
    return ScoreResponse(-float(len(r.continuation)), 1, True, False, len(r.context))


def _generated(r: GenerateRequest) -> GenerateResponse:
    return GenerateResponse(f"{r.prompt[-3:]}|{r.temperature}", 3, 1, False, "stop")


def _requests() -> list[Request]:
    """Three items: options of a context, the context as a free-form prompt (greedy), and
    one sampled free-form prompt."""
    out: list[Request] = []
    for k in (2, 0, 1):
        context = f"Paragraph {k}. Q: where? A:"
        out += [ScoreRequest(context, f" option {o}") for o in "abc"]
        out.append(GenerateRequest(context, 4))
    out.append(GenerateRequest("Paragraph 0. Q: where? A:", 4, temperature=0.7, seed=3))
    return out


def _plan(reqs: Sequence[Request]) -> Plan:
    unique = {request_key("fp", r): ("m", r) for r in reqs}
    return Plan(trials=(), unique=unique, n_requests=len(reqs))


def _dispatch(backend: Recorder, cache: ResponseCache, batch_size: int) -> dict[str, Response]:
    plan = _plan(_requests())
    responses: dict[str, Response] = {}
    dispatch(
        plan,
        list(plan.unique),
        {"m": backend},
        cache,
        responses,
        batch_size=batch_size,
        progress=False,
        executor=None,
    )
    return responses


def _kinds(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, kind FROM responses"))


def test_joint_backend_gets_mixed_prefix_sorted_batches(tmp_path: Path) -> None:
    backend = Recorder(joint=True)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        got = _dispatch(backend, cache, batch_size=1)  # a batch: about one generate request
    methods = [m for m, _ in backend.calls]
    assert methods.count("generate") == 1  # the sampled prompt alone
    assert "score" not in methods
    joint = [texts for m, texts in backend.calls if m == "joint"]
    assert len(joint) == 3  # one item per batch: its prompt with its options
    for texts in joint:
        assert len(texts) == 4
        assert len({t[:12] for t in texts}) == 1  # one paragraph
    reqs = {request_key("fp", r): r for r in _requests()}
    kinds = _kinds(tmp_path / "c.sqlite")
    assert kinds == {k: r.kind for k, r in reqs.items()}
    for key, r in reqs.items():  # every response answers its own request
        want = _scored(r) if isinstance(r, ScoreRequest) else _generated(r)  # type: ignore[arg-type]
        assert got[key] == want
    with ResponseCache(tmp_path / "c.sqlite") as cache:  # all read back by kind
        assert cache.claim(list(reqs)).cached == got
        cache.release()


def test_a_joint_batch_holds_batch_size_generate_requests(tmp_path: Path) -> None:
    """A joint batch is sized by its generate requests (decoded together) and takes their
    items' score requests along."""
    backend = Recorder(joint=True)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _dispatch(backend, cache, batch_size=2)
    assert [len(t) for m, t in backend.calls if m == "joint"] == [8, 4]


def test_a_backend_without_the_joint_call_is_untouched(tmp_path: Path) -> None:
    backend = Recorder(joint=False)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _dispatch(backend, cache, batch_size=4)
    methods = [m for m, _ in backend.calls]
    assert "joint" not in methods
    assert methods == ["score"] * methods.count("score") + ["generate"]  # by kind, as before
    assert sum(len(t) for m, t in backend.calls if m == "generate") == 4
    kinds = _kinds(tmp_path / "c.sqlite")
    assert sorted(kinds.values()) == ["generate"] * 4 + ["score"] * 9


def test_a_partial_joint_batch_is_cached_and_raised(tmp_path: Path) -> None:
    backend = Recorder(joint=True, fail_after=1)
    with ResponseCache(tmp_path / "c.sqlite") as cache, pytest.raises(RuntimeError, match="boom"):
        _dispatch(backend, cache, batch_size=1)
    kinds = _kinds(tmp_path / "c.sqlite")
    assert len(kinds) == 4 + 1  # the first batch, and the answered request of the second
    assert sorted(kinds.values()) == ["generate"] + ["score"] * 4


def test_call_backend_joint_returns_request_order() -> None:
    reqs = _requests()[:-1]
    for backend in (Recorder(joint=True), Recorder(joint=False)):
        got = call_backend(backend, JOINT, reqs)
        want = [_scored(r) if isinstance(r, ScoreRequest) else _generated(r) for r in reqs]  # type: ignore[arg-type]
        assert got == want
    default = Recorder(joint=False)
    BaseBackend.score_and_generate(default, [], [])  # nothing to send: no call
    assert default.calls == []
