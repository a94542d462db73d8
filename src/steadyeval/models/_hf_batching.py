"""Batching helpers of the Hugging Face backends: out-of-memory detection and back-off
(:func:`run_with_backoff` halves the batch and retries), stop strings checked on decoded text
(:func:`stop_hit`, :func:`stop_on_text`) and :class:`BatchedGeneration`, the ``generate``
shared by backends that decode in batches. ``torch`` and ``transformers`` are imported only
when used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..requests import GenerateRequest, GenerateResponse
from ._generated_text import PromptTail

__all__ = [
    "BatchedGeneration",
    "is_oom",
    "run_with_backoff",
    "sample_seed",
    "stop_hit",
    "stop_on_text",
]

T = TypeVar("T")
R = TypeVar("R")


def is_oom(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU out-of-memory errors."""
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError | MemoryError) and "out of memory" in str(exc).lower()


def run_with_backoff(
    items: Sequence[T],
    batch_size: int,
    fn: Callable[[Sequence[T]], list[R]],
    *,
    on_shrink: Callable[[int], None] | None = None,
) -> tuple[list[R], int]:
    """Apply ``fn`` to consecutive batches; on out-of-memory halve the batch and retry.

    Returns the results in order and the batch size that finally worked (to reuse next time).
    A failure at batch size 1 is re-raised. ``on_shrink`` is told each smaller size (the HF
    backends log it and count it in their ``stats().oom_backoffs``).
    """
    out: list[R] = []
    i = 0
    while i < len(items):
        batch = items[i : i + batch_size]
        try:
            out.extend(fn(batch))
        except BaseException as exc:
            if not is_oom(exc) or batch_size == 1:
                raise
            _free_memory()
            batch_size = max(1, batch_size // 2)
            if on_shrink is not None:
                on_shrink(batch_size)
            continue
        i += len(batch)
    return out, batch_size


def _free_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def stop_hit(after: PromptTail, tokens: Sequence[int], stops: Sequence[str]) -> bool:
    """Whether the text ``tokens`` add after the prompt (``after``; the response's text, see
    ``_generated_text``) contains one of ``stops`` (empty stops never match)."""
    text = after.text(tokens)
    return any(s in text for s in stops if s)


def stop_on_text(
    tokenizer: Any, stops: Sequence[str], start: int, prompts: Sequence[Sequence[int]]
) -> Any:
    """Stop a row once its output (the tokens from position ``start`` on, decoded after
    its row of ``prompts`` as the response's text is) contains a stop string.

    Checked on the decoded text rather than with ``transformers``' token-level stop strings,
    which refuse strings the vocabulary cannot spell (T5's SentencePiece vocabulary has no
    newline, so the common ``"\\n\\n"`` stop could never be produced and is simply never met).
    """
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    tails = [PromptTail(tokenizer, p) for p in prompts]

    class _StopOnText(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            rows = input_ids.tolist()
            done = [stop_hit(t, row[start:], stops) for t, row in zip(tails, rows, strict=True)]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_StopOnText()])


def sample_seed(request: GenerateRequest) -> int:
    """The seed of a sampled request's random draws: from its seed, sample index and prompt
    alone, so that a rerun reproduces it whatever else is generated beside it."""
    text = f"{request.seed}\x1f{request.sample_index}\x1f{request.prompt}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


class BatchedGeneration:
    """``generate`` for backends with ``_generate_batch(requests, seed)``: greedy requests
    with the same settings are batched (longest first, halving on out-of-memory); sampled
    requests go to :meth:`_generate_sampled` (by default one at a time, seeded by
    :func:`sample_seed` so reruns reproduce them)."""

    # Provided by the classes this is mixed into (HFBackendBase and the backend itself).
    _batch_size: int
    _log_shrink: Callable[[int], None]
    _generate_batch: Callable[[Sequence[GenerateRequest], int | None], list[GenerateResponse]]

    def _greedy_order(self, request: GenerateRequest) -> Any:
        """Sort key of greedy requests before they are cut into batches: longest first."""
        return -len(request.prompt)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        out: dict[int, GenerateResponse] = {}
        greedy = [i for i, r in enumerate(requests) if r.temperature == 0]
        sampled = [i for i, r in enumerate(requests) if r.temperature != 0]
        # Greedy requests with the same settings are batched (left padding).
        groups: dict[tuple[int, tuple[str, ...]], list[int]] = {}
        for i in greedy:
            r = requests[i]
            groups.setdefault((r.max_new_tokens, r.stop), []).append(i)
        for idx in groups.values():
            idx.sort(key=lambda i: self._greedy_order(requests[i]))

            def run_batch(batch: Sequence[int]) -> list[GenerateResponse]:
                return self._generate_batch([requests[i] for i in batch], None)

            results, self._batch_size = run_with_backoff(
                idx, self._batch_size, run_batch, on_shrink=self._log_shrink
            )
            out.update(zip(idx, results, strict=True))
        if sampled:
            got = self._generate_sampled([requests[i] for i in sampled])
            out.update(zip(sampled, got, strict=True))
        return [out[i] for i in range(len(requests))]

    def _generate_sampled(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Sampled requests, each generated alone and seeded by :func:`sample_seed`."""
        return [self._generate_batch([r], sample_seed(r))[0] for r in requests]
