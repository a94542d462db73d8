"""Score and greedy generate requests prefilled together (issue 22, fix 6).

An item's free-form prompt (``<paragraph> Q: <question> A:``) and its option-scoring
sequences share the paragraph and the question. Scored apart, the generation prefill forwards
that prefix again. Here a greedy prompt that shares at least half of its tokens with a scored
sequence joins the scoring trie as a member without targets: the packed rows (or a
:class:`~._packing.PrefixGroup`'s prefix and rows) are forwarded once with their key/value
cache kept, the targets are scored as ``score`` does, and each joining prompt's keys and
values are taken along its trie path (a token's keys and values depend only on its ancestors
and its position, so they are those an unshared prefill would build), with its next-token
logits from its last node. The prompts are cut into decode groups before the forwards (the
budget of cached positions ``packed_greedy`` uses); each prompt's keys and values go
straight into its row of its group's left-padded buffers, and a group is decoded greedily
(``_packed_decode._decode``) once its last prompt is in. Prompts that share little go
through ``generate``.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..requests import GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse
from ._hf_batching import is_oom, run_with_backoff
from ._hf_causal_score import _check_plain_cache, _Prepared
from ._packed_decode import Decoded, _decode
from ._packing import PackedRow, PrefixGroup
from ._prefix import shared_prefix
from ._roomy import BufferPool, roomy_cache

if TYPE_CHECKING:
    from ._hf import HFCausalBackend

__all__ = ["JOINT_IF_SHARED", "joining_prompts", "plan_groups", "score_and_generate"]

log = logging.getLogger(__name__)

#: A greedy prompt joins the scoring trie when it shares at least this share of its tokens
#: with a scored sequence (an item's free-form prompt shares all but its last tokens).
JOINT_IF_SHARED = 0.5


def joining_prompts(scored: Sequence[Sequence[int]], prompts: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``prompts`` sharing at least ``JOINT_IF_SHARED`` of their tokens with one
    of the ``scored`` sequences (the longest common prefix with a sorted list is with one of
    the two neighbours of the prompt's place in it)."""
    ordered = sorted(tuple(s) for s in scored)
    out = []
    for j, prompt in enumerate(prompts):
        at = bisect.bisect_left(ordered, tuple(prompt))
        near = ordered[max(0, at - 1) : at + 1]
        shared = max((shared_prefix(prompt, s) for s in near), default=0)
        if prompt and shared >= JOINT_IF_SHARED * len(prompt):
            out.append(j)
    return out


@dataclass
class _Group:
    """A decode group, planned before the forwards (prompts of one setting, in the order
    they are taken, cut where the next would take the left-padded cache past the budget, as
    ``decode_groups`` cuts them). Its buffers are allocated when its first prompt is taken;
    each prompt's keys and values are written straight into its row."""

    key: tuple[int, tuple[str, ...]]  # (max_new_tokens, stop strings)
    prompts: list[int] = field(default_factory=list)  # request indices, in buffer-row order
    widest: int = 0
    layers: list[tuple[Any, Any]] = field(default_factory=list)
    storage: list[Any] = field(default_factory=list)  # what ``layers`` are views of
    logits: list[Any] = field(default_factory=list)  # each row's next-token logits
    taken: int = 0


def plan_groups(
    taken: Sequence[tuple[int, tuple[int, tuple[str, ...]], int]], budget: int
) -> list[_Group]:
    """Decode groups for prompts given as (request index, setting, length) in the order
    they will be taken: per setting, a group is cut where the next prompt would take its
    left-padded cache (prompts × (widest + max_new_tokens)) past ``budget``, as
    ``decode_groups`` cuts them; each group is as wide as its own longest prompt."""
    groups: list[_Group] = []
    last: dict[tuple[int, tuple[str, ...]], _Group] = {}
    for j, key, length in taken:
        group = last.get(key)
        if (
            group is None
            or (len(group.prompts) + 1) * (max(group.widest, length) + key[0]) > budget
        ):
            group = last[key] = _Group(key)
            groups.append(group)
        group.prompts.append(j)
        group.widest = max(group.widest, length)
    return groups


