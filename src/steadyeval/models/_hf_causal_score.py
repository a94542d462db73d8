"""Scoring for the Hugging Face causal backend: :class:`CausalScoring`, the base of
:class:`~steadyeval.models._hf.HFCausalBackend` that holds its tokenizer side (tokenizer,
context length, token counts, lm-evaluation-harness-style text encoding, the forward pass)
and *score*: continuations' summed log-probabilities, with shared prefixes forwarded once in
packed rows (``_packing``) when the model passes a one-time check, else in padded batches.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..requests import ScoreRequest, ScoreResponse
from ._causal_text import CausalText
from ._hf_batching import is_oom, run_with_backoff
from ._hf_common import HFBackendBase
from ._hf_options import HFOptions
from ._packing import PackedRow, pack_sequences, row_tensors
from ._spec import ModelSpec

__all__ = ["CausalScoring"]

log = logging.getLogger(__name__)


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
        self._causal_text: CausalText | None = None
        self.tokens_forwarded = 0  # score tokens actually forwarded (padding excluded)

    # -- the tokenizer side ----------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = self._load_tokenizer()
        return self._tokenizer

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

    def _forward(self, input_ids: Any, attention_mask: Any, position_ids: Any = None) -> Any:
        """One forward pass (a seam for tests that inject out-of-memory errors). Scoring needs
        no key/value cache: ``use_cache=False`` keeps the model from building one per forward
        only to discard it (4–6% of forward time and its memory, bench/README.md)."""
        kwargs = {} if position_ids is None else {"position_ids": position_ids}
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **kwargs
        )
        return out.logits

    # -- score -----------------------------------------------------------------------------
    def _prepare_scores(self, requests: Sequence[ScoreRequest]) -> list[_Prepared]:
        max_len = self.max_length
        out = []
        for req in requests:
            enc = _Encoded(*self._text.encode_pair(req))
            fed = enc.tokens[:-1]
            truncated = len(fed) > max_len
            fed = fed[-max_len:]
            n = min(enc.n_cont, len(fed))
            targets = enc.tokens[len(enc.tokens) - n :] if n else []
            out.append(_Prepared(fed, targets, truncated))
        return out

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        """Score continuations; shared prefixes are forwarded once (see ``_packing``)."""
        prepared = self._prepare_scores(requests)
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

    def _check_packing(self, probe: _Prepared) -> bool:
        """Packing needs a model that honours custom 4-D masks and position ids: once, score
        the probe and two sequences branching from it (another last token; and that, one
        token longer) packed and plain, and fall back if they differ. A chain alone would
        pass on a model that ignores the mask."""
        if self.options.packing is not None:
            return self.options.packing
        if not probe.targets:
            return False
        probes = [probe, *(_Prepared(f, probe.targets, False) for f in _branches(probe.fed))]
        try:
            packed = self._score_packed(probes)
        except Exception as exc:  # any failure means: this architecture cannot be packed
            if is_oom(exc):
                raise
            log.info("%s: packed scoring unavailable (%s); using padded batches", self.spec, exc)
            return False
        plain = self._score_padded(probes)
        ok = all(abs(a.logprob - b.logprob) < 1e-3 for a, b in zip(packed, plain, strict=True))
        if not ok:
            log.warning("%s: packed scoring disagrees with plain scoring; disabled", self.spec)
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
            with torch.inference_mode():
                logits = self._forward(ids.to(self.device), mask.to(self.device))
            out = []
            for b, r in enumerate(rows):
                positions = list(range(len(r.fed) - len(r.targets), len(r.fed)))
                out.append(_response(logits[b, positions], r))
            return out

        results, self._batch_size = run_with_backoff(
            order, self._batch_size, run_batch, on_shrink=self._log_shrink
        )
        final = dict(zip(order, results, strict=True))
        self.tokens_forwarded += sum(len(p.fed) for p in prepared)
        return [final[i] for i in range(len(prepared))]

    def _score_packed(self, prepared: Sequence[_Prepared]) -> list[ScoreResponse]:
        import torch

        max_nodes = self._row_nodes
        todo = [i for i, p in enumerate(prepared) if p.targets]
        rows = pack_sequences([prepared[i].fed for i in todo], max_nodes=max_nodes)
        rows.sort(key=lambda r: -len(r.tokens))
        per_batch = max(1, (self._batch_size * 512) // max_nodes)
        final: dict[int, ScoreResponse] = {
            i: ScoreResponse(0.0, 0, True, p.truncated, len(p.fed))
            for i, p in enumerate(prepared)
            if not p.targets
        }

        def run_batch(batch: Sequence[PackedRow]) -> list[list[tuple[int, ScoreResponse]]]:
            ids, pos, mask = row_tensors(batch, next(self.model.parameters()).dtype)
            with torch.inference_mode():
                logits = self._forward(
                    ids.to(self.device), mask.to(self.device), pos.to(self.device)
                )
            # One gather and one log-softmax for every target position of the batch.
            rows_idx: list[int] = []
            nodes_idx: list[int] = []
            targets: list[int] = []
            spans: list[tuple[int, int, int, _Prepared]] = []  # (row, member, start, prepared)
            for b, row in enumerate(batch):
                for member, path in row.members.items():
                    p = prepared[todo[member]]
                    spans.append((b, member, len(targets), p))
                    rows_idx += [b] * len(p.targets)
                    nodes_idx += path[len(path) - len(p.targets) :]
                    targets += p.targets
            with torch.inference_mode():
                picked = logits[torch.tensor(rows_idx), torch.tensor(nodes_idx)].float()
                logp = torch.log_softmax(picked, dim=-1).cpu()
            target = torch.tensor(targets, dtype=torch.long)
            token_lp = logp.gather(1, target[:, None])[:, 0]
            is_top = logp.argmax(-1) == target
            out: list[list[tuple[int, ScoreResponse]]] = [[] for _ in batch]
            for b, member, start, p in spans:
                end = start + len(p.targets)
                resp = ScoreResponse(
                    float(token_lp[start:end].sum()),
                    len(p.targets),
                    bool(is_top[start:end].all()),
                    p.truncated,
                    len(p.fed),
                )
                out[b].append((todo[member], resp))
            return out

        results, per_batch = run_with_backoff(
            rows, per_batch, run_batch, on_shrink=self._log_shrink
        )
        for got in results:
            final.update(got)
        self.tokens_forwarded += sum(len(r.tokens) for r in rows)
        return [final[i] for i in range(len(prepared))]
