"""Shared parts of the Hugging Face backends: options, paths, fingerprints, OOM back-off."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .._errors import ModelSpecError
from ..requests import GenerateRequest, GenerateResponse
from ._backend import BaseBackend, Capabilities, spec_identity
from ._known import known_input_format
from ._spec import ModelSpec

__all__ = [
    "AUTO_BATCH",
    "HF_BACKENDS",
    "BatchedGeneration",
    "HFBackendBase",
    "HFOptions",
    "content_hashes",
    "fingerprint_dir",
    "is_oom",
    "load_config",
    "model_folder",
    "model_identity",
    "resolve_model_dir",
    "run_with_backoff",
    "stop_on_text",
]

_ALLOWED = {
    "dtype": "float32 | float16 | bfloat16 | auto",
    "device": "cpu | cuda | cuda:N | mps | auto",
    "revision": "a branch, tag or commit of a hub model",
    "batch_size": "an integer or auto",
    "max_length": "an integer (tokens of context the model sees)",
    "trust_remote_code": "true | false",
    "packing": "true | false (score shared prefixes once; default: on when the model passes a check)",
    "input_format": "an input encoding the model expects, e.g. unifiedqa (see Capabilities)",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset({"device", "batch_size", "trust_remote_code", "packing", "input_format"})
log = logging.getLogger(__name__)

_DTYPES = ("float32", "float16", "bfloat16", "auto")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class HFOptions:
    dtype: str = "float32"
    device: str = "auto"
    revision: str | None = None
    batch_size: int | None = None  # None: automatic (start large, halve on OOM)
    max_length: int | None = None
    trust_remote_code: bool = False
    packing: bool | None = None
    input_format: str | None = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> HFOptions:
        unknown = sorted(set(spec.options) - set(_ALLOWED))
        if unknown:
            allowed = "; ".join(f"{k} ({v})" for k, v in sorted(_ALLOWED.items()))
            raise ModelSpecError(
                f"model spec {spec}: unknown option {unknown[0]!r}; allowed: {allowed}"
            )
        o = spec.options
        dtype = o.get("dtype", "float32")
        if dtype not in _DTYPES:
            raise ModelSpecError(f"model spec {spec}: dtype {dtype!r} not in {', '.join(_DTYPES)}")
        batch: int | None = None
        if o.get("batch_size", "auto") != "auto":
            batch = _int(spec, "batch_size", o["batch_size"])
        max_length = _int(spec, "max_length", o["max_length"]) if "max_length" in o else None
        trust = o.get("trust_remote_code", "false").lower()
        if trust not in ("true", "false"):
            raise ModelSpecError(f"model spec {spec}: trust_remote_code must be true or false")
        packing = o.get("packing")
        if packing is not None and packing.lower() not in ("true", "false"):
            raise ModelSpecError(f"model spec {spec}: packing must be true or false")
        return cls(
            input_format=o.get("input_format") or None,
            packing=None if packing is None else packing.lower() == "true",
            dtype=dtype,
            device=o.get("device", "auto"),
            revision=o.get("revision"),
            batch_size=batch,
            max_length=max_length,
            trust_remote_code=trust == "true",
        )

    def torch_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def torch_dtype(self) -> Any:
        import torch

        if self.dtype == "auto":
            return "auto"
        return getattr(torch, self.dtype)


def _int(spec: ModelSpec, key: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise ModelSpecError(f"model spec {spec}: {key} must be a positive integer, got {value!r}")
    return n


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")


def resolve_model_dir(spec: ModelSpec, options: HFOptions) -> Path:
    """A local directory holding the model's files: the path itself, or the hub snapshot.

    Hub models are resolved through ``huggingface_hub.snapshot_download`` (which reuses the
    local cache); when the hub cannot be reached the error says so and suggests a local path.
    """
    path = Path(spec.name).expanduser()
    if path.is_dir():
        return path
    if spec.name.startswith((".", "/", "~")) or path.suffix:
        raise ModelSpecError(f"model directory {spec.name!r} does not exist")
    from huggingface_hub import snapshot_download

    try:
        return Path(
            snapshot_download(
                spec.name,
                revision=options.revision,
                local_files_only=_offline(),
                allow_patterns=[
                    "*.json",
                    "*.safetensors",
                    "*.model",
                    "*.txt",
                    "*.tiktoken",
                    "*.py",
                    "*.jinja",
                ],
            )
        )
    except Exception as exc:  # huggingface_hub raises many types; all mean "not reachable"
        hint = (
            "the hub is not reachable from here (HF_HUB_OFFLINE is set or there is no network)"
            if _offline()
            else "it could not be downloaded"
        )
        raise ModelSpecError(
            f"cannot load model {spec.name!r}: {hint} ({type(exc).__name__}: {exc}). "
            f"Pass a local directory instead, e.g. --model {spec.backend}:/path/to/model "
            "(`steadyeval tiny-model DIR` writes a tiny test model)"
        ) from None


#: The backends whose models are ``transformers`` folders (local or hub).
HF_BACKENDS = frozenset({"hf", "hf-causal", "hf-seq2seq", "hf-masked", "hf-classifier", "vllm"})


def model_folder(spec: str | ModelSpec) -> Path:
    """The local folder of a ``transformers`` model spec: the path itself, or its hub
    snapshot (see :func:`resolve_model_dir`). Other backends have no folder: an error."""
    if isinstance(spec, str):
        from ._spec import parse_model_spec

        spec = parse_model_spec(spec)
    if spec.backend not in HF_BACKENDS:
        raise ModelSpecError(
            f"model {spec}: a transformers model folder is needed here (fine-tuning); give "
            f"the model as hf:PATH or hf:HUB_NAME, not {spec.backend}:"
        )
    return resolve_model_dir(spec, HFOptions.from_spec(spec))


def load_config(model_dir: Path, options: HFOptions) -> Any:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model_dir, trust_remote_code=options.trust_remote_code)
    except (OSError, ValueError) as exc:
        raise ModelSpecError(f"{model_dir}: not a Hugging Face model directory ({exc})") from None


_WINDOWS = 64  # sampled windows of a large weights file's data
_WINDOW = 1 << 16  # bytes per window
_WHOLE = 64 << 20  # files up to this size are read whole


def _weights_sample(path: Path) -> bytes:
    """A weights file's bytes when it is small; else its safetensors header (names, shapes,
    dtypes, offsets, metadata), its size and 64 windows of 64 KiB spread over its data
    (different trainings of one architecture differ there; reading them costs milliseconds,
    not a full read of gigabytes)."""
    size = path.stat().st_size
    if size <= _WHOLE:
        return path.read_bytes()
    with path.open("rb") as fh:
        head, start = b"", 0
        if path.suffix == ".safetensors":
            raw = fh.read(8)
            if len(raw) == 8:
                (n,) = struct.unpack("<Q", raw)
                head = raw + fh.read(min(n, 100_000_000))
                start = 8 + n
        parts = [head, str(size).encode()]
        span = max(size - start - _WINDOW, 0)
        for k in range(_WINDOWS):
            fh.seek(start + span * k // max(_WINDOWS - 1, 1))
            parts.append(fh.read(_WINDOW))
    return b"\0".join(parts)


_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "spiece.model",
    "tokenizer.model",
    "chat_template.jinja",
    "chat_template.json",
    "added_tokens.json",
)


def _hash_files(paths: Iterable[Path], read: Callable[[Path], bytes]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode() + b"\0" + read(p) + b"\0")
    return h.hexdigest()[:16]


def content_hashes(model_dir: Path) -> dict[str, str]:
    """Hashes of a model folder's config, tokenizer files and weights (sampled, see
    :func:`_weights_sample`): what identifies its content wherever it lies."""
    weights = list(model_dir.glob("*.safetensors")) or list(model_dir.glob("*.bin"))
    tok = _hash_files(
        (model_dir / n for n in _TOKENIZER_FILES if (model_dir / n).exists()),
        lambda p: p.read_bytes(),
    )
    cfg_path = model_dir / "config.json"
    cfg = _hash_files([cfg_path] if cfg_path.exists() else [], lambda p: p.read_bytes())
    return {"config": cfg, "weights": _hash_files(weights, _weights_sample), "tokenizer": tok}


def fingerprint_dir(kind: str, spec: ModelSpec, model_dir: Path, options: HFOptions) -> str:
    """Backend, name, revision, dtype, context length, the folder's content hashes, and the
    weight files' sizes and modification times (a large model trained again in place, whose
    sampled bytes might not show it, still gets a new fingerprint)."""
    weights = sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("*.bin"))
    stat = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights]
    body = {
        "backend": kind,
        "name": spec.name,
        "revision": options.revision,
        "dtype": options.dtype,
        "max_length": options.max_length,
        **content_hashes(model_dir),
        "files": hashlib.sha256("\n".join(stat).encode()).hexdigest()[:16],
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def model_identity(spec: ModelSpec, model_dir: Path, run_only: Iterable[str]) -> str:
    """The ``model`` column of an HF-style model: ``BACKEND:HUB_NAME@COMMIT`` for a hub model
    (the snapshot's commit, else the requested revision), ``BACKEND:FOLDER#CONTENT`` for a
    local folder (its name and the first 12 hex digits of its content hashes; no path), plus
    the options that change outputs (e.g. ``dtype``, ``max_length``)."""
    if Path(spec.name).expanduser().is_dir():
        digest = hashlib.sha256(
            json.dumps(content_hashes(model_dir), sort_keys=True).encode()
        ).hexdigest()[:12]
        name = f"{model_dir.resolve().name}#{digest}"
    else:
        snapshot = model_dir.name if model_dir.parent.name == "snapshots" else None
        revision = snapshot[:12] if snapshot else spec.options.get("revision")
        name = f"{spec.name}@{revision}" if revision else spec.name
    return spec_identity(spec, name, {*run_only, "revision"})


def is_oom(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU out-of-memory errors."""
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError | MemoryError) and "out of memory" in str(exc).lower()


