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
  ``_hub``, ``_limits``, ``_process``, ``_seeds`` and ``_version`` are the project's shared
  internals (the root package's own API for its subpackages) and may be imported from
  anywhere.

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
    ("requests",),
    ("conditions",),
    ("scoring",),
    ("cache",),
    ("models",),
    ("results",),
    ("run",),
    ("train",),
    ("document",),
    ("studies",),
    ("reports",),
    ("compare",),
    ("judge",),
    ("cli",),
    ("(api)",),
)
SHARED_ROOT = {
    "_errors",
    "_json",
    "_files",
    "_log",
    "_lazy",
    "_extras",
    "_hub",
    "_limits",
    "_process",
    "_seeds",
    "_version",
}


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


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` (steadyeval.x.y) names a module or package of the source tree."""
    path = SRC.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


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
                typed_line = node.lineno in typed
                names = []
                for alias in node.names:  # `from .. import stats` imports steadyeval.stats
                    sub = f"{target}.{alias.name}"
                    if _is_module(sub):
                        out.append(Edge(module, sub, (), node.lineno, typed_line))
                    else:
                        names.append(alias.name)
                if names:
                    out.append(Edge(module, target, tuple(names), node.lineno, typed_line))
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


class Findings(NamedTuple):
    graph: dict[str, set[str]]  # package -> packages it imports
    cycles: list[list[str]]  # packages in one strongly connected component
    upward: list[str]  # "src:line -> dst (why)"
    across: list[str]  # private names imported across packages
    inside: list[str]  # private names imported across files of one package (information)


def measure() -> Findings:
    """The import graph of the source and what breaks the rules."""
    all_edges = edges()
    graph: dict[str, set[str]] = defaultdict(set)
    upward: list[str] = []
    for e in all_edges:
        a, b = package(e.src), package(e.dst)
        if a == b:
            continue
        graph[a].add(b)
        graph.setdefault(b, set())
        if layer_of(b) > layer_of(a):
            upward.append(f"{e.src}:{e.line} -> {e.dst} ({a} imports {b}, a higher layer)")
    across, inside = private_imports(all_edges)
    return Findings(dict(graph), cycles(graph), upward, across, inside)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", action="store_true", help="print package edges")
    args = parser.parse_args()
    found = measure()
    if args.edges:
        for a in sorted(found.graph):
            print(f"{a} -> {', '.join(sorted(found.graph[a])) or '-'}")
    print(f"package cycles: {len(found.cycles)}")
    for c in found.cycles:
        print("  " + " <-> ".join(c))
    print(f"upward imports: {len(found.upward)}")
    for line in found.upward:
        print("  " + line)
    print(f"private names imported across packages: {len(found.across)}")
    for line in found.across:
        print("  " + line)
    print(f"private names imported across sibling files (information): {len(found.inside)}")
    return 1 if found.cycles or found.upward or found.across else 0


if __name__ == "__main__":
    sys.exit(main())
