"""Greedy decoding whose prefill shares prompt prefixes.

Prompts that share a prefix (one paragraph, several questions) are prefilled as packed trie
rows (see ``_packing``): every shared token is forwarded once. Each prompt's keys and values
are then gathered from its row along its trie path — a token's keys and values depend only on
its ancestors and its position, so the gathered cache is the one an unshared prefill would
build — left-padded into one batch, and decoded greedily. Rows that finish (end of sequence or
a stop string in the decoded text) leave the batch, so later steps compute mostly live rows.
The new tokens' keys and values are written into room reserved in the gathered cache (the
plain cache concatenates, copying itself at every step). Prompts are prefilled and decoded in
groups (in prefix order, so shared prefixes stay together) under a budget of cached
positions, which bounds memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._hf_batching import stop_hit
from ._packing import PackedRow, pack_sequences, row_tensors

__all__ = ["Decoded", "UnsupportedCache", "packed_greedy"]


class UnsupportedCache(TypeError):
    """The model's key/value cache is not a plain growing one (sliding windows, shared
    layers, ...): decode with ``generate`` instead."""


@dataclass
class Decoded:
    tokens: list[int]  # the new tokens, end-of-sequence excluded
    hit_eos: bool


_ROOMY: Any = None


def _roomy_layer() -> Any:
    """A dynamic cache layer over a buffer with room for the new tokens: ``update`` writes
    in place, where the plain layer concatenates (copying the whole cache at every step)."""
    global _ROOMY
    if _ROOMY is None:
        from transformers.cache_utils import DynamicLayer

        class RoomyLayer(DynamicLayer):  # type: ignore[misc,no-untyped-call]
            def __init__(self, keys: Any, values: Any, used: int) -> None:
                super().__init__()  # type: ignore[no-untyped-call]
                self._keys, self._values, self._n = keys, values, used
                self.device = keys.device
                self.is_initialized = True
                self._expose()

            def _expose(self) -> None:
                self.keys = self._keys[:, :, : self._n]
                self.values = self._values[:, :, : self._n]

            def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
                end = self._n + key_states.shape[-2]
                if end > self._keys.shape[-2]:
                    raise RuntimeError("packed decoding: the cache has no room left")
                self._keys[:, :, self._n : end] = key_states
                self._values[:, :, self._n : end] = value_states
                self._n = end
                self._expose()
                return self.keys, self.values

            def batch_select_indices(self, indices: Any) -> None:
                indices = indices.to(self._keys.device)
                self._keys = self._keys[indices]
                self._values = self._values[indices]
                self._expose()

        _ROOMY = RoomyLayer
    return _ROOMY


def _cache_name(base: Any) -> str:
    """The key/value cache's argument and output name: ``cache`` in recent transformers,
    ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _prefill(model: Any, rows: Sequence[PackedRow], device: Any) -> list[tuple[Any, Any]]:
    """Forward each packed row on its own (the attention over a row is the largest transient;
    one row at a time keeps it small): per row, its last hidden states and its key/value
    cache."""
    from transformers.cache_utils import DynamicLayer

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
        cache = getattr(result, _cache_name(model.base_model))
        if any(type(layer) is not DynamicLayer for layer in cache.layers):
            raise UnsupportedCache("packed decoding needs a plain dynamic key/value cache")
        out.append((result.last_hidden_state[0], cache))
    return out


def decode_groups(prompts: Sequence[Sequence[int]], room: int, budget: int) -> list[list[int]]:
    """Prompts (indices) in prefix order, cut into groups whose left-padded caches hold at
    most ``budget`` token positions each (a prompt longer than that goes alone). Prefix order
    keeps prompts that share a prefix in one group, so the prefix is prefilled once."""
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
) -> list[Decoded]:
    """Greedy continuations of ``prompts`` (token ids). Prompts go in groups of at most
    ``budget`` cached token positions (memory stays bounded); each group is packed and
    prefilled with its shared prefixes once, then decoded.

    Raises :class:`UnsupportedCache` if the model's cache is not a plain growing key/value
    cache (the caller falls back to ``generate``).
    """

    device = next(model.parameters()).device
    out = [Decoded([], False) for _ in prompts]
    for group in decode_groups(prompts, max_new_tokens, budget):
        rows = pack_sequences([prompts[i] for i in group], max_nodes=max_nodes)
        paths = {j: (r, path) for r, row in enumerate(rows) for j, path in row.members.items()}
        cache, attn, last = _gather(
            _prefill(model, rows, device), [paths[j] for j in range(len(group))], max_new_tokens
        )  # the rows' own caches are freed here: only the gathered buffers stay
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
        )
    return out


def _gather(
    prefilled: Sequence[tuple[Any, Any]], paths: Sequence[tuple[int, list[int]]], room: int
) -> tuple[Any, Any, Any]:
    """Each prompt's keys and values along its trie path, left-padded into one buffer per
    layer with ``room`` free positions: the cache, its attention mask and each prompt's last
    hidden state."""
    import torch
    from transformers import DynamicCache

    n = len(paths)
    longest = max(len(path) for _, path in paths)
    roomy = _roomy_layer()
    indices = [torch.tensor(path, dtype=torch.long) for _, path in paths]
    layers = []
    for layer_idx, first in enumerate(prefilled[0][1].layers):
        heads, dim_k, dim_v = first.keys.shape[1], first.keys.shape[3], first.values.shape[3]
        keys = first.keys.new_zeros((n, heads, longest + room, dim_k))
        values = first.values.new_zeros((n, heads, longest + room, dim_v))
        for b, ((r, path), index) in enumerate(zip(paths, indices, strict=True)):
            layer = prefilled[r][1].layers[layer_idx]
            index = index.to(layer.keys.device)  # layers may sit on different devices
            keys[b, :, longest - len(path) : longest] = layer.keys[0].index_select(1, index)
            values[b, :, longest - len(path) : longest] = layer.values[0].index_select(1, index)
        layers.append(roomy(keys, values, longest))
    cache = DynamicCache()
    cache.layers = layers
    attn = torch.zeros((n, longest), dtype=torch.long)
    for b, (_, path) in enumerate(paths):
        attn[b, longest - len(path) :] = 1
    last = torch.stack([prefilled[r][0][path[-1]] for r, path in paths])
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
) -> None:
    """Greedy steps for one group from its gathered cache, filling ``out``."""
    import torch

    n = len(out)
    head = model.get_output_embeddings()
    cache_name = _cache_name(model.base_model)
    eos = tokenizer.eos_token_id
    stops = [s for s in stops if s]
    filler = eos if eos is not None else 0  # fed to finished rows that had no token
    positions = attn.sum(dim=1)  # each prompt's length: its first new token's position
    attn = attn.to(device)
    rows_of_batch = list(range(n))  # the prompt of each row of the batch
    done = [False] * n
    for step in range(max_new_tokens):
        next_tokens = head(last).argmax(-1).tolist()
        for b, i in enumerate(rows_of_batch):
            if done[i]:
                continue
            tok = int(next_tokens[b])
            if eos is not None and tok == eos:
                out[i].hit_eos = done[i] = True
                continue
            out[i].tokens.append(tok)
            done[i] = bool(stops) and stop_hit(tokenizer, out[i].tokens, stops)
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
