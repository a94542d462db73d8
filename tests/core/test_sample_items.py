"""``sample_items``: a seeded random sample that depends on the items' ids and the seed (not
on the order the rows were read), keeps the items' order, and shares ``n`` among the strata
(subtask, else subject) in proportion by largest remainder."""

from __future__ import annotations

import logging
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steadyeval.items import Item, sample_items


def _items(sizes: dict[str, int], key: str = "subject") -> list[Item]:
    return [
        Item(id=f"{name}/{k}", question=f"q {name} {k}?", metadata={key: name})
        for name, size in sizes.items()
        for k in range(size)
    ]


def _ids(items: list[Item]) -> list[str]:
    return [item.id for item in items]


def test_the_same_seed_draws_the_same_items_and_another_seed_others() -> None:
    items = [Item(id=f"i{k}", question="?") for k in range(200)]
    first = sample_items(items, 20, seed=7)
    assert _ids(first) == _ids(sample_items(items, 20, seed=7))
    assert _ids(first) != _ids(sample_items(items, 20, seed=8))
    assert len(first) == 20 and len(set(_ids(first))) == 20


def test_golden_sample() -> None:
    """The draw is pinned: a change to the recipe changes every sampled run's items."""
    items = [Item(id=f"i{k}", question="?") for k in range(10)]
    assert _ids(sample_items(items, 3, seed=0)) == GOLDEN


#: Ids i0..i9, n=3, seed=0, by hand: the three ids whose first 8 bytes of
#: sha256("0\x1fsample\x1f" + id), read little-endian, are smallest, in file order.
GOLDEN = ["i1", "i3", "i4"]


def test_the_sample_is_a_subset_in_the_items_order_whatever_the_row_order() -> None:
    items = _items({"algebra": 30, "law": 20, "virology": 10})
    picked = sample_items(items, 12, seed=3)
    positions = [items.index(item) for item in picked]
    assert positions == sorted(positions)  # a subset, not a shuffle
    for order in (items[::-1], sorted(items, key=lambda i: i.question[::-1])):
        again = sample_items(order, 12, seed=3)
        assert sorted(_ids(again)) == sorted(_ids(picked))
        assert _ids(again) == [i.id for i in order if i in set(picked)]


def test_a_larger_sample_holds_a_smaller_one() -> None:
    """Without strata, n and n + k with one seed nest: a pilot's answers are reused."""
    items = [Item(id=f"i{k}", question="?") for k in range(100)]
    small = set(_ids(sample_items(items, 10, seed=1)))
    assert small <= set(_ids(sample_items(items, 40, seed=1)))


def test_strata_are_subtask_else_subject_else_none() -> None:
    both = [
        Item(id=f"{k}", question="?", metadata={"subtask": "t" + str(k % 2), "subject": "s"})
        for k in range(40)
    ]
    assert Counter(i.metadata["subtask"] for i in sample_items(both, 10, seed=0)) == {
        "t0": 5,
        "t1": 5,
    }
    # ``strata`` names another key: here every item has the same subject, one stratum
    picked = sample_items(both, 10, seed=0, strata="subject")
    assert len(picked) == 10
    with pytest.raises(ValueError, match="'level'"):
        sample_items(both, 10, seed=0, strata="level")


def test_every_stratum_gets_one_when_n_allows() -> None:
    items = _items({"big": 990, "a": 5, "b": 5})
    counts = Counter(i.metadata["subject"] for i in sample_items(items, 10, seed=0))
    assert counts == {"big": 8, "a": 1, "b": 1}
    # fewer draws than strata: largest remainder alone (the big stratum's share is 1.98)
    counts = Counter(i.metadata["subject"] for i in sample_items(items, 2, seed=0))
    assert counts == {"big": 2}


def test_items_without_the_key_are_a_stratum_of_their_own() -> None:
    items = _items({"algebra": 10}) + [Item(id=f"x{k}", question="?") for k in range(10)]
    picked = sample_items(items, 6, seed=0)
    assert sum("subject" in i.metadata for i in picked) == 3


def test_n_of_all_items_or_more_keeps_them_all_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    items = _items({"a": 3})
    with caplog.at_level(logging.WARNING, logger="steadyeval"):
        assert sample_items(items, 5, seed=0) == items
    assert "every item is kept" in caplog.text


@pytest.mark.parametrize("n", [0, -3])
def test_n_below_one_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        sample_items(_items({"a": 3}), n, seed=0)


def test_n_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match="integer"):
        sample_items(_items({"a": 3}), 2.0, seed=0)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    fraction=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
)
def test_shares_are_proportional_by_largest_remainder(
    sizes: list[int], fraction: float, seed: int
) -> None:
    """The counts sum to n; each is within one of its proportional share, except that (when
    n is at least the number of strata) a stratum whose share is under one gets exactly one
    and the others share what is left in proportion."""
    total = sum(sizes)
    n = max(1, min(total - 1, round(fraction * total))) if total > 1 else 1
    items = _items({f"s{k}": size for k, size in enumerate(sizes)})
    picked = sample_items(items, n, seed=seed)
    counts = Counter(i.metadata["subject"] for i in picked)
    got = [counts.get(f"s{k}", 0) for k in range(len(sizes))]
    assert sum(got) == min(n, total)
    assert all(0 <= g <= s for g, s in zip(got, sizes, strict=True))
    if n >= total:
        return
    share = [Fraction(n * s, total) for s in sizes]
    if n < len(sizes) or all(q >= 1 for q in share):
        assert all(abs(g - q) < 1 for g, q in zip(got, share, strict=True))
        return
    assert all(g >= 1 for g in got)
    rest, small = list(range(len(sizes))), set()  # the strata whose share stays under one
    while True:
        seats, weight = n - len(small), sum(sizes[k] for k in rest)
        under = {k for k in rest if Fraction(seats * sizes[k], weight) < 1}
        if not under:
            break
        small |= under
        rest = [k for k in rest if k not in under]
    assert all(got[k] == 1 for k in small)
    assert all(abs(got[k] - Fraction(seats * sizes[k], weight)) < 1 for k in rest)


def test_per_stratum_draws_n_of_each() -> None:
    items = _items({"algebra": 10, "law": 2, "virology": 6})
    picked = sample_items(items, 4, seed=0, per_stratum=True)
    assert Counter(i.metadata["subject"] for i in picked) == {
        "algebra": 4,
        "law": 2,
        "virology": 4,
    }
    algebra = [i for i in items if i.metadata["subject"] == "algebra"]
    assert [i for i in picked if i in set(algebra)] == sample_items(algebra, 4, seed=0)
