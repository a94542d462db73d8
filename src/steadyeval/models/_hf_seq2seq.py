"""Hugging Face encoder-decoder models (T5, Flan-T5, UnifiedQA, BART): ``hf-seq2seq:``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .._errors import ConfigError, DataError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._chat import chat_prompt, check_chat_template
from ._generated_text import cut_at_stop, generated_text
from ._hf_batching import BatchedGeneration, run_with_backoff, stop_on_text
from ._hf_common import HFBackendBase, check_generation_room
from ._spec import echo

__all__ = ["HFSeq2SeqBackend"]

log = logging.getLogger(__name__)

_DEFAULT_MAX_LENGTH = 512  # T5's and UnifiedQA's input length
_RAW_KEYS = (
    "n_positions",
    "max_position_embeddings",
    "decoder_start_token_id",
    "forced_bos_token_id",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
)


@dataclass(frozen=True)
class _Input:
    """Encoder token ids after right truncation."""

    ids: tuple[int, ...]
    truncated: bool


@dataclass(frozen=True)
class _Pair:
    source: _Input
    target: tuple[int, ...]  # decoder target, the tokenizer's special tokens (EOS) included


class HFSeq2SeqBackend(BatchedGeneration, HFBackendBase):
    """An encoder-decoder model from ``transformers`` (``AutoModelForSeq2SeqLM``).

    *score*: the context is the encoder input and the continuation the decoder target; the
    result is the summed log-probability of the target's tokens, **EOS included** (the
    probability that the model's whole answer is exactly this text). Leading whitespace of the
    continuation is removed first: it separates context and answer in a causal prompt, while a
    decoder target starts a fresh sequence (T5's tokenizer drops it anyway; BART's would turn
    it into a different first token than the ones its answers start with).
    *generate*: greedy (batched) or sampled (seeded per request) decoding with stop strings;
    the model's own generation defaults for beams, length penalties or n-gram blocking are not
    applied. *top-k*: the k most likely first answer tokens, or the k most likely of the
    request's candidates scored as whole answers.

    Encoder inputs longer than ``max_length`` tokens (option, else the model config, else the
    tokenizer's limit, else 512) keep their beginning: the end is cut (UnifiedQA's question
    comes first, so the paragraph loses its tail) and the row is flagged ``truncated``.
    """

    kind = "hf-seq2seq"
    auto_class = "AutoModelForSeq2SeqLM"
    reads_special_tokens = True

    def _check_config(self) -> None:
        if not getattr(self.config, "is_encoder_decoder", False):
            raise ConfigError(
                f"{self.spec}: {self.model_dir} holds a {self.config.model_type} model, which is not "
                "an encoder-decoder; use hf: to pick the right backend"
            )

    # -- cheap parts -------------------------------------------------------------------
    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"score", "generate", "top-k"})

    def precheck(self, requests: Sequence[Request]) -> None:
        """A decoder with a learned position table (BART, Marian, Pegasus: a
        ``max_position_embeddings`` and no relative attention) cannot generate past it; T5's
        relative positions have no such bound."""
        positions = getattr(self.config, "max_position_embeddings", None)
        relative = hasattr(self.config, "relative_attention_num_buckets")
        if isinstance(positions, int) and positions > 0 and not relative:
            check_generation_room(self, requests, positions)
        check_chat_template(self.tokenizer, requests, self.spec)

    def _prepare_tokenizer(self, tok: Any) -> Any:
        tok.truncation_side = "right"
        return tok

    @property
    def max_length(self) -> int:
        """Encoder input tokens the model sees (special tokens included)."""
        if self.options.max_length:
            return self.options.max_length
        for attr in ("n_positions", "max_position_embeddings"):
            value = self._token_id(attr)
            if isinstance(value, int) and value > 0:
                return value
        _ = self.tokenizer
        return self._tokenizer_limit or _DEFAULT_MAX_LENGTH

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        special = self.options.special_tokens
        return [len(self.tokenizer(t, add_special_tokens=special)["input_ids"]) for t in texts]

    @cached_property
    def _raw_config(self) -> dict[str, Any]:
        """Token ids and lengths from ``config.json`` and ``generation_config.json`` (the
        latter wins), read as JSON: cheap, and independent of which keys a config class keeps
        (recent ``transformers`` drop e.g. BART's ``forced_bos_token_id`` from the config)."""
        out: dict[str, Any] = {}
        for name in ("config.json", "generation_config.json"):
            path = self.model_dir / name
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                out.update({k: data[k] for k in _RAW_KEYS if data.get(k) is not None})
        return out

    def _token_id(self, name: str) -> Any:
        """A config value: an int (``eos_token_id`` may be a list of ints), or None."""
        value = self._raw_config.get(name)
        if value is None:
            value = getattr(self.config, name, None)
        if value is None:
            value = getattr(getattr(self.config, "decoder", None), name, None)
        return value

    @property
    def _decoder_prefix(self) -> list[int]:
        """What the decoder is fed before the answer's first token: the start token, and the
        forced BOS for models that always begin their output with it (BART-large)."""
        start = self._token_id("decoder_start_token_id")
        if start is None:
            start = self._token_id("pad_token_id")
        if not isinstance(start, int):
            raise ConfigError(f"{self.spec}: the model config has no decoder_start_token_id")
        forced = self._token_id("forced_bos_token_id")
        return [start, forced] if isinstance(forced, int) else [start]

    @property
    def _pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self._token_id("pad_token_id")
        return int(pad) if isinstance(pad, int) else 0

    def _source(
        self, text: str, chat: bool, system: str | None, turns: Sequence[tuple[str, str]] = ()
    ) -> _Input:
        """Encoder ids of ``text`` (with the tokenizer's special tokens unless the
        ``special_tokens`` option is off), cut on the right."""
        if chat:
            text = chat_prompt(self.tokenizer, text, system, self.spec, turns)
        tok, special = self.tokenizer, self.options.special_tokens
        ids: list[int] = tok(text, add_special_tokens=special)["input_ids"]
        if not ids:  # only without special tokens: T5 always adds </s>
            raise DataError(
                f"{self.spec}: the prompt '{echo(text, 60)}' has no tokens and "
                "special_tokens=false adds none; an encoder-decoder model needs at least one "
                "input token (give the prompt some text, or leave special_tokens on)"
            )
        limit = self.max_length
        if len(ids) <= limit:
            return _Input(tuple(ids), False)
        cut: list[int] = tok(text, truncation=True, max_length=limit, add_special_tokens=special)[
            "input_ids"
        ]
        return _Input(tuple(cut), True)

    def _target(self, continuation: str) -> tuple[int, ...]:
        """Decoder target: the continuation without leading whitespace, with the special
        tokens the tokenizer adds (T5: ``</s>`` appended; BART: ``<s>...</s>``). A forced BOS
        is part of the decoder prefix, so it is not repeated at the start of the target."""
        ids: list[int] = self.tokenizer(continuation.lstrip())["input_ids"]
        prefix = self._decoder_prefix
        if len(prefix) > 1 and ids and ids[0] == prefix[-1]:
            ids = ids[1:]
        return tuple(ids)

    # -- forward passes --------------------------------------------------------------------
    def _decoder_logits(self, pairs: Sequence[tuple[_Input, Sequence[int]]]) -> Any:
        """Decoder logits (batch, decoder length, vocabulary), on the model's device, for
        (encoder input, decoder input) pairs; decoder inputs are right-padded.

        Each distinct encoder input in the batch is encoded once and shared by every pair
        that uses it (a multiple-choice item's options share one paragraph).
        """
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        sources: dict[tuple[int, ...], int] = {}
        for src, _ in pairs:
            sources.setdefault(src.ids, len(sources))
        pad = self._pad_id
        enc_width = max(len(s) for s in sources)
        enc_ids = torch.full((len(sources), enc_width), pad, dtype=torch.long)
        enc_mask = torch.zeros((len(sources), enc_width), dtype=torch.long)
        for s, row in sources.items():
            enc_ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
            enc_mask[row, : len(s)] = 1
        dec_width = max(len(d) for _, d in pairs)
        dec_ids = torch.full((len(pairs), dec_width), pad, dtype=torch.long)
        for b, (_, d) in enumerate(pairs):
            dec_ids[b, : len(d)] = torch.tensor(list(d), dtype=torch.long)
        device = self.device
        index = torch.tensor([sources[src.ids] for src, _ in pairs], dtype=torch.long).to(device)
        with torch.inference_mode():
            enc_mask = enc_mask.to(device)
            hidden = self.model.get_encoder()(
                input_ids=enc_ids.to(device), attention_mask=enc_mask
            ).last_hidden_state
            return self.model(
                encoder_outputs=BaseModelOutput(last_hidden_state=hidden[index]),
                attention_mask=enc_mask[index],
                decoder_input_ids=dec_ids.to(device),
            ).logits

    def _order(self, sources: Sequence[_Input]) -> list[int]:
        """Longest inputs first; equal inputs next to each other (so they share a batch)."""
        return sorted(range(len(sources)), key=lambda i: (-len(sources[i].ids), sources[i].ids))

    # -- score -----------------------------------------------------------------------------
    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        pairs = [
            _Pair(self._source(r.context, r.chat, r.system, r.turns), self._target(r.continuation))
            for r in requests
        ]
        return self._score_pairs(pairs)

    def _score_pairs(self, pairs: Sequence[_Pair]) -> list[ScoreResponse]:
        import torch

        prefix = self._decoder_prefix

        def run_batch(pos: Sequence[int]) -> list[ScoreResponse]:
            idx = [todo[j] for j in pos]
            # The decoder sees prefix + target[:-1]; position j predicts token j + 1, so the
            # target's tokens are predicted from position len(prefix) - 1 on (a forced BOS in
            # the prefix is given, not scored).
            feeds = [(pairs[i].source, [*prefix, *pairs[i].target][:-1]) for i in idx]
            width = max(len(pairs[i].target) for i in idx)
            target = torch.zeros((len(idx), width), dtype=torch.long)
            for b, i in enumerate(idx):
                target[b, : len(pairs[i].target)] = torch.tensor(pairs[i].target)
            with torch.inference_mode():
                logits = self._decoder_logits(feeds)[:, len(prefix) - 1 :].float()
                target = target.to(logits.device)
                picked = logits.gather(-1, target[..., None]).squeeze(-1)
                token_lp = (picked - torch.logsumexp(logits, dim=-1)).cpu()
                hit = (logits.argmax(-1) == target).cpu()
            out = []
            for b, i in enumerate(idx):
                pair, n = pairs[i], len(pairs[i].target)
                out.append(
                    ScoreResponse(
                        logprob=float(token_lp[b, :n].sum()),
                        n_tokens=n,
                        is_greedy=bool(hit[b, :n].all()),
                        truncated=pair.source.truncated,
                        n_input_tokens=len(pair.source.ids),
                    )
                )
            return out

        todo = [i for i, p in enumerate(pairs) if p.target]
        got = dict(
            zip(todo, self._run_ordered([pairs[i].source for i in todo], run_batch), strict=True)
        )
        # A target with no tokens at all (a tokenizer that adds no end token, and an empty
        # continuation) has probability 1.
        empty = {
            i: ScoreResponse(0.0, 0, True, p.source.truncated, len(p.source.ids))
            for i, p in enumerate(pairs)
            if not p.target
        }
        return [got[i] if i in got else empty[i] for i in range(len(pairs))]

    def _run_ordered(self, sources: Sequence[_Input], fn: Any) -> list[Any]:
        order = self._order(sources)
        results, self._batch_size = run_with_backoff(
            order, self._batch_size, fn, on_shrink=self._log_shrink
        )
        final = dict(zip(order, results, strict=True))
        return [final[i] for i in range(len(sources))]

    # -- top-k -----------------------------------------------------------------------------
    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        out: dict[int, TopKResponse] = {}
        plain = [i for i, r in enumerate(requests) if not r.candidates]
        ranked = [i for i, r in enumerate(requests) if r.candidates]
        if plain:
            got = self._top_k_tokens([requests[i] for i in plain])
            out.update(zip(plain, got, strict=True))
        if ranked:
            got = self._top_k_candidates([requests[i] for i in ranked])
            out.update(zip(ranked, got, strict=True))
        return [out[i] for i in range(len(requests))]

    def _top_k_tokens(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        import torch

        sources = [self._source(r.prompt, r.chat, r.system, r.turns) for r in requests]
        prefix = self._decoder_prefix

        def run_batch(idx: Sequence[int]) -> list[TopKResponse]:
            with torch.inference_mode():
                logits = self._decoder_logits([(sources[i], prefix) for i in idx])
                logp = torch.log_softmax(logits[:, -1].float(), dim=-1).cpu()
            out = []
            for b, i in enumerate(idx):
                vals, toks = logp[b].topk(min(requests[i].k, logp.shape[-1]))
                out.append(
                    TopKResponse(
                        tokens=tuple(self.tokenizer.decode([int(t)]) for t in toks),
                        logprobs=tuple(float(v) for v in vals),
                        n_input_tokens=len(sources[i].ids),
                        truncated=sources[i].truncated,
                    )
                )
            return out

        return self._run_ordered(sources, run_batch)

    def _top_k_candidates(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        """Every candidate scored as a whole answer (as :meth:`score` does); the best k."""
        pairs: list[_Pair] = []
        spans: list[tuple[int, int]] = []
        for r in requests:
            source = self._source(r.prompt, r.chat, r.system, r.turns)
            start = len(pairs)
            pairs.extend(_Pair(source, self._target(c)) for c in r.candidates)
            spans.append((start, len(pairs)))
        scores = self._score_pairs(pairs)
        out = []
        for r, (a, b) in zip(requests, spans, strict=True):
            ranked = sorted(
                zip(r.candidates, scores[a:b], strict=True), key=lambda cs: -cs[1].logprob
            )[: r.k]
            out.append(
                TopKResponse(
                    tokens=tuple(c for c, _ in ranked),
                    logprobs=tuple(s.logprob for _, s in ranked),
                    n_input_tokens=scores[a].n_input_tokens,
                    truncated=scores[a].truncated,
                )
            )
        return out

    # -- generate --------------------------------------------------------------------------
    def _generation_config(self, first: GenerateRequest, sample: bool) -> Any:
        """Greedy or pure sampling: only the model's token ids are taken from its defaults."""
        from transformers import GenerationConfig

        prefix = self._decoder_prefix
        eos = self._token_id("eos_token_id")
        kwargs: dict[str, Any] = {
            "decoder_start_token_id": prefix[0],
            "bos_token_id": self._token_id("bos_token_id"),
            "eos_token_id": self.tokenizer.eos_token_id if eos is None else eos,
            "pad_token_id": self._pad_id,
            "max_new_tokens": first.max_new_tokens,
            "num_beams": 1,
            "do_sample": sample,
        }
        if len(prefix) > 1:
            kwargs["forced_bos_token_id"] = prefix[1]
        if sample:
            kwargs.update(temperature=first.temperature, top_p=first.top_p, top_k=0)
        return GenerationConfig(**kwargs)  # type: ignore[no-untyped-call]

    def _generate_batch(
        self, reqs: Sequence[GenerateRequest], seed: int | None
    ) -> list[GenerateResponse]:
        import torch

        first = reqs[0]
        sources = [self._source(r.prompt, r.chat, r.system, r.turns) for r in reqs]
        pad = self._pad_id
        width = max(len(s.ids) for s in sources)
        ids = torch.full((len(reqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(reqs), width), dtype=torch.long)
        for b, s in enumerate(sources):
            ids[b, : len(s.ids)] = torch.tensor(s.ids, dtype=torch.long)
            mask[b, : len(s.ids)] = 1
        config = self._generation_config(first, sample=seed is not None)
        prefix = self._decoder_prefix
        stopping = (
            stop_on_text(self.tokenizer, first.stop, len(prefix), [prefix] * len(reqs))
            if any(first.stop)
            else None
        )
        gen = self._generate_with(ids, mask, config, seed, stopping)
        eos = config.eos_token_id
        eos_ids = set(eos) if isinstance(eos, list) else {eos}
        out = []
        for b, s in enumerate(sources):
            new = [int(t) for t in gen[b, 1:].tolist()]  # after the decoder start token
            n_new = len(new)
            if len(prefix) > 1 and new[:1] == prefix[1:]:
                new = new[1:]  # the forced BOS is structure, not output
            hit_eos = False
            for k, t in enumerate(new):
                if t in eos_ids:
                    new, hit_eos = new[:k], True
                    break
            while new and new[-1] == pad:
                new.pop()
            # The decoder's prompt is its start tokens, which write no text: the answer is
            # a text of its own (T5's "▁Paris" is "Paris", as a server returns it).
            text, cut = cut_at_stop(generated_text(self.tokenizer, prefix, new), first.stop)
            finish = "length" if not (cut or hit_eos) and n_new >= first.max_new_tokens else "stop"
            out.append(
                GenerateResponse(
                    text=text,
                    n_input_tokens=len(s.ids),
                    n_output_tokens=len(new),
                    truncated=s.truncated,
                    finish_reason=finish,
                )
            )
        return out
