"""KFold, MultiSplits, MDLSplits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steadyeval import stats


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.integers(2, 10), st.integers(0, 40), st.sampled_from([None, 0, 7]))
def test_kfold_disjoint_and_covering(k: int, extra: int, seed: int | None) -> None:
    n = k + extra
    folds = list(stats.KFold(k, seed=seed).split(n))
    assert len(folds) == k == stats.KFold(k).get_n_splits()
    devs = np.concatenate([dev for _, dev in folds])
    assert np.array_equal(np.sort(devs), np.arange(n))  # each item in dev exactly once
    for train, dev in folds:
        assert np.intersect1d(train, dev).size == 0
        assert np.array_equal(np.union1d(train, dev), np.arange(n))
        assert dev.size in (n // k, n // k + 1)


def test_kfold_order_and_seed() -> None:
    assert [d.tolist() for _, d in stats.KFold(3).split(7)] == [[0, 1, 2], [3, 4], [5, 6]]
    a = [d.tolist() for _, d in stats.KFold(3, seed=1).split(30)]
    b = [d.tolist() for _, d in stats.KFold(3, seed=1).split(30)]
    assert a == b
    gen = np.random.default_rng(1)
    assert [d.tolist() for _, d in stats.KFold(3, seed=gen).split(30)] == a


@pytest.mark.parametrize("ratio", [0.5, 0.75, 0.3])
def test_multisplits_sizes_independent_of_k(ratio: float) -> None:
    n = 32
    sizes = set()
    for k in (1, 3, 5, 10):
        for train, dev in stats.MultiSplits(k, train_ratio=ratio, seed=0).split(n):
            sizes.add((train.size, dev.size))
            assert np.intersect1d(train, dev).size == 0
            assert train.size + dev.size == n
    assert sizes == {(round(n * ratio), n - round(n * ratio))}


def test_multisplits_prefix_stable_in_k() -> None:
    three = [d.tolist() for _, d in stats.MultiSplits(3, seed=4).split(20)]
    five = [d.tolist() for _, d in stats.MultiSplits(5, seed=4).split(20)]
    assert five[:3] == three
    assert len({tuple(d) for d in five}) > 1


def test_mdl_sizes_follow_fewnlu_formula() -> None:
    n, k = 32, 4
    splits = list(stats.MDLSplits(k).split(n))
    for i, (train, dev) in enumerate(splits, start=1):
        assert train.size == n // 2 + n * (i - 1) // (2 * k)
        assert dev.size == n // (2 * k)
        # dev is the block right after train (no shuffle)
        assert train.tolist() == list(range(train.size))
        assert dev.tolist() == list(range(train.size, train.size + dev.size))
    assert splits[-1][0].size + splits[-1][1].size == n
    # shuffled: first half identical across splits
    shuffled = list(stats.MDLSplits(k, seed=0).split(n))
    first = set(shuffled[0][0].tolist())
    assert all(first <= set(t.tolist()) for t, _ in shuffled)


def test_mdl_uneven_n() -> None:
    splits = list(stats.MDLSplits(3).split(20))
    assert [(t.size, d.size) for t, d in splits] == [(10, 3), (13, 3), (16, 4)]


@pytest.mark.parametrize(
    "splitter",
    [
        stats.KFold(4, seed=0),
        stats.MultiSplits(5, train_ratio=0.5, seed=0),
        stats.MDLSplits(3, seed=0),
    ],
    ids=["kfold", "multisplits", "mdl"],
)
def test_grouped_splitters_never_split_a_group(splitter: object) -> None:
    rng = np.random.default_rng(0)
    groups = rng.choice([f"passage{i}" for i in range(13)], size=80)
    n_splits = 0
    for train, dev in splitter.split(groups):  # type: ignore[attr-defined]
        n_splits += 1
        assert np.intersect1d(train, dev).size == 0
        assert not set(groups[train]) & set(groups[dev])
        for idx in (train, dev):  # whole groups only
            for g in set(groups[idx]):
                assert np.all(np.isin(np.flatnonzero(groups == g), idx))
    assert n_splits == splitter.get_n_splits()  # type: ignore[attr-defined]


def test_grouped_kfold_covers_every_item_once() -> None:
    groups = np.repeat([3, 1, 2, 5, 4, 0], [2, 3, 1, 4, 2, 2])
    devs = np.concatenate([d for _, d in stats.KFold(3, seed=2).split(groups)])
    assert np.array_equal(np.sort(devs), np.arange(groups.size))


def test_splitters_do_not_touch_global_rng() -> None:
    state = np.random.get_state()[1].copy()  # type: ignore[index]
    list(stats.KFold(3, seed=0).split(30))
    list(stats.MultiSplits(3, seed=0).split(30))
    list(stats.MDLSplits(3, seed=0).split(30))
    assert np.array_equal(np.random.get_state()[1], state)  # type: ignore[index]


def test_splitters_invalid() -> None:
    with pytest.raises(stats.StatsInputError, match="n_splits must be an integer >= 2"):
        stats.KFold(1)
    with pytest.raises(stats.StatsInputError, match="at least 5 units"):
        list(stats.KFold(5).split(4))
    with pytest.raises(stats.StatsInputError, match="needs a seed"):
        stats.MultiSplits(3)
    with pytest.raises(stats.StatsInputError, match="train_ratio"):
        stats.MultiSplits(3, train_ratio=1.0, seed=0)
    with pytest.raises(stats.StatsInputError, match="both must be at least 1"):
        list(stats.MultiSplits(3, train_ratio=0.9, seed=0).split(3))
    with pytest.raises(stats.StatsInputError, match="at least 8 units"):
        list(stats.MDLSplits(4).split(7))
    with pytest.raises(stats.StatsInputError, match="seed"):
        stats.KFold(3, seed=-1)
    with pytest.raises(stats.StatsInputError, match="int"):
        list(stats.KFold(3).split(3.0))
    with pytest.raises(stats.StatsInputError, match="NaN"):
        list(stats.KFold(2).split(np.array([1.0, np.nan, 2.0])))


def _sizes(splitter: object, n: int) -> list[tuple[int, int]]:
    return [(len(t), len(d)) for t, d in splitter.split(n)]  # type: ignore[attr-defined]


def test_fewnlu_sizes_follow_fewnlu_code() -> None:
    """FewNLU's DataProvider: CV folds of round(N/K) (halves to even), the last fold the
    rest; MDL the first floor(N/2) then the rest so cut; Multi-Splits train floor(N r)."""
    assert [d for _, d in _sizes(stats.KFold(4, sizes="fewnlu"), 10)] == [2, 2, 2, 4]
    assert [d for _, d in _sizes(stats.KFold(4, sizes="fewnlu"), 14)] == [4, 4, 4, 2]
    assert [d for _, d in _sizes(stats.KFold(4), 10)] == [3, 3, 2, 2]
    assert _sizes(stats.MDLSplits(4, sizes="fewnlu"), 30) == [(15, 4), (19, 4), (23, 4), (27, 3)]
    assert _sizes(stats.MDLSplits(4), 30) == [(15, 3), (18, 4), (22, 4), (26, 4)]
    assert _sizes(stats.MultiSplits(1, seed=0, sizes="fewnlu"), 33) == [(16, 17)]
    assert _sizes(stats.MultiSplits(1, seed=0), 33) == [(17, 16)]
    for k in (2, 4, 8):  # FewGLUE's N = 32: the two rules agree
        for make in (stats.KFold, stats.MDLSplits):
            assert _sizes(make(k, sizes="fewnlu"), 32) == _sizes(make(k), 32)
    # Every unit is still in exactly one CV dev fold.
    devs = np.concatenate([d for _, d in stats.KFold(4, seed=3, sizes="fewnlu").split(10)])
    assert sorted(devs.tolist()) == list(range(10))
    assert [d for _, d in _sizes(stats.KFold(4, sizes="fewnlu"), 5)] == [1, 1, 1, 2]
    with pytest.raises(stats.StatsInputError, match="last fold empty"):
        list(stats.KFold(8, sizes="fewnlu").split(12))  # round(1.5) = 2, 7 x 2 = 14 > 12
    with pytest.raises(stats.StatsInputError, match="sizes must be 'even' or 'fewnlu'"):
        stats.KFold(4, sizes="round")  # type: ignore[arg-type]
