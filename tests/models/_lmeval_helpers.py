"""Helpers for the lm-evaluation-harness parity test: a tiny model and an lm-eval driver.

Nothing here reaches a network: the model is the project's tiny random GPT-2 (built on the
spot), and lm-eval is driven in process through its Python API.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def build_tiny_gpt2(out_dir: Path, seed: int = 0) -> Path:
    """The project's tiny random GPT-2 (byte-level BPE tokenizer) written to ``out_dir``."""
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(out_dir, "gpt2", seed=seed)


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """Make any attempt to open a non-local socket connection fail loudly."""

    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise RuntimeError(
                f"network access attempted during the lm-eval parity test: {address}"
            )
        return real_connect(self, address)

    def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"network access attempted during the lm-eval parity test: {address}")

    real_create_connection = socket.create_connection
    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.create_connection = guarded_create_connection
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.create_connection = real_create_connection


def make_hflm(model_dir: Path, batch_size: int = 4) -> Any:
    """lm-eval's ``HFLM`` on ``model_dir``, on CPU, in float32."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=str(model_dir),
        backend="causal",
        device="cpu",
        dtype="float32",
        batch_size=batch_size,
        trust_remote_code=False,
    )


def lmeval_loglikelihood(lm: Any, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, bool]]:
    """``lm.loglikelihood`` on ``(context, continuation)`` pairs: ``(logprob, is_greedy)`` each."""
    from lm_eval.api.instance import Instance

    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=(ctx, cont), idx=i)
        for i, (ctx, cont) in enumerate(pairs)
    ]
    out = lm.loglikelihood(instances, disable_tqdm=True)
    return [(float(lp), bool(greedy)) for lp, greedy in out]


def lmeval_token_split(lm: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """How lm-eval 0.4.13 tokenizes a pair: ``(context_ids, continuation_ids)``.

    Mirrors ``TemplateLM.loglikelihood``: an empty context becomes the prefix (BOS, else EOS)
    token; otherwise ``_encode_pair`` moves the context's trailing whitespace to the
    continuation, encodes context+continuation whole and cuts off the context's token count.
    """
    if context == "":
        cont = lm.tok_encode(continuation, add_special_tokens=False)
        if cont and cont[0] == lm.prefix_token_id:
            return cont[:1], cont[1:]
        return [lm.prefix_token_id], cont
    ctx_ids, cont_ids = lm._encode_pair(context, continuation)
    return list(ctx_ids), list(cont_ids)


def set_offline_env() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def greedy_continuation(lm: Any, context: str, n_tokens: int) -> tuple[str, list[int]]:
    """The ``n_tokens`` greedy next tokens after ``context`` (lm-eval's model): text and ids."""
    import torch

    ids = list(lm.tok_encode(context))
    start = len(ids)
    with torch.inference_mode():
        for _ in range(n_tokens):
            logits = lm.model(torch.tensor([ids], dtype=torch.long)).logits[0, -1]
            ids.append(int(logits.argmax()))
    text: str = lm.tokenizer.decode(ids[start:])
    return text, ids[start:]


def greedy_cases(
    lm: Any, contexts: Sequence[str], lengths: Sequence[int]
) -> list[tuple[str, str, str]]:
    """``(id, context, continuation)`` cases whose continuation is the model's greedy one.

    Only continuations that lm-eval splits back into exactly the generated tokens are kept
    (a random model often emits partial UTF-8 bytes or tokens that re-merge with the
    context, and those are not greedy once re-tokenized).
    """
    cases = []
    for i, ctx in enumerate(contexts):
        for n in lengths:
            text, ids = greedy_continuation(lm, ctx, n)
            if lmeval_token_split(lm, ctx, text)[1] == ids:
                cases.append((f"greedy-{i}-{n}tok", ctx, text))
    return cases


def text_of_n_tokens(lm: Any, unit: str, n_tokens: int) -> str:
    """``unit`` repeated until the text is about ``n_tokens`` tokens long (at most that)."""
    text = unit
    while len(lm.tok_encode(text + unit)) <= n_tokens:
        text += unit
    return text
