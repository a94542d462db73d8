"""Frozen requests and responses, and the one function that computes a request's key."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

from ..items import canonical_json, encode_utf8

__all__ = [
    "GENERATED_TEXT_RULE",
    "ClassifyRequest",
    "ClassifyResponse",
    "GenerateRequest",
    "GenerateResponse",
    "Request",
    "RequestKind",
    "Response",
    "ScoreRequest",
    "ScoreResponse",
    "TopKRequest",
    "TopKResponse",
    "Turns",
    "request_key",
    "response_from_dict",
    "response_to_dict",
]

RequestKind = Literal["score", "generate", "top-k", "classify"]
REQUEST_KINDS: tuple[RequestKind, ...] = ("score", "generate", "top-k", "classify")


#: Earlier chat turns before a chat request's prompt: (user, assistant) pairs, e.g. few-shot
#: examples as turns (``Condition.fewshot_as_multiturn``). Empty for a single turn.
Turns = tuple[tuple[str, str], ...]


def _turns(value: object) -> Turns:
    pairs = tuple(tuple(t) for t in value)  # type: ignore[attr-defined]
    if not all(len(t) == 2 and all(isinstance(x, str) for x in t) for t in pairs):
        raise ValueError(f"turns must be (user, assistant) pairs of text; got {value!r:.80}")
    return pairs  # type: ignore[return-value]


@dataclass(frozen=True)
class ScoreRequest:
    """Log-probability of ``continuation`` given ``context`` (the context may be empty)."""

    kind: ClassVar[RequestKind] = "score"
    context: str
    continuation: str
    chat: bool = False
    system: str | None = None
    turns: Turns = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", _turns(self.turns))


@dataclass(frozen=True)
class GenerateRequest:
    """Greedy (``temperature == 0``) or sampled continuation of ``prompt``."""

    kind: ClassVar[RequestKind] = "generate"
    prompt: str
    max_new_tokens: int = 32
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    sample_index: int = 0
    seed: int = 0
    chat: bool = False
    system: str | None = None
    turns: Turns = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "turns", _turns(self.turns))
        if self.temperature == 0:
            # Greedy decoding does not depend on the sample index or seed: normalise them so
            # identical greedy requests share one key.
            object.__setattr__(self, "sample_index", 0)
            object.__setattr__(self, "seed", 0)
            object.__setattr__(self, "top_p", 1.0)


@dataclass(frozen=True)
class TopKRequest:
    """The ``k`` most likely next tokens after ``prompt`` (or in its mask, for masked LMs)."""

    kind: ClassVar[RequestKind] = "top-k"
    prompt: str
    k: int = 10
    chat: bool = False
    system: str | None = None
    candidates: tuple[str, ...] = ()  # restrict to these words (empty: the whole vocabulary)
    turns: Turns = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "candidates", tuple(self.candidates))
        object.__setattr__(self, "turns", _turns(self.turns))


@dataclass(frozen=True)
class ClassifyRequest:
    """A classification head's log-probabilities for ``inputs``: over its labels for one
    text pair, or, with ``choices``, over the pairs (one per choice; a multiple-choice
    head). The second text of a pair may be None."""

    kind: ClassVar[RequestKind] = "classify"
    inputs: tuple[tuple[str, str | None], ...]
    choices: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple((a, b) for a, b in self.inputs))
        if not self.inputs or (not self.choices and len(self.inputs) != 1):
            raise ValueError(
                "a classify request needs one input pair, or one pair per choice with "
                f"choices=True; got {len(self.inputs)} pair(s), choices={self.choices}"
            )


Request = ScoreRequest | GenerateRequest | TopKRequest | ClassifyRequest


@dataclass(frozen=True)
class ScoreResponse:
    logprob: float
    n_tokens: int
    is_greedy: bool
    truncated: bool = False
    n_input_tokens: int = 0
    approximate: bool = False  # e.g. a masked LM's pseudo-log-likelihood of several tokens


@dataclass(frozen=True)
class GenerateResponse:
    """Generated ``text`` as the model wrote it after the prompt; ``reasoning``: a trace the
    server returned apart from it (e.g. ``reasoning_content``), else None."""

    text: str
    n_input_tokens: int = 0
    n_output_tokens: int = 0
    truncated: bool = False
    finish_reason: str = "stop"
    reasoning: str | None = None


@dataclass(frozen=True)
class TopKResponse:
    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    n_input_tokens: int = 0
    truncated: bool = False


@dataclass(frozen=True)
class ClassifyResponse:
    logprobs: tuple[float, ...]
    n_input_tokens: int = 0
    truncated: bool = False


Response = ScoreResponse | GenerateResponse | TopKResponse | ClassifyResponse
_RESPONSE_TYPES: dict[str, type[Any]] = {
    "score": ScoreResponse,
    "generate": GenerateResponse,
    "top-k": TopKResponse,
    "classify": ClassifyResponse,
}


def request_payload(request: Request) -> dict[str, Any]:
    """Every output-affecting field of a request, as JSON data (``turns`` only when there
    are some, so single-turn requests keep the keys they had before turns existed)."""
    d = asdict(request)
    d["kind"] = request.kind
    if not d.get("turns", True):
        del d["turns"]
    return d


#: The convention of a generate response's text, part of generate requests' keys (only
#: theirs). 2: the characters the new tokens add after the prompt, leading whitespace
#: included, in every backend (docs/backends.md, "Generated text"); before it the ``hf``
#: backends decoded the new tokens alone, which drops a SentencePiece first token's space.
#: Responses cached under the earlier convention are asked again, never mixed with new ones.
GENERATED_TEXT_RULE = 2


def request_key(fingerprint: str, request: Request) -> str:
    """The content key of a request sent to the model with this fingerprint.

    SHA-256 of canonical JSON (sorted keys) of the model fingerprint, the request kind and
    every field that changes the output (for generate requests also
    :data:`GENERATED_TEXT_RULE`). Timeouts, retries and concurrency are not request fields,
    so they never change a key. This is the only function that computes keys: the dedupe
    key and the cache key are the same value.
    """
    payload: dict[str, Any] = {"model": fingerprint, "request": request_payload(request)}
    if request.kind == "generate":
        payload["text_rule"] = GENERATED_TEXT_RULE
    body = encode_utf8(canonical_json(payload), payload, f"a {request.kind} request")
    return hashlib.sha256(body).hexdigest()


def response_to_dict(response: Response) -> dict[str, Any]:
    return asdict(response)


def response_from_dict(kind: str, data: dict[str, Any]) -> Response:
    cls = _RESPONSE_TYPES[kind]
    if cls is TopKResponse:
        data = {**data, "tokens": tuple(data["tokens"]), "logprobs": tuple(data["logprobs"])}
    elif cls is ClassifyResponse:
        data = {**data, "logprobs": tuple(data["logprobs"])}
    resp: Response = cls(**data)
    return resp
