"""Resampling schemes as scikit-learn-style splitters: K-fold, Multi-Splits, MDL."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import SeedLike, as_positive_int, check_seed, make_rng

__all__ = ["KFold", "MDLSplits", "MultiSplits"]

IndexPair = tuple[NDArray[np.intp], NDArray[np.intp]]
Sizes = Literal["even", "fewnlu"]


def _check_sizes(sizes: Any) -> None:
    if sizes not in ("even", "fewnlu"):
        raise StatsInputError(f"sizes must be 'even' or 'fewnlu'; got {sizes!r}.")


def _blocks(n: int, k: int, sizes: Sizes) -> NDArray[np.intp]:
    """Sizes of ``k`` consecutive blocks tiling ``n`` units.

    ``even``: sizes differ by at most one, earlier blocks larger (scikit-learn's KFold).
    ``fewnlu``: FewNLU's code: every block has ``round(n / k)`` units (Python's rounding,
    halves to even) and the last block takes what is left, so it can be larger or smaller.
    """
    if sizes == "even":
        out = np.full(k, n // k, dtype=np.intp)
        out[: n % k] += 1
        return out
    per = round(n / k)
    out = np.full(k, per, dtype=np.intp)
    out[-1] = n - per * (k - 1)
    return out


def _units(n_or_groups: int | ArrayLike) -> tuple[int, NDArray[np.intp] | None]:
    """Return the number of units and, for grouped input, each item's group code."""
    if isinstance(n_or_groups, numbers.Integral) and not isinstance(n_or_groups, bool):
        return as_positive_int(n_or_groups, "n"), None
    if isinstance(n_or_groups, bool | float):
        raise StatsInputError(
            f"split() takes an int (number of items) or an array of group labels; "
            f"got {n_or_groups!r}."
        )
    labels = np.asarray(n_or_groups)
    if labels.ndim != 1 or labels.size == 0:
        raise StatsInputError(
            "split() takes an int or a non-empty 1-D array with one group label per item; "
            f"got an array of shape {labels.shape}."
        )
    if labels.dtype.kind == "f" and bool(np.any(np.isnan(labels))):
        raise StatsInputError("group labels contain NaN; give every item a group.")
    try:
        _, codes = np.unique(labels, return_inverse=True)
    except TypeError as exc:
        raise StatsInputError(f"group labels must be mutually comparable: {exc}") from exc
    codes = codes.reshape(-1).astype(np.intp)
    return int(codes.max()) + 1, codes


def _expand(units: NDArray[np.intp], codes: NDArray[np.intp] | None) -> NDArray[np.intp]:
    """Sorted item indices belonging to ``units`` (identity without groups)."""
    if codes is None:
        return np.sort(units).astype(np.intp)
    return np.flatnonzero(np.isin(codes, units)).astype(np.intp)


def _order(rng: np.random.Generator | None, n: int) -> NDArray[np.intp]:
    if rng is None:
        return np.arange(n, dtype=np.intp)
    return rng.permutation(n).astype(np.intp)


def _check_seed_opt(seed: Any) -> None:
    if seed is not None:
        check_seed(seed)


