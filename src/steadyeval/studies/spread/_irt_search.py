"""Thompson-sampling search for the best and the worst row (format) of a 0/1 matrix whose
cells cost a model call each (after FormatSpread, Sclar et al., ICLR 2024)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...stats import StatsInputError

__all__ = ["SearchResult", "search_summary", "thompson_search"]

#: Formats measured side by side in a confirmation phase.
_CANDIDATES = 3
#: Share of the confirmation budget spent on the best side (the worst format is usually
#: far below the rest, a catastrophic one, and needs fewer items to confirm).
_BEST_SHARE = 0.7
#: Share of the exploration budget (FormatSpread's two phases) spent on phase 1 (best).
_EXPLORE_BEST = 0.6
#: The pick maximises (minimises) the posterior mean minus (plus) this many posterior s.d.
_BOUND_Z = 1.0

#: evaluate(rows, cols) -> 0/1 outcomes of the cells (rows[k], cols[k]), in order.
Evaluate = Callable[[NDArray[np.intp], NDArray[np.intp]], Sequence[float]]


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

    The best row maximises a lower posterior bound, the Beta posterior mean minus one
    posterior s.d.; the worst minimises the upper bound (mean plus one s.d.), both among
    the rows evaluated at all. A row lucky on one batch has a wide posterior, so it is not
    picked over a candidate measured on many items with nearly the same mean. (An earlier
    rule, the highest mean among the rows with at least half the most-evaluated row's
    cells, picked the best among the worst side's candidates when those had been measured
    on more items.)"""
    if len(rows) == 0:
        raise StatsInputError("no cells evaluated; a search summary needs at least one")
    pulls = np.bincount(rows, minlength=n_rows).astype(np.int64)
    succ = np.bincount(rows, weights=y, minlength=n_rows).astype(np.float64)
    a, b = prior
    total = a + b + pulls
    mean = np.asarray((a + succ) / total, dtype=np.float64)
    sd = np.sqrt(mean * (1 - mean) / (total + 1))
    seen = np.flatnonzero(pulls > 0)
    best = int(seen[np.argmax((mean - _BOUND_Z * sd)[seen])])
    worst = int(seen[np.argmin((mean + _BOUND_Z * sd)[seen])])
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
    confirm: float = 0.55,
    seed: int | np.random.Generator = 0,
) -> SearchResult:
    """Search the best and the worst row within ``budget`` cells.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(rows, cols)`` returns the 0/1 outcomes of the cells (rows[k], cols[k])
        (calls the model once per step).
    n_rows, n_cols : int
        Formats and items.
    budget : int
        Cells to evaluate in all (at least two batches).
    batch : int
        Cells per step (one call of ``evaluate``).
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
    The default row is evaluated on the first ``batch`` items; the Beta prior of every row
    has that accuracy as its mean. The budget left after ``confirm`` is split in two
    phases (60% and 40%). Phase 1 looks for the best row: for each cell of a step, one accuracy per row
    is drawn from its Beta posterior and the row with the largest draw gets that cell (its
    next item; a row can take several cells of one step), all of the step's cells
    evaluated in one call. Phase 2 looks for the worst row the same way with the smallest
    draw, reusing every cell seen so far. Then two confirmation phases (70% and 30% of
    ``confirm``, best then worst) give each step's cells to the current top three
    candidates (highest, then lowest posterior mean among the rows evaluated), the one
    with the fewest items first, so the candidates end up measured on many items (on all
    of them when the budget allows) instead of a few: at 10% of the cells a Beta posterior
    after a few items cannot tell formats a few points apart. Items come in one shuffled
    order shared by all rows (a row's k-th item is the same for every row), so rows are
    compared on the same items. A row whose items are used up is not drawn again. The
    best and the worst are picked by :func:`search_summary` (posterior bounds). Spreading
    a step's cells over rows, instead of one row's batch of items per step as
    FormatSpread does, lets phase 1 try about ``batch`` times more rows.
    """
    if n_rows < 2 or n_cols < 1 or batch < 1:
        raise StatsInputError("need at least 2 rows, 1 column and a batch of at least 1")
    if budget < 2 * batch or budget > n_rows * n_cols:
        raise StatsInputError(
            f"budget must be in [{2 * batch}, {n_rows * n_cols}] (two batches to all cells); "
            f"got {budget}"
        )
    if not (0 <= default < n_rows) or not 0 < prior_strength < np.inf or not 0 <= confirm < 1:
        raise StatsInputError(
            f"need default in [0, {n_rows}), prior_strength > 0 and confirm in [0, 1); got "
            f"{default}, {prior_strength}, {confirm}"
        )
    rng = np.random.default_rng(seed)  # a Generator passes through unchanged
    cells = _Cells(evaluate, rng.permutation(n_cols).astype(np.intp), n_rows)
    cells.take(np.full(batch, default, dtype=np.intp), budget)
    prior = _prior(cells.log_y[0], float(prior_strength))
    explore = budget - int(confirm * budget)
    plan = (
        (1, int(_EXPLORE_BEST * explore), False),
        (-1, explore, False),
        (1, explore + int(_BEST_SHARE * (budget - explore)), True),
        (-1, budget, True),
    )
    for phase, limit, confirming in plan:
        while cells.spent < limit:
            open_rows = np.flatnonzero(cells.used < n_cols)
            if len(open_rows) == 0:
                break
            if confirming:
                picks = _candidates(phase, open_rows, cells.used, cells.succ, prior, batch)
            else:  # one posterior draw per cell of the step, each choosing a row
                a = prior[0] + cells.succ[open_rows]
                draws = rng.beta(
                    a,
                    prior[1] + cells.used[open_rows] - cells.succ[open_rows],
                    (batch, len(open_rows)),
                )
                picks = open_rows[np.argmax(phase * draws, axis=1)]
            cells.take(picks, limit)
    rows = np.concatenate(cells.log_r).astype(np.intp)
    cols = np.concatenate(cells.log_c).astype(np.intp)
    y = np.concatenate(cells.log_y).astype(np.float64)
    best, worst, mean, pulls, successes = search_summary(rows, y, n_rows, prior)
    return SearchResult(best, worst, mean, pulls, successes, prior, rows, cols, y)


