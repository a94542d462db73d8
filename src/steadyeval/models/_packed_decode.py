"""Greedy decoding whose prefill shares prompt prefixes.

Prompts that share a prefix (one paragraph, several questions) are prefilled as packed trie
rows (see ``_packing``): every shared token is forwarded once. Each prompt's keys and values
are then gathered from its row along its trie path — a token's keys and values depend only on
its ancestors and its position, so the gathered cache is the one an unshared prefill would
build — left-padded into one batch, and decoded greedily. Prompts that share little (the
question-first layout: each prompt its own question) gain nothing from packing and would pay
for its dense 4-D mask, so such a group is prefilled with causal masks as ``generate()``
does, in left-padded batches of prompts of similar length (little padding), whose caches
are copied into one left-padded buffer. Rows that finish (end of sequence or a stop string in the decoded text)
leave the batch, so later steps compute mostly live rows. The new tokens' keys and values are
written into room reserved in the cache (the plain cache concatenates, copying itself at
every step). Prompts are prefilled and decoded in groups under a budget of cached positions,
which bounds memory: in prefix order when the prompts share prefixes (a shared prefix stays in
one group and is prefilled once), longest first otherwise (little padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._generated_text import PromptTail
from ._hf_batching import stop_hit
from ._packing import PackedRow, pack_sequences, row_tensors, trie_size
from ._roomy import roomy_cache, zero_buffers

__all__ = [
    "PACKED_IF_TRIE_BELOW",
    "Decoded",
    "Prefill",
    "UnsupportedCache",
    "cache_bytes_per_position",
    "logit_gap",
    "packed_greedy",
]

#: How a group of prompts is prefilled: packed trie rows, one left-padded causal batch, or
#: (``auto``) packed only when the prompts' trie saves at least 10% of their tokens.
Prefill = Literal["auto", "packed", "padded"]

#: ``auto`` packs a group when its trie has fewer nodes than this share of its tokens. Above
#: it, the shared tokens saved cost more than packing does (question-first prompts, whose
#: trie keeps 99% of their tokens: bench/README.md, issue 22).
PACKED_IF_TRIE_BELOW = 0.9

#: The padded prefill forwards prompts of similar length together, so that padding is at
#: most this share of a forward's positions (one batch of question-first prompts of 100-355
#: tokens would be 40% padding).
PADDING_AT_MOST = 0.1

#: A padded prefill batch holds at most budget // PREFILL_SHARE positions: its activations
#: are the prefill's transient beside the group's buffer (a batch as large as the group
#: doubled the peak: question-first, 100 questions, 12M GPT-2, +441 MB of peak RSS in
#: generation; at a quarter of the group, question-first on an 89M GPT-2 still peaked 150 MB
#: above the buffer, at an eighth 110 MB less).
PREFILL_SHARE = 8


class UnsupportedCache(TypeError):
    """The model's key/value cache is not a plain growing one (sliding windows, shared
    layers, ...): decode with ``generate`` instead."""


@dataclass
class Decoded:
    tokens: list[int]  # the new tokens, end-of-sequence excluded
    hit_eos: bool
    # With ``keep_logits``: each step's next-token logits (the end-of-sequence step included).
    logits: list[Any] | None = None


def _cache_name(base: Any) -> str:
    """The key/value cache's argument and output name: ``cache`` in recent transformers,
    ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def cache_bytes_per_position(model: Any) -> int:
    """Bytes of keys and values the model caches per token (one token forwarded; 0 when its
    output has no per-layer keys and values, or the forward fails: no cap in bytes then)."""
    import torch

    ids = torch.zeros((1, 1), dtype=torch.long, device=next(model.parameters()).device)
    try:
        with torch.inference_mode():
            result = model.base_model(input_ids=ids, use_cache=True)
    except Exception:  # an architecture that needs more inputs: decode groups by positions
        return 0
    layers = getattr(getattr(result, _cache_name(model.base_model), None), "layers", None)
    sides = [getattr(layer, name, None) for layer in layers or () for name in ("keys", "values")]
    return sum(t.numel() * t.element_size() for t in sides if isinstance(t, torch.Tensor))


def _plain_cache(result: Any, base: Any) -> Any:
    """The key/value cache a forward returned, if it is a plain growing one with keys and
    values in every layer (models sharing a layer's keys and values leave others empty)."""
    from transformers.cache_utils import DynamicLayer

    cache = getattr(result, _cache_name(base))
    if any(type(layer) is not DynamicLayer or layer.keys is None for layer in cache.layers):
        raise UnsupportedCache("packed decoding needs a plain dynamic key/value cache")
    return cache


def _shares_enough(seqs: Sequence[Sequence[int]]) -> bool:
    return trie_size(seqs) < PACKED_IF_TRIE_BELOW * sum(len(s) for s in seqs)