@dataclass(frozen=True)
class KFold:
    """K-fold cross-validation: each unit is in the dev fold exactly once.

    Parameters
    ----------
    n_splits : int
        Number of folds ``K >= 2``; dev folds have ``N/K`` units (sizes differ by at most
        one, earlier folds larger), train the other ``(K - 1) N / K``.
    seed : int, numpy.random.Generator or None
        Shuffles units before cutting folds. ``None`` keeps the given order (no shuffle).
        An int gives the same folds on every ``split()`` call; a Generator is advanced.
    sizes : {"even", "fewnlu"}
        ``"fewnlu"`` cuts folds as FewNLU's code does when ``K`` does not divide ``N``:
        ``round(N/K)`` units each (halves to even), the last fold the rest (N = 10, K = 4:
        2, 2, 2, 4 instead of 3, 3, 2, 2). Equal to ``"even"`` when ``K`` divides ``N``.

    Notes
    -----
    ``split(n)`` splits items ``0..n-1``; ``split(groups)`` takes one group label per item
    and splits *groups* (folds then have ``N/K`` groups, not items), so items sharing a
    label are never separated. Indices are returned sorted.

    Examples
    --------
    >>> from steadyeval import stats
    >>> [dev.tolist() for _, dev in stats.KFold(3).split(6)]
    [[0, 1], [2, 3], [4, 5]]
    """

    n_splits: int = 5
    seed: SeedLike | None = field(default=None, kw_only=True)
    sizes: Sizes = field(default="even", kw_only=True)

    def __post_init__(self) -> None:
        as_positive_int(self.n_splits, "n_splits", minimum=2)
        _check_seed_opt(self.seed)
        _check_sizes(self.sizes)

    def get_n_splits(self) -> int:
        """Number of (train, dev) pairs that :meth:`split` yields."""
        return self.n_splits

    def split(self, n_or_groups: int | ArrayLike) -> Iterator[IndexPair]:
        """Yield ``(train_idx, dev_idx)`` for each fold."""
        n, codes = _units(n_or_groups)
        k = self.n_splits
        if n < k:
            raise StatsInputError(
                f"KFold with n_splits={k} needs at least {k} units (items or groups); got {n}."
            )
        blocks = _blocks(n, k, self.sizes)
        if blocks[-1] < 1:
            raise StatsInputError(
                f"KFold with n_splits={k} and sizes='fewnlu' on {n} units leaves the last "
                f"fold empty ({round(n / k)} units per fold); use sizes='even'."
            )
        order = _order(None if self.seed is None else make_rng(self.seed), n)
        start = 0
        for size in blocks:
            dev = order[start : start + size]
            train = np.concatenate([order[:start], order[start + size :]])
            start += int(size)
            yield _expand(train, codes), _expand(dev, codes)


@dataclass(frozen=True)
class MultiSplits:
    """Multi-Splits: ``K`` independent random splits with a fixed train ratio ``r``.

    Parameters
    ----------
    n_splits : int
        Number of splits ``K >= 1``.
    train_ratio : float
        Share ``r`` of units in train, in (0, 1); train has ``round(N r)`` units (halves
        round up) and dev the rest. FewNLU's recommended setting is 0.5.
    seed : int or numpy.random.Generator
        Required. Each split is a fresh permutation drawn in sequence from one generator,
        so the first ``K`` splits are the same for any larger ``K`` (stability as ``K``
        changes can be studied directly).
    sizes : {"even", "fewnlu"}
        ``"fewnlu"``: train has ``floor(N r)`` units, as FewNLU's code (N = 33, r = 0.5: 16
        train, 17 dev, where ``"even"`` gives 17 and 16).

    Notes
    -----
    Dev sets of different splits may overlap (sampling across splits is with
    replacement). Split sizes depend only on ``N`` and ``r``, never on ``K``. With group
    labels, sizes count groups. Indices are returned sorted.

    Examples
    --------
    >>> from steadyeval import stats
    >>> [len(dev) for _, dev in stats.MultiSplits(3, seed=0).split(10)]
    [5, 5, 5]
    """

    n_splits: int
    train_ratio: float = field(default=0.5, kw_only=True)
    seed: SeedLike | None = field(default=None, kw_only=True)
    sizes: Sizes = field(default="even", kw_only=True)

    def __post_init__(self) -> None:
        as_positive_int(self.n_splits, "n_splits")
        _check_sizes(self.sizes)
        r = self.train_ratio
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0.0 < float(r) < 1.0:
            raise StatsInputError(f"train_ratio must lie in (0, 1), e.g. 0.5; got {r!r}.")
        if self.seed is None:
            raise StatsInputError(
                "MultiSplits draws random splits and needs a seed; pass seed=0 (or a Generator)."
            )
        check_seed(self.seed)

    def get_n_splits(self) -> int:
        """Number of (train, dev) pairs that :meth:`split` yields."""
        return self.n_splits

    def n_train(self, n: int) -> int:
        """Train units for ``n`` units: ``floor(n r + 1/2)`` (``"fewnlu"``: ``floor(n r)``)."""
        if self.sizes == "fewnlu":
            return math.floor(n * float(self.train_ratio))
        return math.floor(n * float(self.train_ratio) + 0.5)

    def split(self, n_or_groups: int | ArrayLike) -> Iterator[IndexPair]:
        """Yield ``(train_idx, dev_idx)`` for each random split."""
        n, codes = _units(n_or_groups)
        n_train = self.n_train(n)
        if not 1 <= n_train <= n - 1:
            raise StatsInputError(
                f"MultiSplits with train_ratio={self.train_ratio} on {n} units gives "
                f"{n_train} train and {n - n_train} dev units; both must be at least 1."
            )
        rng = make_rng(self.seed)
        for _ in range(self.n_splits):
            order = rng.permutation(n).astype(np.intp)
            yield _expand(order[:n_train], codes), _expand(order[n_train:], codes)