def run_with_backoff(
    items: Sequence[T],
    batch_size: int,
    fn: Callable[[Sequence[T]], list[R]],
    *,
    on_shrink: Callable[[int], None] | None = None,
) -> tuple[list[R], int]:
    """Apply ``fn`` to consecutive batches; on out-of-memory halve the batch and retry.

    Returns the results in order and the batch size that finally worked (to reuse next time).
    A failure at batch size 1 is re-raised.
    """
    out: list[R] = []
    i = 0
    while i < len(items):
        batch = items[i : i + batch_size]
        try:
            out.extend(fn(batch))
        except BaseException as exc:
            if not is_oom(exc) or batch_size == 1:
                raise
            _free_memory()
            batch_size = max(1, batch_size // 2)
            if on_shrink is not None:
                on_shrink(batch_size)
            continue
        i += len(batch)
    return out, batch_size


def _free_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def stop_hit(tokenizer: Any, tokens: Sequence[int], stops: Sequence[str]) -> bool:
    """Whether the decoded ``tokens`` contain one of ``stops`` (empty stops never match)."""
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    return any(s in text for s in stops if s)


def stop_on_text(tokenizer: Any, stops: Sequence[str], start: int) -> Any:
    """Stop a row once its decoded output contains a stop string.

    Checked on the decoded text rather than with ``transformers``' token-level stop strings,
    which refuse strings the vocabulary cannot spell (T5's SentencePiece vocabulary has no
    newline, so the common ``"\\n\\n"`` stop could never be produced and is simply never met).
    """
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _StopOnText(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = [stop_hit(tokenizer, row[start:], stops) for row in input_ids.tolist()]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_StopOnText()])


