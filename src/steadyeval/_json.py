"""The JSON files steadyeval writes: values made JSON-safe, files replaced atomically."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["json_safe", "write_json"]


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
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(json_safe(data), indent=2, sort_keys=True, default=default)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
