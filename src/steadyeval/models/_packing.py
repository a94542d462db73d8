"""Prefix-trie packing: many token sequences that share prefixes forwarded as one row.

Sequences are sorted (a prefix sort), then packed greedily into rows. Inside a row the
sequences form a trie: every shared prefix appears once, each token attends only to its
ancestors (a 4-D attention mask) and sits at its depth (position ids). One forward pass over
a row gives, for every sequence, exactly the logits an unshared forward pass would give.

A run of sequences sharing a long prefix that does not fit in one row (a subject's few-shot
examples before each of its questions) becomes a :class:`PrefixGroup`: the prefix is
forwarded once and the rows of the suffixes attend to its keys and values
(:func:`pack_with_prefixes`), so the prefix is not forwarded again in every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._prefix import shared_prefix, shares_long_prefix

__all__ = [
    "PackedRow",
    "PrefixGroup",
    "forwarded",
    "pack_sequences",
    "pack_with_prefixes",
    "row_tensors",
    "trie_size",
]


@dataclass
class PackedRow:
    """One packed row: its nodes (token, parent, depth) and each member sequence's path."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # -1 for a root
    depths: list[int] = field(default_factory=list)
    members: dict[int, list[int]] = field(default_factory=dict)  # sequence index -> node path
    _children: dict[tuple[int, int], int] = field(default_factory=dict)

    def cost(self, seq: Sequence[int]) -> int:
        """How many new nodes adding ``seq`` would create."""
        node, new = -1, 0
        for i, tok in enumerate(seq):
            nxt = self._children.get((node, tok))
            if nxt is None:
                return len(seq) - i
            node = nxt
        return new

    def add(self, index: int, seq: Sequence[int]) -> None:
        node, path = -1, []
        for tok in seq:
            nxt = self._children.get((node, tok))
            if nxt is None:
                nxt = len(self.tokens)
                self.tokens.append(int(tok))
                self.parents.append(node)
                self.depths.append(self.depths[node] + 1 if node >= 0 else 0)
                self._children[(node, tok)] = nxt
            node = nxt
            path.append(node)
        self.members[index] = path

    def ancestor_mask(self) -> NDArray[np.bool_]:
        """``mask[i, j]``: node i may attend to node j (j is i or one of its ancestors)."""
        n = len(self.tokens)
        mask = np.zeros((n, n), dtype=np.bool_)
        parents = self.parents
        # Runs of a chain (each node the child of the one before) copy one row at a time in
        # numpy; only branch points need a copy from elsewhere.
        for i, parent in enumerate(parents):  # parents always precede children
            if parent >= 0:
                mask[i, : parent + 1] = mask[parent, : parent + 1]
            mask[i, i] = True
        return mask


def _groups(seqs: Sequence[Sequence[int]], order: Sequence[int]) -> list[list[int]]:
    """Runs of sorted sequences that share a long prefix (at least half of the shorter one):
    one item's options and formats. Rows are cut between groups, not inside them."""
    groups: list[list[int]] = []
    prev: Sequence[int] = ()
    for i in order:
        seq = seqs[i]
        if groups and shares_long_prefix(prev, seq):
            groups[-1].append(i)
        else:
            groups.append([i])
        prev = seq
    return groups


def pack_sequences(seqs: Sequence[Sequence[int]], *, max_nodes: int) -> list[PackedRow]:
    """Pack sequences into rows of at most ``max_nodes`` trie nodes.

    Sorting puts sequences with shared prefixes next to each other; a group of sequences
    sharing a long prefix is kept in one row when it fits, so its prefix is forwarded once
    (a group, or a sequence, longer than a row is split greedily).
    """
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    rows: list[PackedRow] = []
    current = PackedRow()
    for group in _groups(seqs, order):
        if current.tokens and len(current.tokens) + trie_size([seqs[i] for i in group]) > max_nodes:
            rows.append(current)
            current = PackedRow()
        for i in group:
            if current.tokens and len(current.tokens) + current.cost(seqs[i]) > max_nodes:
                rows.append(current)
                current = PackedRow()
            current.add(i, seqs[i])
    if current.tokens or current.members:
        rows.append(current)
    return rows


@dataclass
class PrefixGroup:
    """Sequences sharing ``prefix``: it is forwarded once, and ``rows`` pack the members'
    remaining tokens (member keys are indices into the packed sequences; paths are nodes of
    the suffix rows; a node's position is ``len(prefix)`` + its depth)."""

    prefix: list[int]
    rows: list[PackedRow]


