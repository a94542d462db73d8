"""Options and model folders of the Hugging Face backends: the spec's options, validated
(:class:`HFOptions`; :data:`RUN_ONLY` names those that never change an output), the local
folder of a model (:func:`resolve_model_dir`: the path itself or the hub snapshot;
:func:`model_folder` for any ``transformers`` spec) and its config (:func:`load_config`).
``torch``, ``transformers`` and ``huggingface_hub`` are imported only when used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ModelSpecError
from ._spec import ModelSpec

__all__ = [
    "HF_BACKENDS",
    "RUN_ONLY",
    "HFOptions",
    "load_config",
    "model_folder",
    "positive_int",
    "resolve_model_dir",
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
    "fused_gelu": "true | false (GPT-2's tanh GELU as one fused kernel; default true)",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"device", "batch_size", "trust_remote_code", "packing", "input_format", "fused_gelu"}
)

_DTYPES = ("float32", "float16", "bfloat16", "auto")


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
    fused_gelu: bool = True

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
            batch = positive_int(spec, "batch_size", o["batch_size"])
        max_length = (
            positive_int(spec, "max_length", o["max_length"]) if "max_length" in o else None
        )
        trust = o.get("trust_remote_code", "false").lower()
        if trust not in ("true", "false"):
            raise ModelSpecError(f"model spec {spec}: trust_remote_code must be true or false")
        packing = o.get("packing")
        if packing is not None and packing.lower() not in ("true", "false"):
            raise ModelSpecError(f"model spec {spec}: packing must be true or false")
        fused = o.get("fused_gelu", "true").lower()
        if fused not in ("true", "false"):
            raise ModelSpecError(f"model spec {spec}: fused_gelu must be true or false")
        return cls(
            input_format=o.get("input_format") or None,
            packing=None if packing is None else packing.lower() == "true",
            dtype=dtype,
            device=o.get("device", "auto"),
            revision=o.get("revision"),
            batch_size=batch,
            max_length=max_length,
            trust_remote_code=trust == "true",
            fused_gelu=fused == "true",
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


def positive_int(spec: ModelSpec, key: str, value: str) -> int:
    """A spec option's value as a positive integer, else an error naming the spec and key."""
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
