"""Scoring for the Hugging Face causal backend: :class:`CausalScoring`, the base of
:class:`~steadyeval.models._hf.HFCausalBackend` that holds its tokenizer side (tokenizer,
context length, token counts, lm-evaluation-harness-style text encoding, the forward pass)
and *score*: continuations' summed log-probabilities, with shared prefixes forwarded once in
packed rows (``_packing``) when the model passes a one-time check, else in padded batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..requests import ScoreRequest, ScoreResponse
from ._causal_text import CausalText
from ._hf_batching import is_oom, run_with_backoff
from ._hf_common import HFBackendBase
from ._hf_options import HFOptions
from ._packing import (
    PackedRow,
    PrefixGroup,
    forwarded,
    pack_with_prefixes,
    row_tensors,
    trie_size,
)
from ._spec import ModelSpec

__all__ = ["CausalScoring"]

log = logging.getLogger(__name__)

#: Token positions of a packed forward per unit of ``batch_size`` (rows per forward =
#: batch_size × this // row nodes). A row's attention is dense over its width: 32 rows of
#: 1,024 nodes (the former 512 per unit) hold ~1 GB of scores on a 12M GPT-2; on the layouts
#: benchmark at quick size (bench/README.md, issue 22) 32 per unit took 0.6-0.8× the time
#: and about half the memory of 512; 64 and 128 were between.
PACKED_POSITIONS_PER_UNIT = 32

#: Scoring rows are this narrow when that forwards at most NARROW_IF_TOKENS_WITHIN times the
#: tokens of the wide rows (``CausalScoring._pack``): attention in a packed row is dense over
#: its width, and long shared prefixes (a paragraph, five shots) go into prefix groups. On
#: the layouts benchmark (bench/README.md, issue 22; 12M GPT-2, CPU): 1.002× the tokens and
#: ~35% less time on paragraph-first items, 1.001× and 11% less on MMLU 5-shot; 1.10× on
#: question-first items (options share only the short question), which keep wide rows.
NARROW_ROWS = 256
NARROW_IF_TOKENS_WITHIN = 1.01

#: Last tokens of the first request the packing check forwards (with two branches).
PROBE_TOKENS = 16


def _kept_shape(keep: Any, input_ids: Any) -> tuple[int, ...]:
    """The leading shape of the logits ``_forward`` returns for ``keep``."""
    if isinstance(keep, int):
        return (int(input_ids.shape[0]), keep or int(input_ids.shape[1]))
    return (int(keep.sum()),)


def _cache_arg(model: Any) -> str:
    """The key/value cache's argument and output name: ``cache`` in recent transformers,
    ``past_key_values`` before."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _check_plain_cache(cache: Any) -> None:
    """A shared prefix is reused through a plain growing cache that can be cut back to it;
    any other kind (sliding windows, recurrent state) raises ``TypeError``."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        raise TypeError("a cached shared prefix needs a plain dynamic key/value cache")


def _branches(ids: Sequence[int]) -> list[list[int]]:
    """Two sequences branching from ``ids`` at its last token: another last token, and that
    one token longer (the packing checks: a chain alone passes a model ignoring the mask)."""
    other = ids[-1] + 1 if ids[-1] > 0 else 1
    return [[*ids[:-1], other], [*ids[:-1], other, ids[-1]]]


@dataclass
class _Prepared:
    fed: list[int]  # the tokens the model sees (context + continuation minus its last token)
    targets: list[int]  # the continuation's tokens, predicted from the last len(targets) positions
    truncated: bool


def _response(logits: Any, p: _Prepared) -> ScoreResponse:
    """Sum the targets' log-probabilities from their logits rows; greedy if each is the argmax."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1).cpu()
    target = torch.tensor(p.targets, dtype=torch.long)
    total = float(logp.gather(1, target[:, None]).sum())
    greedy = bool((logp.argmax(-1) == target).all())
    return ScoreResponse(total, len(p.targets), greedy, p.truncated, len(p.fed))


@dataclass
class _Encoded:
    tokens: list[int]  # context + continuation, before truncation
    n_cont: int


