"""The base class every Hugging Face backend shares (:class:`HFBackendBase`: options, lazy
weights, fingerprint, identity, device, context length, ``model.generate`` under exactly the
given settings). The shared helpers live beside it: options and model folders in
``_hf_options``, fingerprints and identity in ``_hf_identity``, out-of-memory back-off, stop
strings and batched generation in ``_hf_batching``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigError, ModelSpecError
from .._log import duration
from ..requests import GenerateRequest, Request
from ._backend import BackendStats, BaseBackend, Capabilities, StatsCounter
from ._hf_identity import FolderBackend
from ._hf_options import RUN_ONLY, HFOptions, load_config, resolve_model_dir
from ._known import known_input_format
from ._spec import ModelSpec, spec_where
from ._weights import loading_weights

__all__ = ["AUTO_BATCH", "HFBackendBase", "check_generation_room", "fuse_gelu"]

log = logging.getLogger(__name__)

AUTO_BATCH = 64


def check_generation_room(
    backend: BaseBackend, requests: Sequence[Request], positions: int
) -> None:
    """Refuse generate requests whose ``max_new_tokens`` leaves no room in ``positions``
    (the model's position table, or ``?max_length=``) for at least one prompt token."""
    worst = max((r.max_new_tokens for r in requests if isinstance(r, GenerateRequest)), default=0)
    if worst >= positions:
        raise ConfigError(
            f"max_new_tokens={worst:,} does not fit {backend.spec}: its context holds "
            f"{positions:,} positions, prompt included; lower generation.max_new_tokens to "
            f"at most {positions - 1:,} (or give ?max_length= for a model whose positions "
            "extend further)"
        )


class HFBackendBase(FolderBackend):
    """What every ``transformers`` backend shares: options, lazy weights, fingerprint, device.

    Subclasses set ``kind`` (the fingerprint's backend name) and ``auto_class`` (the
    ``transformers`` Auto class that loads their weights), and may check the config in
    ``_check_config``. Construction reads only the config (a hub model's small files);
    weights are fetched and loaded on first use (the model, or the fingerprint that hashes
    them).
    """

    kind: str = ""
    auto_class: str = ""
    run_only_options = RUN_ONLY
    #: Whether the model fills a cloze slot itself (masked LMs).
    fills_slots: bool = False
    #: Whether the backend reads the ``special_tokens`` option (encoder-decoder models).
    reads_special_tokens: bool = False

    def __init__(
        self, spec: ModelSpec, *, _resolved: tuple[HFOptions, Path, Any] | None = None
    ) -> None:
        self.spec = spec
        if _resolved is None:
            options = HFOptions.from_spec(spec)
            model_dir = resolve_model_dir(spec, options, weights=False)
            _resolved = (options, model_dir, load_config(model_dir, options))
        self.options, self.model_dir, self.config = _resolved
        self._opened()
        if not self.options.special_tokens and not self.reads_special_tokens:
            raise ModelSpecError(
                f"{spec_where(spec)}: option special_tokens applies to encoder-decoder models "
                f"(hf-seq2seq) only; {self.kind} models keep their tokenizer's special tokens"
            )
        self._check_config()
        self._tokenizer: Any = None
        self._tokenizer_limit: int | None = None
        self._model: Any = None
        self._batch_size = self.options.batch_size or AUTO_BATCH
        self._fingerprint: str | None = None
        self._identity: str | None = None
        self._counter = StatsCounter()  # out-of-memory halvings

    def _check_config(self) -> None:
        """Raise if the config is not a model this backend can run."""

    def _load_tokenizer(self) -> Any:
        """The folder's tokenizer, its own length limit kept in ``_tokenizer_limit`` and then
        lifted (steadyeval truncates inputs itself, and records it)."""
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(
                self.model_dir, trust_remote_code=self.options.trust_remote_code
            )
        except (ImportError, ValueError, OSError) as exc:
            raise _tokenizer_error(self.spec, self.model_dir, exc) from None
        limit = getattr(tok, "model_max_length", None)
        self._tokenizer_limit = limit if isinstance(limit, int) and limit < 1 << 30 else None
        tok.model_max_length = 1 << 60
        return tok

    @property
    def tokenizer(self) -> Any:
        """The folder's tokenizer, loaded on first use (:meth:`_load_tokenizer`) and checked or
        adjusted by :meth:`_prepare_tokenizer`."""
        if self._tokenizer is None:
            self._tokenizer = self._prepare_tokenizer(self._load_tokenizer())
        return self._tokenizer

    def _prepare_tokenizer(self, tok: Any) -> Any:
        """Raise if ``tok`` cannot serve this backend, or adjust it; ``tok`` by default."""
        return tok

    def _fingerprint_options(self) -> HFOptions:
        return self.options

    @property
    def max_length(self) -> int:
        """Tokens of context: the ``max_length`` option, else the model's (subclasses)."""
        return self.options.max_length or 2048

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            fills_slots=self.fills_slots,
            max_length=self.max_length,
            input_format=self.options.input_format or known_input_format(self.spec.name),
        )

    @property
    def model(self) -> Any:
        """The weights, loaded on first use (logged at INFO: when, and how long it took)."""
        if self._model is None:
            import transformers
            from transformers.utils import logging as hf_logging

            self._fetch_weights()
            log.info("loading model %s…", self.spec)
            start = time.perf_counter()
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            auto = getattr(transformers, self.auto_class)
            with loading_weights():  # one load at a time (models/_weights.py)
                model: Any = auto.from_pretrained(
                    self.model_dir,
                    dtype=self.options.torch_dtype(),
                    trust_remote_code=self.options.trust_remote_code,
                )
            model.eval()
            if self.options.fused_gelu:
                fuse_gelu(model)
            self._model = model.to(self.options.torch_device())
            log.info(
                "loaded model %s in %s (%s, %s)",
                self.spec,
                duration(time.perf_counter() - start),
                self._model.device,
                str(self._model.dtype).removeprefix("torch."),
            )
        return self._model

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def _generate_with(
        self, ids: Any, mask: Any, config: Any, seed: int | None, stopping: Any = None
    ) -> Any:
        """``model.generate`` under ``config`` alone. generate() fills every setting left
        unset from the model's own generation_config (beams, min_length, repetition
        penalties, forced EOS, ...), so that one is swapped out for the call: decoding stays
        exactly greedy or plain sampling. Sampling is seeded without touching the global
        random state."""
        import torch

        kwargs: dict[str, Any] = {} if stopping is None else {"stopping_criteria": stopping}
        model, own = self.model, self.model.generation_config
        model.generation_config = config
        try:
            with torch.inference_mode(), torch.random.fork_rng(devices=[]):
                if seed is not None:
                    torch.manual_seed(seed)
                return model.generate(
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    generation_config=config,
                    **kwargs,
                )
        finally:
            model.generation_config = own

    def _log_shrink(self, size: int) -> None:
        """A batch ran out of memory: logged, counted, and run again ``size`` at a time."""
        log.warning("%s: out of memory; retrying with batch size %d", self.spec, size)
        self._counter.add(oom=1)

    def stats(self) -> BackendStats:
        """Batches halved after running out of memory so far."""
        return self._counter.snapshot()