def decode_groups(
    prompts: Sequence[Sequence[int]], room: int, budget: int, *, by_length: bool = False
) -> list[list[int]]:
    """Prompts (indices) cut into groups whose left-padded caches hold at most ``budget``
    token positions each (a prompt longer than that goes alone). Prefix order keeps prompts
    that share a prefix in one group, so the prefix is prefilled once; ``by_length`` (longest
    first) keeps the padding of unshared prompts small."""
    if by_length:
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    else:
        order = sorted(range(len(prompts)), key=lambda i: list(prompts[i]))
    groups: list[list[int]] = []
    longest = 0
    for i in order:
        wider = max(longest, len(prompts[i]))
        if groups and (len(groups[-1]) + 1) * (wider + room) <= budget:
            groups[-1].append(i)
            longest = wider
        else:
            groups.append([i])
            longest = len(prompts[i])
    return groups


def packed_greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    stops: Sequence[str],
    max_nodes: int,
    budget: int,
    prefill: Prefill = "auto",
    keep_logits: bool = False,
) -> list[Decoded]:
    """Greedy continuations of ``prompts`` (token ids). Prompts go in groups of at most
    ``budget`` cached token positions (memory stays bounded); each group is prefilled
    (``prefill``: packed with its shared prefixes once, or in left-padded causal batches) and
    decoded. ``keep_logits`` keeps each step's logits (for :func:`logit_gap`).

    Raises :class:`UnsupportedCache` if the model's cache is not a plain growing key/value
    cache (the caller falls back to ``generate``).
    """
    device = next(model.parameters()).device
    out = [Decoded([], False, [] if keep_logits else None) for _ in prompts]
    unshared = prefill == "padded" or (prefill == "auto" and not _shares_enough(prompts))
    for group in decode_groups(prompts, max_new_tokens, budget, by_length=unshared):
        seqs = [prompts[i] for i in group]
        packed = prefill == "packed" or (prefill == "auto" and _shares_enough(seqs))
        if not packed:  # longest first: each padded batch is then a run of consecutive rows
            group = sorted(group, key=lambda i: -len(prompts[i]))
            seqs = [prompts[i] for i in group]
        if packed:
            cache, attn, last = _prefill_packed(model, seqs, max_nodes, max_new_tokens, device)
        else:
            cache, attn, last = _prefill_padded(
                model, seqs, max_new_tokens, device, max_positions=budget // PREFILL_SHARE
            )
        _decode(
            model,
            tokenizer,
            cache,
            attn,
            last,
            [out[i] for i in group],
            max_new_tokens=max_new_tokens,
            stops=stops,
            device=device,
            prompts=seqs,
        )
    return out


def length_batches(
    lengths: Sequence[int], padding: float = PADDING_AT_MOST, max_positions: int | None = None
) -> list[list[int]]:
    """Indices by decreasing length, cut into runs whose left padding is at most ``padding``
    of their positions (and, with ``max_positions``, of at most that many positions, a run
    being at least one prompt)."""
    batches: list[list[int]] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if batches:
            run = batches[-1]
            wide = (len(run) + 1) * lengths[run[0]]
            fits = max_positions is None or wide <= max_positions
            if fits and wide * (1 - padding) <= tokens + lengths[i]:
                run.append(i)
                tokens += lengths[i]
                continue
        batches.append([i])
        tokens = lengths[i]
    return batches


def _prefill_padded(
    model: Any,
    seqs: Sequence[Sequence[int]],
    room: int,
    device: Any,
    max_positions: int | None = None,
) -> tuple[Any, Any, Any]:
    """Causal forwards of left-padded batches of prompts of similar length (padding at most
    ``PADDING_AT_MOST`` of a batch), positions counted from each prompt's first token (as
    ``generate()`` does), into one left-padded buffer per layer with ``room`` free positions.
    The longest prompt goes first, alone: its cache (checked to be a plain one) gives the
    buffer's shape; every later batch writes its keys and values straight into its rows of
    the buffer (no batch cache beside it). Returns the cache, its attention mask and each
    prompt's last hidden state."""
    import torch

    n, longest = len(seqs), max(len(s) for s in seqs)
    attn = torch.zeros((n, longest), dtype=torch.long)
    for b, seq in enumerate(seqs):
        attn[b, longest - len(seq) :] = 1
    batches = length_batches([len(s) for s in seqs], max_positions=max_positions)
    batches[:1] = [batches[0][:1], batches[0][1:]] if len(batches[0]) > 1 else batches[:1]
    buffers: list[tuple[Any, Any]] = []
    last: Any = None
    for batch in batches:
        width = len(seqs[batch[0]])
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for b, i in enumerate(batch):
            ids[b, width - len(seqs[i]) :] = torch.tensor(list(seqs[i]), dtype=torch.long)
            mask[b, width - len(seqs[i]) :] = 1
        rows = torch.tensor(batch, dtype=torch.long)
        into = _rows_view(buffers, batch, longest - width, longest)
        result = model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=(mask.cumsum(-1) - 1).clamp(min=0).to(device),
            use_cache=True,
            **({} if into is None else {_cache_name(model.base_model): roomy_cache(into, 0)}),
        )
        if into is None:  # a cache of its own (the first batch), copied into the buffer
            layers = _plain_cache(result, model.base_model).layers
            if not buffers:
                buffers = zero_buffers(layers, n, longest + room)
                width_h = result.last_hidden_state.shape[-1]
                last = result.last_hidden_state.new_empty((n, width_h))
            for layer, bufs in zip(layers, buffers, strict=True):
                for kv, buf in zip((layer.keys, layer.values), bufs, strict=True):
                    buf[rows.to(buf.device), :, longest - width : longest] = kv
            del layers
        last[rows.to(last.device)] = result.last_hidden_state[:, -1]
        del result  # not held while the next batch is forwarded
    return roomy_cache(buffers, longest), attn, last


