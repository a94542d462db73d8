"""Hugging Face ``transformers`` causal LMs (``hf:`` picks the architecture from the config).

:func:`load_hf` chooses the backend; :class:`HFCausalBackend` adds *top-k* and *generate*
(batched greedy decoding, packed so shared prompt prefixes are prefilled once, or sampled)
to its base in ``_hf_causal_score``, which holds the tokenizer side and *score*.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._errors import ModelSpecError
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
from ._backend import Backend
from ._chat import check_chat_template
from ._generated_text import cut_at_stop, generated_text
from ._hf_batching import (
    BatchedGeneration,
    is_oom,
    run_with_backoff,
    sample_seed,
    stop_on_text,
)
from ._hf_causal_score import CausalScoring, _branches, _Prepared
from ._hf_common import check_generation_room
from ._hf_options import HFOptions, load_config, resolve_model_dir
from ._joint_prefill import score_and_generate as joint_score_and_generate
from ._packed_decode import (
    Decoded,
    Prefill,
    UnsupportedCache,
    cache_bytes_per_position,
    logit_gap,
    packed_greedy,
)
from ._sampled_decode import Sampling, sample_group
from ._spec import ModelSpec

__all__ = ["HFCausalBackend", "load_hf"]

log = logging.getLogger(__name__)


def load_hf(spec: ModelSpec) -> Backend:
    """``hf:``: read the config and choose the causal, seq2seq or masked backend."""
    options = HFOptions.from_spec(spec)
    model_dir = resolve_model_dir(spec, options, weights=False)  # weights on first use
    config = load_config(model_dir, options)
    archs = " ".join(getattr(config, "architectures", None) or [])
    if getattr(config, "is_encoder_decoder", False):
        kind = "seq2seq"
    elif "ForSequenceClassification" in archs or "ForMultipleChoice" in archs:
        kind = "classifier"
    elif "MaskedLM" in archs or config.model_type in {"bert", "roberta", "distilbert", "electra"}:
        kind = "masked"
    else:
        kind = "causal"
    resolved = (options, model_dir, config)
    if kind == "causal":
        return HFCausalBackend(spec, _resolved=resolved)
    try:
        module = importlib.import_module(f"steadyeval.models._hf_{kind}")
    except ModuleNotFoundError:
        raise ModelSpecError(
            f"model {spec.name!r} is a {kind} model ({config.model_type}); "
            f"this version of steadyeval has no hf-{kind} backend"
        ) from None
    names = {"seq2seq": "HFSeq2SeqBackend", "classifier": "HFClassifierBackend"}
    cls = getattr(module, names.get(kind, "HFMaskedBackend"))
    backend: Backend = cls(spec, _resolved=resolved)
    return backend


# Packed generation decodes in groups of at most batch_size × this many cached positions
# (issue-12 benchmark, batch 64: 64 → 784 MB peak RSS, 25.5 s; 128 → 968 MB, 22–26 s;
# 256 → 1,110 MB, 22–23 s: memory grows with it, time barely moves past 128).
DECODE_POSITIONS_PER_ROW = 128

#: A decode group's keys and values take at most this many bytes on a CPU (on small models
#: the positions budget binds first: 8,192 positions of a 12M GPT-2 are 160 MiB). A larger
#: group makes a step cheaper per row, but slowly, while its cache sets a run's peak memory:
#: an 89M GPT-2 with 450-token caches took 6.3 ms per row and step at 10 rows (333 MiB of
#: cache), 4.9 ms at 16 (533 MiB) (issue 22). On a GPU the cap is a share of the device's
#: free memory.
DECODE_CACHE_BYTES_CPU = 384 * 2**20
DECODE_CACHE_GPU_SHARE = 0.25

# The one-time check of packed generation decodes the probe prompt's last PROBE_TOKENS tokens
# (and two branches of them) for at most PROBE_STEPS steps: enough to exercise the trie mask,
# the positions, the gathered cache and decoding, at about 1% of a run's cost (full-length
# probes took 22-48% of the issue-22 benchmark's quick and tiny runs).
PROBE_TOKENS = 16
PROBE_STEPS = 3
# Largest next-token log-probability difference the check accepts in 32-bit (or wider)
# floats and in half precision, which rounds more (a wrong mask or cache moves them by far
# more: 0.6 on the tiny test model, against ~1e-6 when right).
PROBE_TOLERANCE = 1e-3
PROBE_TOLERANCE_HALF = 5e-2


def _spaced(prompt: str, candidate: str) -> str:
    """A candidate as a continuation: preceded by a space unless the prompt ends in one."""
    return candidate if not prompt or prompt[-1].isspace() else " " + candidate


class HFCausalBackend(BatchedGeneration, CausalScoring):
    """A causal LM from ``transformers``.

    *score*: the summed log-probability of the continuation's tokens, with the
    context/continuation split done as lm-evaluation-harness does (trailing whitespace of the
    context moves to the continuation; the pair is encoded whole and the context's tokens are
    cut off), so results match its ``loglikelihood``. An empty context conditions on the
    tokenizer's BOS (or EOS) token. Over-long inputs are truncated on the left and flagged.
    *generate*: greedy (batched) or sampled (seeded per request; the samples of one prompt
    prefilled once and decoded together) decoding with stop strings.
    *top-k*: the k most likely next tokens.
    """

    kind = "hf-causal"
    auto_class = "AutoModelForCausalLM"

    def __init__(
        self, spec: ModelSpec, *, _resolved: tuple[HFOptions, Path, Any] | None = None
    ) -> None:
        super().__init__(spec, _resolved=_resolved)
        self._packed_generation: bool | None = None
        self.joint_prompts = 0  # greedy prompts prefilled with the scoring rows
        self.joint_prompt_tokens = 0  # their tokens forwarded there beyond scoring's
        self._cache_bytes: int | None = None  # keys and values per cached position
        self._grouped_sampling = True  # False once the model's cache proved unsupported

    # -- cheap parts -------------------------------------------------------------------
    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"score", "generate", "top-k"})

    def precheck(self, requests: Sequence[Request]) -> None:
        """Generation must leave the prompt room in the model's positions: the prompt keeps
        ``max_length - max_new_tokens`` tokens, so a budget of ``max_length`` or more would
        index past the position table (an ``IndexError`` deep in torch)."""
        check_generation_room(self, requests, self.max_length)
        check_chat_template(self.tokenizer, requests, self.spec)

    # -- score and generate together -------------------------------------------------------
    @property
    def joint_prefill(self) -> bool:
        """True unless packing is off: greedy prompts that share a prefix with scored
        sequences are prefilled in the scoring rows (:meth:`score_and_generate`)."""
        return self.options.packing is not False

    def score_and_generate(
        self, scores: Sequence[ScoreRequest], generates: Sequence[GenerateRequest]
    ) -> tuple[list[ScoreResponse], list[GenerateResponse]]:
        """``score`` and ``generate`` in one call: a greedy prompt sharing at least half of
        its tokens with a scored sequence joins the scoring trie, so the shared prefix is
        forwarded once for both (``_joint_prefill``); the responses are those of ``score``
        and ``generate`` (within float tolerance; greedy tokens the same)."""
        if not scores or not any(r.temperature == 0 for r in generates):
            return super().score_and_generate(scores, generates)  # nothing to share
        return joint_score_and_generate(self, scores, generates, self._decode_budget())

    def _decode_budget(self) -> int:
        """Cached token positions per decode group: ``batch_size`` ×
        ``DECODE_POSITIONS_PER_ROW``, and at most ``DECODE_CACHE_BYTES_CPU`` of keys and
        values on a CPU (``DECODE_CACHE_GPU_SHARE`` of the free memory on a GPU)."""
        positions = self._batch_size * DECODE_POSITIONS_PER_ROW
        if self._cache_bytes is None:
            self._cache_bytes = cache_bytes_per_position(self.model)
        if not self._cache_bytes:
            return positions
        if self.device.type == "cuda":
            import torch

            cap = int(torch.cuda.mem_get_info(self.device)[0] * DECODE_CACHE_GPU_SHARE)
        else:
            cap = DECODE_CACHE_BYTES_CPU
        return max(1, min(positions, cap // self._cache_bytes))

    # -- top-k -----------------------------------------------------------------------------
    def _prompt_ids(
        self,
        prompt: str,
        chat: bool,
        system: str | None,
        room: int,
        turns: Sequence[tuple[str, str]] = (),
    ) -> tuple[list[int], bool]:
        text = self._text.chat(prompt, system, turns) if chat else prompt
        ids = self._text.encode(text) or [self._text.prefix_token()]
        limit = max(1, self.max_length - room)
        return ids[-limit:], len(ids) > limit

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        """The k most likely next tokens. With ``candidates``, the candidates are ranked by
        their log-probability as continuations (multi-token candidates scored exactly) and the
        best k returned. (Cloze prompts with a ``[Y]`` slot are read by the runner's
        :class:`~steadyeval.models.SlotReader`.)"""
        out: dict[int, TopKResponse] = {}
        plain = [i for i, r in enumerate(requests) if not r.candidates]
        ranked = [i for i, r in enumerate(requests) if r.candidates]
        if plain:
            got = self._next_tokens([requests[i] for i in plain])
            out.update(zip(plain, got, strict=True))
        if ranked:
            scores = [
                ScoreRequest(
                    requests[i].prompt,
                    _spaced(requests[i].prompt, c),
                    chat=requests[i].chat,
                    system=requests[i].system,
                    turns=requests[i].turns,
                )
                for i in ranked
                for c in requests[i].candidates
            ]
            results = iter(self.score(scores))
            for i in ranked:
                r = requests[i]
                got_scores = [next(results) for _ in r.candidates]
                order = sorted(range(len(r.candidates)), key=lambda j: -got_scores[j].logprob)[
                    : r.k
                ]
                out[i] = TopKResponse(
                    tokens=tuple(r.candidates[j] for j in order),
                    logprobs=tuple(got_scores[j].logprob for j in order),
                    n_input_tokens=max(s.n_input_tokens for s in got_scores),
                    truncated=any(s.truncated for s in got_scores),
                )
        return [out[i] for i in range(len(requests))]

    def _next_tokens(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        import torch

        prepared = [self._prompt_ids(r.prompt, r.chat, r.system, 0, r.turns) for r in requests]
        order = sorted(range(len(prepared)), key=lambda i: -len(prepared[i][0]))

        def run_batch(idx: Sequence[int]) -> list[TopKResponse]:
            width = max(len(prepared[i][0]) for i in idx)
            ids = torch.zeros((len(idx), width), dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for b, i in enumerate(idx):
                p = prepared[i][0]
                ids[b, : len(p)] = torch.tensor(p)
                mask[b, : len(p)] = 1
            with torch.inference_mode():
                logits = self._forward(ids.to(self.device), mask.to(self.device))
            out = []
            for b, i in enumerate(idx):
                p, truncated = prepared[i]
                lp = torch.log_softmax(logits[b, len(p) - 1].float(), dim=-1).cpu()
                vals, toks = lp.topk(requests[i].k)
                out.append(
                    TopKResponse(
                        tokens=tuple(self.tokenizer.decode([int(t)]) for t in toks),
                        logprobs=tuple(float(v) for v in vals),
                        n_input_tokens=len(p),
                        truncated=truncated,
                    )
                )
            return out

        results, self._batch_size = run_with_backoff(
            order, self._batch_size, run_batch, on_shrink=self._log_shrink
        )
        final: dict[int, TopKResponse] = dict(zip(order, results, strict=True))
        return [final[i] for i in range(len(requests))]

    # -- generate --------------------------------------------------------------------------
    def _generate_batch(
        self, reqs: Sequence[GenerateRequest], seed: int | None
    ) -> list[GenerateResponse]:
        prepared = [
            self._prompt_ids(r.prompt, r.chat, r.system, r.max_new_tokens, r.turns) for r in reqs
        ]
        if seed is None and self._packed_generation_ok(reqs[0]):
            try:
                return self._generate_packed(reqs, prepared)
            except UnsupportedCache as exc:  # packing forced on a model it cannot serve
                log.info("%s: packed generation unavailable (%s)", self.spec, exc)
                self._packed_generation = False
        return self._generate_plain(reqs, prepared, seed)

    def _generate_sampled(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Sampled requests with the same prompt and settings (the ``n_samples`` of an item)
        are decoded together from one prefill of the prompt (``_sampled_decode``); each draws
        from its own generator seeded by :func:`sample_seed`, and its text does not depend
        on the requests beside it. Models without a plain key/value cache sample each
        request alone with ``generate``."""
        if not self._grouped_sampling:
            return super()._generate_sampled(requests)
        import torch

        prepared = [
            self._prompt_ids(r.prompt, r.chat, r.system, r.max_new_tokens, r.turns)
            for r in requests
        ]
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            key = (tuple(prepared[i][0]), r.max_new_tokens, r.temperature, r.top_p, r.stop)
            groups.setdefault(key, []).append(i)
        out: dict[int, GenerateResponse] = {}
        for idx in groups.values():
            first = requests[idx[0]]
            prompt, truncated = prepared[idx[0]]
            sampling = Sampling(first.temperature, first.top_p, first.max_new_tokens, first.stop)
            seeds = [sample_seed(requests[i]) for i in idx]
            try:
                with torch.inference_mode():
                    decoded = sample_group(self.model, self.tokenizer, prompt, seeds, sampling)
            except UnsupportedCache as exc:
                log.info("%s: grouped sampling unavailable (%s)", self.spec, exc)
                self._grouped_sampling = False
                return super()._generate_sampled(requests)
            for i, d in zip(idx, decoded, strict=True):
                ran_full = len(d.tokens) >= first.max_new_tokens
                out[i] = self._generation_response(
                    requests[i], d.tokens, d.hit_eos, ran_full, prompt, truncated
                )
        return [out[i] for i in range(len(requests))]

    def _greedy_order(self, request: GenerateRequest) -> Any:
        """Greedy requests are cut into batches in prefix order while packed generation may
        be used (prompts sharing a passage land in one batch, so it is prefilled once)."""
        if self._packed_generation is False or self.options.packing is False:
            return super()._greedy_order(request)
        return request.prompt

    def _packed_generation_ok(self, probe: GenerateRequest) -> bool:
        """Greedy prompts are prefilled with shared prefixes (``_packed_decode``) when the
        model honours custom masks and position ids (scoring's numeric check) and keeps a
        plain key/value cache: checked once (see :meth:`_check_packed_generation`)."""
        if self._packed_generation is None and self.options.packing is not None:
            self._packed_generation = self.options.packing
        if self._packed_generation is None:
            self._packed_generation = self._check_packed_generation(probe)
        return self._packed_generation

    def _check_packed_generation(self, probe: GenerateRequest) -> bool:
        """The one-time check, on short probes so that it costs little: the probe prompt's
        last ``PROBE_TOKENS`` tokens and two prompts branching from them (another last
        token; and that, one token longer) are decoded for a few steps through ``generate``
        (one batch) and through packed decoding with either prefill (trie rows; a left-padded
        batch). Packed decoding is kept when its responses equal ``generate``'s and its
        next-token log-probabilities those of a plain forward pass (within
        ``PROBE_TOLERANCE``). On a busy CPU a forward pass costs about the same however few
        its tokens, so the check makes few of them (about ten)."""
        import torch

        short = replace(probe, max_new_tokens=min(probe.max_new_tokens, PROBE_STEPS))
        ids = self._prompt_ids(
            short.prompt, short.chat, short.system, short.max_new_tokens, short.turns
        )[0]
        ids = ids[-PROBE_TOKENS:]
        if self._packing is None:  # the prefill's masks and positions: scoring's check
            self._packing = self._check_packing(_Prepared(list(ids), [ids[-1]], False))
        if not self._packing:
            return False
        prepared = [(ids, False), *((b, False) for b in _branches(ids))]
        reqs = [short] * len(prepared)
        plain = self._generate_plain(reqs, prepared, None)
        full = self.model.dtype.itemsize >= 4
        tolerance = PROBE_TOLERANCE if full else PROBE_TOLERANCE_HALF
        prefills: tuple[Prefill, ...] = ("packed", "padded")
        try:
            runs = [self._decode_packed(reqs, prepared, p, keep_logits=True) for p in prefills]
            with torch.inference_mode():
                gap = logit_gap(self.model, [p for p, _ in prepared], runs)
        except Exception as exc:  # any failure: this architecture decodes with generate()
            if is_oom(exc):
                raise
            log.info("%s: packed generation unavailable (%s)", self.spec, exc)
            return False
        same = all(self._responses(reqs, prepared, run) == plain for run in runs)
        if gap > tolerance or not same:
            log.warning(
                "%s: packed generation disagrees with generate() (log-probabilities differ "
                "by up to %.2g); disabled",
                self.spec,
                gap,
            )
            return False
        return True

    def _decode_packed(
        self,
        reqs: Sequence[GenerateRequest],
        prepared: Sequence[tuple[list[int], bool]],
        prefill: Prefill = "auto",
        *,
        keep_logits: bool = False,
    ) -> list[Decoded]:
        import torch

        first = reqs[0]
        with torch.inference_mode():
            return packed_greedy(
                self.model,
                self.tokenizer,
                [p for p, _ in prepared],
                max_new_tokens=first.max_new_tokens,
                stops=first.stop,
                max_nodes=self._row_nodes,
                budget=self._decode_budget(),
                prefill=prefill,
                keep_logits=keep_logits,
            )

    def _responses(
        self,
        reqs: Sequence[GenerateRequest],
        prepared: Sequence[tuple[list[int], bool]],
        decoded: Sequence[Decoded],
    ) -> list[GenerateResponse]:
        first = reqs[0]
        return [
            self._generation_response(
                first, d.tokens, d.hit_eos, len(d.tokens) >= first.max_new_tokens, p, truncated
            )
            for d, (p, truncated) in zip(decoded, prepared, strict=True)
        ]

    def _generate_packed(
        self, reqs: Sequence[GenerateRequest], prepared: Sequence[tuple[list[int], bool]]
    ) -> list[GenerateResponse]:
        return self._responses(reqs, prepared, self._decode_packed(reqs, prepared))

    def _generation_response(
        self,
        req: GenerateRequest,
        new: list[int],
        hit_eos: bool,
        ran_full: bool,
        prompt: list[int],
        truncated: bool,
    ) -> GenerateResponse:
        """The response for the new tokens (end of sequence and padding already removed): its
        text is what they add after ``prompt`` (``_generated_text``), cut at the first stop
        string; ``ran_full``: decoding went on for ``max_new_tokens`` steps."""
        text, cut = cut_at_stop(generated_text(self.tokenizer, prompt, new), req.stop)
        stopped = cut or hit_eos or not ran_full
        return GenerateResponse(
            text=text,
            n_input_tokens=len(prompt),
            n_output_tokens=len(new),
            truncated=truncated,
            finish_reason="stop" if stopped else "length",
        )

    def _generate_plain(
        self,
        reqs: Sequence[GenerateRequest],
        prepared: Sequence[tuple[list[int], bool]],
        seed: int | None,
    ) -> list[GenerateResponse]:
        import torch

        first = reqs[0]
        width = max(len(p) for p, _ in prepared)
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        ids = torch.full((len(reqs), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(reqs), width), dtype=torch.long)
        for b, (p, _) in enumerate(prepared):
            ids[b, width - len(p) :] = torch.tensor(p)
            mask[b, width - len(p) :] = 1
        from transformers import GenerationConfig

        settings: dict[str, Any] = {
            "max_new_tokens": first.max_new_tokens,
            "pad_token_id": pad_id,
            "eos_token_id": self.tokenizer.eos_token_id,
            "bos_token_id": self.tokenizer.bos_token_id,
            "num_beams": 1,
            "do_sample": seed is not None,
        }
        if seed is not None:
            settings.update(temperature=first.temperature, top_p=first.top_p, top_k=0)
        config = GenerationConfig(**settings)  # type: ignore[no-untyped-call]
        # Stop strings are checked on decoded text: transformers' own stop strings refuse
        # strings a vocabulary cannot spell.
        stopping = (
            stop_on_text(self.tokenizer, first.stop, width, [p for p, _ in prepared])
            if any(first.stop)
            else None
        )
        gen = self._generate_with(ids, mask, config, seed, stopping)
        out = []
        eos = self.tokenizer.eos_token_id
        for b, (p, truncated) in enumerate(prepared):
            new = [int(t) for t in gen[b, width:].tolist()]
            ran_full = len(new) >= first.max_new_tokens
            hit_eos = False
            if eos is not None and eos in new:
                new = new[: new.index(eos)]
                hit_eos = True
            while new and new[-1] == pad_id:
                new.pop()
            out.append(self._generation_response(first, new, hit_eos, ran_full, p, truncated))
        return out
