"""Hugging Face masked LMs (BERT, RoBERTa, ...) as cloze probes: ``hf-masked:``.

Prompts are model-agnostic: the slot to fill is written ``[Y]`` (LAMA's convention, e.g.
``"[X] was born in [Y] ."``, where the core has already put the subject's name in place of
``[X]``). The backend replaces ``[Y]`` by its tokenizer's own mask token (``[MASK]`` for BERT,
``<mask>`` for RoBERTa), or by the candidate it scores.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigError, UnsupportedRequestError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._hf_batching import run_with_backoff
from ._hf_common import HFBackendBase
from ._slots import SLOT, FilledSlot, fill_slot, fit_slot

__all__ = ["HFMaskedBackend"]

log = logging.getLogger(__name__)

_DEFAULT_MAX_LENGTH = 512


def _has_masked_head(config: Any) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES


@dataclass(frozen=True)
class _AtMask:
    """The model's prediction at one mask: the log-probabilities of the tokens asked for, and
    the most likely answer tokens (special tokens excluded) with their log-probabilities."""

    logprobs: dict[int, float]
    top: tuple[tuple[int, float], ...]


class HFMaskedBackend(HFBackendBase):
    """A masked LM from ``transformers`` (``AutoModelForMaskedLM``), used as a cloze probe.

    *top-k*: the ``[Y]`` slot becomes one mask token; the result is the k most likely
    tokens at the mask (special tokens such as ``[SEP]`` or ``[PAD]`` are never answers and
    are left out of the ranking; probabilities are still normalised over the whole
    vocabulary). With ``candidates`` on the request, only those words are ranked (LAMA's
    restricted vocabulary); each must be a single token where it stands in the prompt.
    *score*: the log-probability of the continuation (leading and trailing whitespace
    removed) filling the slot of the context. The filled prompt is tokenised as a whole and
    the filler's n tokens are located by their character offsets. One token: masked and
    scored exactly. Several tokens: pseudo-log-likelihood (PLL, Salazar et al. 2020) over the
    span: n passes, each masking one of the n tokens while the other n-1 keep their gold
    tokens, and the n log-probabilities summed; the response is flagged ``approximate``. An
    empty context means the continuation is the whole text (the PLL of a sentence).
    *generate* is not supported.

    Inputs longer than ``max_length`` tokens are cut from the left, or from the right when
    that would cut into the slot, and flagged ``truncated``.
    """

    kind = "hf-masked"
    auto_class = "AutoModelForMaskedLM"
    fills_slots = True

    def _check_config(self) -> None:
        if getattr(self.config, "is_encoder_decoder", False):
            raise ConfigError(
                f"{self.spec}: {self.model_dir} holds an encoder-decoder model "
                f"({self.config.model_type}); use hf-seq2seq: or hf:"
            )
        if not self.options.trust_remote_code and not _has_masked_head(self.config):
            raise ConfigError(
                f"{self.spec}: {self.model_dir} holds a {self.config.model_type} model, which has no "
                "masked-LM head in transformers; use hf: to pick the right backend"
            )

    # -- cheap parts -------------------------------------------------------------------
    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"score", "top-k"})

    def _prepare_tokenizer(self, tok: Any) -> Any:
        if not getattr(tok, "is_fast", False):
            raise ConfigError(
                f"{self.spec}: the masked backend needs a fast tokenizer (tokenizer.json) "
                "to locate the filled slot by character offsets"
            )
        if tok.mask_token_id is None:
            raise ConfigError(f"{self.spec}: the tokenizer has no mask token")
        return tok

    @property
    def max_length(self) -> int:
        """Input tokens the model sees (special tokens included)."""
        if self.options.max_length:
            return self.options.max_length
        _ = self.tokenizer
        limits = [v for v in (self._tokenizer_limit,) if v]
        positions = getattr(self.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limits.append(positions)
        return min(limits) if limits else _DEFAULT_MAX_LENGTH

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        mask = self.tokenizer.mask_token
        return [len(self.tokenizer(t.replace(SLOT, mask))["input_ids"]) for t in texts]

    # -- prompts ---------------------------------------------------------------------------
    def _split(self, prompt: str, chat: bool) -> tuple[str, str]:
        """The text left and right of the one ``[Y]`` slot."""
        if chat:
            raise ConfigError(
                f"{self.spec}: a masked LM has no chat format; set chat: false for this model"
            )
        n = prompt.count(SLOT)
        if n != 1:
            raise ConfigError(
                f"{self.spec}: a masked-LM prompt must contain the slot {SLOT} exactly once "
                f"(e.g. '[X] was born in {SLOT} .'), found {n} in {prompt!r:.120}; use a cloze "
                "template whose question marks the answer's place with [Y]"
            )
        left, _, right = prompt.partition(SLOT)
        return left, right

    def _fill(self, left: str, filler: str, right: str, prompt: str) -> FilledSlot:
        """Tokenise ``left + filler + right`` and find the filler's tokens by offsets."""
        if not filler:
            raise ConfigError(f"{self.spec}: nothing to fill the slot with in {prompt!r:.120}")
        try:
            return fill_slot(self.tokenizer, left, filler, right, self.max_length)
        except ValueError as e:
            raise ConfigError(f"{self.spec}: {e}") from e

    def _window(self, ids: list[int], special: list[int], start: int, end: int) -> FilledSlot:
        """Cut ``ids`` to ``max_length`` (:func:`~steadyeval.models.fit_slot`)."""
        try:
            return fit_slot(ids, special, start, end, self.max_length)
        except ValueError as e:
            raise ConfigError(f"{self.spec}: {e}") from e

    def _masked_prompt(self, prompt: str, chat: bool) -> FilledSlot:
        """The prompt with ``[Y]`` replaced by the mask token (the slot is one token)."""
        left, right = self._split(prompt, chat)
        tok = self.tokenizer
        enc = tok(left + tok.mask_token + right, return_special_tokens_mask=True)
        ids: list[int] = enc["input_ids"]
        where = [i for i, t in enumerate(ids) if t == tok.mask_token_id]
        if len(where) != 1:
            raise ConfigError(
                f"{self.spec}: expected one mask token in {prompt!r:.120}, found {len(where)} "
                f"(does the prompt contain {tok.mask_token!r} itself?)"
            )
        return self._window(ids, enc["special_tokens_mask"], where[0], where[0] + 1)

    # -- forward passes --------------------------------------------------------------------
    def _predict(
        self,
        inputs: Sequence[tuple[tuple[int, ...], int]],
        targets: Sequence[int | None],
        k: int = 1,
    ) -> list[_AtMask]:
        """What the model predicts at position ``pos`` of each ``(ids, pos)`` input (where
        ``ids[pos]`` is the mask token): the log-probability of the matching target token and
        the ``k`` most likely answer tokens. Identical inputs are forwarded once."""
        import torch

        unique: dict[tuple[tuple[int, ...], int], int] = {}
        wanted: list[set[int]] = []
        for key, target in zip(inputs, targets, strict=True):
            u = unique.setdefault(key, len(unique))
            if u == len(wanted):
                wanted.append(set())
            if target is not None:
                wanted[u].add(target)
        keys = list(unique)
        pad = self.tokenizer.pad_token_id or 0
        special = sorted(set(self.tokenizer.all_special_ids))
        order = sorted(range(len(keys)), key=lambda i: -len(keys[i][0]))

        def run_batch(idx: Sequence[int]) -> list[_AtMask]:
            width = max(len(keys[i][0]) for i in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for b, i in enumerate(idx):
                seq = keys[i][0]
                ids[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[b, : len(seq)] = 1
            with torch.inference_mode():
                logits = self._forward(ids.to(self.device), mask.to(self.device))
                rows = torch.arange(len(idx), device=logits.device)
                pos = torch.tensor([keys[i][1] for i in idx], device=logits.device)
                logp = torch.log_softmax(logits[rows, pos].float(), dim=-1)
                answers = logp.clone()
                answers[:, special] = float("-inf")  # [CLS], [SEP], [PAD], ... are no answers
                n = min(max(k, 1), logp.shape[-1] - len(special))
                top_vals, top_ids = (t.cpu().tolist() for t in answers.topk(n, dim=-1))
                picked = [sorted(wanted[i]) for i in idx]
                values = [logp[b, t].cpu().tolist() if t else [] for b, t in enumerate(picked)]
            return [
                _AtMask(
                    dict(zip(picked[b], values[b], strict=True)),
                    tuple(zip(top_ids[b], top_vals[b], strict=True)),
                )
                for b in range(len(idx))
            ]

        results, self._batch_size = run_with_backoff(
            order, self._batch_size, run_batch, on_shrink=self._log_shrink
        )
        by_key = dict(zip(order, results, strict=True))
        return [by_key[unique[key]] for key in inputs]

    def _forward(self, input_ids: Any, attention_mask: Any) -> Any:
        """One forward pass (a seam for tests that inject out-of-memory errors)."""
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

    # -- score -----------------------------------------------------------------------------
    def _filled_for(self, context: str, filler: str, chat: bool) -> FilledSlot:
        if context == "" and not chat:
            return self._fill("", filler, "", filler)
        left, right = self._split(context, chat)
        return self._fill(left, filler, right, context)

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        filled = [self._filled_for(r.context, r.continuation.strip(), r.chat) for r in requests]
        mask_id = self.tokenizer.mask_token_id
        inputs: list[tuple[tuple[int, ...], int]] = []
        targets: list[int | None] = []
        for f in filled:
            for p in range(f.start, f.end):  # one pass per filler token, only it masked
                inputs.append(((*f.ids[:p], mask_id, *f.ids[p + 1 :]), p))
                targets.append(f.ids[p])
        predictions = iter(self._predict(inputs, targets))
        out = []
        for f in filled:
            total, greedy = 0.0, True
            for p in range(f.start, f.end):
                at = next(predictions)
                total += at.logprobs[f.ids[p]]
                greedy = greedy and at.top[0][0] == f.ids[p]
            n = f.end - f.start
            out.append(
                ScoreResponse(
                    logprob=total,
                    n_tokens=n,
                    is_greedy=greedy,
                    truncated=f.truncated,
                    n_input_tokens=len(f.ids),
                    approximate=n > 1,
                )
            )
        return out

    # -- top-k -----------------------------------------------------------------------------
    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        out: dict[int, TopKResponse] = {}
        plain = [i for i, r in enumerate(requests) if not r.candidates]
        ranked = [i for i, r in enumerate(requests) if r.candidates]
        if plain:
            out.update(
                zip(plain, self._top_k_vocabulary([requests[i] for i in plain]), strict=True)
            )
        if ranked:
            got = self._top_k_candidates([requests[i] for i in ranked])
            out.update(zip(ranked, got, strict=True))
        return [out[i] for i in range(len(requests))]

    def _top_k_vocabulary(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        prompts = [self._masked_prompt(r.prompt, r.chat) for r in requests]
        k = max(r.k for r in requests)
        predictions = self._predict([(f.ids, f.start) for f in prompts], [None] * len(prompts), k)
        return [
            TopKResponse(
                tokens=tuple(self.tokenizer.decode([t]) for t, _ in at.top[: r.k]),
                logprobs=tuple(v for _, v in at.top[: r.k]),
                n_input_tokens=len(f.ids),
                truncated=f.truncated,
            )
            for r, f, at in zip(requests, prompts, predictions, strict=True)
        ]

    def _top_k_candidates(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        mask_id = self.tokenizer.mask_token_id
        inputs: list[tuple[tuple[int, ...], int]] = []
        targets: list[int | None] = []
        filled: list[list[FilledSlot]] = []
        for r in requests:
            left, right = self._split(r.prompt, r.chat)
            row = []
            for cand in r.candidates:
                f = self._fill(left, cand.strip(), right, r.prompt)
                if f.end - f.start != 1:
                    pieces = self.tokenizer.convert_ids_to_tokens(list(f.ids[f.start : f.end]))
                    raise ConfigError(
                        f"{self.spec}: candidate {cand!r} is {f.end - f.start} tokens {pieces} in "
                        f"{r.prompt!r:.120}; top-k over candidates needs single-token candidates "
                        "(LAMA's restricted vocabulary). Rank multi-token candidates with "
                        "scoring: option-logprob, which scores them by pseudo-log-likelihood"
                    )
                inputs.append(((*f.ids[: f.start], mask_id, *f.ids[f.end :]), f.start))
                targets.append(f.ids[f.start])
                row.append(f)
            filled.append(row)
        predictions = iter(self._predict(inputs, targets))
        out = []
        for r, row in zip(requests, filled, strict=True):
            scored = [
                (c, next(predictions).logprobs[f.ids[f.start]])
                for c, f in zip(r.candidates, row, strict=True)
            ]
            best = sorted(scored, key=lambda cs: -cs[1])[: r.k]
            out.append(
                TopKResponse(
                    tokens=tuple(c for c, _ in best),
                    logprobs=tuple(v for _, v in best),
                    n_input_tokens=max(len(f.ids) for f in row),
                    truncated=any(f.truncated for f in row),
                )
            )
        return out

    # -- generate --------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        raise UnsupportedRequestError(
            f"backend {self.spec} (a masked LM) does not support generate requests "
            f"(it supports: {', '.join(sorted(self.supported_kinds))}); use scoring: top-k "
            "or option-logprob with a cloze template"
        )
