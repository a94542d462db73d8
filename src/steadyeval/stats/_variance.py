"""Variance components of correctness over crossed items, conditions and repeated samples.

Model, on the scale of the values (0/1 correctness: the probability scale)::

    y_ijk = mu + a_i + b_j + (ab)_ij + e_ijk

with item effects ``a_i``, condition effects ``b_j``, their interaction ``(ab)_ij`` and the
sampling noise ``e_ijk`` between repeated samples of one cell, all independent with mean 0
and variances ``s2_item``, ``s2_condition``, ``s2_interaction``, ``s2_sampling``.

Estimation works on a list of crossed factors (here ``("item", "condition")``), not on two
named arguments. For every subset ``T`` of the factors, ``U_T`` is the mean of
``(y - y')^2 / 2`` over the ordered pairs of observations that share exactly the factors in
``T`` (same cell: all of them; same item, another condition: ``{item}``; ...). Whatever the
pattern of missing cells and samples per cell,

    E[U_T] = s2_sampling + sum of s2_S over the non-empty subsets S not contained in T,

so solving these ``2^F`` linear equations gives unbiased moment estimates (the U-statistics
of Gao & Owen 2017, extended with a replicate level). Pair sums come from group sums in
``O(cells)``: ``sum_{r,s in g} (y_r - y_s)^2 / 2 = n_g Q_g - S_g^2``; pairs sharing *at least*
``T`` are grouped by ``T``'s levels and inclusion-exclusion gives *exactly* ``T``.

Adding a crossed ``model`` factor (comparisons of models over formats) means passing
``("item", "condition", "model")`` to :func:`_fit`: the equations, the solve and the
pigeonhole bootstrap (which draws every factor's levels independently; a fixed factor such as
a handful of chosen models would keep weights 1 via ``resample=False``) are already written
for any number of factors; only the public wrapper and its result type would be added.
Projections from the components (``projected_se``, ``samples_needed``) are in
``_variance_plan.py``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from ._errors import StatsInputError
from ._validate import (
    SeedLike,
    as_float_1d,
    as_positive_int,
    check_confidence,
    group_codes,
    make_rng,
    warn,
)

__all__ = ["VarianceComponent", "VarianceComponents", "variance_components"]

_CHUNK_ELEMENTS = 1 << 21


@dataclass(frozen=True, slots=True)
class _Cells:
    """Observed cells of a crossed design: level of each factor, count, sum, sum of squares."""

    codes: tuple[NDArray[np.intp], ...]  # per factor: its level in each cell
    levels: tuple[int, ...]  # per factor: number of levels
    n: NDArray[np.float64]
    s: NDArray[np.float64]
    q: NDArray[np.float64]


def _cells(values: NDArray[np.float64], codes: list[NDArray[np.intp]], levels: list[int]) -> _Cells:
    flat = np.ravel_multi_index(tuple(codes), tuple(levels))
    keys, inverse = np.unique(flat, return_inverse=True)
    inverse = inverse.reshape(-1)
    m = keys.size
    per_factor = np.unravel_index(keys, tuple(levels))
    return _Cells(
        codes=tuple(c.astype(np.intp) for c in per_factor),
        levels=tuple(levels),
        n=np.bincount(inverse, minlength=m).astype(np.float64),
        s=np.bincount(inverse, weights=values, minlength=m).astype(np.float64),
        q=np.bincount(inverse, weights=values * values, minlength=m).astype(np.float64),
    )


def _subsets(n_factors: int) -> list[tuple[int, ...]]:
    """All subsets of ``range(n_factors)``, smallest first (the empty set first)."""
    return [s for r in range(n_factors + 1) for s in itertools.combinations(range(n_factors), r)]


def _pair_sums(
    cells: _Cells, weights: list[NDArray[np.float64]]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Pair sums ``A_T`` and pair counts ``N_T`` for pairs sharing *exactly* each subset ``T``.

    ``weights[f]`` (resamples × levels of factor f) says how often each level was drawn
    (all ones: the data as observed); an observation's multiplicity is the product over
    factors. Pairs are classified by the *original* levels, and the pairs of an
    observation with its own copies are left out (they are ties, not pairs: counting them
    would make a level drawn twice look like two levels with identical effects). Returns
    arrays of shape (resamples, 2^F), columns in :func:`_subsets` order.
    """
    n_f = len(cells.levels)
    subsets = _subsets(n_f)
    n_boot = weights[0].shape[0]
    mult = np.ones((n_boot, cells.n.size))
    for f in range(n_f):
        mult *= weights[f][:, cells.codes[f]]
    wn, ws, wq = mult * cells.n, mult * cells.s, mult * cells.q
    wd = mult * wn  # sum over a cell's observations of the squared multiplicity
    at_least_a = np.empty((n_boot, len(subsets)))
    at_least_n = np.empty((n_boot, len(subsets)))
    for col, t in enumerate(subsets):
        if t:
            key = np.ravel_multi_index(
                tuple(cells.codes[f] for f in t), tuple(cells.levels[f] for f in t)
            )
            group = np.unique(key, return_inverse=True)[1].reshape(-1)
        else:
            group = np.zeros(cells.n.size, dtype=np.intp)
        ind = sparse.csr_array(
            (np.ones(group.size), (group, np.arange(group.size))),
            shape=(int(group.max()) + 1, group.size),
        )
        n_g, s_g, q_g, d_g = ((ind @ x.T).T for x in (wn, ws, wq, wd))
        at_least_a[:, col] = np.sum(n_g * q_g - s_g * s_g, axis=1)
        at_least_n[:, col] = np.sum(n_g * n_g - d_g, axis=1)
    # inclusion-exclusion (Moebius inversion over supersets): at least T -> exactly T
    exact_a = np.zeros_like(at_least_a)
    exact_n = np.zeros_like(at_least_n)
    for col, t in enumerate(subsets):
        for col2, t2 in enumerate(subsets):
            if set(t) <= set(t2):
                sign = (-1.0) ** (len(t2) - len(t))
                exact_a[:, col] += sign * at_least_a[:, col2]
                exact_n[:, col] += sign * at_least_n[:, col2]
    return exact_a, exact_n


