"""The decide study's cells: drawn batch by batch (uniform, or importance-weighted toward
the items where the two models disagree), and the sequence of paired differences read back
from a results table."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ... import stats

__all__ = ["CellDraw", "draw_sequence", "first_cells"]

#: Share of each draw's probability spread uniformly over the items with adaptive
#: allocation: it bounds every importance weight by 1 / _FLOOR.
_FLOOR = 0.2

#: One drawn cell: format, item, importance weight p/q, the bound on the weight.
CellDraw = tuple[int, int, float, float]
#: Answers a batch of (format, item) cells for both models: per cell, A's and B's 0/1.
Answer = Callable[[list[tuple[int, int]]], list[tuple[float, float]]]


def _batch(
    rng: np.random.Generator,
    size: int,
    n_formats: int,
    n_items: int,
    adaptive: bool,
    disagree: NDArray[np.float64],
    seen: NDArray[np.float64],
) -> list[CellDraw]:
    """``size`` cells: formats uniform; items uniform, or from the allocation fixed before
    the batch (its weights and bound are predictable: they use only earlier batches)."""
    formats = rng.integers(n_formats, size=size)
    if not adaptive:
        items = rng.integers(n_items, size=size)
        return [(int(f), int(i), 1.0, 1.0) for f, i in zip(formats, items, strict=True)]
    alloc = stats.importance_allocation(disagree, seen, floor=_FLOOR)
    items = rng.choice(n_items, size=size, p=alloc.probabilities)
    bound = float(alloc.weight_bound)
    return [
        (int(f), int(i), float(alloc.weights[i]), bound)
        for f, i in zip(formats, items, strict=True)
    ]


def first_cells(
    n_formats: int, n_items: int, *, budget: int, batch: int, adaptive: bool, seed: int
) -> list[CellDraw]:
    """The first batch :func:`draw_sequence` draws (before any answer is known)."""
    zeros = np.zeros(n_items)
    size = min(batch, budget)
    return _batch(np.random.default_rng(seed), size, n_formats, n_items, adaptive, zeros, zeros)


def draw_sequence(
    n_formats: int,
    n_items: int,
    *,
    budget: int,
    batch: int,
    adaptive: bool,
    confidence: float,
    seed: int,
    answer: Answer,
    progress: Callable[[int, int], None] | None = None,
) -> list[CellDraw]:
    """Draw cells batch by batch, ask ``answer`` for both models' answers, and stop when the
    anytime-valid test (:func:`steadyeval.stats.sequential_sign`) decides or ``budget``
    cells are drawn (``progress(drawn, decision)`` after each batch). Deterministic given the seed and the answers, so a rerun from the
    response cache draws the same cells."""
    rng = np.random.default_rng(seed)
    disagree, seen = np.zeros(n_items), np.zeros(n_items)
    drawn: list[CellDraw] = []
    diffs: list[float] = []
    while len(drawn) < budget:
        cells = _batch(
            rng, min(batch, budget - len(drawn)), n_formats, n_items, adaptive, disagree, seen
        )
        answers = answer([(f, i) for f, i, _, _ in cells])
        for (_, i, _, _), (a, b) in zip(cells, answers, strict=True):
            diffs.append(a - b)
            seen[i] += 1
            disagree[i] += a != b
        drawn += cells
        w = np.array([c[2] for c in drawn])
        bound = np.array([c[3] for c in drawn])
        decision = stats.sequential_sign(
            np.array(diffs), w, weight_bound=bound, confidence=confidence
        )
        if progress is not None:
            progress(len(drawn), decision.decision)
        if decision.decision != 0:
            break
    return drawn