def _rows_view(
    buffers: Sequence[tuple[Any, Any]], batch: Sequence[int], start: int, end: int
) -> list[tuple[Any, Any]] | None:
    """Views of ``buffers`` at rows ``batch`` and positions ``start:end`` (a forward's cache
    writes through them), or None before the buffers exist or when the rows are not
    consecutive (a view cannot take them)."""
    lo, hi = batch[0], batch[0] + len(batch)
    if not buffers or list(batch) != list(range(lo, hi)):
        return None
    return [(k[lo:hi, :, start:end], v[lo:hi, :, start:end]) for k, v in buffers]


def _prefill_packed(
    model: Any, seqs: Sequence[Sequence[int]], max_nodes: int, room: int, device: Any
) -> tuple[Any, Any, Any]:
    """The prompts packed into trie rows and prefilled; each prompt's cache gathered."""
    rows = pack_sequences(seqs, max_nodes=max_nodes)
    paths = {j: (r, path) for r, row in enumerate(rows) for j, path in row.members.items()}
    # The rows' own caches are freed on return: only the gathered buffers stay.
    return _gather(_prefill(model, rows, device), [paths[j] for j in range(len(seqs))], room)


def _prefill(model: Any, rows: Sequence[PackedRow], device: Any) -> list[tuple[Any, Any]]:
    """Forward each packed row on its own (the attention over a row is the largest transient;
    one row at a time keeps it small): per row, its last hidden states and its key/value
    cache."""
    dtype = next(model.parameters()).dtype
    out = []
    for row in rows:
        ids, pos, mask = row_tensors([row], dtype)
        result = model.base_model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=pos.to(device),
            use_cache=True,
        )
        out.append((result.last_hidden_state[0], _plain_cache(result, model.base_model)))
    return out


def _gather(
    prefilled: Sequence[tuple[Any, Any]], paths: Sequence[tuple[int, list[int]]], room: int
) -> tuple[Any, Any, Any]:
    """Each prompt's keys and values along its trie path, left-padded into one buffer per
    layer with ``room`` free positions: the cache, its attention mask and each prompt's last
    hidden state. Per layer the rows' caches are laid end to end (with one zero position for
    the padding) and every prompt's positions taken in one ``index_select``."""
    import torch

    n = len(paths)
    longest = max(len(path) for _, path in paths)
    starts, blank = [], 0  # each row's first node in the rows laid end to end; the zero slot
    for hidden, _ in prefilled:
        starts.append(blank)
        blank += hidden.shape[0]
    index = torch.full((n, longest), blank, dtype=torch.long)
    attn = torch.zeros((n, longest), dtype=torch.long)
    for b, (r, path) in enumerate(paths):
        index[b, longest - len(path) :] = torch.tensor(path, dtype=torch.long) + starts[r]
        attn[b, longest - len(path) :] = 1
    layers = []
    for layer_idx in range(len(prefilled[0][1].layers)):
        buffers = []
        for name in ("keys", "values"):
            parts = [getattr(cache.layers[layer_idx], name)[0] for _, cache in prefilled]
            heads, dim = parts[0].shape[0], parts[0].shape[2]
            every = torch.cat([*parts, parts[0].new_zeros((heads, 1, dim))], dim=1)
            picked = every.index_select(1, index.view(-1).to(every.device))
            buf = every.new_empty((n, heads, longest + room, dim))
            buf[:, :, :longest] = picked.view(heads, n, longest, dim).transpose(0, 1)
            buffers.append(buf)
        layers.append((buffers[0], buffers[1]))
    cache = roomy_cache(layers, longest)
    hidden = torch.cat([h for h, _ in prefilled])
    last = hidden.index_select(0, index[:, -1].to(hidden.device))
    return cache, attn, last


