"""The ``openai:`` backend's pure mapping between steadyeval requests and the OpenAI wire
format: reading a ``/completions`` choice's ``logprobs`` (:class:`PromptLogprobs`), the
continuation's log-probability from an echoed prompt (:func:`continuation_logprob`), a chat
label's log-probability from ``top_logprobs`` (:func:`label_logprob`), per-request sampling
seeds (:func:`sample_seed`, shared with the ``vllm`` backend), chat messages, and the checked
reading of a reply's choices, usage and chat ``top_logprobs``. No network, no state.

The boundary between a bad reply and an approximate one: lists of different lengths, no
choices or a missing field make a reply *malformed* (:class:`BadReply`, which the client
retries); a well-formed reply that covers fewer characters than asked gives an *approximate*
score (flagged; an error under ``strict=true``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..requests import GenerateRequest
from ._chat import chat_messages
from ._http_policy import BadReply

__all__ = [
    "ContinuationScore",
    "PromptLogprobs",
    "continuation_logprob",
    "label_logprob",
    "sample_seed",
]


@dataclass(frozen=True)
class PromptLogprobs:
    """The ``logprobs`` object of a ``/completions`` choice (legacy format)."""

    tokens: Sequence[str]
    token_logprobs: Sequence[float | None]
    text_offset: Sequence[int]
    top_logprobs: Sequence[Mapping[str, float] | None] | None = None

    @classmethod
    def from_choice(cls, choice: Mapping[str, Any]) -> PromptLogprobs:
        """Read and check a choice's ``logprobs``; :class:`BadReply` says what is wrong."""
        lp = choice.get("logprobs")
        if not isinstance(lp, Mapping):
            raise BadReply("the reply has no logprobs object")
        tokens, lps, offs = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
        if not (isinstance(tokens, list) and isinstance(lps, list) and isinstance(offs, list)):
            raise BadReply("logprobs lacks tokens, token_logprobs or text_offset lists")
        if not len(tokens) == len(lps) == len(offs):
            raise BadReply(
                f"logprobs lists differ in length ({len(tokens)} tokens, "
                f"{len(lps)} token_logprobs, {len(offs)} text_offset)"
            )
        top = lp.get("top_logprobs")
        try:
            return cls(
                tokens=[str(t) for t in tokens],
                token_logprobs=[None if x is None else float(x) for x in lps],
                text_offset=[int(x) for x in offs],
                top_logprobs=top if isinstance(top, list) and len(top) == len(tokens) else None,
            )
        except (TypeError, ValueError):
            raise BadReply(
                "token_logprobs must be numbers or null and text_offset integers"
            ) from None


@dataclass(frozen=True)
class ContinuationScore:
    logprob: float
    n_tokens: int
    is_greedy: bool
    approximate: bool


def _partial(token: str) -> bool:
    """A token string that is not its own text: part of a multi-byte character (servers
    write ``""``, ``"\ufffd"`` or OpenAI's ``"bytes:\\xe4"``)."""
    return not token or "\ufffd" in token or token.startswith("bytes:")


def _spans(lp: PromptLogprobs, n: int) -> tuple[list[int], list[int]] | None:
    """Start and end offsets of the first ``n`` tokens; ``None`` if offsets go backwards.

    A token ends where the next one starts (the token after the prompt, when the server
    generated one, ends the last): that is exact even where a token's string is not its
    text (a byte-fallback piece, written ``""``), since a server's offsets count the
    characters decoded so far. Without a following token the last one ends after its text
    (after the one character it completes, for a byte piece).
    """
    starts = list(lp.text_offset[:n])
    last = lp.tokens[n - 1]
    # Nothing after the prompt (it was followed by end-of-text): a byte piece that ends a
    # valid prompt completes its last character.
    nxt = (
        lp.text_offset[n]
        if n < len(lp.tokens)
        else starts[-1] + (1 if _partial(last) else len(last))
    )
    ends = [*starts[1:], nxt]
    if any(b < a for a, b in zip(starts, ends, strict=True)):
        return None
    return starts, ends