class _Cells:
    """The cells evaluated so far: items per row (``used``), successes, and the log."""

    def __init__(self, evaluate: Evaluate, order: NDArray[np.intp], n_rows: int) -> None:
        self.evaluate, self.order = evaluate, order
        self.used = np.zeros(n_rows, dtype=np.int64)
        self.succ = np.zeros(n_rows)
        self.log_r: list[NDArray[np.intp]] = []
        self.log_c: list[NDArray[np.intp]] = []
        self.log_y: list[NDArray[np.float64]] = []

    @property
    def spent(self) -> int:
        return int(self.used.sum())

    def take(self, picks: NDArray[np.intp], limit: int) -> None:
        """Evaluate each picked row on its next item (a row picked k times: its next k),
        within ``limit`` cells in all, in one call of ``evaluate``."""
        rows: list[int] = []
        cols: list[int] = []
        room = limit - self.spent
        for row in picks:
            if len(rows) == room or self.used[row] >= len(self.order):
                continue
            rows.append(int(row))
            cols.append(int(self.order[self.used[row]]))
            self.used[row] += 1
        if not rows:
            return
        r, c = np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
        out = np.asarray(self.evaluate(r, c), dtype=np.float64)
        if out.shape != r.shape:
            raise StatsInputError(f"evaluate returned {out.shape[0]} outcomes for {len(r)} cells")
        self.succ += np.bincount(r, weights=out, minlength=len(self.used))
        self.log_r.append(r)
        self.log_c.append(c)
        self.log_y.append(out)


def _candidates(
    phase: int,
    open_rows: NDArray[np.intp],
    used: NDArray[np.int64],
    succ: NDArray[np.float64],
    prior: tuple[float, float],
    size: int,
) -> NDArray[np.intp]:
    """Confirmation: ``size`` cells for the three open rows with the highest (phase 1) or
    lowest (phase −1) posterior mean among those evaluated, each cell to the one with the
    fewest items so far (counting the cells already given in this step)."""
    seen = open_rows[used[open_rows] > 0]
    pool = seen if len(seen) else open_rows
    mean = (prior[0] + succ[pool]) / (prior[0] + prior[1] + used[pool])
    top = pool[np.argsort(-phase * mean, kind="stable")[:_CANDIDATES]]
    count = used[top].astype(np.float64)
    picks = np.empty(size, dtype=np.intp)
    for k in range(size):
        j = int(np.argmin(count))
        picks[k] = top[j]
        count[j] += 1
    return picks