@dataclass(frozen=True)
class MDLSplits:
    """Minimum-description-length splits: a fixed first half plus growing train sets.

    Parameters
    ----------
    n_splits : int
        Number of splits ``K >= 1``.
    seed : int, numpy.random.Generator or None
        Shuffles units once before cutting blocks; ``None`` keeps the given order.
    sizes : {"even", "fewnlu"}
        ``"fewnlu"`` cuts as FewNLU's code: the first ``floor(N/2)`` units, then the rest
        in blocks of ``round(rest/K)`` (halves to even), the last block taking what is left
        (N = 30, K = 4: dev blocks 4, 4, 4, 3 where ``"even"`` gives 3, 4, 4, 4).

    Notes
    -----
    For the k-th split (k = 1..K) of ``N`` units, train is the first
    ``N/2 + N(k - 1)/(2K)`` units and dev the next ``N/(2K)`` (FewNLU). Boundaries are
    ``floor(N (K + k - 1) / (2K))`` and ``floor(N (K + k) / (2K))``, so the dev blocks tile
    the second half exactly and the last split uses every unit. Needs ``N >= 2K``. With
    group labels the arithmetic counts groups. Indices are returned sorted.

    Examples
    --------
    >>> from steadyeval import stats
    >>> [(len(t), len(d)) for t, d in stats.MDLSplits(4).split(32)]
    [(16, 4), (20, 4), (24, 4), (28, 4)]
    """

    n_splits: int
    seed: SeedLike | None = field(default=None, kw_only=True)
    sizes: Sizes = field(default="even", kw_only=True)

    def __post_init__(self) -> None:
        as_positive_int(self.n_splits, "n_splits")
        _check_seed_opt(self.seed)
        _check_sizes(self.sizes)

    def get_n_splits(self) -> int:
        """Number of (train, dev) pairs that :meth:`split` yields."""
        return self.n_splits

    def _bounds(self, n: int) -> list[tuple[int, int]]:
        """(train end, dev end) of each split."""
        k_total = self.n_splits
        if self.sizes == "even":
            return [
                (n * (k_total + k - 1) // (2 * k_total), n * (k_total + k) // (2 * k_total))
                for k in range(1, k_total + 1)
            ]
        half = n // 2
        ends = half + np.cumsum(_blocks(n - half, k_total, "fewnlu"))
        starts = [half, *ends[:-1].tolist()]
        return list(zip(starts, ends.tolist(), strict=True))

    def split(self, n_or_groups: int | ArrayLike) -> Iterator[IndexPair]:
        """Yield ``(train_idx, dev_idx)`` for k = 1..K."""
        n, codes = _units(n_or_groups)
        k_total = self.n_splits
        if n < 2 * k_total:
            raise StatsInputError(
                f"MDLSplits with n_splits={k_total} needs at least {2 * k_total} units "
                f"(items or groups) so that every dev block is non-empty; got {n}."
            )
        bounds = self._bounds(n)
        if any(dev_end <= train_end for train_end, dev_end in bounds):
            raise StatsInputError(
                f"MDLSplits with n_splits={k_total} and sizes='fewnlu' on {n} units leaves "
                "a dev block empty; use sizes='even'."
            )
        order = _order(None if self.seed is None else make_rng(self.seed), n)
        for train_end, dev_end in bounds:
            yield _expand(order[:train_end], codes), _expand(order[train_end:dev_end], codes)