def _prefix_runs(
    seqs: Sequence[Sequence[int]], order: Sequence[int], limits: Sequence[int], min_shared: int
) -> list[tuple[list[int], int]]:
    """Runs of sorted sequences with a common prefix of at least ``min_shared`` tokens, each
    with its usable prefix length (at most ``limits[i]`` tokens of sequence ``i``)."""
    runs: list[tuple[list[int], int]] = []
    run: list[int] = []
    common = 0
    for i in order:
        if run:
            shared = min(common, shared_prefix(seqs[run[-1]], seqs[i]), limits[i])
            if shared >= min_shared:
                run.append(i)
                common = shared
                continue
            runs.append((run, common))
        run, common = [i], min(len(seqs[i]), limits[i])
    if run:
        runs.append((run, common))
    return runs


def pack_with_prefixes(
    seqs: Sequence[Sequence[int]],
    *,
    max_nodes: int,
    limits: Sequence[int],
    min_shared: int | None,
) -> tuple[list[PackedRow], list[PrefixGroup]]:
    """Rows as :func:`pack_sequences`, except that a run of sequences sharing a prefix of at
    least ``min_shared`` tokens whose trie does not fit in one row becomes a
    :class:`PrefixGroup` (``None``: never). At most ``limits[i]`` leading tokens of sequence
    ``i`` may go into a prefix (its scored positions must stay in the rows)."""
    if min_shared is None:
        return pack_sequences(seqs, max_nodes=max_nodes), []
    plain: list[int] = []
    groups: list[PrefixGroup] = []
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    for run, common in _prefix_runs(seqs, order, limits, min_shared):
        if len(run) < 2 or common < min_shared or trie_size([seqs[i] for i in run]) <= max_nodes:
            plain += run
            continue
        rows = pack_sequences([seqs[i][common:] for i in run], max_nodes=max_nodes)
        for row in rows:
            row.members = {run[k]: path for k, path in row.members.items()}
        groups.append(PrefixGroup(list(seqs[run[0]][:common]), rows))
    rows = pack_sequences([seqs[i] for i in plain], max_nodes=max_nodes)
    for row in rows:
        row.members = {plain[k]: path for k, path in row.members.items()}
    return rows, groups


def forwarded(rows: Sequence[PackedRow], groups: Sequence[PrefixGroup]) -> int:
    """Token positions a packing forwards: its rows' nodes, and each prefix group's prefix
    and rows."""
    total = sum(len(r.tokens) for r in rows)
    return total + sum(len(g.prefix) + sum(len(r.tokens) for r in g.rows) for g in groups)


def trie_size(seqs: Sequence[Sequence[int]]) -> int:
    """Nodes of one trie over all sequences: the least number of token positions any
    prefix-sharing scheme must forward. In linear time: in sorted order each sequence adds
    the tokens past its common prefix with the one before."""
    total, prev = 0, list[int]()
    for seq in sorted(list(s) for s in seqs):
        total += len(seq) - shared_prefix(prev, seq)
        prev = seq
    return total


def row_tensors(rows: Sequence[PackedRow], dtype: Any) -> tuple[Any, Any, Any]:
    """Torch inputs for a batch of packed rows: token ids, position ids (each node's depth)
    and a 4-D attention mask: additive of ``dtype`` (0 where a node may attend, the dtype's
    minimum elsewhere), or boolean (true where it may attend) when ``dtype`` is
    ``torch.bool``; padding sees only itself."""
    import torch

    width = max(len(r.tokens) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    pos = torch.zeros((len(rows), width), dtype=torch.long)
    allowed = np.zeros((len(rows), 1, width, width), dtype=np.bool_)
    diagonal = np.arange(width)
    for b, row in enumerate(rows):
        n = len(row.tokens)
        ids[b, :n] = torch.tensor(row.tokens, dtype=torch.long)
        pos[b, :n] = torch.tensor(row.depths, dtype=torch.long)
        allowed[b, 0, :n, :n] = row.ancestor_mask()
        allowed[b, 0, diagonal[n:], diagonal[n:]] = True
    if dtype == torch.bool:
        return ids, pos, torch.from_numpy(allowed)
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~torch.from_numpy(allowed), torch.finfo(dtype).min)
    return ids, pos, mask
