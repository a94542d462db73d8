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

This module holds the spec's options and :class:`VLLMBackend`; the engines that map requests
to vLLM calls (:class:`~steadyeval.models._vllm_engine.VLLMEngine`, and the data-parallel
``ReplicaPool``) are in ``_vllm_engine``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigError, ModelSpecError, UnsupportedRequestError
from .._log import duration
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
from ._backend import Capabilities
from ._hf_identity import FolderBackend
from ._hf_options import (
    HFOptions,
    context_length,
    load_config,
    positive_int,
    resolve_model_dir,
)
from ._known import known_input_format
from ._spec import ModelSpec, echo, spec_where
from ._spec_values import (
    check_known,
    choice_option,
    flag_option,
    float_option,
    input_format_option,
    text_option,
)
from ._vllm_engine import ReplicaPool, VLLMEngine, import_engine_module

log = logging.getLogger(__name__)

__all__ = ["VLLMBackend", "VLLMEngine", "VLLMOptions"]

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
_QUANTIZATION = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def _quantization(spec: ModelSpec, value: str | None) -> str | None:
    """A vLLM quantization method's name (vLLM checks that it knows it)."""
    if value is not None and not _QUANTIZATION.fullmatch(value):
        raise ModelSpecError(
            f"{spec_where(spec)}: option quantization must name a vLLM quantization method "
            f"(e.g. awq, gptq, fp8), got '{echo(value, 40)}'"
        )
    return value


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
        check_known(spec, _ALLOWED)
        o = spec.options

        def count(key: str, default: str) -> int:
            return positive_int(spec, key, o.get(key, default))

        def flag(key: str, default: str) -> bool:
            return flag_option(spec, key, o.get(key, default))

        gmu = o.get("gpu_memory_utilization")
        length = o.get("max_model_len")
        return cls(
            dtype=choice_option(spec, "dtype", o.get("dtype", "auto"), _DTYPES),
            revision=text_option(spec, "revision", o),
            tensor_parallel_size=count("tensor_parallel_size", "1"),
            data_parallel_size=count("data_parallel_size", "1"),
            max_model_len=None if length is None else context_length(spec, "max_model_len", length),
            gpu_memory_utilization=None
            if gmu is None
            else float_option(spec, "gpu_memory_utilization", gmu, low=0, high=1, low_open=True),
            max_logprobs=count("max_logprobs", "20"),
            prefix_caching=flag("prefix_caching", "true"),
            quantization=_quantization(spec, o.get("quantization")),
            trust_remote_code=flag("trust_remote_code", "false"),
            input_format=input_format_option(spec, o),
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


# -- the backend -----------------------------------------------------------------------------
class VLLMBackend(FolderBackend):
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
        self.model_dir = resolve_model_dir(spec, self._hf, weights=False)  # weights: engine
        self._opened()
        load_config(self.model_dir, self._hf)  # a transformers model folder, else an error
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

    def _fingerprint_options(self) -> HFOptions:
        """The fingerprint is like the ``hf`` backends' (model files, revision, dtype, context
        length), under backend name ``vllm``; parallelism and memory settings are left out."""
        return self._hf

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(
                    self.model_dir, trust_remote_code=self.options.trust_remote_code
                )
            except (ImportError, ValueError, OSError) as exc:
                raise ModelSpecError(
                    f"{spec_where(self.spec)}: cannot load the tokenizer in "
                    f"{echo(str(self.model_dir), 120)}: {echo(' '.join(str(exc).split()), 300)}"
                ) from None
            self._tokenizer.model_max_length = 1 << 60
        return [len(self._tokenizer(t)["input_ids"]) for t in texts]

    @property
    def engine(self) -> VLLMEngine | ReplicaPool:
        if self._engine is None:
            self._fetch_weights()
            kwargs = self.options.engine_kwargs(self.model_dir)
            where = str(self.spec)
            log.info("loading model %s…", where)
            start = time.perf_counter()
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
            log.info("loaded model %s in %s", where, duration(time.perf_counter() - start))
        return self._engine

    def release(self) -> None:
        """Stop the replica processes and drop the engine, freeing GPU memory before the
        run's next model loads (the run calls this after the model's last batch)."""
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
