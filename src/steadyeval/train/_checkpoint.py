"""Content-addressed checkpoints: one folder per training key, written atomically, reused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._json import write_json
from .._process import alive
from ..items import canonical_json

__all__ = [
    "MANIFEST",
    "CheckpointInfo",
    "CheckpointStore",
    "checkpoint_key",
    "stamp_weights",
]

MANIFEST = "steadyeval-checkpoint.json"
_DIGEST_KEY = "steadyeval.weights_sha256"


def checkpoint_key(payload: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of everything that decides a checkpoint.

    ``payload`` should hold the task, method, hyperparameters, the content hashes of the
    training (and checkpoint-selection) examples, the seed and the base model's fingerprint.
    """
    return hashlib.sha256(canonical_json(dict(payload)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CheckpointInfo:
    """A finished checkpoint: where it is and what its training recorded.

    Attributes
    ----------
    path : Path
        The folder (``save_pretrained`` layout plus :data:`MANIFEST`).
    key : str
        Its content key (:func:`checkpoint_key`).
    best_step : int
        The training step whose weights were kept (best dev score, or the last step).
    best_dev : float or None
        The dev score at ``best_step`` (None without a dev set).
    history : tuple of (step, dev score)
        Every evaluation made during training.
    payload : mapping
        What the key was computed from.
    extra : mapping
        What the trainer reports for evaluation (e.g. the ``max_length`` it used).
    reused : bool
        True when the checkpoint was found on disk rather than trained now.
    """

    path: Path
    key: str
    best_step: int
    best_dev: float | None
    history: tuple[tuple[int, float], ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False

    def to_manifest(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "best_step": self.best_step,
            "best_dev": self.best_dev,
            "history": [list(h) for h in self.history],
            "payload": dict(self.payload),
            "extra": dict(self.extra),
        }


@dataclass(frozen=True)
class TrainOutcome:
    """What a training function reports after writing its weights into a folder."""

    best_step: int
    best_dev: float | None
    history: tuple[tuple[int, float], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


class CheckpointStore:
    """Folders ``ROOT/<key[:24]>`` holding finished checkpoints.

    A checkpoint is trained into a temporary sibling folder and renamed into place only once
    its weights and manifest are written, so a killed run leaves no half-written checkpoint
    behind and a rerun trains only what is missing.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._temporary: tempfile.TemporaryDirectory[str] | None = None

    @classmethod
    def temporary(cls) -> CheckpointStore:
        """A store in a new temporary folder, deleted with the store (or when the process
        exits): for runs without a run directory."""
        folder = tempfile.TemporaryDirectory(prefix="steadyeval-checkpoints-")
        store = cls(folder.name)
        store._temporary = folder
        return store

    def path_for(self, key: str) -> Path:
        return self.root / key[:24]

    def get(self, key: str) -> CheckpointInfo | None:
        """The finished checkpoint for ``key``, or None."""
        path = self.path_for(key)
        manifest = path / MANIFEST
        if not manifest.is_file():
            return None
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if data.get("key") != key:
            raise RuntimeError(
                f"{manifest}: holds checkpoint {data.get('key')!r}, not {key!r}; "
                "delete the folder and run again"
            )
        return CheckpointInfo(
            path=path,
            key=key,
            best_step=int(data["best_step"]),
            best_dev=data["best_dev"],
            history=tuple((int(s), float(v)) for s, v in data.get("history", [])),
            payload=data.get("payload", {}),
            extra=data.get("extra", {}),
            reused=True,
        )

    def get_or_train(
        self,
        key: str,
        payload: Mapping[str, Any],
        train: Callable[[Path], TrainOutcome],
    ) -> CheckpointInfo:
        """Return the checkpoint for ``key``, training it with ``train(folder)`` if missing."""
        found = self.get(key)
        if found is not None:
            return found
        self.root.mkdir(parents=True, exist_ok=True)
        self._remove_abandoned(key)
        final = self.path_for(key)
        prefix = f".{key[:12]}+{socket.gethostname()}+{os.getpid()}+"
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))
        try:
            outcome = train(staging)
            stamp_weights(staging)
            info = CheckpointInfo(
                path=final,
                key=key,
                best_step=outcome.best_step,
                best_dev=outcome.best_dev,
                history=outcome.history,
                payload=dict(payload),
                extra=dict(outcome.extra),
            )
            write_json(staging / MANIFEST, info.to_manifest())
            try:
                os.replace(staging, final)
            except OSError:
                # Another process finished the same checkpoint first: keep theirs.
                if self.get(key) is None:
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return info

    def _remove_abandoned(self, key: str) -> None:
        """Delete staging folders for ``key`` left by killed processes on this host."""
        host = socket.gethostname()
        for path in self.root.glob(f".{key[:12]}+*"):
            parts = path.name.split("+")
            if len(parts) != 4 or parts[1] != host or not parts[2].isdigit():
                continue
            if not alive(int(parts[2])):
                shutil.rmtree(path, ignore_errors=True)


def stamp_weights(folder: str | Path) -> None:
    """Record a SHA-256 of every tensor's bytes in each ``*.safetensors`` file's metadata.

    Model fingerprints read safetensors headers only; with the digest in the header, two
    checkpoints of the same architecture but different weights get different fingerprints.
    """
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as fh:
            metadata = dict(fh.metadata() or {})
            tensors = {name: fh.get_tensor(name) for name in fh.keys()}  # noqa: SIM118
        digest = hashlib.sha256()
        for name in sorted(tensors):
            t = tensors[name].contiguous().reshape(-1)
            digest.update(name.encode() + b"\0" + str(t.dtype).encode() + b"\0")
            digest.update(t.view(torch.uint8).numpy().tobytes())
        metadata[_DIGEST_KEY] = digest.hexdigest()
        save_file(tensors, str(path), metadata=metadata)
