"""A SCRIPTED backend for tests only: no model, responses are a deterministic function of the
request text (or looked up in a script). It exists to drive the pipeline in tests; it is not
part of the product and is never registered outside tests.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from steadyeval.models import BaseBackend, ModelSpec, register_backend
from steadyeval.requests import (
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") / 2**64


@dataclass
class ScriptedBackend(BaseBackend):
    """Scripted test backend. ``answers`` maps a substring of a prompt to the generated text;
    unmatched prompts echo a deterministic pseudo-answer. Score log-probs are a hash of the
    (context, continuation) pair, so they are stable but carry no meaning."""

    spec: ModelSpec
    answers: Mapping[str, str] = field(default_factory=dict)
    kinds: frozenset[RequestKind] = frozenset({"score", "generate", "top-k"})
    delay: float = 0.0
    calls: dict[str, int] = field(default_factory=lambda: {"score": 0, "generate": 0, "top-k": 0})

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return self.kinds

    def fingerprint(self) -> str:
        return f"scripted:{self.spec.name}"

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return [len(t.split()) for t in texts]

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        self.calls["score"] += len(requests)
        time.sleep(self.delay * len(requests))
        return [
            ScoreResponse(
                logprob=-10 * _unit(r.context + "\x00" + r.continuation),
                n_tokens=max(1, len(r.continuation.split())),
                is_greedy=False,
                n_input_tokens=len(r.context.split()),
            )
            for r in requests
        ]

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        self.calls["generate"] += len(requests)
        time.sleep(self.delay * len(requests))
        out = []
        for r in requests:
            text = next((a for k, a in self.answers.items() if k in r.prompt), None)
            if text is None:
                text = f"answer-{int(_unit(r.prompt + str(r.sample_index)) * 1000)}"
            out.append(GenerateResponse(text=text, n_input_tokens=len(r.prompt.split())))
        return out

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        self.calls["top-k"] += len(requests)
        return [TopKResponse(tokens=("Paris", "London"), logprobs=(-0.5, -1.5)) for _ in requests]


def register() -> None:
    """Register ``scripted:NAME`` (idempotent) for subprocess tests; ``?delay=SECONDS`` makes
    each request take that long (to land a signal mid-run)."""
    register_backend(
        "scripted",
        lambda spec: ScriptedBackend(spec=spec, delay=float(spec.option("delay") or 0.0)),
        replace=True,
    )
