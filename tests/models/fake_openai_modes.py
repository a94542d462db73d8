"""The server modes of the FAKE OpenAI server (tests only): how llama-cpp-python's server
and vLLM's differ from OpenAI's schema, acted out on the same toy model.

``llama-cpp-python`` (``python -m llama_cpp.server``), with its quirks as seen on 0.3.36:

1. ``max_tokens: 0`` generates until the context (``n_ctx`` toy tokens) is full;
2. BOS is counted in ``usage.prompt_tokens`` but not listed among the echoed tokens, whose
   first log-probability is ``null``, and the first token carries the leading space the
   SentencePiece tokenizer adds (every offset is one character past the prompt's);
3. a toy token holding a non-ASCII character is spelled by byte-fallback pieces, one per
   UTF-8 byte, each listed as the text that byte decodes to alone (``""`` for the bytes of
   a multi-byte character), at the offset of the characters decoded so far;
4. ``temperature: 0`` is not greedy unless ``repeat_penalty: 1.0`` is sent: the default
   1.1 makes the toy avoid tokens it has already written;
5. idle keep-alive connections are closed after ``idle_close`` seconds;
6. started without ``--logits_all``, a request for log-probabilities gets a 500 ("logprobs
   is not supported for models created with logits_all=False"); paths outside ``/v1``
   are 404; a chat is formatted with a ``llama-2`` template (``[INST] ... [/INST]``).

``vllm`` (``vllm serve``): BOS is listed (text ``<s>``, log-probability ``null``) and
counted; ``max_tokens: 0`` generates nothing; byte-fallback pieces are listed as ``"\\ufffd"``
with offsets that add up the listed strings' lengths (so they drift past a multi-byte
character).
"""

from __future__ import annotations

from typing import Any

from tests.models.fake_openai_server import toy_generate, toy_logprob, toy_tokens, toy_top

__all__ = ["OWNED_BY", "completions", "piece_score", "pieces"]

OWNED_BY = {"openai": "system", "llama-cpp-python": "me", "vllm": "vllm"}
NOT_LOGITS_ALL = "logprobs is not supported for models created with logits_all=False"


def pieces(text: str) -> list[tuple[str, bytes]]:
    """``(key, bytes)`` of each token: toy tokens, a token with a non-ASCII character as one
    piece per UTF-8 byte (key ``<0xE4>``). The toy model scores keys."""
    out: list[tuple[str, bytes]] = []
    for tok in toy_tokens(text):
        raw = tok.encode()
        if tok.isascii():
            out.append((tok, raw))
        else:
            out.extend((f"<0x{b:02X}>", bytes([b])) for b in raw)
    return out


def piece_score(context: str, continuation: str) -> float:
    """The toy model's log-probability of the continuation's pieces (split at a token edge)."""
    keys = [k for k, _ in pieces(context + continuation)]
    n = len(pieces(context))
    return sum(toy_logprob("".join(keys[:i]), keys[i]) for i in range(n, len(keys)))


def _listed(mode: str, all_pieces: list[tuple[str, bytes]]) -> tuple[list[str], list[int]]:
    """Token strings and offsets as the mode writes them for echoed pieces."""
    tokens: list[str] = []
    offsets: list[int] = []
    if mode == "vllm":
        offset = 0
        for key, raw in [("<s>", b"<s>"), *all_pieces]:
            text = raw.decode() if key == "<s>" or len(raw) > 1 or raw.isascii() else "\ufffd"
            tokens.append(text)
            offsets.append(offset)
            offset += len(text)
        return tokens, offsets
    done = b" "  # llama.cpp: the tokenizer's leading space, written with the first token
    for i, (_, raw) in enumerate(all_pieces):
        offsets.append(0 if i == 0 else len(done.decode(errors="ignore")))
        tokens.append((" " if i == 0 else "") + raw.decode(errors="ignore"))
        done += raw
    return tokens, offsets


def completions(cfg: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``/v1/completions`` in ``cfg.mode`` (``llama-cpp-python`` or ``vllm``)."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        return 400, {"error": "prompt must be a string"}
    n_lp = body.get("logprobs")
    if n_lp is not None and not cfg.logits_all:
        return 500, {"error": NOT_LOGITS_ALL}
    p = pieces(prompt)
    max_tokens = int(body.get("max_tokens", 16))
    if max_tokens == 0 and cfg.mode == "llama-cpp-python":
        max_tokens = cfg.n_ctx - len(p) - 1  # "no limit": up to the end of the context
    penalty = cfg.mode == "llama-cpp-python" and body.get("repeat_penalty", 1.1) != 1.0
    gen, finish = toy_generate(
        prompt,
        max_tokens,
        temperature=float(body.get("temperature", 1.0)),
        seed=body.get("seed"),
        stop=list(body.get("stop") or []),
        avoid_repeats=penalty,
    )
    echo = bool(body.get("echo"))
    choice: dict[str, Any] = {
        "index": 0,
        "text": (prompt if echo else "") + "".join(gen),
        "finish_reason": finish,
    }
    if n_lp is not None:
        choice["logprobs"] = _logprobs(cfg.mode, p if echo else [], gen, prompt, int(n_lp))
    usage = {"prompt_tokens": len(p) + 1, "completion_tokens": len(gen)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return 200, {"id": "cmpl-toy", "object": "text_completion", "model": body.get("model"),
                 "choices": [choice], "usage": usage}  # fmt: skip


def _logprobs(
    mode: str, echoed: list[tuple[str, bytes]], gen: list[str], prompt: str, n_top: int
) -> dict[str, Any]:
    """The ``logprobs`` object: echoed pieces as the mode lists them, then generated ones."""
    if echoed:
        all_pieces = echoed + [(t, t.encode()) for t in gen]
        tokens, offsets = _listed(mode, all_pieces)
        before: list[str] = []
    else:  # only the generated tokens, after the prompt
        all_pieces = [(t, t.encode()) for t in gen]
        tokens, offsets = list(gen), [len(prompt) + len("".join(gen[:i])) for i in range(len(gen))]
        before = [k for k, _ in pieces(prompt)]
    keys = [k for k, _ in all_pieces]
    lps: list[float | None] = []
    tops: list[dict[str, float] | None] = []
    for i, key in enumerate(keys):
        ctx = "".join(before + keys[:i])
        lp = toy_logprob(ctx, key)
        first = echoed and i == 0 and mode == "llama-cpp-python"
        lps.append(None if first else lp)
        tops.append(None if first else {**dict(toy_top(ctx, n_top)), key: lp})
    if mode == "vllm" and echoed:  # BOS listed first, with no log-probability
        lps.insert(0, None)
        tops.insert(0, None)
    return {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops,
            "text_offset": offsets}  # fmt: skip
