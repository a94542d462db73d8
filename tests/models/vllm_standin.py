"""A STAND-IN for vLLM's offline API, for tests only — it is not vLLM.

``LLM`` and ``SamplingParams`` here have the constructor arguments, methods and output
attributes that steadyeval's ``vllm`` backend uses (``LLM.generate`` on token-id prompts,
``RequestOutput.prompt_logprobs`` as ``{token_id: Logprob}`` dicts with ``None`` first,
``CompletionOutput.logprobs``, ``finish_reason``, stop strings left out of the text), and
answer from a small ``transformers`` causal LM on the CPU, one unbatched forward pass at a
time. Tests inject it through ``VLLMBackend(spec, engine_module=...)``; no ``vllm`` module is
faked. It checks the backend's request/response mapping, not vLLM's numerics.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    stop: list[str] | None = None
    seed: int | None = None
    logprobs: int | None = None
    prompt_logprobs: int | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: list[dict[int, Logprob] | None] | None
    outputs: list[CompletionOutput]
    finished: bool = True


@dataclass
class _Calls:
    prompts: list[list[int]] = field(default_factory=list)
    params: list[SamplingParams] = field(default_factory=list)


class _StandinEngine:
    """What both stand-in engines share: vLLM's ``generate`` over token-id prompts, from a
    ``_logprobs(ids)`` that gives, for every position, the log-probabilities of the next
    token over the vocabulary (plain Python lists)."""

    instances: ClassVar[list[_StandinEngine]] = []

    def __init__(self, kwargs: dict[str, Any], max_len: int) -> None:
        self.kwargs = kwargs
        self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=max_len))
        self.max_logprobs = int(kwargs.get("max_logprobs", 20))
        self.calls = _Calls()
        _StandinEngine.instances.append(self)

    def get_tokenizer(self) -> Any:
        return self._tok

    _tok: Any

    def _logprobs(self, ids: list[int]) -> list[list[float]]:
        raise NotImplementedError

    def _entry(self, dist: list[float], chosen: int, n: int) -> dict[int, Logprob]:
        ranked = sorted(range(len(dist)), key=lambda t: (-dist[t], t))
        entry = {
            t: Logprob(dist[t], i + 1, self._tok.decode([t])) for i, t in enumerate(ranked[:n])
        }
        if chosen not in entry:
            rank = sum(v > dist[chosen] for v in dist) + 1
            entry[chosen] = Logprob(dist[chosen], rank, self._tok.decode([chosen]))
        return entry

    def generate(
        self, prompts: list[dict[str, list[int]]], sampling_params: Any, use_tqdm: bool = True
    ) -> list[RequestOutput]:
        params = (
            sampling_params
            if isinstance(sampling_params, list)
            else [sampling_params] * len(prompts)
        )
        if len(params) != len(prompts):
            raise ValueError("the lengths of prompts and sampling_params must be the same")
        max_len = self.llm_engine.model_config.max_model_len
        return [
            self._one(n, p["prompt_token_ids"], sp, max_len)
            for n, (p, sp) in enumerate(zip(prompts, params, strict=True))
        ]

    def _one(self, n: int, prompt: list[int], sp: SamplingParams, max_len: int) -> RequestOutput:
        ids = list(prompt)
        if len(ids) > max_len:
            raise ValueError(f"the prompt ({len(ids)} tokens) is longer than {max_len}")
        for k in (sp.logprobs, sp.prompt_logprobs):
            if k is not None and k > self.max_logprobs:
                raise ValueError(f"requested {k} logprobs; max_logprobs is {self.max_logprobs}")
        self.calls.prompts.append(ids)
        self.calls.params.append(sp)
        logp = self._logprobs(ids)
        plps: list[dict[int, Logprob] | None] | None = None
        if sp.prompt_logprobs is not None:
            plps = [None] + [
                self._entry(logp[i - 1], ids[i], sp.prompt_logprobs) for i in range(1, len(ids))
            ]
        rng = random.Random(sp.seed)
        out_ids: list[int] = []
        out_lps: list[dict[int, Logprob]] = []
        finish, text = "length", ""
        dist = logp[-1]
        for _ in range(sp.max_tokens or 16):
            if sp.temperature == 0:
                tok = max(range(len(dist)), key=lambda t: (dist[t], -t))
            else:
                weights = [math.exp(v / sp.temperature) for v in dist]
                tok = rng.choices(range(len(dist)), weights=weights)[0]
            if sp.logprobs is not None:
                out_lps.append(self._entry(dist, tok, sp.logprobs))
            out_ids.append(tok)
            if tok == self._tok.eos_token_id:
                finish = "stop"
                break
            text = self._tok.decode(out_ids, skip_special_tokens=True)
            hits = [text.index(s) for s in (sp.stop or []) if s in text]
            if hits:
                text, finish = text[: min(hits)], "stop"
                break
            if len(ids) + len(out_ids) >= max_len:
                break
            dist = self._logprobs(ids + out_ids)[-1]
        completion = CompletionOutput(
            index=0,
            text=text,
            token_ids=out_ids,
            cumulative_logprob=None,
            logprobs=out_lps if sp.logprobs is not None else None,
            finish_reason=finish,
        )
        return RequestOutput(str(n), None, ids, plps, [completion])


class LLM(_StandinEngine):
    """Stand-in for ``vllm.LLM`` backed by a ``transformers`` causal LM (float32, CPU)."""

    def __init__(self, model: str, tokenizer: str | None = None, **kwargs: Any) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(tokenizer or model)
        self._tok.model_max_length = 1 << 60
        self._model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
        config = self._model.config
        positions = getattr(config, "max_position_embeddings", None) or config.n_positions
        max_len = kwargs.get("max_model_len") or positions
        super().__init__({"model": model, "tokenizer": tokenizer, **kwargs}, max_len)

    def _logprobs(self, ids: list[int]) -> list[list[float]]:
        import torch

        with torch.inference_mode():
            logits = self._model(torch.tensor([ids])).logits[0].float()
        out: list[list[float]] = torch.log_softmax(logits, dim=-1).tolist()
        return out


class ByteTokenizer:
    """Bytes as tokens (ids 0-255), BOS = EOS = 256; enough of a tokenizer's API."""

    bos_token = eos_token = "<eos>"
    bos_token_id = eos_token_id = 256
    chat_template = "toy"

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = list(text.encode("utf-8"))
        return {"input_ids": ([256] if add_special_tokens else []) + ids}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        data = bytes(i for i in ids if i < 256)
        return data.decode("utf-8", errors="replace")

    def apply_chat_template(self, messages: list[dict[str, str]], **kw: Any) -> str:
        return "".join(f"[{m['role']}] {m['content']}\n" for m in messages) + "[assistant]"


class ToyLLM(_StandinEngine):
    """A torch-free stand-in engine: bytes as tokens, log-probabilities a hash of the
    prefix (normalised over 257 tokens). Cheap enough to start in spawned worker processes."""

    def __init__(self, model: str, tokenizer: str | None = None, **kwargs: Any) -> None:
        self._tok = ByteTokenizer()
        super().__init__(
            {"model": model, "tokenizer": tokenizer, **kwargs},
            int(kwargs.get("max_model_len") or 256),
        )

    def _logprobs(self, ids: list[int]) -> list[list[float]]:
        out = []
        for i in range(len(ids)):
            raw = hashlib.shake_256(str(ids[: i + 1]).encode()).digest(257)
            logits = [6.0 * b / 255 for b in raw]
            top = max(logits)
            norm = top + math.log(sum(math.exp(v - top) for v in logits))
            out.append([v - norm for v in logits])
        return out


# ``VLLMBackend(spec, engine_module="tests.models.vllm_standin:toy")`` uses the toy engine.
toy = SimpleNamespace(LLM=ToyLLM, SamplingParams=SamplingParams)
