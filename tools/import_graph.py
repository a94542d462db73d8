"""The import graph of ``src/steadyeval``: cycles between packages, upward arrows against the
declared layer order, and private names imported across files.

    python tools/import_graph.py            # report; exit 1 on a cycle, an upward arrow or a
                                            # private import across packages
    python tools/import_graph.py --edges    # also print every package-to-package edge

Rules (issue 39):

* ``LAYERS`` orders the packages from the bottom up; a package may import its own layer or
  lower ones, never a higher one (an "upward arrow"). Packages in one layer must not form a
  cycle.
* A name beginning with ``_`` (a private module or a private attribute) may be imported only
  from inside the same package (``steadyeval.x._a`` from ``steadyeval.x._b``). The top-level
  modules ``steadyeval._errors``, ``_json``, ``_files``, ``_log``, ``_lazy``, ``_extras``,
  ``_hub`` and ``_limits`` are the project's shared internals (the root package's own API for its
  subpackages) and may be imported from anywhere.

Imports inside ``if TYPE_CHECKING:`` blocks count as edges for cycles between packages (a
type-only cycle is still a design cycle) but are reported separately.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "steadyeval"

#: Bottom to top. A package imports only from its own layer or below.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("(root)",),
    ("stats",),
    ("items",),
    ("conditions",),
    ("scoring",),
    ("requests",),
    ("models",),
    ("cache",),
    ("results",),
    ("run",),
    ("train",),
    ("studies",),
    ("reports",),
    ("compare",),
    ("cli",),
    ("(api)",),
)
SHARED_ROOT = {"_errors", "_json", "_files", "_log", "_lazy", "_extras", "_hub", "_limits"}


class Edge(NamedTuple):
    src: str  # module path, e.g. steadyeval.run._run
    dst: str  # module imported, e.g. steadyeval.results._manifest
    names: tuple[str, ...]
    line: int
    type_only: bool


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    for inner in ast.walk(sub):
                        if hasattr(inner, "lineno"):
                            lines.add(inner.lineno)
    return lines


def edges() -> list[Edge]:
    out: list[Edge] = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typed = _type_checking_lines(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(module, node, is_package)
                if not target.startswith("steadyeval"):
                    continue
                names = tuple(a.name for a in node.names)
                out.append(Edge(module, target, names, node.lineno, node.lineno in typed))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("steadyeval"):
                        out.append(Edge(module, alias.name, (), node.lineno, node.lineno in typed))
    return out


def package(module: str) -> str:
    """The package of ``module``: its first level under ``steadyeval``; ``(api)`` for the
    façade (``steadyeval/__init__.py``, ``__main__``), ``(root)`` for the shared internals."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "(api)"
    if len(parts) == 2 and parts[1].startswith("_"):
        return "(root)"
    return parts[1]


def layer_of(pkg: str) -> int:
    for i, layer in enumerate(LAYERS):
        if pkg in layer:
            return i
    raise SystemExit(f"package {pkg!r} is in no layer of tools/import_graph.py; add it")


def private_imports(all_edges: list[Edge]) -> tuple[list[str], list[str]]:
    """(across packages, across files inside one package) private imports."""
    across, inside = [], []
    for e in all_edges:
        src_pkg, dst_pkg = package(e.src), package(e.dst)
        dst_parts = e.dst.split(".")
        private_module = any(p.startswith("_") for p in dst_parts[1:])
        if dst_pkg == "(root)" and len(dst_parts) == 2 and dst_parts[1] in SHARED_ROOT:
            private_module = False
        private_names = [n for n in e.names if n.startswith("_") and n != "__version__"]
        if not private_module and not private_names:
            continue
        where = f"{e.src}:{e.line} -> {e.dst} {', '.join(private_names)}".rstrip()
        if src_pkg != dst_pkg:
            across.append(where)
        elif private_names or _sibling_private(e):
            inside.append(where)
    return across, inside


def _sibling_private(e: Edge) -> bool:
    """A private module of the same package imported from a private module: fine (the
    package's own files), unless it crosses sub-packages (studies.a -> studies.b)."""
    src, dst = e.src.split("."), e.dst.split(".")
    return len(src) > 2 and len(dst) > 2 and src[2] != dst[2] and not src[2].startswith("_")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", action="store_true", help="print package edges")
    args = parser.parse_args()
    all_edges = edges()
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    upward: list[str] = []
    for e in all_edges:
        a, b = package(e.src), package(e.dst)
        if a == b:
            continue
        pkg_graph[a].add(b)
        pkg_graph.setdefault(b, set())
        if layer_of(b) > layer_of(a):
            upward.append(f"{e.src}:{e.line} -> {e.dst} ({a} imports {b}, a higher layer)")
    pkg_cycles = cycles(pkg_graph)
    across, inside = private_imports(all_edges)
    if args.edges:
        for a in sorted(pkg_graph):
            print(f"{a} -> {', '.join(sorted(pkg_graph[a])) or '-'}")
    print(f"package cycles: {len(pkg_cycles)}")
    for c in pkg_cycles:
        print("  " + " <-> ".join(c))
    print(f"upward imports: {len(upward)}")
    for line in upward:
        print("  " + line)
    print(f"private names imported across packages: {len(across)}")
    for line in across:
        print("  " + line)
    print(f"private names imported across sibling files (information): {len(inside)}")
    return 1 if pkg_cycles or upward or across else 0


if __name__ == "__main__":
    sys.exit(main())
