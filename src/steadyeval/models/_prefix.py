"""How much two prompts (token ids or texts) share at their start: the test that keeps one
item's requests together, in a packed row (:mod:`._packing`) and in a dispatch batch
(``steadyeval.run`` cuts batches only between requests it finds unrelated)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["shared_prefix", "shares_long_prefix"]


def shared_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shares_long_prefix(a: Sequence[object], b: Sequence[object]) -> bool:
    """Whether ``a`` and ``b`` (neither empty) share a prefix of at least half the shorter
    one: one item's options and formats."""
    return shared_prefix(a, b) * 2 >= min(len(a), len(b)) > 0