class CausalScoring(HFBackendBase):
    """The tokenizer side and *score* of a causal LM from ``transformers`` (see
    :class:`~steadyeval.models._hf.HFCausalBackend`, which adds *top-k* and *generate*)."""

    def __init__(
        self, spec: ModelSpec, *, _resolved: tuple[HFOptions, Path, Any] | None = None
    ) -> None:
        super().__init__(spec, _resolved=_resolved)
        self._packing: bool | None = None
        self._prefix_cache = False  # shared prefixes forwarded once as a key/value cache
        self._keep_ok: bool | None = None  # the model's forward takes logits_to_keep
        self._causal_text: CausalText | None = None
        self.tokens_forwarded = 0  # score tokens actually forwarded (padding excluded)
        self.check_tokens = 0  # tokens the one-time packing check forwarded

    # -- the tokenizer side ----------------------------------------------------------------
    @property
    def max_length(self) -> int:
        if self.options.max_length:
            return self.options.max_length
        for attr in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
            value = getattr(self.config, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        return 2048

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        """Token counts (with the tokenizer's special tokens), in one batched call."""
        if not texts:
            return []
        tok = self.tokenizer
        if tok.bos_token and any(t.startswith(tok.bos_token) for t in texts):
            return [len(self._text.encode(t)) for t in texts]
        ids = tok(list(texts), add_special_tokens=True)["input_ids"]
        return [len(x) for x in ids]

    @property
    def _text(self) -> CausalText:
        if self._causal_text is None:
            self._causal_text = CausalText(self.tokenizer, str(self.spec))
        return self._causal_text

    def _forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any = None, **extra: Any
    ) -> Any:
        """One forward pass (a seam for tests that inject out-of-memory errors): the logits,
        all of them, or with ``keep`` (``logits_to_keep``) only those of the kept positions: an
        int *k* (the last *k* of every row: ``(batch, k, vocab)``) or a boolean ``(batch,
        width)`` tensor (``(kept, vocab)``, row by row). The LM head is 2·d·V per position and
        scoring needs a few per row, so the model is asked for those only when its forward
        takes ``logits_to_keep`` (else all are computed and sliced here). Other ``extra``
        arguments (a key/value cache) go to the model. Scoring needs no new key/value cache:
        ``use_cache`` is off unless a cache is passed (bench/README.md, issue 22)."""
        keep = extra.pop("keep", None)
        kwargs = {} if position_ids is None else {"position_ids": position_ids}
        kwargs.update(extra)
        kwargs.setdefault("use_cache", False)
        if keep is not None and self._takes_keep:
            try:
                logits = self.model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    logits_to_keep=keep,
                    **kwargs,
                ).logits
            except Exception as exc:  # e.g. a model that slices positions with one index only
                if is_oom(exc):
                    raise
                logits = None
            if logits is not None and tuple(logits.shape[:-1]) == _kept_shape(keep, input_ids):
                return logits
            log.info("%s: logits_to_keep not usable here; computing all logits", self.spec)
            self._takes_keep = False
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).logits
        if keep is None or (isinstance(keep, int) and keep == 0):
            return logits
        return logits[keep] if not isinstance(keep, int) else logits[:, -keep:]

    @property
    def _takes_keep(self) -> bool:
        if self._keep_ok is None:
            import inspect

            params = inspect.signature(self.model.forward).parameters
            self._keep_ok = "logits_to_keep" in params
        return self._keep_ok

    @_takes_keep.setter
    def _takes_keep(self, value: bool) -> None:
        self._keep_ok = value

    # -- score -----------------------------------------------------------------------------
    def _prepare_scores(self, requests: Sequence[ScoreRequest]) -> list[_Prepared]:
        max_len = self.max_length
        out = []
        for pair in self._text.encode_pairs(requests):  # each shared context encoded once
            enc = _Encoded(*pair)
            fed = enc.tokens[:-1]
            truncated = len(fed) > max_len
            fed = fed[-max_len:]
            n = min(enc.n_cont, len(fed))
            targets = enc.tokens[len(enc.tokens) - n :] if n else []
            out.append(_Prepared(fed, targets, truncated))
        return out

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        """Score continuations; shared prefixes are forwarded once (see ``_packing``)."""
        return self._score_prepared(self._prepare_scores(requests))

    def _score_prepared(self, prepared: Sequence[_Prepared]) -> list[ScoreResponse]:
        if self._packing is None and prepared:
            self._packing = self._check_packing(prepared[0])
        if self._packing:
            return self._score_packed(prepared)
        return self._score_padded(prepared)

    @property
    def _row_nodes(self) -> int:
        """Trie nodes per packed row (measured on the issue-12 benchmark: rows of 512 nodes
        forward 10% more tokens and take 15% longer than rows of 1,024; 256, 2.6 times)."""
        return max(512, min(self.max_length, 2048))

    def _pack(
        self, seqs: Sequence[Sequence[int]], limits: Sequence[int]
    ) -> tuple[list[PackedRow], list[PrefixGroup], int]:
        """``seqs`` packed for scoring (``pack_with_prefixes``; at most ``limits[i]`` tokens
        of sequence ``i`` in a prefix) and the row width: on a CPU, ``NARROW_ROWS`` nodes when
        that forwards at most ``NARROW_IF_TOKENS_WITHIN`` times the tokens of ``_row_nodes``
        (long shared prefixes go to prefix groups) and no row is wider; else wide (more,
        narrower forwards were measured only on CPUs, where time follows the tokens)."""

        def pack(width: int) -> tuple[list[PackedRow], list[PrefixGroup], int]:
            min_shared = width // 4 if self._prefix_cache else None
            rows, groups = pack_with_prefixes(
                seqs, max_nodes=width, limits=limits, min_shared=min_shared
            )
            return rows, groups, width

        if self._row_nodes <= NARROW_ROWS or self.device.type != "cpu":
            return pack(self._row_nodes)
        narrow = pack(NARROW_ROWS)
        rows = [*narrow[0], *(r for g in narrow[1] for r in g.rows)]
        if any(len(r.tokens) > NARROW_ROWS for r in rows):  # a long sequence sharing nothing
            return pack(self._row_nodes)
        # Any rows forward the trie's nodes at least: within that, the wide ones need no pack.
        cost = forwarded(*narrow[:2]) / NARROW_IF_TOKENS_WITHIN
        if cost <= trie_size(seqs):
            return narrow
        wide = pack(self._row_nodes)
        return narrow if cost <= forwarded(*wide[:2]) else wide

    def _packed_rows_per_forward(self, max_nodes: int) -> int:
        """Packed rows per forward pass: ``batch_size`` × ``PACKED_POSITIONS_PER_UNIT``
        token positions (2 rows of 1,024 nodes at the default batch size of 64)."""
        return max(1, (self._batch_size * PACKED_POSITIONS_PER_UNIT) // max_nodes)

    def _check_packing(self, probe: _Prepared) -> bool:
        """Packing needs a model that honours custom 4-D masks and position ids: once, score
        a short probe (the last ``PROBE_TOKENS`` tokens fed for ``probe``) and two sequences
        branching from it (another last token; and that, one token longer) packed and plain,
        and fall back if they differ (a chain alone would pass on a model that ignores the
        mask). The probe is checked a second time with its shared part forwarded once as a
        key/value cache (:class:`~._packing.PrefixGroup`); if only that differs, prefixes are
        not cached. The check's tokens are counted in ``check_tokens``, not in
        ``tokens_forwarded``. With the ``packing`` option set, packing is on or off as it
        says; the cached-prefix check still runs when it is on."""
        if self.options.packing is False or not probe.targets:
            return bool(self.options.packing)
        fed = probe.fed[-PROBE_TOKENS:]
        short = _Prepared(fed, probe.targets[-len(fed) :], False)
        probes = [short, *(_Prepared(f, short.targets, False) for f in _branches(fed))]
        shared = len(fed) - len(short.targets)
        # loaded (a hub model's weights downloaded) before the check, which takes any error
        # as "this architecture cannot pack"
        self.model  # noqa: B018
        before = self.tokens_forwarded
        try:
            ok = bool(self.options.packing) or self._agrees(
                probes, min_shared=None, max_nodes=self._row_nodes
            )
            if ok and shared > 1:
                self._prefix_cache = self._agrees(probes, min_shared=shared, max_nodes=len(fed))
        finally:
            self.check_tokens += self.tokens_forwarded - before
            self.tokens_forwarded = before
        return ok

    def _agrees(
        self, probes: Sequence[_Prepared], *, min_shared: int | None, max_nodes: int | None = None
    ) -> bool:
        """Whether packed scoring of ``probes`` equals padded scoring (``min_shared``: with
        shared prefixes forwarded once, see ``_score_packed``)."""
        what = "packed scoring" if min_shared is None else "a cached shared prefix"
        try:
            packed = self._score_packed(probes, min_shared=min_shared, max_nodes=max_nodes)
        except Exception as exc:  # any failure means: this architecture cannot do it
            if is_oom(exc):
                raise
            log.info("%s: %s unavailable (%s); not used", self.spec, what, exc)
            return False
        plain = self._score_padded(probes)
        ok = all(abs(a.logprob - b.logprob) < 1e-3 for a, b in zip(packed, plain, strict=True))
        if not ok:
            log.warning("%s: %s disagrees with plain scoring; disabled", self.spec, what)
        return ok

    def _score_padded(self, prepared: Sequence[_Prepared]) -> list[ScoreResponse]:
        import torch

        order = sorted(range(len(prepared)), key=lambda i: -len(prepared[i].fed))

        def run_batch(idx: Sequence[int]) -> list[ScoreResponse]:
            rows = [prepared[i] for i in idx]
            width = max(len(r.fed) for r in rows)
            ids = torch.zeros((len(rows), width), dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for b, r in enumerate(rows):
                ids[b, : len(r.fed)] = torch.tensor(r.fed, dtype=torch.long)
                mask[b, : len(r.fed)] = 1
            # Logits from the first scored position of the batch on (rows are right-padded).
            keep = width - min(len(r.fed) - len(r.targets) for r in rows)
            with torch.inference_mode():
                logits = self._forward(ids.to(self.device), mask.to(self.device), keep=keep)
            out = []
            for b, r in enumerate(rows):
                start = len(r.fed) - len(r.targets) - (width - keep)
                out.append(_response(logits[b, start : start + len(r.targets)], r))
            return out

        results, self._batch_size = run_with_backoff(
            order, self._batch_size, run_batch, on_shrink=self._log_shrink
        )
        final = dict(zip(order, results, strict=True))
        self.tokens_forwarded += sum(len(p.fed) for p in prepared)
        return [final[i] for i in range(len(prepared))]

    def _score_packed(
        self,
        prepared: Sequence[_Prepared],
        *,
        min_shared: int | None = None,
        max_nodes: int | None = None,
    ) -> list[ScoreResponse]:
        """Score in packed trie rows of at most ``max_nodes`` nodes (default: as ``_pack``
        chooses); a run of sequences sharing at least ``min_shared`` leading tokens that does
        not fit in one row has its shared prefix forwarded once (``pack_with_prefixes``)."""
        todo = [i for i, p in enumerate(prepared) if p.targets]
        members = [prepared[i] for i in todo]
        seqs = [p.fed for p in members]
        limits = [len(p.fed) - len(p.targets) for p in members]
        if max_nodes is None:
            assert min_shared is None, "min_shared is chosen with the rows' width"
            rows, groups, max_nodes = self._pack(seqs, limits)
        else:
            rows, groups = pack_with_prefixes(
                seqs, max_nodes=max_nodes, limits=limits, min_shared=min_shared
            )
        rows.sort(key=lambda r: -len(r.tokens))
        per_batch = self._packed_rows_per_forward(max_nodes)
        final: dict[int, ScoreResponse] = {
            i: ScoreResponse(0.0, 0, True, p.truncated, len(p.fed))
            for i, p in enumerate(prepared)
            if not p.targets
        }
        results, per_batch = run_with_backoff(
            rows,
            per_batch,
            lambda batch: [self._run_rows(batch, members)],
            on_shrink=self._log_shrink,
        )
        for group in groups:
            results.append(self._run_prefix_group(group, members))
        for got in results:
            final.update((todo[m], resp) for m, resp in got)
        self.tokens_forwarded += forwarded(rows, groups)
        return [final[i] for i in range(len(prepared))]

    def _mask_dtype(self) -> Any:
        """Boolean 4-D masks where attention takes them as they are (SDPA); an additive mask
        in the model's dtype elsewhere (eager attention adds the mask to its scores)."""
        import torch

        if getattr(self.config, "_attn_implementation", None) == "sdpa":
            return torch.bool
        return next(self.model.parameters()).dtype

    def _run_rows(
        self,
        batch: Sequence[PackedRow],
        members: Sequence[_Prepared],
        prefix: tuple[int, Any] | None = None,
        ends: dict[int, Any] | None = None,
    ) -> list[tuple[int, ScoreResponse]]:
        """Forward a batch of packed rows, logits only at the members' target nodes. With
        ``prefix`` = (its length, its key/value cache), the rows continue that prefix: their
        positions start after it and every node may attend to all of it (the cache then
        holds the rows' keys and values too). ``ends``: members (generation prompts, without
        targets) whose last node's logits are wanted, filled in here."""
        import torch

        ids, pos, mask = row_tensors(batch, self._mask_dtype())
        extra: dict[str, Any] = {}
        if prefix is not None:
            length, cache = prefix
            pos = pos + length
            seen = torch.ones if mask.dtype == torch.bool else torch.zeros
            mask = torch.cat([seen((*mask.shape[:3], length), dtype=mask.dtype), mask], dim=-1)
            extra[_cache_arg(self.model)] = cache
            extra["use_cache"] = True
        keep = np.zeros(tuple(ids.shape), dtype=np.bool_)
        spans: list[tuple[int, int, list[int]]] = []  # (member, row, its target nodes)
        ending: list[tuple[int, int, int]] = []  # (member, row, its last node)
        for b, row in enumerate(batch):
            for member, path in row.members.items():
                if ends is not None and member in ends:
                    keep[b, path[-1]] = True
                    ending.append((member, b, path[-1]))
                if not members[member].targets:
                    continue
                nodes = path[len(path) - len(members[member].targets) :]
                keep[b, nodes] = True
                spans.append((member, b, nodes))
        flat = (np.cumsum(keep.ravel()) - 1).reshape(keep.shape)  # (row, node) -> kept index
        with torch.inference_mode():
            logits = self._forward(
                ids.to(self.device),
                mask.to(self.device),
                pos.to(self.device),
                keep=torch.from_numpy(keep).to(self.device),
                **extra,
            )
            logp = torch.log_softmax(logits.float(), dim=-1).cpu()
        if ends is not None:
            ends.update((member, logits[int(flat[b, node])]) for member, b, node in ending)
        if not spans:
            return []
        index = [int(flat[b, n]) for _, b, nodes in spans for n in nodes]
        targets = torch.tensor([t for m, _, _ in spans for t in members[m].targets])
        picked = logp[torch.tensor(index, dtype=torch.long)]
        token_lp = picked.gather(1, targets[:, None])[:, 0]
        is_top = picked.argmax(-1) == targets
        out, start = [], 0
        for member, _, nodes in spans:
            p, end = members[member], start + len(nodes)
            top = bool(is_top[start:end].all())
            resp = ScoreResponse(
                float(token_lp[start:end].sum()), len(nodes), top, p.truncated, len(p.fed)
            )
            out.append((member, resp))
            start = end
        return out

    def _run_prefix_group(
        self,
        group: PrefixGroup,
        members: Sequence[_Prepared],
        ends: dict[int, Any] | None = None,
        on_row: Callable[[PackedRow, Any], None] | None = None,
    ) -> list[tuple[int, ScoreResponse]]:
        """Forward the group's prefix once (keeping its key/value cache), then each row of
        its suffixes on that cache, one row at a time; after each row the cache's layers are
        set back to the prefix's keys and values (a plain layer concatenates on update, so
        they are left as they were). ``ends`` as in :meth:`_run_rows`; ``on_row(row,
        cache)`` is called after each row's forward, while the cache holds the prefix and
        the row."""
        import torch

        with torch.inference_mode():
            out = self.model.base_model(
                input_ids=torch.tensor([group.prefix], dtype=torch.long, device=self.device),
                use_cache=True,
            )
        cache = getattr(out, _cache_arg(self.model.base_model))
        _check_plain_cache(cache)
        saved = [(layer.keys, layer.values) for layer in cache.layers]
        got: list[tuple[int, ScoreResponse]] = []
        for row in group.rows:
            got += self._run_rows([row], members, (len(group.prefix), cache), ends)
            if on_row is not None:
                on_row(row, cache)
            for layer, (keys, values) in zip(cache.layers, saved, strict=True):
                layer.keys, layer.values = keys, values  # back to the prefix alone
        return got