AUTO_BATCH = 64


class HFBackendBase(BaseBackend):
    """What every ``transformers`` backend shares: options, lazy weights, fingerprint, device.

    Subclasses set ``kind`` (the fingerprint's backend name) and ``auto_class`` (the
    ``transformers`` Auto class that loads their weights), and may check the config in
    ``_check_config``. Construction reads only the config; weights load on first use.
    """

    kind: str = ""
    auto_class: str = ""
    run_only_options = RUN_ONLY
    #: Whether the model fills a cloze slot itself (masked LMs).
    fills_slots: bool = False

    def __init__(
        self, spec: ModelSpec, *, _resolved: tuple[HFOptions, Path, Any] | None = None
    ) -> None:
        self.spec = spec
        if _resolved is None:
            options = HFOptions.from_spec(spec)
            model_dir = resolve_model_dir(spec, options)
            _resolved = (options, model_dir, load_config(model_dir, options))
        self.options, self.model_dir, self.config = _resolved
        self._check_config()
        self._tokenizer: Any = None
        self._tokenizer_limit: int | None = None
        self._model: Any = None
        self._batch_size = self.options.batch_size or AUTO_BATCH
        self._fingerprint: str | None = None
        self._identity: str | None = None

    def _check_config(self) -> None:
        """Raise if the config is not a model this backend can run."""

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint_dir(self.kind, self.spec, self.model_dir, self.options)
        return self._fingerprint

    def identity(self) -> str:
        if self._identity is None:
            self._identity = model_identity(self.spec, self.model_dir, self.run_only_options)
        return self._identity

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
        if self._model is None:
            import transformers
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            auto = getattr(transformers, self.auto_class)
            model: Any = auto.from_pretrained(
                self.model_dir,
                dtype=self.options.torch_dtype(),
                trust_remote_code=self.options.trust_remote_code,
            )
            model.eval()
            self._model = model.to(self.options.torch_device())
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
        log.warning("%s: out of memory; retrying with batch size %d", self.spec, size)


