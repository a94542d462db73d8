"""Cloze prompts with an answer slot ``[Y]`` for models that read left to right.

A probe's prompt keeps the template's ``[Y]`` (``"Dante was born in [Y] ."``): a masked LM's
backend puts its mask token there. A causal LM cannot look past the slot, so
:class:`SlotReader` wraps its backend and, for every top-k request whose prompt holds
``[Y]``:

* without candidates, asks for the next token after the text before the slot (trailing
  whitespace removed, so GPT-2 style tokens such as ``" Florence"`` are predicted);
* with candidates (``TopKRequest.candidates``), ranks them by the log-probability of
  ``whitespace-before-slot + candidate`` after the text before the slot (score requests, so
  multi-token candidates are scored whole).

The text after the slot is dropped — exact when only punctuation follows (``" ."``), an
approximation otherwise (e.g. ``"[Y] native [X] ."`` reads as an empty context); the design
records which templates end at the slot. Requests without a slot pass through unchanged.
The wrapper's fingerprint extends the model's, so its cached responses never mix with those of
the plain backend.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...models import Backend, ModelSpec
from ...requests import (
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)

__all__ = ["SLOT", "SlotReader", "fills_slots", "split_slot"]

SLOT = "[Y]"
_VERSION = "slot-reader-1"


def split_slot(prompt: str) -> tuple[str, str, str]:
    """``(context, gap, after)``: the text before the slot without its trailing whitespace,
    that whitespace, and the text after the slot."""
    before, _, after = prompt.partition(SLOT)
    context = before.rstrip()
    return context, before[len(context) :], after


def fills_slots(backend: Backend) -> bool:
    """True for backends that fill ``[Y]`` themselves (masked LMs)."""
    return getattr(backend, "kind", None) == "hf-masked" or bool(
        getattr(backend, "fills_slots", False)
    )


class SlotReader:
    """A backend wrapper that reads ``[Y]`` cloze prompts left to right (see module doc)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.spec: ModelSpec = inner.spec

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return self.inner.supported_kinds

    def fingerprint(self) -> str:
        return f"{self.inner.fingerprint()}+{_VERSION}"

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return self.inner.count_tokens([split_slot(t)[0] if SLOT in t else t for t in texts])

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        return self.inner.score(requests)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        return self.inner.generate(requests)

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        out: list[TopKResponse | None] = [None] * len(requests)
        plain: list[int] = []
        ranked: list[int] = []
        for i, r in enumerate(requests):
            (ranked if r.candidates and SLOT in r.prompt else plain).append(i)
        if plain:
            reqs = [
                TopKRequest(
                    prompt=split_slot(requests[i].prompt)[0]
                    if SLOT in requests[i].prompt
                    else requests[i].prompt,
                    k=requests[i].k,
                    chat=requests[i].chat,
                    system=requests[i].system,
                    candidates=requests[i].candidates,
                )
                for i in plain
            ]
            for i, resp in zip(plain, self.inner.top_k(reqs), strict=True):
                out[i] = resp
        if ranked:
            for i, resp in zip(ranked, self._rank([requests[i] for i in ranked]), strict=True):
                out[i] = resp
        return [r for r in out if r is not None]

    def _rank(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        scores: list[ScoreRequest] = []
        spans: list[tuple[int, int]] = []
        for r in requests:
            context, gap, _ = split_slot(r.prompt)
            start = len(scores)
            scores.extend(
                ScoreRequest(context=context, continuation=gap + c, chat=r.chat, system=r.system)
                for c in r.candidates
            )
            spans.append((start, len(scores)))
        got = self.inner.score(scores)
        out = []
        for r, (a, b) in zip(requests, spans, strict=True):
            resp = got[a:b]
            order = sorted(range(len(resp)), key=lambda j: -resp[j].logprob)[: r.k]
            out.append(
                TopKResponse(
                    tokens=tuple(r.candidates[j] for j in order),
                    logprobs=tuple(resp[j].logprob for j in order),
                    n_input_tokens=max((x.n_input_tokens for x in resp), default=0),
                    truncated=any(x.truncated for x in resp),
                )
            )
        return out
