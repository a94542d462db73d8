"""Thompson-sampling search for the best and the worst row (format) of a 0/1 matrix whose
cells cost a model call each (after FormatSpread, Sclar et al., ICLR 2024)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._errors import StatsInputError
from ._validate import SeedLike, make_rng

__all__ = ["SearchResult", "search_summary", "thompson_search"]

#: evaluate(row, cols) -> 0/1 outcomes of those cells, in order.
#: Formats measured side by side in a confirmation phase.
_CANDIDATES = 3

Evaluate = Callable[[int, NDArray[np.intp]], Sequence[float]]


@dataclass(frozen=True, eq=False)
class SearchResult:
    """Result of :func:`thompson_search` (or :func:`search_summary` of observed cells).

    ``best`` and ``worst`` are the rows with the highest and lowest posterior mean
    accuracy among the rows evaluated; ``mean`` holds every row's posterior mean (the prior
    mean for rows never evaluated); ``rows``, ``cols``, ``y`` the cells evaluated, in order.
    """

    best: int
    worst: int
    mean: NDArray[np.float64]
    pulls: NDArray[np.int64]
    successes: NDArray[np.float64]
    prior: tuple[float, float]
    rows: NDArray[np.intp]
    cols: NDArray[np.intp]
    y: NDArray[np.float64]


def _prior(
    default_y: Sequence[float] | NDArray[np.float64], strength: float
) -> tuple[float, float]:
    p0 = (float(np.sum(default_y)) + 0.5) / (len(default_y) + 1.0)
    return p0 * strength, (1 - p0) * strength


def search_summary(
    rows: NDArray[np.intp],
    y: NDArray[np.float64],
    n_rows: int,
    prior: tuple[float, float],
) -> tuple[int, int, NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Best row, worst row, posterior means, cells and successes per row, from cells.

    The best and the worst are chosen among the *well-evaluated* rows: those with at least
    half as many cells as the most-evaluated row (after a search, the confirmed candidates;
    after an even design, every row), so a row lucky on one batch is not picked over a
    candidate measured on many items."""
    pulls = np.bincount(rows, minlength=n_rows).astype(np.int64)
    succ = np.bincount(rows, weights=y, minlength=n_rows).astype(np.float64)
    a, b = prior
    mean = np.asarray((a + succ) / (a + b + pulls), dtype=np.float64)
    seen = np.flatnonzero(pulls >= max(1.0, pulls.max() / 2))
    best = int(seen[np.argmax(mean[seen])])
    worst = int(seen[np.argmin(mean[seen])])
    return best, worst, mean, pulls, succ


def thompson_search(
    evaluate: Evaluate,
    n_rows: int,
    n_cols: int,
    budget: int,
    *,
    batch: int = 10,
    default: int = 0,
    prior_strength: float = 2.0,
    confirm: float = 0.6,
    seed: SeedLike = 0,
) -> SearchResult:
    """Search the best and the worst row within ``budget`` cells.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(row, cols)`` returns the 0/1 outcomes of those cells (calls the model).
    n_rows, n_cols : int
        Formats and items.
    budget : int
        Cells to evaluate in all (at least two batches).
    batch : int
        Items per step.
    default : int
        The default format's row: its first batch sets the prior.
    prior_strength : float
        α + β of the Beta prior (2: its mean, the default format's accuracy, counts as two
        observations).
    confirm : float
        Share of the budget kept for the confirmation phases (0 turns them off).
    seed : int or Generator

    Notes
    -----
    The default row is evaluated on the first batch; the Beta prior of every row has that
    accuracy as its mean. The budget left after ``confirm`` is split in two phases.
    Phase 1 looks for the best row: each step draws one accuracy per row from its Beta
    posterior and evaluates the row with the largest draw on its next batch of items.
    Phase 2 looks for the worst row the same way with the smallest draw, reusing every cell
    seen so far. Then two confirmation phases (half of ``confirm`` each, best then worst)
    evaluate the current top three candidates (highest, then lowest posterior mean among
    the rows evaluated), always the one with the fewest items so far, so the candidates
    end up measured on many items (on all of them when the budget allows) instead of one
    or two batches: at 10% of the cells a Beta posterior after one batch cannot tell
    formats a few points apart. Items come in one shuffled order shared by all rows (a
    row's k-th batch is the same items for every row), so rows are compared on the same
    items. A row whose items are used up is not drawn again. The best and the worst are
    picked by :func:`search_summary` among the well-evaluated rows.
    """
    if n_rows < 2 or n_cols < 1 or batch < 1:
        raise StatsInputError("need at least 2 rows, 1 column and a batch of at least 1")
    if budget < 2 * batch or budget > n_rows * n_cols:
        raise StatsInputError(
            f"budget must be in [{2 * batch}, {n_rows * n_cols}] (two batches to all cells); "
            f"got {budget}"
        )
    rng = make_rng(seed)
    order = rng.permutation(n_cols).astype(np.intp)
    strength = float(prior_strength)
    used = np.zeros(n_rows, dtype=np.int64)
    log_r: list[NDArray[np.intp]] = []
    log_c: list[NDArray[np.intp]] = []
    log_y: list[NDArray[np.float64]] = []

    def pull(row: int) -> None:
        cols = order[used[row] : min(used[row] + batch, n_cols, used[row] + budget - spent())]
        out = np.asarray(evaluate(row, cols), dtype=np.float64)
        used[row] += len(cols)
        log_r.append(np.full(len(cols), row, dtype=np.intp))
        log_c.append(cols)
        log_y.append(out)

    def spent() -> int:
        return int(used.sum())

    pull(default)
    prior = _prior(log_y[0], strength)
    succ = np.zeros(n_rows)
    succ[default] = log_y[0].sum()
    explore = budget - int(confirm * budget)
    plan = (
        (1, explore // 2, False),
        (-1, explore, False),
        (1, (explore + budget) // 2, True),
        (-1, budget, True),
    )
    for phase, limit, confirming in plan:
        while spent() < limit:
            open_rows = np.flatnonzero(used < n_cols)
            if len(open_rows) == 0:
                break
            if confirming:
                row = _candidate(phase, open_rows, used, succ, prior)
            else:
                draws = rng.beta(
                    prior[0] + succ[open_rows], prior[1] + used[open_rows] - succ[open_rows]
                )
                row = int(open_rows[np.argmax(phase * draws)])
            before = len(log_y)
            pull(row)
            succ[row] += sum(float(v.sum()) for v in log_y[before:])
    rows, cols, y = np.concatenate(log_r), np.concatenate(log_c), np.concatenate(log_y)
    best, worst, mean, pulls, successes = search_summary(rows, y, n_rows, prior)
    return SearchResult(best, worst, mean, pulls, successes, prior, rows, cols, y)


def _candidate(
    phase: int,
    open_rows: NDArray[np.intp],
    used: NDArray[np.int64],
    succ: NDArray[np.float64],
    prior: tuple[float, float],
) -> int:
    """Confirmation: of the three open rows with the highest (phase 1) or lowest (phase
    −1) posterior mean among those evaluated, the one with the fewest items so far."""
    seen = open_rows[used[open_rows] > 0]
    pool = seen if len(seen) else open_rows
    mean = (prior[0] + succ[pool]) / (prior[0] + prior[1] + used[pool])
    top = pool[np.argsort(-phase * mean, kind="stable")[:_CANDIDATES]]
    return int(top[np.argmin(used[top])])
