"""Hostile JSON for the fuzz targets: values of every JSON type and at every edge (huge
integers, NaN and infinities, lone surrogates, long text, deep nesting), and edits that put
one at a path of a real document, so that the rest of the document stays valid and the
reader gets as far as that field.

Deep nesting cannot be built as a Python value (``json.dumps`` would recurse), so it is a
marker string, :data:`DEEP`, that :func:`dump` replaces by ``[[[...]]]`` in the text.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

__all__ = ["DEEP", "Edit", "apply_edits", "depths", "dump", "edits", "hostile_value"]

DEEP = "\x00deep\x00"
#: Nesting depths a deep value takes: the limit, just over it, and far over it.
_DEPTHS = (99, 101, 100_000)

_edge_ints = st.sampled_from([0, -1, 1, 2, 2**31 - 1, 2**31, 2**63, -(2**63), 10**400, -(10**400)])
_edge_floats = st.sampled_from([math.nan, math.inf, -math.inf, 1e30, -0.0, 0.5, 1e-320])
_edge_text = st.sampled_from(
    ["", " ", "\ud800", "a\udfffb", "\x00", "é", "[", "{", "A", "C", "I", "N", "0", "1e400",
     "nan", "-inf", "x" * 5000, "../../x", "[link=x]y[/link]", "<b>", "{{ 7*7 }}"]
)  # fmt: skip
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    _edge_ints,
    st.floats(),
    _edge_floats,
    st.text(max_size=8),
    _edge_text,
    st.just(DEEP),
)
hostile_value: st.SearchStrategy[Any] = st.recursive(
    _scalar,
    lambda c: (
        st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4) | _edge_text, c, max_size=3)
    ),
    max_leaves=6,
)


def dump(value: Any, *, depth: int = 100_000) -> bytes:
    """``value`` as JSON bytes (NaN and lone surrogates kept as a hostile writer would
    write them), each :data:`DEEP` marker replaced by lists nested ``depth`` deep."""
    text = json.dumps(value, allow_nan=True, ensure_ascii=False)
    marker = json.dumps(DEEP, ensure_ascii=False)
    text = text.replace(marker, "[" * depth + "]" * depth)
    return text.encode("utf-8", "surrogatepass")


#: One edit of a document: (path, value) sets a value, (path, None-marker) deletes it.
Edit = tuple[tuple[str, ...], Any]
_DELETE = object()


def edits(paths: Sequence[tuple[str, ...]], max_size: int = 3) -> st.SearchStrategy[list[Edit]]:
    """Lists of edits at ``paths`` (a segment ``*`` is the first key or element there)."""
    one = st.tuples(st.sampled_from(list(paths)), hostile_value | st.just(_DELETE))
    return st.lists(one, max_size=max_size)


def _step(node: Any, key: str) -> Any:
    if key == "*":
        if isinstance(node, dict):
            return next(iter(node), None)
        return 0 if isinstance(node, list) and node else None
    if isinstance(node, list):
        return int(key) if key.isdigit() and int(key) < len(node) else None
    return key if isinstance(node, dict) else None


def apply_edits(doc: Any, changes: Sequence[Edit]) -> Any:
    """A copy of ``doc`` with each edit applied where its path exists (a missing last key
    is added to an object)."""
    doc = copy.deepcopy(doc)
    for path, value in changes:
        node = doc
        for key in path[:-1]:
            k = _step(node, key)
            if k is None or (isinstance(node, dict) and k not in node):
                node = None
                break
            node = node[k]
        last = _step(node, path[-1]) if node is not None else None
        if last is None:
            continue
        if value is _DELETE:
            if isinstance(node, dict):
                node.pop(last, None)
            else:
                del node[last]
        else:
            node[last] = value
    return doc


def depths() -> st.SearchStrategy[int]:
    """A nesting depth for :func:`dump`."""
    return st.sampled_from(_DEPTHS)
