"""Load a bench/ script as a module (bench/ is not a package: its scripts import each other
by putting their folder on ``sys.path``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module named ``name``."""
    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
