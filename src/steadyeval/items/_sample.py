"""A seeded random sample of items, stratified by subtask: ``--sample N``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from numbers import Integral
from typing import Any, Literal

from .._seeds import derive_seed
from ._item import Item, canonical_json, plain_json

__all__ = ["STRATA_KEYS", "allocate", "sample_items", "strata_key"]

_log = logging.getLogger(__name__)

#: The metadata keys a sample is stratified by when the caller names none: the first that
#: some item carries (``subtask``: lm-eval and Inspect tasks; ``subject``: MMLU).
STRATA_KEYS = ("subtask", "subject")


def strata_key(items: Sequence[Item]) -> str | None:
    """The first key of :data:`STRATA_KEYS` that some item's metadata holds, else None."""
    for key in STRATA_KEYS:
        if any(key in item.metadata for item in items):
            return key
    return None


def allocate(sizes: Sequence[int], n: int) -> list[int]:
    """How many of ``n`` draws each stratum of ``sizes`` items gets: proportional, by largest
    remainder, with at least one for each non-empty stratum when ``n`` is at least their
    number.

    Strata whose proportional share is under one get exactly one each (when ``n`` allows);
    the rest of ``n`` is shared among the others by largest remainder (Hamilton's method),
    again and again until no share is under one. Equal remainders go to the earlier
    stratum. Each count is at most its stratum's size; the counts sum to ``min(n, total)``.
    """
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"stratum sizes must be >= 0, got {sizes}")
    total = sum(sizes)
    n = min(int(n), total)
    counts = [0] * len(sizes)
    if n <= 0:
        return counts
    nonempty = [k for k, s in enumerate(sizes) if s > 0]
    big, seats, weight = nonempty, n, total
    if n >= len(nonempty):  # a stratum too small for a share of one still gets one
        while True:
            small = {k for k in big if seats * sizes[k] < weight}
            if not small:
                break
            big = [k for k in big if k not in small]
            seats, weight = seats - len(small), weight - sum(sizes[k] for k in small)
        for k in set(nonempty) - set(big):
            counts[k] = 1
    _hamilton(counts, sizes, big, seats, weight)
    return counts


def _hamilton(
    counts: list[int], sizes: list[int], among: list[int], seats: int, weight: int
) -> None:
    """``seats`` shared among the strata ``among`` in proportion to their ``sizes`` (total
    ``weight``) by largest remainder, into ``counts``; exact integer arithmetic."""
    if not among or seats <= 0:
        return
    quotas = {k: divmod(seats * sizes[k], weight) for k in among}
    for k, (whole, _) in quotas.items():
        counts[k] = whole
    left = seats - sum(whole for whole, _ in quotas.values())
    by_remainder = sorted(among, key=lambda k: (-quotas[k][1], k))
    for k in by_remainder[:left]:
        counts[k] += 1


def _rank(seed: int, item_id: str) -> int:
    """The item's place in the draw: a 64-bit number from the seed and its id alone."""
    return derive_seed(seed, "sample", item_id)


def _label(value: Any) -> str:
    """A metadata value as a stratum's label (any JSON value; a missing key is ``null``)."""
    return canonical_json(plain_json(value))


def sample_items(
    items: Sequence[Item],
    n: int,
    *,
    seed: int,
    strata: str | Literal[False] | None = None,
    per_stratum: bool = False,
) -> list[Item]:
    """A seeded random sample of ``n`` items, stratified, in the items' original order.

    Parameters
    ----------
    items : sequence of Item
        The data set (ids unique, as a run requires).
    n : int
        How many items to draw, at least 1. With ``n`` at least ``len(items)`` every item is
        kept (a warning says so).
    seed : int
        The sample's seed (a run's ``seed``): the same ids, ``n`` and seed give the same
        sample.
    strata : str or False, optional
        The item metadata key to stratify by. By default the first of ``subtask`` (set by
        lm-eval and Inspect tasks) and ``subject`` (MMLU) that some item carries; none (or
        ``False``): a simple random sample. Items without the key form a stratum of their
        own.
    per_stratum : bool
        Draw ``n`` items from each stratum (all of a smaller one), not ``n`` in all: the
        random counterpart of "the first N of each subject".

    Returns
    -------
    list of Item
        The sample: a subset of ``items``, in their order (not shuffled).

    Raises
    ------
    ValueError
        ``n`` below 1, or ``strata`` a key no item's metadata holds.

    Notes
    -----
    Each item's place in the draw is a 64-bit number derived from ``(seed, item id)`` by
    the seed recipe every part of steadyeval uses (SHA-256, the same on every platform);
    within a stratum the items with the smallest numbers are drawn (a uniformly random
    subset of that size: every subset is equally likely).
    So the sample depends on the items' ids, not on the order the rows were read; and
    with one seed, a stratum's larger draw holds its smaller one, so a pilot's answers
    come back from the cache in the larger run (all of them without strata, or with
    ``per_stratum``).

    Strata get proportional shares by largest remainder (Hamilton's method): each count is
    within one of ``n`` × the stratum's share of the items, except that when ``n`` is at
    least the number of strata each stratum gets at least one item (taken from the
    others' shares). The first ``N`` rows of a file sorted by subject or difficulty are
    a biased sample; this is the unbiased one.

    Examples
    --------
    >>> from steadyeval.items import Item, sample_items
    >>> items = [
    ...     Item(id=f"{s}-{k}", question="?", metadata={"subject": s})
    ...     for s in ("algebra", "law")
    ...     for k in range(6)
    ... ]
    >>> picked = sample_items(items, 4, seed=0)
    >>> len(picked), sorted({i.metadata["subject"] for i in picked})
    (4, ['algebra', 'law'])
    >>> picked == sample_items(items[::-1], 4, seed=0)[::-1]
    True
    """
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(f"n must be an integer, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"a sample of {n} items: give n >= 1")
    if strata and items and not any(strata in item.metadata for item in items):
        raise ValueError(f"no item's metadata holds the key {strata!r} to stratify by")
    if n >= len(items):
        if items and not per_stratum:
            _log.warning("a sample of %d of %d items: every item is kept", n, len(items))
        return list(items)
    key = strata_key(items) if strata is None else strata or None
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        label = "" if key is None else _label(item.metadata.get(key))
        groups.setdefault(label, []).append(index)
    labels = sorted(groups)
    sizes = [len(groups[label]) for label in labels]
    counts = [min(n, size) for size in sizes] if per_stratum else allocate(sizes, n)
    chosen: list[int] = []
    for label, count in zip(labels, counts, strict=True):
        members = groups[label]
        chosen += sorted(members, key=lambda i: (_rank(seed, items[i].id), items[i].id, i))[:count]
    return [items[i] for i in sorted(chosen)]