class _JointRun:
    """One ``score_and_generate`` call's joint prefill and decoding."""

    def __init__(
        self,
        backend: HFCausalBackend,
        prepared: Sequence[_Prepared],
        generates: Sequence[GenerateRequest],
        prompts: dict[int, tuple[list[int], bool]],
        budget: int,
        *,
        keep_logits: bool = False,
    ) -> None:
        self.b, self.prepared, self.generates = backend, prepared, generates
        self.keep_logits = keep_logits  # each decoding step's logits, in ``decoded``
        self.decoded: dict[int, Decoded] = {}
        self.prompts, self.budget = prompts, budget
        self.pool = BufferPool(budget)  # the decode groups' buffers, one group after another
        self.todo = [i for i, p in enumerate(prepared) if p.targets]
        self.members = [prepared[i] for i in self.todo]
        self.first_prompt = len(self.members)  # members from here on are generation prompts
        self.joined = sorted(prompts)
        self.members += [_Prepared(prompts[j][0], [], prompts[j][1]) for j in self.joined]
        self.group_of: dict[int, tuple[_Group, int]] = {}  # request -> (its group, its row)
        self.generated: dict[int, GenerateResponse] = {}
        self.ends: dict[int, Any] = dict.fromkeys(range(self.first_prompt, len(self.members)))

    def run(self) -> list[ScoreResponse]:
        """Score every prepared sequence and decode every joined prompt."""
        import torch

        with torch.inference_mode():
            return self._run()

    def _run(self) -> list[ScoreResponse]:
        b = self.b
        rows, groups, width = b._pack(
            [m.fed for m in self.members],
            [len(m.fed) - max(1, len(m.targets)) for m in self.members],
        )
        final = {
            i: ScoreResponse(0.0, 0, True, p.truncated, len(p.fed))
            for i, p in enumerate(self.prepared)
            if not p.targets
        }
        results = self._score_only([r for r in rows if not self._has_prompts(r)], width)
        joint = [r for r in rows if self._has_prompts(r)]
        # Rows with prompts keep their caches until the prompts' paths are taken: a batch of
        # them holds at most a decode group's budget of positions (and one row).
        per_batch = max(1, min(b._packed_rows_per_forward(width), self.budget // width))
        self._plan([*joint, *(row for group in groups for row in group.rows)])
        for start in range(0, len(joint), per_batch):
            results.append(self._joint_rows(joint[start : start + per_batch]))
        for group in groups:
            results.append(self._prefix_group(group))
        for got in results:
            final.update((self.todo[m], resp) for m, resp in got)
        return [final[i] for i in range(len(self.prepared))]

    def release(self) -> None:
        """Drop the decode groups' buffers and the prompts' logits (after a failure)."""
        self.group_of.clear()
        self.ends.clear()
        self.pool = BufferPool(self.budget)

    def _has_prompts(self, row: PackedRow) -> bool:
        return any(m >= self.first_prompt for m in row.members)

    def _count(self, row: PackedRow) -> None:
        """Scoring tokens forwarded: the nodes on a scored member's path (and the prefix if
        a scored member uses it); the rest are generation prompt tokens, counted apart."""
        scored = {n for m, path in row.members.items() if m < self.first_prompt for n in path}
        self.b.tokens_forwarded += len(scored)
        self.b.joint_prompt_tokens += len(row.tokens) - len(scored)

    def _score_only(
        self, rows: list[PackedRow], width: int
    ) -> list[list[tuple[int, ScoreResponse]]]:
        """Rows without generation prompts (of at most ``width`` nodes): batched as
        ``score`` batches them, no cache."""
        b = self.b
        rows.sort(key=lambda r: -len(r.tokens))
        per_batch = b._packed_rows_per_forward(width)
        results, _ = run_with_backoff(
            rows,
            per_batch,
            lambda batch: [b._run_rows(batch, self.members)],
            on_shrink=b._log_shrink,
        )
        b.tokens_forwarded += sum(len(r.tokens) for r in rows)
        return results

    def _joint_rows(self, rows: list[PackedRow]) -> list[tuple[int, ScoreResponse]]:
        """Rows with prompts: forwarded in one batch with their key/value cache kept."""
        from transformers import DynamicCache

        cache = DynamicCache()
        got = self.b._run_rows(rows, self.members, (0, cache), self.ends)
        for b, row in enumerate(rows):
            self._count(row)
            self._take(row, cache, 0, b)
        return got

    def _prefix_group(self, group: PrefixGroup) -> list[tuple[int, ScoreResponse]]:
        """A group's prefix forwarded once, then its rows on it (``_run_prefix_group``); the
        prompts among its members are taken from the cache after their row."""
        length = len(group.prefix)
        scored = any(m < self.first_prompt for row in group.rows for m in row.members)
        if scored:
            self.b.tokens_forwarded += length
        else:
            self.b.joint_prompt_tokens += length

        def on_row(row: PackedRow, cache: Any) -> None:
            self._count(row)
            if self._has_prompts(row):
                self._take(row, cache, length)

        got: list[tuple[int, ScoreResponse]] = self.b._run_prefix_group(
            group, self.members, self.ends, on_row
        )
        return got

    def _plan(self, rows: Sequence[PackedRow]) -> None:
        """Cut the joined prompts into decode groups, in the order ``_take`` meets them in
        ``rows`` (the order they are forwarded)."""
        taken = []
        for row in rows:
            for m in row.members:
                if m >= self.first_prompt:
                    j = self.joined[m - self.first_prompt]
                    req = self.generates[j]
                    taken.append((j, (req.max_new_tokens, req.stop), len(self.prompts[j][0])))
        for group in plan_groups(taken, self.budget):
            for slot, j in enumerate(group.prompts):
                self.group_of[j] = (group, slot)

    def _take(self, row: PackedRow, cache: Any, prefix: int, b: int = 0) -> None:
        """The generation prompts' keys and values along their paths in the row (row ``b``
        of the cache's batch, after the ``prefix`` positions it starts with), written into
        their decode group's buffers; a group is decoded once its last prompt is in."""
        import torch

        _check_plain_cache(cache)
        for m, path in row.members.items():
            if m < self.first_prompt:
                continue
            j = self.joined[m - self.first_prompt]
            group, slot = self.group_of[j]
            if not group.layers:
                self._allocate(group, cache)
            index = torch.tensor([*range(prefix), *(prefix + n for n in path)], dtype=torch.long)
            start = group.widest - len(index)
            for layer, (keys, values) in zip(cache.layers, group.layers, strict=True):
                at = index.to(layer.keys.device)
                keys[slot, :, start : group.widest] = layer.keys[b].index_select(1, at)
                values[slot, :, start : group.widest] = layer.values[b].index_select(1, at)
            group.logits[slot] = self.ends.pop(m)
            group.taken += 1
            if group.taken == len(group.prompts):
                self._flush(group)

    def _allocate(self, group: _Group, cache: Any) -> None:
        """The group's buffers (zeros: the left padding), shaped as ``cache``'s layers."""
        n = len(group.prompts)
        group.layers, group.storage = self.pool.take(cache.layers, n, group.widest + group.key[0])
        group.logits = [None] * n

    def _flush(self, group: _Group) -> None:
        """Decode a group whose prompts are all in its buffers, as one left-padded batch."""
        import torch

        max_new, stops = group.key
        n, longest = len(group.prompts), group.widest
        attn = torch.zeros((n, longest), dtype=torch.long)
        for b, j in enumerate(group.prompts):
            attn[b, longest - len(self.prompts[j][0]) :] = 1
        cache = roomy_cache(group.layers, longest)
        logits = torch.stack(group.logits)
        storage = group.storage  # the decoding cache holds the buffers now
        group.layers, group.storage, group.logits = [], [], []
        out = [Decoded([], False, [] if self.keep_logits else None) for _ in group.prompts]
        model = self.b.model
        _decode(
            model,
            self.b.tokenizer,
            cache,
            attn,
            None,
            out,
            max_new_tokens=max_new,
            stops=stops,
            device=next(model.parameters()).device,
            prompts=[self.prompts[j][0] for j in group.prompts],
            first=logits,
        )
        del cache
        self.pool.give(storage)  # for the next group
        for j, d in zip(group.prompts, out, strict=True):
            if self.keep_logits:
                self.decoded[j] = d
            req, (ids, truncated) = self.generates[j], self.prompts[j]
            self.generated[j] = self.b._generation_response(
                req, d.tokens, d.hit_eos, len(d.tokens) >= max_new, ids, truncated
            )


def score_and_generate(
    backend: HFCausalBackend,
    scores: Sequence[ScoreRequest],
    generates: Sequence[GenerateRequest],
    budget: int,
) -> tuple[list[ScoreResponse], list[GenerateResponse]]:
    """``backend``'s joint call (see the module doc); ``budget``: cached positions per
    decode group; ``scores`` and greedy ``generates`` are both non-empty. Without packing
    for both kinds (the one-time checks), or without greedy prompts sharing a prefix with a
    scored sequence, it is ``score`` then ``generate``."""
    greedy = [i for i, r in enumerate(generates) if r.temperature == 0]
    prepared = backend._prepare_scores(scores)
    if backend._packing is None:
        backend._packing = backend._check_packing(prepared[0])
    # Joint rows continue a (possibly empty) cache: the cached-prefix check must have passed.
    ok = backend._packing is True and backend._prefix_cache
    ok = ok and backend._packed_generation_ok(generates[greedy[0]])
    prompts = {
        i: backend._prompt_ids(r.prompt, r.chat, r.system, r.max_new_tokens, r.turns)
        for i, r in ((i, generates[i]) for i in greedy)
        if ok
    }
    scored = [p.fed for p in prepared if p.targets]
    picked = joining_prompts(scored, [prompts[i][0] for i in greedy]) if ok and scored else []
    joined = {greedy[k]: prompts[greedy[k]] for k in picked}
    if not joined:
        return backend._score_prepared(prepared), backend.generate(generates)
    run = _JointRun(backend, prepared, generates, joined, budget)
    try:
        scored_out: list[ScoreResponse] | None = run.run()
    except Exception as exc:  # out of memory: apart, where batches halve on it
        if not is_oom(exc):
            raise
        scored_out = None
    if scored_out is None:
        run.release()  # its partly filled buffers go before the fallback runs
        log.warning(
            "%s: out of memory in a joint prefill; scoring and generating apart", backend.spec
        )
        return backend._score_prepared(prepared), backend.generate(generates)
    backend.joint_prompts += len(joined)
    rest = [i for i in range(len(generates)) if i not in joined]
    if rest:
        run.generated.update(zip(rest, backend.generate([generates[i] for i in rest]), strict=True))
    return scored_out, [run.generated[i] for i in range(len(generates))]
