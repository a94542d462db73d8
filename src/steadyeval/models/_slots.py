"""The cloze slot ``[Y]``: the one place that defines it, and how a backend that cannot fill
it is made to read slot prompts.

A cloze prompt keeps its template's ``[Y]`` (``"Dante was born in [Y] ."``). A backend that
fills the slot itself declares ``Capabilities(fills_slots=True)`` (masked LMs put their mask
token there). Every other backend is wrapped by :func:`with_slots` in a :class:`SlotReader`,
which, for each top-k request whose prompt holds ``[Y]``:

* without candidates, asks for the next token after the text before the slot (trailing
  whitespace removed, so GPT-2 style tokens such as ``" Florence"`` are predicted);
* with candidates (``TopKRequest.candidates``), ranks them by the log-probability of
  ``whitespace-before-slot + candidate`` after the text before the slot (score requests, so
  multi-token candidates are scored whole).

The text after the slot is dropped: exact when only punctuation follows (``" ."``), an
approximation otherwise. Requests without a slot pass through unchanged. The reader keeps the
backend's fingerprint and identity: a backend without slot filling is always read this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..requests import (
    ClassifyRequest,
    ClassifyResponse,
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._backend import Backend, BackendStats, BaseBackend, Capabilities

__all__ = ["SLOT", "FilledSlot", "SlotReader", "fill_slot", "fit_slot", "split_slot", "with_slots"]

#: The literal that marks the answer's place in a cloze prompt.
SLOT = "[Y]"


def split_slot(prompt: str) -> tuple[str, str, str]:
    """``(context, gap, after)``: the text before the slot without its trailing whitespace,
    that whitespace, and the text after the slot."""
    before, _, after = prompt.partition(SLOT)
    context = before.rstrip()
    return context, before[len(context) :], after


@dataclass(frozen=True)
class FilledSlot:
    """A prompt tokenised with its slot filled: ids (special tokens included, after any
    truncation) and the ``[start, end)`` token positions of the filler."""

    ids: tuple[int, ...]
    start: int
    end: int
    truncated: bool


def fill_slot(tokenizer: Any, left: str, filler: str, right: str, max_length: int) -> FilledSlot:
    """Tokenise ``left + filler + right`` with a fast tokenizer, find the filler's tokens by
    their character offsets and cut the ids to ``max_length`` (see :func:`fit_slot`).

    The one encoding of a filled slot, shared by the ``hf-masked`` backend and PET training
    (so a checkpoint is selected on the scores the backend gives). Raises ``ValueError`` when
    the filler's tokens cannot be found, or when it does not start and end on token
    boundaries (the tokenizer joins it with the text around the slot).
    """
    text = left + filler + right
    enc = tokenizer(
        text, return_offsets_mapping=True, return_special_tokens_mask=True, verbose=False
    )  # over-long inputs are cut below, not warned about
    ids: list[int] = enc["input_ids"]
    special: list[int] = enc["special_tokens_mask"]
    a, b = len(left), len(left) + len(filler)
    span = [
        i
        for i, (s, e) in enumerate(enc["offset_mapping"])
        if not special[i] and e > s and s < b and e > a
    ]
    if not span or span != list(range(span[0], span[-1] + 1)):
        raise ValueError(f"cannot locate {filler!r} in the tokens of {text!r:.120}")
    first, last = enc["offset_mapping"][span[0]], enc["offset_mapping"][span[-1]]
    if text[first[0] : a].strip() or text[b : last[1]].strip():
        raise ValueError(
            f"{filler!r} does not start and end on token boundaries in {text!r:.120} (the "
            f"tokenizer joins it with the text around the slot); put a space or punctuation "
            f"around {SLOT}"
        )
    return fit_slot(ids, special, span[0], span[-1] + 1, max_length)


def fit_slot(
    ids: Sequence[int], special: Sequence[int], start: int, end: int, max_length: int
) -> FilledSlot:
    """Cut ``ids`` to ``max_length``: the special tokens at both ends stay; the body is cut
    from the left, or from the right when a left cut would reach the slot ``[start, end)``.

    Raises ``ValueError`` when the slot alone does not fit.
    """
    ids = list(ids)
    if len(ids) <= max_length:
        return FilledSlot(tuple(ids), start, end, False)
    n_pre = min(start, next((i for i, s in enumerate(special) if not s), len(ids)))
    n_suf = min(len(ids) - end, next((i for i, s in enumerate(reversed(special)) if not s), 0))
    room = max_length - n_pre - n_suf
    if end - start > room:
        raise ValueError(
            f"the slot's filler alone has {end - start} tokens, more than the {max_length} "
            "the model sees"
        )
    body = ids[n_pre : len(ids) - n_suf]
    cut = min(len(body) - room, start - n_pre)
    kept = ids[:n_pre] + body[cut : cut + room] + ids[len(ids) - n_suf :]
    return FilledSlot(tuple(kept), start - cut, end - cut, True)


def _read(r: TopKRequest) -> TopKRequest:
    """A top-k request whose prompt is read up to its slot (unchanged without a slot)."""
    if SLOT not in r.prompt:
        return r
    return TopKRequest(
        prompt=split_slot(r.prompt)[0], k=r.k, chat=r.chat, system=r.system,
        candidates=r.candidates, turns=r.turns,
    )  # fmt: skip


def _candidate_scores(r: TopKRequest) -> list[ScoreRequest]:
    """Each candidate scored after the text before the slot (with the slot's whitespace)."""
    context, gap, _ = split_slot(r.prompt)
    return [
        ScoreRequest(
            context=context, continuation=gap + c, chat=r.chat, system=r.system, turns=r.turns
        )
        for c in r.candidates
    ]


def with_slots(backend: Backend) -> Backend:
    """``backend`` itself when it fills slots, else a :class:`SlotReader` around it."""
    if backend.capabilities.fills_slots or isinstance(backend, SlotReader):
        return backend
    return SlotReader(backend)


def _sent(requests: Sequence[Request]) -> list[Request]:
    """The requests a :class:`SlotReader` really sends its inner backend for ``requests``."""
    sent: list[Request] = []
    for r in requests:
        if not isinstance(r, TopKRequest):
            sent.append(r)
        elif r.candidates and SLOT in r.prompt:
            sent.extend(_candidate_scores(r))
        else:
            sent.append(_read(r))
    return sent


class SlotReader(BaseBackend):
    """A backend wrapper that reads ``[Y]`` cloze prompts left to right (see module doc)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.spec = inner.spec

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return self.inner.supported_kinds

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def identity(self) -> str:
        return self.inner.identity()

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    @property
    def fingerprint_pending(self) -> bool:
        return getattr(self.inner, "fingerprint_pending", False) is True

    def stats(self) -> BackendStats:
        return self.inner.stats()

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return self.inner.count_tokens([split_slot(t)[0] if SLOT in t else t for t in texts])

    def precheck(self, requests: Sequence[Request]) -> None:
        """The inner backend checks the requests it will really get (slot prompts read)."""
        self.inner.precheck(_sent(requests))

    def preflight(self, requests: Sequence[Request]) -> None:
        """The inner backend checks the requests it will really get (slot prompts read)."""
        self.inner.preflight(_sent(requests))

    def release(self) -> None:
        self.inner.release()

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        return self.inner.score(requests)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        return self.inner.generate(requests)

    @property
    def joint_prefill(self) -> bool:
        return getattr(self.inner, "joint_prefill", False) is True

    def score_and_generate(
        self, scores: Sequence[ScoreRequest], generates: Sequence[GenerateRequest]
    ) -> tuple[list[ScoreResponse], list[GenerateResponse]]:
        """The inner backend's joint call (score and generate requests carry no slot)."""
        joint = getattr(self.inner, "score_and_generate", None)
        if joint is None:
            return super().score_and_generate(scores, generates)
        scored, generated = joint(scores, generates)
        return list(scored), list(generated)

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResponse]:
        return self.inner.classify(requests)

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        out: list[TopKResponse | None] = [None] * len(requests)
        plain = [i for i, r in enumerate(requests) if not (r.candidates and SLOT in r.prompt)]
        ranked = [i for i, r in enumerate(requests) if r.candidates and SLOT in r.prompt]
        if plain:
            reqs = [_read(requests[i]) for i in plain]
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
            start = len(scores)
            scores.extend(_candidate_scores(r))
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
