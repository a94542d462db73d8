"""Provenance: versions, git SHA, hardware, model fingerprints, timings."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["provenance"]

_PACKAGES = ("steadyeval", "torch", "transformers", "tokenizers", "numpy", "scipy", "pyarrow")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_sha() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _hardware() -> dict[str, Any]:
    hw: dict[str, Any] = {"cpu_count": os.cpu_count(), "machine": platform.machine()}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        hw["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return hw


def provenance(
    fingerprints: dict[str, str], timings: dict[str, float], counts: dict[str, int]
) -> dict[str, Any]:
    return {
        "packages": {p: _version(p) for p in _PACKAGES},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "git_sha": _git_sha(),
        "hardware": _hardware(),
        "models": fingerprints,
        "timings_s": {k: round(v, 4) for k, v in timings.items()},
        "counts": counts,
        # when the run finished (UTC): what an export records as its time (a file's own
        # date changes with every copy)
        "finished_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
    }
