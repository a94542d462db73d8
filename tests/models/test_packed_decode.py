"""Packed greedy decoding (``_packed_decode``): both prefills, the choice between them, the
cache gather across rows, and the one-time check on short probes (issue 22)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch

from steadyeval import load_backend
from steadyeval.models import _packed_decode, _roomy
from steadyeval.models._hf import PROBE_STEPS, PROBE_TOKENS, HFCausalBackend
from steadyeval.models._packed_decode import (
    decode_groups,
    length_batches,
    packed_greedy,
)
from steadyeval.models._packing import trie_size
from steadyeval.requests import GenerateRequest


def _load(tiny_gpt2: Path, options: str) -> HFCausalBackend:
    b = load_backend(f"hf:{tiny_gpt2}?{options}")
    assert isinstance(b, HFCausalBackend)
    return b


def _question_first(k: int) -> str:
    """A question-first prompt (UnifiedQA's order): prompts of different questions share
    almost nothing."""
    return f"Question {k}: how far is town {k * 7} from the sea?\nParagraph: the coast {k}."


def _paragraph_first(k: int, q: str) -> str:
    return f"Paragraph {k}: the river flows through the city number {k}.\nQuestion: {q}\nAnswer:"


def _mixed_requests() -> list[GenerateRequest]:
    """Unshared prompts of different lengths, prompts sharing paragraphs, an extension of
    another prompt and a one-token prompt."""
    prompts = ["A", *(_question_first(k) + " Answer:" * (k % 3) for k in range(5))]
    prompts += [_paragraph_first(k, q) for k in range(2) for q in ("which?", "where is it?")]
    prompts.append(prompts[-1] + " It is")
    return [GenerateRequest(p, 7) for p in prompts]


def test_trie_size_counts_distinct_prefixes() -> None:
    """The linear-time count equals the number of distinct non-empty prefixes."""
    rng = random.Random(0)
    for _ in range(50):
        stem = [rng.randrange(5) for _ in range(rng.randrange(0, 6))]
        seqs = [
            stem[: rng.randrange(len(stem) + 1)]
            + [rng.randrange(4) for _ in range(rng.randrange(4))]
            for _ in range(rng.randrange(1, 8))
        ]
        seqs = [s for s in seqs if s] or [[1]]
        assert trie_size(seqs) == len({tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)})


def test_decode_groups_by_length_respect_the_budget() -> None:
    prompts = [[1] * 30, [2] * 5, [1] * 12 + [3], [1] * 31, [2] * 7, [5] * 200]
    groups = decode_groups(prompts, room=10, budget=100, by_length=True)
    assert groups == [[5], [3, 0], [2, 4, 1]]  # longest first; 200 tokens go alone
    for g in groups:
        assert len(g) == 1 or len(g) * (max(len(prompts[i]) for i in g) + 10) <= 100


def test_length_batches_bound_the_padding() -> None:
    lengths = [355, 101, 340, 186, 200, 350, 1, 190, 330]
    batches = length_batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches == [[0, 5, 2, 8], [4, 7, 3], [1], [6]]  # longest first
    for b in batches:
        assert sum(lengths[i] for i in b) >= 0.9 * len(b) * max(lengths[i] for i in b)
    capped = length_batches(lengths, max_positions=700)
    assert sorted(i for b in capped for i in b) == list(range(len(lengths)))
    assert [0] in capped  # 2 x 355 positions would pass the cap: the longest goes alone
    assert all(len(b) * lengths[b[0]] <= 700 or len(b) == 1 for b in capped)
    assert len(capped) > len(batches)


@pytest.mark.parametrize(
    ("prefill", "max_nodes"), [("auto", 1024), ("packed", 1024), ("packed", 24), ("padded", 1024)]
)
def test_each_prefill_equals_generate(tiny_gpt2: Path, prefill: Any, max_nodes: int) -> None:
    """Either prefill (and packed rows too small for one group, so one group's prompts are
    gathered from several rows) decodes exactly what generate() does, prompt by prompt."""
    got, expected = _packed_and_generate(tiny_gpt2, prefill, max_nodes)
    assert got == expected


def _packed_and_generate(tiny_gpt2: Path, prefill: Any, max_nodes: int) -> tuple[Any, Any]:
    """The mixed requests decoded by ``packed_greedy`` (as responses) and by generate()."""
    packed = _load(tiny_gpt2, "packing=true&batch_size=64")
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    reqs = _mixed_requests()
    prepared = [packed._prompt_ids(r.prompt, False, None, r.max_new_tokens) for r in reqs]
    with torch.inference_mode():
        decoded = packed_greedy(
            packed.model,
            packed.tokenizer,
            [p for p, _ in prepared],
            max_new_tokens=7,
            stops=(),
            max_nodes=max_nodes,
            budget=10_000,
            prefill=prefill,
        )
    return packed._responses(reqs, prepared, decoded), plain.generate(reqs)


def _spy_prefills(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Record the group size of every prefill, by kind."""
    seen: dict[str, list[int]] = {"packed": [], "padded": []}
    for kind in seen:
        real = getattr(_packed_decode, f"_prefill_{kind}")

        def spy(
            model: Any, seqs: Any, *args: Any, _real: Any = real, _kind: str = kind, **kw: Any
        ) -> Any:
            seen[_kind].append(len(seqs))
            return _real(model, seqs, *args, **kw)

        monkeypatch.setattr(_packed_decode, f"_prefill_{kind}", spy)
    return seen


def test_auto_prefill_packs_only_prompts_that_share(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Question-first prompts (trie > 90% of their tokens) go as one left-padded batch;
    paragraph-first prompts (three questions per paragraph) are packed."""
    b = _load(tiny_gpt2, "packing=true&batch_size=64")
    seen = _spy_prefills(monkeypatch)
    unshared = [GenerateRequest(_question_first(k), 5) for k in range(6)]
    b.generate(unshared)
    assert seen == {"packed": [], "padded": [6]}
    seen["padded"].clear()
    shared = [
        GenerateRequest(_paragraph_first(k, q), 5)
        for k in range(2)
        for q in ("which river?", "where?", "how many?")
    ]
    b.generate(shared)
    assert seen == {"packed": [6], "padded": []}


def test_the_check_decodes_short_probes(tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-time check sees the probe's last PROBE_TOKENS tokens (and branches one
    token longer) for PROBE_STEPS steps, however long the prompts are."""
    b = _load(tiny_gpt2, "batch_size=8")
    checked: list[tuple[int, int]] = []  # (prompt tokens, steps) of every decode in the check
    real_plain, real_packed = b._generate_plain, b._decode_packed

    def plain(reqs: Any, prepared: Any, seed: Any) -> Any:
        if b._packed_generation is None:
            checked.extend(
                (len(p), r.max_new_tokens) for r, (p, _) in zip(reqs, prepared, strict=True)
            )
        return real_plain(reqs, prepared, seed)

    def packed(reqs: Any, prepared: Any, *args: Any, **kwargs: Any) -> Any:
        if b._packed_generation is None:
            checked.extend(
                (len(p), r.max_new_tokens) for r, (p, _) in zip(reqs, prepared, strict=True)
            )
        return real_packed(reqs, prepared, *args, **kwargs)

    monkeypatch.setattr(b, "_generate_plain", plain)
    monkeypatch.setattr(b, "_decode_packed", packed)
    long_prompt = " ".join(f"word{k}" for k in range(120))
    assert len(b._prompt_ids(long_prompt, False, None, 0)[0]) > 4 * PROBE_TOKENS
    b.generate([GenerateRequest(long_prompt, 20), GenerateRequest(long_prompt + " x", 20)])
    assert b._packed_generation is True
    assert len(checked) == 9  # 3 probes: generate(), packed rows, padded batch
    assert all(n <= PROBE_TOKENS + 1 and steps == PROBE_STEPS for n, steps in checked)


def _ignores_the_trie(real: Any) -> Any:
    """``row_tensors`` of a model that ignores custom masks and position ids (a causal mask
    over the packed row, positions 0..n-1), whatever the mask's dtype."""

    def fake(rows: Any, dtype: Any) -> Any:
        ids, pos, mask = real(rows, dtype)
        width = ids.shape[1]
        if mask.dtype == torch.bool:
            causal = torch.ones((width, width), dtype=torch.bool).tril()
        else:
            causal = torch.full((width, width), torch.finfo(mask.dtype).min).triu(1)
        return ids, torch.arange(width).expand_as(pos), causal.expand_as(mask).clone()

    return fake


def _scaled_values(real: Any) -> Any:
    """A padded prefill whose cached values come back wrong (scaled)."""

    def fake(*args: Any) -> Any:
        cache, attn, last = real(*args)
        for layer in cache.layers:
            layer._values.mul_(3.0)
        return cache, attn, last

    return fake


@pytest.mark.parametrize("broken", ["packed", "padded"])
def test_the_check_catches_wrong_packed_decoding(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """Decoding that goes wrong after a correct scoring check (a mask ignored in the packed
    prefill only; a wrong cache from the padded prefill) fails the check on its short probes
    (the tiny model's greedy tokens barely read the context, so the check compares
    log-probabilities too), and generation falls back to generate() with its answers."""
    plain = _load(tiny_gpt2, "packing=false&batch_size=1")
    reqs = _mixed_requests()
    expected = plain.generate(reqs)
    if broken == "packed":
        fake = _ignores_the_trie(_packed_decode.row_tensors)
        monkeypatch.setattr(_packed_decode, "row_tensors", fake)
    else:
        fake = _scaled_values(_packed_decode._prefill_padded)
        monkeypatch.setattr(_packed_decode, "_prefill_padded", fake)
    b = _load(tiny_gpt2, "batch_size=8")
    assert b.generate(reqs) == expected
    assert b._packing is True and b._packed_generation is False


def test_padded_batches_after_the_first_write_into_the_buffer(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The padded prefill forwards its longest prompt alone, then writes every later batch's
    keys and values straight into the group's buffer (no batch cache beside it); decoding
    from that buffer equals generate(), prompt by prompt."""
    views: list[bool] = []
    real = _packed_decode._rows_view

    def spy(*args: Any) -> Any:
        got = real(*args)
        views.append(got is not None)
        return got

    monkeypatch.setattr(_packed_decode, "_rows_view", spy)
    got, expected = _packed_and_generate(tiny_gpt2, "padded", 1024)
    assert got == expected
    assert views[0] is False and sum(views) >= 2  # the first alone; later batches in place


def test_dropping_finished_rows_keeps_the_others_in_the_same_buffer() -> None:
    """Rows leaving a cache over preallocated buffers: the kept rows move to the front of
    the buffer (no second buffer), in order, with their positions intact."""
    keys = torch.randn(5, 2, 9, 4)
    values = torch.randn(5, 2, 9, 4)
    want_k, want_v = keys[[0, 2, 3], :, :6].clone(), values[[0, 2, 3], :, :6].clone()
    cache = _roomy.roomy_cache([(keys, values)], 6)
    layer = cache.layers[0]
    layer.batch_select_indices(torch.tensor([0, 2, 3]))
    assert torch.equal(layer.keys, want_k) and torch.equal(layer.values, want_v)
    assert layer.keys.data_ptr() == keys.data_ptr()  # the same storage
    k, v = layer.update(torch.ones(3, 2, 1, 4), torch.zeros(3, 2, 1, 4))
    assert k.shape == (3, 2, 7, 4) and torch.equal(k[:, :, 6], torch.ones(3, 2, 4))
    assert torch.equal(v[:, :, :6], want_v)


def test_buffer_pool_lends_zeroed_views_and_reuses_given_back_storage() -> None:
    """Decode groups one after another reuse one storage (no fresh pages per group), each
    time zeroed; a group needing more gets new storage; two groups alive at once never
    share one."""
    from types import SimpleNamespace

    like = [SimpleNamespace(keys=torch.zeros(1, 2, 3, 4), values=torch.zeros(1, 2, 3, 4))] * 2
    pool = _roomy.BufferPool(positions=10)
    first, storage = pool.take(like, rows=2, width=5)
    assert [tuple(k.shape) for k, _ in first] == [(2, 2, 5, 4)] * 2
    assert all(not k.any() and not v.any() for k, v in first)
    assert all(f.numel() == 10 * 2 * 4 for f in storage)  # room for `positions`
    first[0][0].fill_(3.0)
    other, other_storage = pool.take(like, rows=1, width=4)  # while the first is alive
    assert not other[0][0].any()
    assert other_storage[0].data_ptr() != storage[0].data_ptr()
    pool.give(storage)
    again, again_storage = pool.take(like, rows=1, width=9)
    assert again_storage[0].data_ptr() == storage[0].data_ptr() and not again[0][0].any()
    pool.give(again_storage)
    bigger, bigger_storage = pool.take(like, rows=3, width=5)  # 15 positions: new storage
    assert bigger_storage[0].numel() == 15 * 2 * 4 and not bigger[1][1].any()
    pool.give(other_storage)


def test_decode_groups_fit_a_cache_cap_in_bytes(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a CPU a decode group's keys and values stay under DECODE_CACHE_BYTES_CPU (the
    bytes per position measured on the model: 2 x layers x width x 4 for a float32
    GPT-2); with a cap of about two prompts' caches, generation goes in more groups and
    still equals generate()."""
    from steadyeval.models import _hf

    b = _load(tiny_gpt2, "packing=true&batch_size=64")
    cfg = b.model.config
    per = _packed_decode.cache_bytes_per_position(b.model)
    assert per == 2 * cfg.n_layer * cfg.n_embd * 4
    assert b._decode_budget() == min(
        64 * _hf.DECODE_POSITIONS_PER_ROW, _hf.DECODE_CACHE_BYTES_CPU // per
    )
    monkeypatch.setattr(_hf, "DECODE_CACHE_BYTES_CPU", 2 * 40 * per)
    assert b._decode_budget() == 80
    seen = _spy_prefills(monkeypatch)
    reqs = _mixed_requests()
    assert b.generate(reqs) == _load(tiny_gpt2, "packing=false&batch_size=1").generate(reqs)
    assert len(seen["packed"]) + len(seen["padded"]) >= 4


def test_a_cache_with_an_empty_layer_is_not_plain() -> None:
    """A forward whose cache leaves a layer without keys and values (a model sharing
    layers' caches) is refused as not plain (generation then falls back to generate())."""
    from types import SimpleNamespace

    from transformers.cache_utils import DynamicLayer

    full = DynamicLayer()
    full.update(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4))
    base = SimpleNamespace(forward=lambda cache=None: None)
    ok = SimpleNamespace(cache=SimpleNamespace(layers=[full]))
    assert _packed_decode._plain_cache(ok, base) is ok.cache
    empty = SimpleNamespace(cache=SimpleNamespace(layers=[full, DynamicLayer()]))
    with pytest.raises(_packed_decode.UnsupportedCache):
        _packed_decode._plain_cache(empty, base)
