"""Prefix-trie packing (``models/_packing.py``): rows, prefix groups and their tensors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from steadyeval.models._packing import (
    PackedRow,
    pack_sequences,
    pack_with_prefixes,
    row_tensors,
    trie_size,
)


def _few_shot(n_questions: int, shots: int = 40) -> list[list[int]]:
    """Token sequences shaped like few-shot prompts: a long shared prefix (the shots), then
    each question, then one of two option tokens; plus two sequences sharing nothing."""
    prefix = list(range(100, 100 + shots))
    seqs = []
    for q in range(n_questions):
        question = [1000 + q, 7, 8, 1000 + q]
        seqs += [prefix + question + [1], prefix + question + [2]]
    return [*seqs, [5, 6, 7], [9]]


def _paths_spell(rows: list[PackedRow], seqs: list[list[int]], prefix: list[int]) -> set[int]:
    """Every member's path spells its sequence after ``prefix``; depths follow parents."""
    seen = set()
    for row in rows:
        for i, path in row.members.items():
            assert prefix + [row.tokens[n] for n in path] == seqs[i]
            assert [row.depths[n] for n in path] == list(range(len(path)))
            seen.add(i)
    return seen


def test_prefix_groups_forward_the_shared_prefix_once() -> None:
    seqs = _few_shot(12)
    limits = [len(s) - 1 for s in seqs]  # the last token is scored: never in a prefix
    rows, groups = pack_with_prefixes(seqs, max_nodes=32, limits=limits, min_shared=16)
    assert len(groups) == 1 and groups[0].prefix == seqs[0][:40]  # the shots
    group = groups[0]
    covered = _paths_spell(group.rows, seqs, group.prefix) | _paths_spell(rows, seqs, [])
    assert covered == set(range(len(seqs)))
    forwarded = len(group.prefix) + sum(len(r.tokens) for r in group.rows + rows)
    assert forwarded == trie_size(seqs)  # the bound: nothing forwarded twice
    plain = sum(len(r.tokens) for r in pack_sequences(seqs, max_nodes=32))
    assert plain > 2 * forwarded  # without it, rows of 32 nodes repeat the 40 shared tokens


def test_prefix_groups_only_when_the_run_does_not_fit_or_is_off() -> None:
    seqs = _few_shot(3)
    limits = [len(s) - 1 for s in seqs]
    fits = pack_with_prefixes(seqs, max_nodes=1024, limits=limits, min_shared=16)
    off = pack_with_prefixes(seqs, max_nodes=32, limits=limits, min_shared=None)
    assert fits[1] == [] and off[1] == []
    assert _paths_spell(fits[0], seqs, []) == set(range(len(seqs)))
    # A prefix never takes a sequence's scored tokens: limits cap the shared length.
    capped = pack_with_prefixes(seqs, max_nodes=32, limits=[30] * len(seqs), min_shared=16)
    assert [len(g.prefix) for g in capped[1]] == [30]


def test_row_tensors_boolean_mask_equals_the_additive_one() -> None:
    rows = pack_sequences([[1, 2, 3], [1, 2, 4, 5], [7, 8]], max_nodes=5)
    assert len(rows) == 2  # the second row is shorter: padding
    ids, pos, additive = row_tensors(rows, torch.float32)
    ids_b, pos_b, allowed = row_tensors(rows, torch.bool)
    assert allowed.dtype == torch.bool and torch.equal(ids, ids_b) and torch.equal(pos, pos_b)
    assert torch.equal(allowed, additive == 0)
    # Node 3 (token 4) sees its ancestors 1, 2 and itself, not its sibling 3.
    assert allowed[0, 0, 3].tolist() == [True, True, False, True, False]
    # Padding sees only itself.
    assert np.array_equal(allowed[1, 0, 2:, :].numpy(), np.eye(5, dtype=bool)[2:])


@pytest.mark.parametrize("min_shared", [1, 3])
def test_prefix_runs_split_where_sharing_drops(min_shared: int) -> None:
    seqs = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 9, 9, 9], [1, 2, 9, 9, 8]]
    rows, groups = pack_with_prefixes(seqs, max_nodes=4, limits=[4] * 4, min_shared=min_shared)
    prefixes = sorted(g.prefix for g in groups)
    if min_shared == 1:  # one run over all four: the common prefix [1, 2]
        assert prefixes == [[1, 2]]
    else:  # two runs: [1, 2, 3, 4] and [1, 2, 9, 9]
        assert prefixes == [[1, 2, 3, 4], [1, 2, 9, 9]]
    covered: set[int] = set()
    for g in groups:
        covered |= _paths_spell(g.rows, seqs, g.prefix)
    assert covered | _paths_spell(rows, seqs, []) == set(range(4))