class BatchedGeneration:
    """``generate`` for backends with ``_generate_batch(requests, seed)``: greedy requests
    with the same settings are batched (longest first, halving on out-of-memory); sampled
    requests run one at a time, seeded from (seed, sample index, prompt) so reruns
    reproduce them."""

    # Provided by the classes this is mixed into (HFBackendBase and the backend itself).
    _batch_size: int
    _log_shrink: Callable[[int], None]
    _generate_batch: Callable[[Sequence[GenerateRequest], int | None], list[GenerateResponse]]

    def _greedy_order(self, request: GenerateRequest) -> Any:
        """Sort key of greedy requests before they are cut into batches: longest first."""
        return -len(request.prompt)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        out: dict[int, GenerateResponse] = {}
        greedy = [i for i, r in enumerate(requests) if r.temperature == 0]
        sampled = [i for i, r in enumerate(requests) if r.temperature != 0]
        # Greedy requests with the same settings are batched (left padding).
        groups: dict[tuple[int, tuple[str, ...]], list[int]] = {}
        for i in greedy:
            r = requests[i]
            groups.setdefault((r.max_new_tokens, r.stop), []).append(i)
        for idx in groups.values():
            idx.sort(key=lambda i: self._greedy_order(requests[i]))

            def run_batch(batch: Sequence[int]) -> list[GenerateResponse]:
                return self._generate_batch([requests[i] for i in batch], None)

            results, self._batch_size = run_with_backoff(
                idx, self._batch_size, run_batch, on_shrink=self._log_shrink
            )
            out.update(zip(idx, results, strict=True))
        for i in sampled:
            r = requests[i]
            digest = hashlib.sha256(f"{r.seed}\x1f{r.sample_index}\x1f{r.prompt}".encode()).digest()
            (out[i],) = self._generate_batch([r], int.from_bytes(digest[:4], "little"))
        return [out[i] for i in range(len(requests))]
