"""The JSON files steadyeval writes: values made JSON-safe, files replaced atomically."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["json_safe", "replace_atomically", "write_json", "write_text_atomic"]


def json_safe(value: Any) -> Any:
    """NaN/inf → None, tuples → lists, numpy scalars and arrays → Python, keys → str,
    recursively."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    return value


def write_json(path: Path, data: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``data`` (made :func:`json_safe`) as indented JSON with sorted keys, through a
    temporary file renamed over ``path``: a crash never leaves half a file. Other objects
    raise ``TypeError`` unless ``default`` converts them (e.g. ``str`` for paths)."""
    text = json.dumps(json_safe(data), indent=2, sort_keys=True, default=default)
    write_text_atomic(path, text + "\n")


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write`` (its return value is ignored) on a temporary file of this process and thread (a unique name, so two
    writers never share one), then rename it over ``path``: a crash never leaves half a
    file, and the temporary file never stays."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` with :func:`replace_atomically`."""
    replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