def _design_matrix(n_factors: int, identified: bool) -> NDArray[np.float64]:
    """``E[U_T] = M @ components``. Columns: the non-empty subsets S, then sampling; with
    ``identified=False`` the full interaction and sampling share one column and the row
    of pairs within a cell (which do not exist) is dropped."""
    subsets = _subsets(n_factors)
    effects = subsets[1:]
    m = np.array([[0.0 if set(s) <= set(t) else 1.0 for s in effects] + [1.0] for t in subsets])
    if identified:
        return m
    # the full interaction is shared only within a cell, so outside the row of same-cell
    # pairs its column equals sampling's: one merged unknown
    return m[:-1, :-1]


def _fit(
    values: NDArray[np.float64],
    codes: list[NDArray[np.intp]],
    levels: list[int],
    names: tuple[str, ...],
    *,
    n_resamples: int,
    rng: np.random.Generator,
    resample: tuple[bool, ...],
) -> tuple[NDArray[np.float64], NDArray[np.float64], bool, _Cells]:
    """Raw component estimates (point and per resample) for any list of crossed factors.

    Returns ``(point, boot, identified, cells)``; columns are the non-empty subsets of the
    factors in :func:`_subsets` order and then sampling (identified), or the same with the
    full interaction and sampling merged into the last column (not identified).
    """
    cells = _cells(values, codes, levels)
    ones = [np.ones((1, lev)) for lev in levels]
    exact_a, exact_n = _pair_sums(cells, ones)
    for t, count in zip(_subsets(len(levels))[:-1], exact_n[0, :-1], strict=True):
        if count == 0:
            same = ", ".join(names[f] for f in t) or "nothing"
            raise StatsInputError(
                f"no two observations share exactly {{{same}}} (and differ in the other "
                "factors), so the variance components are not identified. Cross the factors: "
                f"every {names[0]} under at least two {names[1]}s, and the reverse."
            )
    identified = bool(exact_n[0, -1] > 0)
    m = _design_matrix(len(levels), identified)
    rows = m.shape[0]
    inv = np.linalg.inv(m)
    point = inv @ (exact_a[0, :rows] / exact_n[0, :rows])
    chunk = max(1, _CHUNK_ELEMENTS // max(1, cells.n.size))
    boot = np.empty((n_resamples, m.shape[1]))
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        w = [
            rng.multinomial(lev, np.full(lev, 1.0 / lev), size=size).astype(np.float64)
            if draw
            else np.ones((size, lev))
            for lev, draw in zip(levels, resample, strict=True)
        ]
        a, n = _pair_sums(cells, w)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = np.where(n[:, :rows] > 0, a[:, :rows] / n[:, :rows], np.nan)
        boot[start : start + size] = u @ inv.T
    return point, boot, identified, cells


@dataclass(frozen=True, slots=True)
class VarianceComponent:
    """One variance component with its bootstrap interval.

    Attributes
    ----------
    name : str
        ``"item"``, ``"condition"``, ``"item:condition"`` (interaction), ``"sampling"`` or
        ``"item:condition+sampling"`` (their sum).
    estimate : float
        The moment estimate truncated at 0 (NaN when not identified).
    raw : float
        The moment estimate before truncation (unbiased; may be negative).
    low, high : float
        Percentile interval of the pigeonhole bootstrap, truncated at 0.
    share : float
        ``estimate`` over the total of the truncated estimates.
    """

    name: str
    estimate: float
    raw: float
    low: float
    high: float
    share: float


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """Result of :func:`variance_components`.

    Attributes
    ----------
    item, condition, interaction, sampling : VarianceComponent
        The four components; ``interaction`` and ``sampling`` are NaN when every cell
        has a single sample (not separately identified).
    interaction_plus_sampling : VarianceComponent
        Their sum, identified in either case.
    total : float
        Sum of the truncated estimates (item + condition + interaction + sampling).
    grand_mean : float
        Mean of all observations.
    n_items, n_conditions, n_cells, n_observations : int
        Distinct items, conditions, observed item × condition cells, observations.
    samples_per_cell : float
        Mean number of samples in an observed cell.
    identified : bool
        Whether interaction and sampling are separately identified (some cell has two or
        more samples).
    confidence : float
        Nominal coverage of the intervals.
    n_resamples : int
        Bootstrap resamples; ``n_valid_resamples`` of them had every pair type.
    """

    item: VarianceComponent
    condition: VarianceComponent
    interaction: VarianceComponent
    sampling: VarianceComponent
    interaction_plus_sampling: VarianceComponent
    total: float
    grand_mean: float
    n_items: int
    n_conditions: int
    n_cells: int
    n_observations: int
    samples_per_cell: float
    identified: bool
    confidence: float
    n_resamples: int
    n_valid_resamples: int

    @property
    def components(self) -> tuple[VarianceComponent, ...]:
        """``(item, condition, interaction, sampling)``."""
        return (self.item, self.condition, self.interaction, self.sampling)


def _check_labels(
    values: ArrayLike, item: ArrayLike, condition: ArrayLike
) -> tuple[NDArray[np.float64], list[NDArray[np.intp]], list[int]]:
    y = as_float_1d(values, "values")
    n = y.size
    items, item_codes = group_codes(item, n, "item", unit="observation")
    conds, cond_codes = group_codes(condition, n, "condition", unit="observation")
    if items.size < 2 or conds.size < 2:
        raise StatsInputError(
            f"variance_components needs at least 2 items and 2 conditions; got {items.size} "
            f"item(s) and {conds.size} condition(s). With one condition, the item and "
            "interaction parts cannot be told apart: use clt_se on per-item means instead."
        )
    return y, [item_codes, cond_codes], [items.size, conds.size]


def variance_components(
    values: ArrayLike,
    item: ArrayLike,
    condition: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: SeedLike = 0,
) -> VarianceComponents:
    """Variance of correctness split into item, condition, interaction and sampling parts.

    Parameters
    ----------
    values : array_like of float, shape (n_observations,)
        One value per observation (a sample of an item under a condition): 0/1 correctness
        or a score. Long form: one row per item × condition × sample.
    item, condition : array_like, shape (n_observations,)
        Item and condition label of each observation (mutually comparable labels).
    confidence : float
        Nominal coverage of the bootstrap intervals.
    n_resamples : int
        Pigeonhole bootstrap resamples.
    seed : int or numpy.random.Generator
        Seed of the bootstrap.

    Returns
    -------
    VarianceComponents
        Each component's truncated estimate, raw estimate, interval and share; the
        counts, the grand mean and whether interaction and sampling are identified.

    Raises
    ------
    StatsInputError
        If lengths differ, values are not finite, there are fewer than 2 items or 2
        conditions, no item was seen under two conditions or no condition on two items.

    Warns
    -----
    StatsWarning
        If every cell has one sample (interaction and sampling are NaN, their sum is
        reported), or if some bootstrap resamples lacked a pair type and were dropped.

    Notes
    -----
    Model: ``y_ijk = mu + a_i + b_j + (ab)_ij + e_ijk``, a crossed random-effects model
    with independent, zero-mean effects (items and conditions both drawn from larger
    populations; samples i.i.d. within a cell). On 0/1 data this is a model for the
    probability scale: ``s2_sampling`` is the mean of ``p_ij (1 - p_ij)`` over cells, the
    Bernoulli noise that more samples average away. No normality is assumed.

    Estimates are unbiased method-of-moments (U-statistic) estimates that allow missing
    cells and unequal samples per cell: ``U_T``, the mean of ``(y - y')^2 / 2`` over pairs
    of observations sharing exactly the factors ``T``, has expectation

    * same cell: ``s2_sampling``
    * same item, other condition: ``s2_condition + s2_interaction + s2_sampling``
    * same condition, other item: ``s2_item + s2_interaction + s2_sampling``
    * neither: the sum of all four,

    which is solved for the components (Gao & Owen 2017, "Efficient moment calculations for
    variance components in large unbalanced crossed random effects models", extended with a
    replicate level). On a balanced design they equal the two-way ANOVA expected-mean-squares
    estimates. Pairs are weighted equally, which is unbiased but not efficient when cells
    are very unequal. A negative raw estimate is reported as ``raw`` and truncated at 0 in
    ``estimate`` (so the truncated estimate is biased upward near 0).

    Intervals: Owen's (2007) pigeonhole bootstrap — items and conditions are drawn
    independently with replacement, and every observation of a chosen (item, condition)
    cell is kept — with percentile intervals, truncated at 0. With few conditions (under
    ~10) the condition component's interval is rough: it rests on that many values.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(0)
    >>> i, j, k = np.meshgrid(np.arange(40), np.arange(5), np.arange(4), indexing="ij")
    >>> p = 1 / (1 + np.exp(-(rng.normal(0, 1.5, 40)[i] + rng.normal(0, 0.5, 5)[j])))
    >>> y = (rng.uniform(size=p.shape) < p).astype(float)
    >>> vc = stats.variance_components(y.ravel(), i.ravel(), j.ravel(), n_resamples=200)
    >>> vc.n_items, vc.n_conditions, vc.samples_per_cell
    (40, 5, 4.0)
    """
    conf = check_confidence(confidence)
    b = as_positive_int(n_resamples, "n_resamples")
    rng = make_rng(seed)
    y, codes, levels = _check_labels(values, item, condition)
    point, boot, identified, cells = _fit(
        y, codes, levels, ("item", "condition"), n_resamples=b, rng=rng, resample=(True, True)
    )
    if not identified:
        warn(
            "variance_components: every cell has a single sample, so the interaction and "
            "sampling components are not separately identified; they are NaN and their sum "
            "is reported (interaction_plus_sampling). Draw two or more samples per cell."
        )
    valid = np.all(np.isfinite(boot), axis=1)
    n_valid = int(valid.sum())
    if n_valid < b:
        warn(
            f"variance_components: {b - n_valid} of {b} bootstrap resamples lacked a pair type "
            "(e.g. one item drawn every time) and were dropped from the intervals."
        )
    return _result(point, boot[valid], identified, cells, y, conf, b)


def _result(
    point: NDArray[np.float64],
    boot: NDArray[np.float64],
    identified: bool,
    cells: _Cells,
    y: NDArray[np.float64],
    conf: float,
    n_resamples: int,
) -> VarianceComponents:
    alpha = (1.0 - conf) / 2.0
    if identified:
        cols = [point[i] for i in range(4)]
        sums = [boot[:, i] for i in range(4)]
        cols.append(point[2] + point[3])
        sums.append(boot[:, 2] + boot[:, 3])
    else:
        cols = [point[0], point[1], math.nan, math.nan, point[2]]
        nan = np.full(boot.shape[0], np.nan)
        sums = [boot[:, 0], boot[:, 1], nan, nan, boot[:, 2]]
    trunc = [max(float(c), 0.0) if math.isfinite(c) else math.nan for c in cols]
    # the sum of the parts shown: each truncated at 0 (the interaction and sampling parts
    # apart when identified, so the four shares add up to 1)
    total = trunc[0] + trunc[1] + (trunc[2] + trunc[3] if identified else trunc[4])
    names = ("item", "condition", "item:condition", "sampling", "item:condition+sampling")
    comps = []
    for name, raw, est, draws in zip(names, cols, trunc, sums, strict=True):
        if math.isfinite(raw) and draws.size:
            low, high = (max(float(v), 0.0) for v in np.quantile(draws, [alpha, 1.0 - alpha]))
        else:
            low = high = math.nan
        share = est / total if total > 0 else math.nan
        comps.append(VarianceComponent(name, est, float(raw), low, high, float(share)))
    return VarianceComponents(
        item=comps[0],
        condition=comps[1],
        interaction=comps[2],
        sampling=comps[3],
        interaction_plus_sampling=comps[4],
        total=total,
        grand_mean=float(y.mean()),
        n_items=cells.levels[0],
        n_conditions=cells.levels[1],
        n_cells=int(cells.n.size),
        n_observations=int(y.size),
        samples_per_cell=float(cells.n.mean()),
        identified=identified,
        confidence=conf,
        n_resamples=n_resamples,
        n_valid_resamples=int(boot.shape[0]),
    )
