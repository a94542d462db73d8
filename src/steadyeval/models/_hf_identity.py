"""What identifies a Hugging Face model folder: hashes of its config, tokenizer files and
(sampled) weights (:func:`content_hashes`), the cache fingerprint built from them
(:func:`fingerprint_dir`, also used by the ``vllm`` backend) and the ``model`` column
(:func:`model_identity`: hub name and commit, or folder name and content digest), and
:class:`FolderBackend`, the base that gives a folder backend both, computed once.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from pathlib import Path

from .._hub import locate
from ._backend import BaseBackend, spec_identity
from ._hf_options import HFOptions, fetch_weights, weights_missing
from ._spec import ModelSpec

__all__ = ["content_hashes", "fingerprint_dir", "model_identity"]

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


def fingerprint_dir(
    kind: str,
    spec: ModelSpec,
    model_dir: Path,
    options: HFOptions,
    hashes: Mapping[str, str] | None = None,
) -> str:
    """Backend, name, revision, dtype, context length, the folder's content hashes
    (``hashes`` when the caller has them, else computed), and the weight files' sizes and
    modification times (a large model trained again in place, whose sampled bytes might
    not show it, still gets a new fingerprint)."""
    weights = sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("*.bin"))
    stat = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights]
    body = {
        "backend": kind,
        "name": spec.name,
        "revision": options.revision,
        "dtype": options.dtype,
        "max_length": options.max_length,
        # only when off: the fingerprints (cache keys) of every other run are unchanged
        **({} if options.special_tokens else {"special_tokens": False}),
        **(content_hashes(model_dir) if hashes is None else hashes),
        "files": hashlib.sha256("\n".join(stat).encode()).hexdigest()[:16],
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


# The Hugging Face backends that name one model the same way (``hf:`` picks one of them).
_HF_FAMILY = frozenset({"hf", "hf-causal", "hf-seq2seq", "hf-masked", "hf-classifier"})
# Options whose default value is the same as not giving them.
_DEFAULTS = {"dtype": "float32", "special_tokens": "true"}
# Options read as true/false in any case (``flag_option``): one spelling in the identity.
_FLAGS = frozenset({"special_tokens"})


def model_identity(
    spec: ModelSpec,
    model_dir: Path,
    run_only: Iterable[str],
    hashes: Mapping[str, str] | None = None,
    local: bool | None = None,
) -> str:
    """The ``model`` column of an HF-style model: ``BACKEND:HUB_NAME@COMMIT`` for a hub model
    (the snapshot's commit, else the requested revision), ``BACKEND:FOLDER#CONTENT`` for a
    local folder (its name and the first 12 hex digits of its content hashes; no path), plus
    the options that change outputs (e.g. ``dtype``, ``max_length``) when they differ from
    their default. Every Hugging Face backend is ``hf`` (``hf:X`` and ``hf-causal:X`` are
    one model); vLLM stays ``vllm``. Local or hub: ``local``, as decided when the folder
    was resolved (default: :func:`steadyeval._hub.locate` now)."""
    spec = ModelSpec(
        "hf" if spec.backend in _HF_FAMILY else spec.backend,
        spec.name,
        {
            k: v
            for k, v in ((k, v.lower() if k in _FLAGS else v) for k, v in spec.options.items())
            if _DEFAULTS.get(k) != v
        },
    )
    if local is None:
        local = locate(spec.name).kind == "path"
    if local:
        digest = hashlib.sha256(
            json.dumps(
                dict(content_hashes(model_dir) if hashes is None else hashes), sort_keys=True
            ).encode()
        ).hexdigest()[:12]
        name = f"{model_dir.resolve().name}#{digest}"
    else:
        snapshot = model_dir.name if model_dir.parent.name == "snapshots" else None
        revision = snapshot[:12] if snapshot else spec.options.get("revision")
        name = f"{spec.name}@{revision}" if revision else spec.name
    return spec_identity(spec, name, {*run_only, "revision"})


class FolderBackend(BaseBackend):
    """A backend whose model is a local ``transformers`` folder (the ``hf`` family, vLLM):
    its :meth:`fingerprint` (:func:`fingerprint_dir`) and :meth:`identity`
    (:func:`model_identity`), each computed once, share one read of the folder's content
    hashes. Subclasses set ``kind``, ``spec`` and ``model_dir`` and say which
    :class:`HFOptions` enter the fingerprint (:meth:`_fingerprint_options`)."""

    kind: str = ""
    model_dir: Path
    _fingerprint: str | None = None
    _identity: str | None = None
    #: Whether the model is a local folder (else a hub snapshot), decided when it is opened.
    _local: bool = True
    _weights_fetched: bool = False

    def _fingerprint_options(self) -> HFOptions:
        """The options whose revision, dtype and context length enter the fingerprint."""
        raise NotImplementedError

    def _opened(self) -> None:
        """Note whether the folder just resolved is local or a hub snapshot (whatever the
        working directory holds later)."""
        self._local = locate(self.spec.name).kind == "path"

    @property
    def fingerprint_pending(self) -> bool:
        """A hub snapshot whose weights are not in the local cache yet: its fingerprint
        (which hashes them) would download them first."""
        return (
            self._fingerprint is None
            and not self._local
            and not self._weights_fetched
            and weights_missing(self.model_dir) is not None
        )

    def _fetch_weights(self) -> None:
        """A hub snapshot's weights, downloaded once, at the commit of its small files (the
        backends open a hub model with those only: :func:`resolve_model_dir`)."""
        if not self._weights_fetched:
            if not self._local:
                fetch_weights(self.spec, self.model_dir)
            self._weights_fetched = True

    @cached_property
    def _content_hashes(self) -> dict[str, str]:
        """The folder's content hashes, read once for the fingerprint and the identity."""
        self._fetch_weights()
        return content_hashes(self.model_dir)

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint_dir(
                self.kind,
                self.spec,
                self.model_dir,
                self._fingerprint_options(),
                self._content_hashes,
            )
        return self._fingerprint

    def identity(self) -> str:
        if self._identity is None:
            # a hub model is named by its commit: its weights need not be here yet
            self._identity = model_identity(
                self.spec,
                self.model_dir,
                self.run_only_options,
                self._content_hashes if self._local else None,
                local=self._local,
            )
        return self._identity
