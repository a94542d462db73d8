"""Which cells of a rows × columns matrix to observe: stratified and adaptive samplers."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...stats import IrtDistribution, StatsInputError

__all__ = ["adaptive_cells", "stratified_cells"]


def _cycle(n: int, size: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """``size`` indices: shuffled copies of range(n) one after the other."""
    reps = -(-size // n)
    return np.concatenate([rng.permutation(n) for _ in range(reps)])[:size].astype(np.intp)


def stratified_cells(
    n_rows: int,
    n_cols: int,
    budget: int,
    *,
    seed: int | np.random.Generator = 0,
    exclude: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """``budget`` distinct cells, each row and each column used as evenly as possible.

    Parameters
    ----------
    n_rows, n_cols : int
        Matrix shape.
    budget : int
        Number of cells, at most the number of cells not in ``exclude``.
    seed : int or Generator
    exclude : bool array (n_rows, n_cols), optional
        Cells already observed (never drawn again).

    Returns
    -------
    rows, cols : ndarray of int

    Notes
    -----
    Rows are drawn as shuffled rounds of all rows and columns as shuffled rounds of all
    columns, paired in order, so every row gets ⌊budget/n_rows⌋ or one more cell (the same
    for columns). A pair already taken is swapped with a later column (or, if none fits,
    replaced by the least-used free column of its row).
    """
    if n_rows < 1 or n_cols < 1:
        raise StatsInputError(f"n_rows and n_cols must be >= 1; got {n_rows}, {n_cols}")
    if exclude is not None and np.shape(exclude) != (n_rows, n_cols):
        raise StatsInputError(
            f"exclude must have shape (n_rows, n_cols) = ({n_rows}, {n_cols}); got "
            f"{np.shape(exclude)}"
        )
    taken = np.zeros((n_rows, n_cols), dtype=bool) if exclude is None else exclude.copy()
    free = int(taken.size - taken.sum())
    if budget < 1 or budget > free:
        raise StatsInputError(f"budget must be in [1, {free}] (the free cells); got {budget}")
    rng = np.random.default_rng(seed)  # a Generator passes through unchanged
    rows = _cycle(n_rows, budget, rng)
    cols = _cycle(n_cols, budget, rng)
    col_use = np.zeros(n_cols, dtype=np.int64)
    for k in range(budget):
        r = rows[k]
        if taken[r, cols[k]]:
            later = [j for j in range(k + 1, budget) if not taken[r, cols[j]]]
            if later:
                j = later[0]
                cols[k], cols[j] = cols[j], cols[k]
            else:
                options = np.flatnonzero(~taken[r])
                if len(options) == 0:  # the row is full: any free cell
                    r = rows[k] = int(np.flatnonzero(~taken.all(axis=1))[0])
                    options = np.flatnonzero(~taken[r])
                cols[k] = options[np.argmin(col_use[options])]
        taken[r, cols[k]] = True
        col_use[cols[k]] += 1
    return rows, cols


def adaptive_cells(
    dist: IrtDistribution,
    observed: NDArray[np.bool_],
    n_new: int,
    *,
    seed: int | np.random.Generator = 0,
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The next ``n_new`` cells where the estimate is least certain.

    Notes
    -----
    Rows are ranked by the width of their accuracy interval (``dist``); the widest
    ``n_new`` rows (cycling when ``n_new`` exceeds the rows with free cells) each get one
    unobserved column: the one observed least often so far (ties at random), so column
    effects stay estimable. Uncertainty of a row's accuracy is what the per-format
    estimates and hence the quantiles are made of.
    """
    n_rows = observed.shape[0]
    if observed.ndim != 2 or n_rows != len(dist.accuracy):
        raise StatsInputError(
            f"observed must be a (rows, cols) mask with one row per row of dist "
            f"({len(dist.accuracy)}); got shape {observed.shape}"
        )
    free = int(observed.size - observed.sum())
    if n_new < 1 or n_new > free:
        raise StatsInputError(f"n_new must be in [1, {free}] (the free cells); got {n_new}")
    rng = np.random.default_rng(seed)  # a Generator passes through unchanged
    width = dist.accuracy_high - dist.accuracy_low + rng.random(n_rows) * 1e-9
    order = np.argsort(-width)
    taken = observed.copy()
    col_use = taken.sum(axis=0).astype(np.float64)
    rows: list[int] = []
    cols: list[int] = []
    while len(rows) < n_new:
        for r in order:
            if len(rows) == n_new:
                break
            options = np.flatnonzero(~taken[r])
            if len(options) == 0:
                continue
            score = col_use[options] + rng.random(len(options)) * 0.5
            c = int(options[np.argmin(score)])
            rows.append(int(r))
            cols.append(c)
            taken[r, c] = True
            col_use[c] += 1
    return np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
