"""Seeds derived from names: the one recipe every part of steadyeval uses to turn a seed and
some labels (an item id, a condition, a relation, a split) into a reproducible integer."""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(*parts: object, nbytes: int = 8) -> int:
    """The first ``nbytes`` of SHA-256 of the parts (as text, joined by the unit separator
    ``\\x1f``), read little-endian: the same on every platform and Python version, unlike
    ``hash()``. ``nbytes=4`` gives a seed that fits 32 bits (what torch's and Python's
    generators take without folding)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:nbytes], "little")
