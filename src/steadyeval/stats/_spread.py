"""Spread of a score across conditions (prompts, formats), incl. MaxP, AvgP and CPS."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._bootstrap import bootstrap_row_means
from ._errors import StatsInputError
from ._intervals import Interval
from ._validate import SeedLike, as_float_2d, as_positive_int, check_confidence, make_rng

__all__ = ["SpreadResult", "spread"]


@dataclass(frozen=True, slots=True, eq=False)
class SpreadResult:
    """Result of :func:`spread`. Every summary is an :class:`Interval` with a bootstrap CI.

    Attributes
    ----------
    per_condition : ndarray of float, shape (n_conditions,)
        Mean score of each condition over items.
    min, max, mean, std : Interval
        Worst, best and mean condition score, and their standard deviation across
        conditions (``ddof=1``).
    best_minus_worst : Interval
        ``max - min``.
    max_p, avg_p : Interval
        MaxP (best condition) and AvgP (mean over conditions), as in Mizrahi et al. (2024).
    cps : Interval
        Combined performance score ``(1 - (MaxP - AvgP)) · MaxP``.
    n_items, n_conditions, n_resamples : int
        Shape of the input and number of bootstrap resamples.
    confidence : float
        Nominal coverage of the intervals.
    """

    per_condition: NDArray[np.float64]
    min: Interval
    max: Interval
    mean: Interval
    std: Interval
    best_minus_worst: Interval
    max_p: Interval
    avg_p: Interval
    cps: Interval
    n_items: int
    n_conditions: int
    n_resamples: int
    confidence: float


def _summaries(means: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Summaries across conditions for each row of ``means`` (resamples × conditions)."""
    mx = means.max(axis=1)
    mn = means.min(axis=1)
    avg = means.mean(axis=1)
    return {
        "min": mn,
        "max": mx,
        "mean": avg,
        "std": means.std(axis=1, ddof=1),
        "best_minus_worst": mx - mn,
        "max_p": mx,
        "avg_p": avg,
        "cps": (1.0 - (mx - avg)) * mx,
    }


def spread(
    scores: ArrayLike,
    *,
    n_resamples: int = 1000,
    seed: SeedLike,
    confidence: float = 0.95,
) -> SpreadResult:
    """How much a score moves across conditions, with bootstrap intervals over items.

    Parameters
    ----------
    scores : array_like of float, shape (n_items, n_conditions)
        Per-item score (e.g. 0/1 correct) of one model under each condition (prompt,
        format, ...), on a 0–1 scale; at least 2 conditions.
    n_resamples : int
        Bootstrap resamples of items.
    seed : int or numpy.random.Generator
        Source of randomness (required).
    confidence : float
        Coverage of the percentile intervals.

    Returns
    -------
    SpreadResult
        ``per_condition``, ``min``, ``max``, ``mean``, ``std``, ``best_minus_worst``,
        ``max_p``, ``avg_p``, ``cps``, ``n_items``, ``n_conditions``, ``n_resamples``,
        ``confidence``.

    Raises
    ------
    StatsInputError
        If ``scores`` is not a finite 2-D array with at least 2 conditions, holds values
        outside [0, 1], or ``seed`` is missing.

    Notes
    -----
    Assumes every condition was run on the same items (*paired*), items independent.
    Each bootstrap resample draws items with replacement and keeps each item's whole row,
    so all conditions move together; every summary is recomputed on the resample and the
    interval is the percentile interval. The conditions themselves are treated as fixed
    (not a sample of possible prompts), so the intervals say nothing about prompts not
    tried. Bootstrap intervals for ``max`` and ``min`` (and so MaxP and CPS) are biased
    outward because the best condition is chosen on the same data; read them as
    descriptive. CPS (Mizrahi et al. 2024, "State of What Art?") assumes scores in [0, 1].

    Examples
    --------
    >>> from steadyeval import stats
    >>> s = stats.spread([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]], n_resamples=200, seed=0)
    >>> s.per_condition.tolist(), s.max_p.estimate
    ([0.75, 0.75, 0.5], 0.75)
    """
    x = as_float_2d(scores, "scores")
    n_items, k = x.shape
    if k < 2:
        raise StatsInputError(
            f"scores must be items × conditions with at least 2 conditions; got {k} column(s)."
        )
    if bool(np.any((x < 0.0) | (x > 1.0))):
        raise StatsInputError(
            "scores must lie in [0, 1] (CPS assumes a 0–1 scale); divide percentages by 100."
        )
    reps = as_positive_int(n_resamples, "n_resamples")
    conf = check_confidence(confidence)
    rng = make_rng(seed)
    per_condition = x.mean(axis=0)
    observed = _summaries(per_condition.reshape(1, -1))
    boot = _summaries(bootstrap_row_means(x, reps, rng))
    lo_q, hi_q = (1.0 - conf) / 2.0, (1.0 + conf) / 2.0
    out: dict[str, Interval] = {}
    for name, values in boot.items():
        q = np.quantile(values, [lo_q, hi_q])
        out[name] = Interval(float(observed[name][0]), float(q[0]), float(q[1]), conf)
    return SpreadResult(
        per_condition=per_condition,
        min=out["min"],
        max=out["max"],
        mean=out["mean"],
        std=out["std"],
        best_minus_worst=out["best_minus_worst"],
        max_p=out["max_p"],
        avg_p=out["avg_p"],
        cps=out["cps"],
        n_items=n_items,
        n_conditions=k,
        n_resamples=reps,
        confidence=conf,
    )