def _tokenizer_error(spec: ModelSpec, folder: Path, exc: BaseException) -> BaseException:
    """A one-line error for a tokenizer that needs a library that is not installed (a
    SentencePiece ``tokenizer.model`` without ``sentencepiece``); ``exc`` itself otherwise."""
    import importlib.util

    where = f"model spec {spec.backend}:{spec.name}: cannot load the tokenizer in {folder}"
    spm_only = (folder / "tokenizer.model").is_file() and not (folder / "tokenizer.json").is_file()
    if spm_only and importlib.util.find_spec("sentencepiece") is None:
        return ModelSpecError(
            f"{where}: it has a SentencePiece tokenizer.model and no tokenizer.json, and "
            "reading it needs the sentencepiece library, which is not installed: "
            "pip install 'steadyeval[hf]' (or pip install sentencepiece)"
        )
    text = " ".join(str(exc).split())
    if "pip install" in text or " is required" in text or "requires the" in text:
        return ModelSpecError(f"{where}: {text[:300]}")
    return exc


def fuse_gelu(model: Any) -> int:
    """Swap the model's tanh-approximate GELU written as Python tensor operations
    (``gelu_new`` and ``gelu_fast``: GPT-2, GPT-J, CodeGen, T5 v1.1, ...) for the same
    function as one fused kernel (``torch.nn.functional.gelu(approximate="tanh")``), which
    transformers ships as ``gelu_pytorch_tanh``. The two agree to float rounding (2.4e-7 at
    most in float32); on a CPU the fused one took 0.22 of the time on an 8 × 1,024 × 1,024
    activation, and the paragraph-first benchmark's joint call went from 7.2-7.5 s to
    6.7-6.8 s (issue 22, bench/README.md). Returns how many modules were swapped."""
    from transformers import activations

    python_versions = tuple(
        getattr(activations, name)
        for name in ("NewGELUActivation", "FastGELUActivation")
        if hasattr(activations, name)
    )
    fused_class = getattr(activations, "GELUTanh", None) or getattr(
        activations, "PytorchGELUTanh", None
    )
    if fused_class is None or not python_versions:
        return 0
    swapped = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if type(child) in python_versions:
                setattr(parent, name, fused_class())
                swapped += 1
    if swapped:
        log.debug("fused %d tanh-GELU activation modules", swapped)
    return swapped
