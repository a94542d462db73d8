"""Sampled decoding of the requests that share a prompt (``n_samples`` > 1), prefilled once.

The prompt is forwarded once (one row, exactly its tokens); its keys and values are copied
into the rows of a decode batch, and every row draws its tokens with its own
``torch.Generator``, seeded from its request alone (seed, sample index, prompt: see
:func:`~steadyeval.models._hf_batching.sample_seed`). Each draw is ``transformers``' own
sampling step on that row's logits: the temperature and top-p (nucleus) warpers, a softmax,
one ``torch.multinomial`` draw.

Why a sample does not depend on the requests decoded beside it: a decode batch always has
:data:`SAMPLE_ROWS` rows (fewer requests: the other rows ride along with a filler token and
are ignored; more: several batches from the one prefill), all rows hold the same prompt (no
padding), and no row leaves the batch before the last one finishes. Each forward therefore
has the same shapes whichever requests fill the rows, and a row's numbers depend only on its
own tokens: the kernels compute rows independently for given shapes (matrix products, layer
norms, attention per row and head). Batching rows of different shapes would not be exact:
on a CPU in float32 a 1-row and an 8-row decoding step differ in the last bits (about
1e-7 of the logits on a 12-layer GPT-2), enough to flip a rare draw.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._generated_text import PromptTail
from ._hf_batching import stop_hit
from ._packed_decode import Decoded, _plain_cache
from ._roomy import roomy_cache, zero_buffers

__all__ = ["SAMPLE_ROWS", "Sampling", "sample_group"]

#: Rows of every sampled decode batch: the usual ``n_samples`` (8), so that a group of 8
#: samples fills one batch. A constant, never a tuning knob: it is part of what a sampled
#: request's text is (see the module's docstring), like the seed.
SAMPLE_ROWS = 8


@dataclass(frozen=True)
class Sampling:
    """What a group's rows share besides the prompt."""

    temperature: float
    top_p: float
    max_new_tokens: int
    stops: tuple[str, ...]


def _cache_name(model: Any) -> str:
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def sample_group(
    model: Any,
    tokenizer: Any,
    prompt: Sequence[int],
    seeds: Sequence[int],
    sampling: Sampling,
) -> list[Decoded]:
    """One sampled continuation of ``prompt`` (token ids) per seed: the prompt prefilled
    once, then decoded in batches of :data:`SAMPLE_ROWS` rows.

    Raises :class:`~steadyeval.models._packed_decode.UnsupportedCache` if the model's cache
    is not a plain growing key/value cache (the caller samples with ``generate`` instead).
    """
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=device)
    extra = (
        {"logits_to_keep": 1}
        if "logits_to_keep" in inspect.signature(model.forward).parameters
        else {}
    )
    result = model(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        position_ids=torch.arange(ids.shape[1], device=device)[None],
        use_cache=True,
        **extra,
    )
    layers = _plain_cache(result, model).layers
    first = result.logits[:, -1]
    del result
    out: list[Decoded] = []
    for start in range(0, len(seeds), SAMPLE_ROWS):
        chunk = seeds[start : start + SAMPLE_ROWS]
        out.extend(_decode_rows(model, tokenizer, layers, first, prompt, chunk, sampling))
    return out


def _warpers(sampling: Sampling) -> Any:
    """``transformers``' warpers for plain sampling, as ``generate`` builds them (top-k off)."""
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

    warpers = LogitsProcessorList()
    if sampling.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(sampling.temperature))
    if sampling.top_p < 1.0:
        warpers.append(TopPLogitsWarper(sampling.top_p))
    return warpers


def _decode_rows(
    model: Any,
    tokenizer: Any,
    layers: Sequence[Any],
    first: Any,
    prompt: Sequence[int],
    seeds: Sequence[int],
    sampling: Sampling,
) -> list[Decoded]:
    """Up to :data:`SAMPLE_ROWS` samples in one batch of exactly that many rows, from the
    prompt's prefilled cache (``layers``, one row) and next-token logits (``first``)."""
    import torch

    device = first.device
    n, steps = len(prompt), sampling.max_new_tokens
    buffers = zero_buffers(layers, SAMPLE_ROWS, n + steps)
    for layer, bufs in zip(layers, buffers, strict=True):
        for kv, buf in zip((layer.keys, layer.values), bufs, strict=True):
            buf[:, :, :n] = kv  # the one prefilled row, in every row
    cache = roomy_cache(buffers, n)
    cache_name = _cache_name(model)
    generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]
    warpers = _warpers(sampling)
    eos = tokenizer.eos_token_id
    filler = eos if eos is not None else 0  # fed to finished rows and unused ones
    stops = [s for s in sampling.stops if s]
    tails = [PromptTail(tokenizer, prompt) for _ in seeds] if stops else []
    out = [Decoded([], False) for _ in seeds]
    done = [False] * len(seeds)
    logits = first.expand(SAMPLE_ROWS, -1)
    for step in range(steps):
        # generate()'s sampling step: float32 scores, the warpers and a softmax over all the
        # rows (row by row, in a batch of the same shape every time), then one multinomial
        # draw per row from its own generator.
        scores = warpers(None, logits.to(dtype=torch.float32, copy=True))
        probs = torch.nn.functional.softmax(scores, dim=-1)
        fed = [filler] * SAMPLE_ROWS
        for b, gen in enumerate(generators):
            if done[b]:
                continue
            tok = int(torch.multinomial(probs[b : b + 1], num_samples=1, generator=gen))
            if eos is not None and tok == eos:
                out[b].hit_eos = done[b] = True
                continue
            out[b].tokens.append(tok)
            fed[b] = tok
            done[b] = bool(stops) and stop_hit(tails[b], out[b].tokens, stops)
        if all(done) or step == steps - 1:
            break
        result = model(
            input_ids=torch.tensor(fed, dtype=torch.long, device=device)[:, None],
            attention_mask=torch.ones((SAMPLE_ROWS, n + step + 1), dtype=torch.long, device=device),
            position_ids=torch.full((SAMPLE_ROWS, 1), n + step, dtype=torch.long, device=device),
            use_cache=True,
            **{cache_name: cache},
        )
        cache = getattr(result, cache_name)
        logits = result.logits[:, -1]
    return out
