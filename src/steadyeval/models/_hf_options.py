"""Options and model folders of the Hugging Face backends: the spec's options, validated
(:class:`HFOptions`; :data:`RUN_ONLY` names those that never change an output), the local
folder of a model (:func:`resolve_model_dir`: the path itself or the hub snapshot;
:func:`model_folder` for any ``transformers`` spec) and its config (:func:`load_config`).
``torch``, ``transformers`` and ``huggingface_hub`` are imported only when used.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ModelSpecError
from .._hub import locate
from .._log import duration
from ._spec import ModelSpec, echo, spec_where
from ._spec_values import (
    check_known,
    choice_option,
    flag_option,
    input_format_option,
    int_option,
    text_option,
)
from ._weights import import_transformers

__all__ = [
    "HF_BACKENDS",
    "RUN_ONLY",
    "HFOptions",
    "fetch_weights",
    "load_config",
    "model_folder",
    "positive_int",
    "resolve_model_dir",
    "weights_missing",
]

log = logging.getLogger(__name__)

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
    "special_tokens": "true | false (hf-seq2seq: the tokenizer's special tokens, e.g. T5's </s>, "
    "added to the input; default true)",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"device", "batch_size", "trust_remote_code", "packing", "input_format", "fused_gelu"}
)

_DTYPES = ("float32", "float16", "bfloat16", "auto")
_DEVICE = re.compile(r"cpu|cuda|cuda:[0-9]{1,4}|mps|auto")
#: The largest count an option takes (a batch size, GPUs, replicas, top-k).
MAX_COUNT = 1 << 20
#: The longest context an option names, in tokens.
MAX_CONTEXT = 1 << 24


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
    special_tokens: bool = True  # the encoder input gets the tokenizer's special tokens

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> HFOptions:
        check_known(spec, _ALLOWED)
        o = spec.options

        def flag(key: str, default: str) -> bool:
            return flag_option(spec, key, o.get(key, default))

        batch = o.get("batch_size", "auto")
        length = o.get("max_length")
        return cls(
            input_format=input_format_option(spec, o),
            packing=None if "packing" not in o else flag("packing", ""),
            dtype=choice_option(spec, "dtype", o.get("dtype", "float32"), _DTYPES),
            device=_device(spec, o.get("device", "auto")),
            revision=text_option(spec, "revision", o),
            batch_size=None if batch == "auto" else positive_int(spec, "batch_size", batch),
            max_length=None if length is None else context_length(spec, "max_length", length),
            trust_remote_code=flag("trust_remote_code", "false"),
            fused_gelu=flag("fused_gelu", "true"),
            special_tokens=flag("special_tokens", "true"),
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
    """A spec option's value as a count from 1 to :data:`MAX_COUNT` (a batch size, a number
    of GPUs, ...), else an error naming the spec and key."""
    return int_option(spec, key, value, high=MAX_COUNT)


def context_length(spec: ModelSpec, key: str, value: str) -> int:
    """A context length in tokens, from 1 to :data:`MAX_CONTEXT`."""
    return int_option(spec, key, value, high=MAX_CONTEXT, unit="tokens")


def _device(spec: ModelSpec, value: str) -> str:
    if not _DEVICE.fullmatch(value):
        raise ModelSpecError(
            f"{spec_where(spec)}: option device must be cpu, cuda, cuda:N, mps or auto, got "
            f"'{echo(value, 40)}'"
        )
    return value


def _offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set, read as ``huggingface_hub`` reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


#: A hub model's small files: its config, tokenizer, chat template and code.
_LIGHT = ["*.json", "*.model", "*.txt", "*.tiktoken", "*.py", "*.jinja"]
#: ... and its weights (safetensors only: pickled ``.bin`` files can run code).
_WEIGHTS = ["*.safetensors"]


def resolve_model_dir(spec: ModelSpec, options: HFOptions, *, weights: bool = True) -> Path:
    """A local directory holding the model's files: the path itself, or the hub snapshot.

    Whether the name is a local folder or a hub id is :func:`steadyeval._hub.locate`'s
    rule (what exists on disk and the hub id grammar, never a suffix). Hub models are
    resolved through ``huggingface_hub.snapshot_download`` (which reuses the local cache);
    when the hub cannot be reached the error says so and suggests a local path. With
    ``weights=False`` a hub snapshot gets only its small files (config, tokenizer): the
    backends fetch the weights on first use (:func:`fetch_weights`), so that a run which
    fails on its data or config has not downloaded gigabytes first.
    """
    where = locate(spec.name)
    if where.kind == "path":
        if where.path.is_dir():
            return where.path
        shown = echo(str(where.path.absolute()), 120)
        raise ModelSpecError(
            f"{spec_where(spec)}: "
            + (f"{shown} is not a folder" if where.exists else f"folder {shown} does not exist")
            + "; expected a model folder (holding config.json and the weights) or a hub id "
            "such as gpt2 or Qwen/Qwen2.5-0.5B"
        )
    if where.kind == "neither":
        raise ModelSpecError(
            f"{spec_where(spec)}: no folder of that name here, and not a hub id: {where.why}"
        )
    return _hub_snapshot(spec, options, _LIGHT + _WEIGHTS if weights else _LIGHT)


def fetch_weights(spec: ModelSpec, model_dir: Path) -> None:
    """Complete the hub snapshot ``model_dir`` (of hub model ``spec``) that
    :func:`resolve_model_dir` opened without its weights, at its commit: nothing to do (no
    hub call) when its weights are all there, else a download, logged at INFO. Raises
    :class:`ModelSpecError` naming the model when they cannot be had."""
    if weights_missing(model_dir) is None:
        return
    commit, offline = model_dir.name, _offline()
    if not offline:
        log.info("downloading the weights of %s (commit %s)…", spec, commit[:12])
    start = time.perf_counter()
    try:
        _download(spec.name, commit, _LIGHT + _WEIGHTS)
    except Exception as exc:  # huggingface_hub raises many types; all mean "not reachable"
        raise ModelSpecError(
            f"{spec_where(spec)}: hub model {spec.name} (commit {commit[:12]}) was opened, but "
            f"its weights could not be downloaded ({type(exc).__name__}: "
            f"{echo(str(exc), 200)}); run again when the hub is reachable, or pass a local "
            "model folder"
        ) from None
    missing = weights_missing(model_dir)
    if missing is not None:
        if any(model_dir.glob("*.bin")):
            advice = (
                "it holds pickled .bin weights, which steadyeval does not load (they can run "
                "code): convert them to safetensors and pass the local folder"
            )
        elif offline:
            advice = (
                "they are not in the local hub cache and HF_HUB_OFFLINE is set: unset it to "
                "download them, or pass a local model folder"
            )
        else:
            advice = (
                "the hub may be unreachable (huggingface_hub then falls back to the local "
                "cache), or the repository has no .safetensors weights (pickled .bin weights "
                "are not loaded: they can run code); pass a local model folder"
            )
        raise ModelSpecError(
            f"{spec_where(spec)}: hub model {spec.name} at commit {commit[:12]} lacks "
            f"{missing} in {echo(str(model_dir), 120)}; {advice}"
        )
    if not offline:
        took = duration(time.perf_counter() - start)
        log.info("downloaded the weights of %s in %s", spec, took)


def weights_missing(model_dir: Path) -> str | None:
    """What a snapshot lacks of its safetensors weights (None: nothing): the shards its
    ``model.safetensors.index.json`` lists, or any weights file at all."""
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"a readable weights index ({index.name})"
        if not shards:
            return f"weights: its {index.name} lists none"
        absent = [f for f in shards if not (model_dir / str(f)).is_file()]
        if absent:
            return f"{len(absent)} of its {len(shards)} weight shards ({echo(str(absent[0]), 80)})"
        return None
    # is_file: a cache's link to a deleted blob is no weights
    found = any(p.is_file() for p in model_dir.glob("*.safetensors"))
    return None if found else "its .safetensors weights"


def _download(name: str, revision: str | None, patterns: list[str]) -> Path:
    """``huggingface_hub.snapshot_download`` of the files matching ``patterns`` (from the
    local cache alone when ``HF_HUB_OFFLINE`` is set)."""
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            name, revision=revision, local_files_only=_offline(), allow_patterns=patterns
        )
    )


def _hub_snapshot(spec: ModelSpec, options: HFOptions, patterns: list[str]) -> Path:
    """The local snapshot of hub model ``spec.name`` (downloaded unless offline), holding
    the files that match ``patterns``."""
    from huggingface_hub import constants

    try:
        return _download(spec.name, options.revision, patterns)
    except Exception as exc:  # huggingface_hub raises many types; all mean "not reachable"
        if _offline():
            hint = (
                f"it is not in the local hub cache ({echo(str(constants.HF_HUB_CACHE), 120)}) "
                "and the hub is not reachable from here (HF_HUB_OFFLINE is set)"
            )
        else:
            hint = f"it could not be downloaded ({type(exc).__name__}: {echo(str(exc), 200)})"
        revision = f" at revision {echo(options.revision, 40)}" if options.revision else ""
        raise ModelSpecError(
            f"{spec_where(spec)}: cannot load hub model {spec.name}{revision}: {hint}; there "
            f"is no folder of that name here either. Pass a local directory instead, e.g. "
            f"--model {spec.backend}:./path/to/model (`steadyeval tiny-model DIR` writes a "
            "tiny test model)"
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
    """The folder's ``transformers`` config (the first touch of ``transformers`` when an
    ``hf`` backend or vLLM opens: :func:`import_transformers`)."""
    auto_config = import_transformers().AutoConfig
    try:
        return auto_config.from_pretrained(model_dir, trust_remote_code=options.trust_remote_code)
    except (OSError, ValueError) as exc:
        why = echo(" ".join(str(exc).split()), 300)
        raise ModelSpecError(
            f"{echo(str(model_dir), 120)}: not a Hugging Face model directory ({why})"
        ) from None
