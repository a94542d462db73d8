"""A toy plug-in module for tests/core/test_plugins.py: importing it registers a data loader
(as an installed package's ``steadyeval.plugins`` entry point would)."""

from __future__ import annotations

from pathlib import Path

from steadyeval import Item
from steadyeval.items import register_loader


def load_lines(source: str | Path, *, limit: int | None = None) -> list[Item]:
    lines = Path(source).read_text().splitlines()[:limit]
    return [Item(id=f"l{i}", question=q, answers=("x",)) for i, q in enumerate(lines)]


register_loader("toy-lines", load_lines, replace=True)
