"""The size rule (no source file over 800 lines, no function over 100 lines of code) holds,
and the checker counts what it says it counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "tools" / "check_sizes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_sizes"] = module
    spec.loader.exec_module(module)
    return module


def test_the_source_is_within_the_size_limits() -> None:
    check = _checker()
    files, functions = check.measure(sorted((ROOT / "src").rglob("*.py")))
    assert check.breaches(files, functions) == []


def test_docstrings_comments_and_blank_lines_do_not_count(tmp_path: Path) -> None:
    check = _checker()
    body = "\n".join(f"    x{i} = {i}" for i in range(101))
    source = f'def big():\n    """Doc\n\n    more doc\n    """\n    # a comment\n\n{body}\n'
    source += 'def small():\n    """' + "\n" * 800 + '"""\n    return 1\n'
    path = tmp_path / "m.py"
    path.write_text(source)
    files, functions = check.measure([path])
    sizes = {f.where.split()[-1]: f.lines for f in functions}
    assert sizes == {"big": 102, "small": 2}  # def line + 101 statements; def + return
    assert any("big: 102 lines of code" in b for b in check.breaches(files, functions))
    assert any("lines (limit 800)" in b for b in check.breaches(files, functions))
