"""``vllm:MODEL``: vLLM's offline engine (optional extra ``steadyeval[vllm]``, GPU machines).

* *score* — the prompt log-probabilities of context + continuation
  (``SamplingParams(prompt_logprobs=1, max_tokens=1)``) summed over the continuation's
  tokens; the pair is split and tokenised exactly as the ``hf`` causal backend splits it
  (lm-evaluation-harness's rule), so the two backends give the same numbers up to kernel
  precision.
* *generate* — ``SamplingParams(temperature, top_p, max_tokens, stop, seed)``, one engine
  call per batch (prefix caching shares the prompts' common prefixes).
* *top-k* — ``SamplingParams(logprobs=k, max_tokens=1)``.

``vllm`` is imported only when the first batch arrives: constructing the backend, its
fingerprint and ``count_tokens`` need only the model's files and ``transformers``. With
``data_parallel_size=N`` the backend starts N engine processes, each on its own
``tensor_parallel_size`` GPUs, and splits every batch between them.

This mapping is tested against a stand-in engine (tests/models/vllm_standin.py); it has not
been run against a real vLLM on a GPU by this project's tests (see docs/backends-api.md).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigError, ModelSpecError, UnsupportedRequestError
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
from ._backend import BaseBackend, Capabilities
from ._causal_text import CausalText
from ._hf_common import HFOptions, fingerprint_dir, model_identity, resolve_model_dir
from ._known import known_input_format
from ._openai import sample_seed
from ._spec import ModelSpec

__all__ = ["VLLMBackend", "VLLMEngine", "VLLMOptions"]

INSTALL_HINT = "pip install 'steadyeval[vllm]' on a machine with a CUDA GPU"
_ALLOWED = {
    "dtype": "auto | float16 | bfloat16 | float32 (default auto)",
    "revision": "a branch, tag or commit of a hub model",
    "tensor_parallel_size": "GPUs per engine (default 1)",
    "data_parallel_size": "engine replicas, each with its own GPUs (default 1)",
    "max_model_len": "tokens of context (default: the model's)",
    "gpu_memory_utilization": "share of each GPU's memory vLLM may take, 0-1 (default vLLM's)",
    "max_logprobs": "the largest k a top-k request may ask (default 20)",
    "prefix_caching": "true | false (default true)",
    "quantization": "a vLLM quantization method, e.g. awq, gptq, fp8",
    "trust_remote_code": "true | false (default false)",
    "input_format": "an input encoding the model expects, e.g. unifiedqa (see Capabilities)",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization", "max_logprobs",
     "prefix_caching", "trust_remote_code", "input_format"}
)  # fmt: skip
_DTYPES = ("auto", "float16", "bfloat16", "float32")


def _int(spec: ModelSpec, key: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise ModelSpecError(f"model spec {spec}: {key} must be a positive integer, got {value!r}")
    return n


def _bool(spec: ModelSpec, key: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ModelSpecError(f"model spec {spec}: {key} must be true or false, got {value!r}")
    return value.lower() == "true"


@dataclass(frozen=True)
class VLLMOptions:
    """The spec's options, validated."""

    dtype: str = "auto"
    revision: str | None = None
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_logprobs: int = 20
    prefix_caching: bool = True
    quantization: str | None = None
    trust_remote_code: bool = False
    input_format: str | None = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> VLLMOptions:
        o = dict(spec.options)
        unknown = sorted(set(o) - set(_ALLOWED))
        if unknown:
            allowed = "; ".join(f"{k} ({v})" for k, v in _ALLOWED.items())
            raise ModelSpecError(
                f"model spec {spec}: unknown option {unknown[0]!r}; allowed: {allowed}"
            )
        dtype = o.get("dtype", "auto")
        if dtype not in _DTYPES:
            raise ModelSpecError(f"model spec {spec}: dtype {dtype!r} not in {', '.join(_DTYPES)}")
        gmu = None
        if "gpu_memory_utilization" in o:
            try:
                gmu = float(o["gpu_memory_utilization"])
            except ValueError:
                gmu = -1.0
            if not 0 < gmu <= 1:
                raise ModelSpecError(
                    f"model spec {spec}: gpu_memory_utilization must be in (0, 1], "
                    f"got {o['gpu_memory_utilization']!r}"
                )
        return cls(
            dtype=dtype,
            revision=o.get("revision"),
            tensor_parallel_size=_int(
                spec, "tensor_parallel_size", o.get("tensor_parallel_size", "1")
            ),
            data_parallel_size=_int(spec, "data_parallel_size", o.get("data_parallel_size", "1")),
            max_model_len=_int(spec, "max_model_len", o["max_model_len"])
            if "max_model_len" in o
            else None,
            gpu_memory_utilization=gmu,
            max_logprobs=_int(spec, "max_logprobs", o.get("max_logprobs", "20")),
            prefix_caching=_bool(spec, "prefix_caching", o.get("prefix_caching", "true")),
            quantization=o.get("quantization"),
            trust_remote_code=_bool(spec, "trust_remote_code", o.get("trust_remote_code", "false")),
            input_format=o.get("input_format") or None,
        )

    def engine_kwargs(self, model_dir: Path) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM``."""
        kwargs: dict[str, Any] = {
            "model": str(model_dir),
            "tokenizer": str(model_dir),
            "dtype": self.dtype,
            "seed": 0,
            "tensor_parallel_size": self.tensor_parallel_size,
            "enable_prefix_caching": self.prefix_caching,
            "max_logprobs": self.max_logprobs,
            "trust_remote_code": self.trust_remote_code,
        }
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        if self.gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = self.gpu_memory_utilization
        if self.quantization is not None:
            kwargs["quantization"] = self.quantization
        return kwargs


def import_engine_module(ref: Any) -> Any:
    """What provides ``LLM`` and ``SamplingParams``: ``ref`` itself, the module it names
    (``"vllm"`` by default) or ``"module:attribute"``; a clear error when vLLM is missing."""
    if not isinstance(ref, str):
        return ref
    name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if name == "vllm" and exc.name is not None and exc.name.split(".")[0] == "vllm":
            raise ConfigError(
                f"the vllm backend needs vLLM, which is not installed: {INSTALL_HINT}"
            ) from None
        raise
    return getattr(module, attr) if attr else module


def _logprob(entry: Any) -> float:
    return float(entry.logprob if hasattr(entry, "logprob") else entry)


class VLLMEngine:
    """One ``vllm.LLM`` and the mapping of steadyeval requests to it (runs in the backend's
    process, or in a data-parallel worker process)."""

    def __init__(self, module: Any, kwargs: dict[str, Any], *, where: str) -> None:
        self.where = where
        self.module = module
        self.llm = module.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.text = CausalText(self.tokenizer, self.where)
        self.max_len = self._max_model_len(kwargs)

    def _max_model_len(self, kwargs: dict[str, Any]) -> int:
        cfg = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        value = getattr(cfg, "max_model_len", None) or kwargs.get("max_model_len")
        return int(value) if value else 2048

    # -- tokenisation (the hf causal backend's rules, shared) ----------------------------
    def encode_pair(self, req: ScoreRequest) -> tuple[list[int], int]:
        """Token ids of context + continuation and how many of them are the continuation."""
        return self.text.encode_pair(req)

    def _prompt(
        self, text: str, chat: bool, system: str | None, room: int
    ) -> tuple[list[int], bool]:
        ids = self.text.encode(self.text.chat(text, system) if chat else text) or [
            self.text.prefix_token()
        ]
        limit = max(1, self.max_len - room)
        return ids[-limit:], len(ids) > limit

    # -- the three kinds -------------------------------------------------------------------
    def _run(self, prompts: list[list[int]], params: list[Any]) -> list[Any]:
        outs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in prompts], params, use_tqdm=False
        )
        if len(outs) != len(prompts):
            raise RuntimeError(
                f"{self.where}: vLLM returned {len(outs)} outputs for {len(prompts)} prompts"
            )
        return list(outs)

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        SP = self.module.SamplingParams
        prepared = []
        for r in requests:
            ids, n_cont = self.encode_pair(r)
            # The prompt must leave room for the one token vLLM generates.
            limit = max(2, self.max_len - 1)
            truncated = len(ids) > limit
            ids = ids[-limit:]
            prepared.append((ids, min(n_cont, len(ids) - 1), truncated))
        params = [SP(max_tokens=1, temperature=0.0, prompt_logprobs=1) for _ in prepared]
        outs = self._run([p[0] for p in prepared], params)
        results = []
        for (ids, n_cont, truncated), out in zip(prepared, outs, strict=True):
            plps = out.prompt_logprobs
            if plps is None or len(plps) != len(ids):
                raise RuntimeError(
                    f"{self.where}: vLLM returned no prompt log-probabilities of the right length"
                )
            total, greedy = 0.0, True
            for i in range(len(ids) - n_cont, len(ids)):
                entry = plps[i]
                if entry is None or ids[i] not in entry:
                    raise RuntimeError(f"{self.where}: prompt position {i} has no log-probability")
                chosen = entry[ids[i]]
                value = _logprob(chosen)
                total += value
                rank = getattr(chosen, "rank", None)
                if rank is not None:
                    greedy = greedy and rank == 1
                else:
                    greedy = greedy and value >= max(_logprob(e) for e in entry.values())
            results.append(
                ScoreResponse(
                    logprob=total,
                    n_tokens=n_cont,
                    is_greedy=greedy if n_cont else True,
                    truncated=truncated,
                    n_input_tokens=len(ids) - 1,
                )
            )
        return results

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        SP = self.module.SamplingParams
        prompts, flags, params = [], [], []
        for r in requests:
            ids, truncated = self._prompt(r.prompt, r.chat, r.system, r.max_new_tokens)
            prompts.append(ids)
            flags.append(truncated)
            if r.temperature == 0:
                params.append(
                    SP(max_tokens=r.max_new_tokens, temperature=0.0, stop=list(r.stop) or None)
                )
            else:
                params.append(
                    SP(
                        max_tokens=r.max_new_tokens,
                        temperature=r.temperature,
                        top_p=r.top_p,
                        stop=list(r.stop) or None,
                        seed=sample_seed(r),
                    )
                )
        outs = self._run(prompts, params)
        results = []
        for r, ids, truncated, out in zip(requests, prompts, flags, outs, strict=True):
            comp = out.outputs[0]
            text = str(comp.text)
            cut = [text.index(s) for s in r.stop if s and s in text]
            if cut:
                text = text[: min(cut)]
            results.append(
                GenerateResponse(
                    text=text,
                    n_input_tokens=len(ids),
                    n_output_tokens=len(comp.token_ids),
                    truncated=truncated,
                    finish_reason=str(comp.finish_reason or "stop"),
                )
            )
        return results

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        SP = self.module.SamplingParams
        prompts, flags = [], []
        for r in requests:
            ids, truncated = self._prompt(r.prompt, r.chat, r.system, 1)
            prompts.append(ids)
            flags.append(truncated)
        params = [SP(max_tokens=1, temperature=0.0, logprobs=r.k) for r in requests]
        outs = self._run(prompts, params)
        results = []
        for r, ids, truncated, out in zip(requests, prompts, flags, outs, strict=True):
            steps = out.outputs[0].logprobs
            if not steps:
                raise RuntimeError(f"{self.where}: vLLM returned no log-probabilities for top-k")
            ranked = sorted(steps[0].items(), key=lambda kv: (-_logprob(kv[1]), kv[0]))[: r.k]
            results.append(
                TopKResponse(
                    tokens=tuple(self.tokenizer.decode([int(t)]) for t, _ in ranked),
                    logprobs=tuple(_logprob(v) for _, v in ranked),
                    n_input_tokens=len(ids),
                    truncated=truncated,
                )
            )
        return results

    def call(self, kind: RequestKind, requests: Sequence[Request]) -> list[Any]:
        if kind == "score":
            return self.score(requests)  # type: ignore[arg-type]
        if kind == "generate":
            return self.generate(requests)  # type: ignore[arg-type]
        return self.top_k(requests)  # type: ignore[arg-type]


# -- data parallel: one engine per worker process -------------------------------------------
def _worker_main(conn: Any, module_ref: str, kwargs: dict[str, Any], gpus: str, where: str) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus  # before vLLM (and CUDA) is imported
    try:
        engine = VLLMEngine(import_engine_module(module_ref), kwargs, where=where)
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        job = conn.recv()
        if job is None:
            return
        kind, requests = job
        try:
            conn.send(("ok", engine.call(kind, requests)))
        except BaseException as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ReplicaPool:
    """``n`` engine processes (spawned), each pinned to its own GPUs; batches are split into
    contiguous shards, one per replica, and the answers put back in order."""

    def __init__(
        self, n: int, module_ref: str, kwargs: dict[str, Any], tp: int, where: str
    ) -> None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = (
            [g for g in visible.split(",") if g.strip()]
            if visible
            else [str(i) for i in range(n * tp)]
        )
        if len(ids) < n * tp:
            raise ConfigError(
                f"{where}: data_parallel_size={n} × tensor_parallel_size={tp} needs {n * tp} "
                f"GPUs; CUDA_VISIBLE_DEVICES lists {len(ids)}"
            )
        ctx = multiprocessing.get_context("spawn")
        self.where = where
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        for r in range(n):
            parent, child = ctx.Pipe()
            gpus = ",".join(ids[r * tp : (r + 1) * tp])
            proc = ctx.Process(
                target=_worker_main,
                args=(child, module_ref, kwargs, gpus, f"{where} replica {r}"),
                daemon=True,
            )
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            self._receive(conn)

    def _receive(self, conn: Any) -> Any:
        try:
            status, payload = conn.recv()
        except EOFError:
            raise RuntimeError(f"{self.where}: a vLLM replica process died") from None
        if status == "error":
            raise RuntimeError(f"{self.where}: a vLLM replica failed: {payload}")
        return payload

    def call(self, kind: RequestKind, requests: Sequence[Request]) -> list[Any]:
        n = len(self._conns)
        size, extra = divmod(len(requests), n)
        shards, start = [], 0
        for r in range(n):
            stop = start + size + (1 if r < extra else 0)
            shards.append(list(requests[start:stop]))
            start = stop
        busy = [(conn, shard) for conn, shard in zip(self._conns, shards, strict=True) if shard]
        for conn, shard in busy:
            conn.send((kind, shard))
        out: list[Any] = []
        for conn, _ in busy:
            out.extend(self._receive(conn))
        return out

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
        self._conns, self._procs = [], []


# -- the backend -----------------------------------------------------------------------------
class VLLMBackend(BaseBackend):
    """A model served by vLLM's offline engine (see the module docstring).

    Parameters
    ----------
    spec
        ``vllm:NAME_OR_PATH[?options]``.
    engine_module
        What provides ``LLM`` and ``SamplingParams``: ``"vllm"`` (default, imported on first
        use), another importable module name, or an object. A seam for tests, which pass a
        stand-in; data parallelism needs a module *name* (each worker imports it).
    """

    kind = "vllm"
    run_only_options = RUN_ONLY

    def __init__(self, spec: ModelSpec, *, engine_module: Any = "vllm") -> None:
        self.spec = spec
        self.options = VLLMOptions.from_spec(spec)
        self._hf = HFOptions(
            dtype=self.options.dtype,
            revision=self.options.revision,
            max_length=self.options.max_model_len,
            trust_remote_code=self.options.trust_remote_code,
        )
        self.model_dir = resolve_model_dir(spec, self._hf)
        if self.options.data_parallel_size > 1 and not isinstance(engine_module, str):
            raise ConfigError(
                f"{spec}: data_parallel_size > 1 needs engine_module as an importable module name"
            )
        self._engine_module = engine_module
        self._engine: VLLMEngine | ReplicaPool | None = None
        self._tokenizer: Any = None
        self._fingerprint: str | None = None
        self._identity: str | None = None

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset({"score", "generate", "top-k"})

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            max_length=self.options.max_model_len,
            input_format=self.options.input_format or known_input_format(self.spec.name),
        )

    def identity(self) -> str:
        if self._identity is None:
            self._identity = model_identity(self.spec, self.model_dir, self.run_only_options)
        return self._identity

    def fingerprint(self) -> str:
        """Like the ``hf`` backends' (model files, revision, dtype, context length), under
        backend name ``vllm``; parallelism and memory settings are left out."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_dir(self.kind, self.spec, self.model_dir, self._hf)
        return self._fingerprint

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(
                self.model_dir, trust_remote_code=self.options.trust_remote_code
            )
            self._tokenizer.model_max_length = 1 << 60
        return [len(self._tokenizer(t)["input_ids"]) for t in texts]

    @property
    def engine(self) -> VLLMEngine | ReplicaPool:
        if self._engine is None:
            kwargs = self.options.engine_kwargs(self.model_dir)
            where = str(self.spec)
            if self.options.data_parallel_size > 1:
                self._engine = ReplicaPool(
                    self.options.data_parallel_size,
                    self._engine_module,
                    kwargs,
                    self.options.tensor_parallel_size,
                    where,
                )
            else:
                self._engine = VLLMEngine(
                    import_engine_module(self._engine_module), kwargs, where=where
                )
        return self._engine

    def close(self) -> None:
        if isinstance(self._engine, ReplicaPool):
            self._engine.close()
        self._engine = None

    def _check(self, requests: Sequence[Request]) -> None:
        for r in requests:
            if isinstance(r, TopKRequest) and r.candidates:
                raise UnsupportedRequestError(
                    f"{self.spec}: top-k restricted to candidate words is not implemented for "
                    "vLLM; use candidates: vocabulary"
                )
            if isinstance(r, TopKRequest) and r.k > self.options.max_logprobs:
                raise UnsupportedRequestError(
                    f"{self.spec}: top-k with k={r.k} exceeds max_logprobs="
                    f"{self.options.max_logprobs}; raise it in the model spec"
                )

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        if not requests:
            return []
        out: list[ScoreResponse] = self.engine.call("score", requests)
        return out

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        if not requests:
            return []
        out: list[GenerateResponse] = self.engine.call("generate", requests)
        return out

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        if not requests:
            return []
        self._check(requests)
        out: list[TopKResponse] = self.engine.call("top-k", requests)
        return out