def _decode(
    model: Any,
    tokenizer: Any,
    cache: Any,
    attn: Any,
    last: Any,
    out: Sequence[Decoded],
    *,
    max_new_tokens: int,
    stops: Sequence[str],
    device: Any,
    prompts: Sequence[Sequence[int]],
    first: Any = None,
) -> None:
    """Greedy steps for one group from its prefilled cache, filling ``out``; the first
    step's logits are ``first`` when the prefill computed them, else the head's of
    ``last``. A row stops once the text its tokens add after its prompt (``prompts``, one
    per row of ``out``: the response's text) contains one of ``stops``."""
    import torch

    n = len(out)
    head = model.get_output_embeddings()
    cache_name = _cache_name(model.base_model)
    eos = tokenizer.eos_token_id
    stops = [s for s in stops if s]
    tails = [PromptTail(tokenizer, p) for p in prompts] if stops else []
    filler = eos if eos is not None else 0  # fed to finished rows that had no token
    positions = attn.sum(dim=1)  # each prompt's length: its first new token's position
    attn = attn.to(device)
    rows_of_batch = list(range(n))  # the prompt of each row of the batch
    done = [False] * n
    for step in range(max_new_tokens):
        logits = head(last) if step or first is None else first
        next_tokens = logits.argmax(-1).tolist()
        for b, i in enumerate(rows_of_batch):
            if done[i]:
                continue
            kept = out[i].logits
            if kept is not None:
                kept.append(logits[b])
            tok = int(next_tokens[b])
            if eos is not None and tok == eos:
                out[i].hit_eos = done[i] = True
                continue
            out[i].tokens.append(tok)
            done[i] = bool(stops) and stop_hit(tails[i], out[i].tokens, stops)
        live = [b for b, i in enumerate(rows_of_batch) if not done[i]]
        if not live or step == max_new_tokens - 1:
            break
        # Finished rows leave the batch once a quarter of it has finished (dropping them
        # copies the cache; until then they ride along and their tokens are ignored).
        if len(live) <= 0.75 * len(rows_of_batch):
            index = torch.tensor(live, dtype=torch.long, device=device)
            cache.batch_select_indices(index)
            attn, positions = attn[index], positions[index.cpu()]
            rows_of_batch = [rows_of_batch[b] for b in live]
        step_ids = torch.tensor(
            [[out[i].tokens[-1] if out[i].tokens else filler] for i in rows_of_batch],
            dtype=torch.long,
        )
        ones = torch.ones((len(rows_of_batch), 1), dtype=attn.dtype, device=device)
        attn = torch.cat([attn, ones], 1)
        result = model.base_model(
            input_ids=step_ids.to(device),
            attention_mask=attn,
            position_ids=positions[:, None].to(device),
            use_cache=True,
            **{cache_name: cache},
        )
        positions = positions + 1
        cache = getattr(result, cache_name)
        last = result.last_hidden_state[:, -1]


def logit_gap(
    model: Any, prompts: Sequence[Sequence[int]], runs: Sequence[Sequence[Decoded]]
) -> float:
    """The largest difference between the next-token log-probabilities packed decoding saw
    (each run of ``prompts``, kept with ``keep_logits``) and those of one plain forward pass
    over each prompt and the first run's tokens (one right-padded batch): the numeric check
    of the prefill, the gathered cache and the decoding steps (greedy tokens alone can agree
    on a model that barely reads its context). Runs whose tokens differ: infinity."""
    import torch

    first = runs[0]
    if any([d.tokens for d in run] != [d.tokens for d in first] for run in runs):
        return float("inf")
    kept = [j for j, d in enumerate(first) if d.logits]
    if not kept:
        return 0.0
    steps = [len(first[j].logits or ()) for j in kept]
    seqs = [
        [*prompts[j], *first[j].tokens][: len(prompts[j]) + k - 1]
        for j, k in zip(kept, steps, strict=True)
    ]
    width = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for b, seq in enumerate(seqs):
        ids[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attn[b, : len(seq)] = 1
    device = next(model.parameters()).device
    ref = model(input_ids=ids.to(device), attention_mask=attn.to(device), use_cache=False).logits
    gap = 0.0
    for b, j in enumerate(kept):
        start = len(prompts[j]) - 1
        expected = torch.log_softmax(ref[b, start : start + steps[b]].float(), -1)
        for run in runs:
            seen = run[j].logits or []
            if len(seen) != steps[b]:
                return float("inf")
            diff = torch.log_softmax(torch.stack(seen).float(), -1) - expected
            gap = max(gap, float(diff.abs().max()))
    return gap
