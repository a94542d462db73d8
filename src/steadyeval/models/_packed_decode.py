"""Greedy decoding whose prefill shares prompt prefixes.

Prompts that share a prefix (one paragraph, several questions) are prefilled as packed trie
rows (see ``_packing``): every shared token is forwarded once. Each prompt's keys and values
are then gathered from its row along its trie path — a token's keys and values depend only on
its ancestors and its position, so the gathered cache is the one an unshared prefill would
build — left-padded into one batch, and decoded greedily. Rows that finish (end of sequence or
a stop string in the decoded text) leave the batch, so later steps compute only live rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._packing import PackedRow, pack_sequences, row_tensors

__all__ = ["Decoded", "packed_greedy"]


@dataclass
class Decoded:
    tokens: list[int]  # the new tokens, end-of-sequence excluded
    hit_eos: bool


def _cache_name(base: Any) -> str:
    """The key/value cache's argument and output name: ``cache`` in recent transformers,
    ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _prefill(model: Any, rows: Sequence[PackedRow], device: Any) -> tuple[Any, Any]:
    """One forward pass over the packed rows: the last hidden states and the key/value cache."""
    ids, pos, mask = row_tensors(rows, next(model.parameters()).dtype)
    out = model.base_model(
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        position_ids=pos.to(device),
        use_cache=True,
    )
    return out.last_hidden_state, getattr(out, _cache_name(model.base_model))


def packed_greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    stops: Sequence[str],
    max_nodes: int,
) -> list[Decoded]:
    """Greedy continuations of ``prompts`` (token ids), prefilled with shared prefixes.

    Raises if the model's cache is not a plain growing key/value cache (the caller falls back
    to ``generate``).
    """
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    device = next(model.parameters()).device
    cache_name = _cache_name(model.base_model)
    head = model.get_output_embeddings()
    eos = tokenizer.eos_token_id
    wanted = [s for s in stops if s]
    n = len(prompts)
    rows = pack_sequences(prompts, max_nodes=max_nodes)
    hidden, packed_cache = _prefill(model, rows, device)
    if any(type(layer) is not DynamicLayer for layer in packed_cache.layers):
        raise TypeError("packed decoding needs a plain dynamic key/value cache")

    # Where each prompt lives: its row and, left-padded to the longest, its trie path.
    longest = max(len(p) for p in prompts)
    row_of = torch.zeros(n, dtype=torch.long)
    nodes = torch.zeros((n, longest), dtype=torch.long)
    attn = torch.zeros((n, longest), dtype=torch.long)
    for r, row in enumerate(rows):
        for member, path in row.members.items():
            row_of[member] = r
            nodes[member, longest - len(path) :] = torch.tensor(path, dtype=torch.long)
            attn[member, longest - len(path) :] = 1
    cache = DynamicCache()
    for layer_idx, layer in enumerate(packed_cache.layers):
        # [rows, heads, width, dim] -> [prompts, heads, longest, dim] along each path
        keys = layer.keys.permute(0, 2, 1, 3)[row_of[:, None], nodes].permute(0, 2, 1, 3)
        values = layer.values.permute(0, 2, 1, 3)[row_of[:, None], nodes].permute(0, 2, 1, 3)
        cache.update(keys.contiguous(), values.contiguous(), layer_idx)
    last = hidden[row_of, nodes[:, -1]]
    del hidden, packed_cache

    positions = torch.tensor([len(p) for p in prompts], dtype=torch.long)
    attn = attn.to(device)
    live = list(range(n))  # prompt index of each batch row
    out = [Decoded([], False) for _ in range(n)]
    for step in range(max_new_tokens):
        next_tokens = head(last).argmax(-1).tolist()
        keep: list[int] = []
        for b, i in enumerate(live):
            tok = int(next_tokens[b])
            if eos is not None and tok == eos:
                out[i].hit_eos = True
                continue
            out[i].tokens.append(tok)
            if wanted:
                text = tokenizer.decode(out[i].tokens, skip_special_tokens=True)
                if any(s in text for s in wanted):
                    continue
            keep.append(b)
        if not keep or step == max_new_tokens - 1:
            break
        if len(keep) < len(live):
            index = torch.tensor(keep, dtype=torch.long, device=device)
            cache.batch_select_indices(index)
            attn, positions = attn[index], positions[index.cpu()]
            live = [live[b] for b in keep]
        step_ids = torch.tensor([[out[i].tokens[-1]] for i in live], dtype=torch.long)
        attn = torch.cat([attn, torch.ones((len(live), 1), dtype=attn.dtype, device=device)], 1)
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
    return out
