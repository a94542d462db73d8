"""Check the size limits of the source: no file over 800 lines, no function over 100 lines of
code (blank lines, comment lines and docstrings do not count). Files over 500 lines and
functions over 80 are listed as information: a sign to look for a split by responsibility,
never a reason to cut code apart to fit a number.

    python tools/check_sizes.py            # report the largest files and functions; exit 1 on a breach
    python tools/check_sizes.py --top 20   # show more of each

CI runs it (``.ci/run``) and ``tests/core/test_sizes.py`` runs it too.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from pathlib import Path
from typing import NamedTuple

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
#: Sizes reported as information, not failures.
AIM_FILE_LINES = 500
AIM_FUNCTION_LINES = 80
ROOT = Path(__file__).resolve().parents[1]


class Size(NamedTuple):
    lines: int
    where: str  # path or path:line name


def _docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers taken by docstrings (module, class and function)."""
    out: set[int] = set()
    owners = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    for node in ast.walk(tree):
        if not isinstance(node, owners) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            out.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return out


def _code_lines(source: str, tree: ast.AST) -> set[int]:
    """Line numbers holding code: not blank, not only a comment, not a docstring."""
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in skip or tok.type == tokenize.ENDMARKER:
            continue
        lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - _docstring_lines(tree)


def measure(paths: list[Path]) -> tuple[list[Size], list[Size]]:
    """(files by physical lines, functions by lines of code), largest first."""
    files: list[Size] = []
    functions: list[Size] = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        files.append(Size(len(source.splitlines()), str(rel)))
        tree = ast.parse(source, filename=str(path))
        code = _code_lines(source, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                n = sum(1 for i in span if i in code)
                functions.append(Size(n, f"{rel}:{node.lineno} {node.name}"))
    return sorted(files, reverse=True), sorted(functions, reverse=True)


def breaches(files: list[Size], functions: list[Size]) -> list[str]:
    out = [f"{f.where}: {f.lines} lines (limit {MAX_FILE_LINES})" for f in files]
    out = [o for o, f in zip(out, files, strict=True) if f.lines > MAX_FILE_LINES]
    out += [
        f"{f.where}: {f.lines} lines of code (limit {MAX_FUNCTION_LINES})"
        for f in functions
        if f.lines > MAX_FUNCTION_LINES
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "src"])
    parser.add_argument("--top", type=int, default=5, help="largest files/functions to show")
    args = parser.parse_args(argv)
    paths = sorted(
        p for root in args.paths for p in ([root] if root.is_file() else root.rglob("*.py"))
    )
    files, functions = measure(paths)
    print(f"{len(files)} files, {sum(f.lines for f in files)} lines; {len(functions)} functions")
    print(f"largest files (limit {MAX_FILE_LINES} lines):")
    for f in files[: args.top]:
        print(f"  {f.lines:5d}  {f.where}")
    print(f"largest functions (limit {MAX_FUNCTION_LINES} lines of code, docstrings excluded):")
    for f in functions[: args.top]:
        print(f"  {f.lines:5d}  {f.where}")
    over = [f for f in files if AIM_FILE_LINES < f.lines <= MAX_FILE_LINES]
    over += [f for f in functions if AIM_FUNCTION_LINES < f.lines <= MAX_FUNCTION_LINES]
    if over:
        print(
            f"over {AIM_FILE_LINES} lines (files) or {AIM_FUNCTION_LINES} (functions), within the limits:"
        )
        for f in over:
            print(f"  {f.lines:5d}  {f.where}")
    bad = breaches(files, functions)
    for b in bad:
        print(f"too large: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
