"""The decide study's cells: drawn batch by batch (uniform, or importance-weighted toward
the items where the models disagree), and the pairwise anytime-valid tests that decide when
to stop."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ... import stats

__all__ = [
    "CellDraw",
    "closure",
    "decide_pairs",
    "draw_sequence",
    "first_cells",
    "implied_order",
    "pair_level",
    "pairs_of",
    "winners",
]

#: Share of each draw's probability spread uniformly over the items with adaptive
#: allocation: it bounds every importance weight by 1 / _FLOOR.
_FLOOR = 0.2

#: One drawn cell: format, item, importance weight p/q, the bound on the weight.
CellDraw = tuple[int, int, float, float]
#: Answers a batch of (format, item) cells for every model: per cell, each model's 0/1.
Answer = Callable[[list[tuple[int, int]]], list[tuple[float, ...]]]


def pairs_of(k: int) -> list[tuple[int, int]]:
    """Every pair of ``k`` models, first index smaller."""
    return [(a, b) for a in range(k) for b in range(a + 1, k)]


def pair_level(confidence: float, k: int) -> float:
    """Each pair's level so that all pairs' decisions hold at once at ``confidence``
    (Bonferroni: the pairs' tests are each anytime-valid, so their union bound is too)."""
    return 1 - (1 - confidence) / len(pairs_of(k))


def closure(k: int, decided: list[tuple[int, int]]) -> NDArray[np.bool_]:
    """``better[i, j]``: model i beats j by the decided (winner, loser) pairs or through
    them (Warshall's transitive closure); a True diagonal entry is a cycle."""
    better = np.zeros((k, k), dtype=bool)
    for winner, loser in decided:
        better[winner, loser] = True
    for m in range(k):
        better |= better[:, m][:, None] & better[m, :][None, :]
    return better


def implied_order(k: int, decided: list[tuple[int, int]]) -> list[int] | None:
    """The ranking of ``k`` models (best first) that the decided (winner, loser) pairs imply
    through transitivity, or None while some pair is neither decided nor implied (or the
    decisions form a cycle, which only an error of the tests can give). The decisions hold
    jointly, so what they imply holds at the same confidence."""
    better = closure(k, decided)
    if np.any(np.diag(better)) or not all(better[a, b] or better[b, a] for a, b in pairs_of(k)):
        return None
    return sorted(range(k), key=lambda m: -int(better[m].sum()))


def decide_pairs(
    answers: NDArray[np.float64],
    weights: NDArray[np.float64],
    bounds: NDArray[np.float64],
    confidence: float,
) -> list[stats.SignDecision]:
    """Each pair's anytime-valid test on the cells so far: ``answers`` (cells, models) of
    0/1, the draws' importance weights and their bounds."""
    level = pair_level(confidence, answers.shape[1])
    return [
        stats.sequential_sign(
            answers[:, a] - answers[:, b], weights, weight_bound=bounds, confidence=level
        )
        for a, b in pairs_of(answers.shape[1])
    ]


def winners(k: int, decisions: list[stats.SignDecision]) -> list[tuple[int, int]]:
    """The (winner, loser) of every pair of ``k`` models whose test has decided."""
    return [
        (a, b) if d.decision > 0 else (b, a)
        for (a, b), d in zip(pairs_of(k), decisions, strict=True)
        if d.decision != 0
    ]


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
    progress: Callable[[int, int, int], None] | None = None,
) -> list[CellDraw]:
    """Draw cells batch by batch, ask ``answer`` for every model's answers, and stop when
    the pairs' anytime-valid tests (:func:`decide_pairs`) have decided a ranking (every pair
    decided, or implied by the decided ones: :func:`implied_order`) or ``budget`` cells are
    drawn (``progress(drawn, pairs decided, pairs)`` after each batch). Deterministic given the seed and the answers, so a rerun from the
    response cache draws the same cells."""
    rng = np.random.default_rng(seed)
    disagree, seen = np.zeros(n_items), np.zeros(n_items)
    drawn: list[CellDraw] = []
    answers: list[tuple[float, ...]] = []
    while len(drawn) < budget:
        cells = _batch(
            rng, min(batch, budget - len(drawn)), n_formats, n_items, adaptive, disagree, seen
        )
        got = answer([(f, i) for f, i, _, _ in cells])
        for (_, i, _, _), row in zip(cells, got, strict=True):
            seen[i] += 1
            disagree[i] += len(set(row)) > 1
        drawn += cells
        answers += got
        decisions = decide_pairs(
            np.array(answers),
            np.array([c[2] for c in drawn]),
            np.array([c[3] for c in drawn]),
            confidence,
        )
        won = winners(len(answers[0]), decisions)
        if progress is not None:
            progress(len(drawn), len(won), len(decisions))
        if implied_order(len(answers[0]), won) is not None:  # every pair decided or implied
            break
    return drawn