def continuation_logprob(
    lp: PromptLogprobs, *, prompt: str, n_context_chars: int, n_prompt_tokens: int
) -> ContinuationScore:
    """The log-probability of ``prompt[n_context_chars:]`` from an echoed prompt.

    Only the first ``n_prompt_tokens`` tokens are the prompt (a server that had to generate
    one token lists it after them). Each token spans from its offset to the next token's
    (:func:`_spans`), and positions are anchored at the *end* of the prompt: the prompt ends
    where its last token ends, and the continuation starts ``len(continuation)`` characters
    before that, so a server that lists a BOS token such as ``<s>`` at offset 0, or writes a
    leading space the tokenizer added (shifting every offset), is read correctly.

    Boundary rule: a token belongs to the continuation when its span reaches past the
    boundary, or starts at or after it (the pieces of a multi-byte character that starts
    the continuation span no characters until the last), so a token that straddles it
    (``" A"`` for context ``"Answer: "`` and continuation ``"A"``) is counted — as
    lm-evaluation-harness counts it, where trailing whitespace of the context moves to the
    continuation. When the straddled context characters are not all whitespace (a word split
    between context and continuation) the score also covers some context characters and is
    flagged ``approximate``. It is also flagged when a counted token has no log-probability
    (the first token of a prompt without BOS), when a token's string is neither its span of
    the prompt nor a byte piece, when offsets go backwards, and when the prompt's tokens
    cover fewer characters than the prompt has (a reply a token short: anchored at its end,
    the score would be some other token's).
    ``is_greedy`` needs ``top_logprobs`` (``logprobs >= 1``); without it it is ``False``.
    """
    n = max(0, min(n_prompt_tokens, len(lp.tokens)))
    n_cont_chars = len(prompt) - n_context_chars
    spans = _spans(lp, n) if n else None
    if spans is None or n_cont_chars <= 0:
        return ContinuationScore(0.0, 0, True, n_cont_chars > 0)
    starts, ends = spans
    shift = ends[-1] - len(prompt)  # characters listed before the prompt (BOS, a space)
    boundary = ends[-1] - n_cont_chars
    chosen = [i for i in range(n) if ends[i] > boundary or starts[i] >= boundary]
    approximate = shift < 0 or not chosen
    for i in range(n):  # every token's string must be its text, or a byte piece
        a, b, tok = starts[i], ends[i], lp.tokens[i]
        if (
            b > shift
            and not _partial(tok)
            and tok[max(0, shift - a) :] != prompt[max(0, a - shift) : b - shift]
        ):
            approximate = True
    if not chosen:
        return ContinuationScore(0.0, 0, False, True)
    straddle = boundary - starts[chosen[0]]  # characters of it before the boundary
    if straddle > 0:
        covered = prompt[max(0, n_context_chars - straddle) : n_context_chars]
        approximate = approximate or bool(covered.strip())
    total, counted, greedy = 0.0, 0, True
    for i in chosen:
        value = lp.token_logprobs[i]
        if value is None:
            approximate = True
            continue
        total += value
        counted += 1
        top = lp.top_logprobs[i] if lp.top_logprobs is not None else None
        if not top or max(top.values()) > value + 1e-6:
            greedy = False
    return ContinuationScore(total, counted, greedy and counted > 0, approximate)


def label_logprob(top: Sequence[Mapping[str, Any]], label: str) -> tuple[float, bool, bool]:
    """``(logprob, is_greedy, found)`` of ``label`` as the first answer token.

    ``top`` is a chat reply's ``top_logprobs`` list (``{"token", "logprob"}`` entries). Every
    entry whose text equals the label once surrounding whitespace is stripped counts (``"A"``
    and ``" A"`` both answer A); their probabilities are added (log-sum-exp). A label absent
    from the list gets ``-inf`` and ``found=False``: its probability is below the smallest
    listed one but unknown, so the caller flags the score ``approximate``.
    """
    want = label.strip()
    entries = [
        (str(e.get("token", "")), float(e["logprob"]))
        for e in top
        if isinstance(e, Mapping) and isinstance(e.get("logprob"), int | float)
    ]
    hits = [v for t, v in entries if t.strip() == want]
    if not hits:
        return -math.inf, False, False
    m = max(hits)
    total = m + math.log(sum(math.exp(v - m) for v in hits))
    best = max(entries, key=lambda e: e[1])
    return total, best[0].strip() == want, True


def sample_seed(req: GenerateRequest) -> int:
    """A per-request seed from the condition's seed, the sample index and the prompt (the
    same value the ``hf`` backend seeds its sampler with)."""
    digest = hashlib.sha256(f"{req.seed}\x1f{req.sample_index}\x1f{req.prompt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _messages(
    text: str, system: str | None, turns: Sequence[tuple[str, str]] = ()
) -> list[dict[str, str]]:
    return chat_messages(text, system, turns)


def _choice(data: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BadReply("the reply has no choices")
    choice: Mapping[str, Any] = choices[0]
    return choice


def _usage(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return None, None
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (int(p) if isinstance(p, int) else None, int(c) if isinstance(c, int) else None)


def _chat_top(choice: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, Mapping) else None
    if not isinstance(content, list):
        raise BadReply("the chat reply has no logprobs.content list")
    if not content:
        return []
    top = content[0].get("top_logprobs") if isinstance(content[0], Mapping) else None
    if not isinstance(top, list):
        raise BadReply("the chat reply's first token lists no top_logprobs")
    return top
