"""Anytime-valid inference for sequential paired evaluations: betting confidence sequences,
a sign decision that may be checked after every observation, and importance allocation."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import as_count, as_float_1d, as_positive_int, check_confidence, check_probability

__all__ = [
    "Allocation",
    "ConfidenceSequence",
    "SignDecision",
    "confidence_sequence",
    "importance_allocation",
    "sequential_sign",
]

#: Largest fraction of its wealth a bet may risk on one observation (the truncation ``c``
#: of Waudby-Smith & Ramdas); 1/2 is their default.
_TRUNCATION = 0.5
_GRID_CHUNK = 256


@dataclass(frozen=True, slots=True, eq=False)
class ConfidenceSequence:
    """Result of :func:`confidence_sequence`: bounds on the mean after each observation.

    Attributes
    ----------
    low, high : numpy.ndarray
        ``low[t]``, ``high[t]``: the bounds after observations ``0..t`` (length ``n``). They
        are running intersections, so ``low`` never decreases and ``high`` never increases.
    estimate : numpy.ndarray
        The plain running mean of the observations after each observation (not weighted by
        the bets; it can lie outside ``[low, high]`` early on).
    confidence : float
        Probability, at least, that every interval of the sequence contains the mean at
        once, e.g. 0.95.
    """

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    estimate: NDArray[np.float64]
    confidence: float

    def excludes(self, value: float) -> int | None:
        """The first index ``t`` whose interval excludes ``value``, or None if none does."""
        out = np.flatnonzero((self.low > value) | (self.high < value))
        return int(out[0]) if out.size else None


@dataclass(frozen=True, slots=True, eq=False)
class SignDecision:
    """Result of :func:`sequential_sign`.

    Attributes
    ----------
    decision : int
        ``+1`` (the mean difference is positive: A is better), ``-1`` (B is better) or ``0``
        (undecided after every observation given).
    stop : int or None
        Index of the observation after which the decision was reached (observations spent
        ``= stop + 1``); None when undecided.
    log_wealth_up, log_wealth_down : numpy.ndarray
        Natural logs of the two betting wealths after each observation: ``up`` bets on a
        positive mean (an e-process against ``mean <= 0``), ``down`` on a negative one.
    confidence : float
        The level: a decision is wrong with probability at most ``1 - confidence``.
    """

    decision: int
    stop: int | None
    log_wealth_up: NDArray[np.float64]
    log_wealth_down: NDArray[np.float64]
    confidence: float


@dataclass(frozen=True, slots=True, eq=False)
class Allocation:
    """Result of :func:`importance_allocation`.

    Attributes
    ----------
    probabilities : numpy.ndarray
        ``q_i``: the probability of drawing item ``i`` next (sums to 1).
    weights : numpy.ndarray
        ``p_i / q_i`` with ``p_i = 1 / n_items``: multiply a difference observed on item
        ``i`` by ``weights[i]`` so that its expectation is the uniform mean over items.
    weight_bound : float
        ``max_i weights[i]`` (at most ``1 / floor``): the predictable bound to pass to
        :func:`sequential_sign` for observations drawn with these probabilities.
    """

    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]
    weight_bound: float


def _per_observation(value: Any, n: int, name: str) -> NDArray[np.float64]:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        arr = np.full(n, float(value))
    else:
        arr = as_float_1d(value, name)
        if arr.shape[0] != n:
            raise StatsInputError(
                f"{name} must be a number or one value per observation; got {arr.shape[0]} "
                f"values for {n} observations."
            )
    if not np.all(np.isfinite(arr)):
        raise StatsInputError(f"{name} must be finite; got {value!r}.")
    return arr


def _first_bad(mask: NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def confidence_sequence(
    x: ArrayLike,
    lower: ArrayLike | float,
    upper: ArrayLike | float,
    confidence: float = 0.95,
    *,
    grid: int = 1000,
) -> ConfidenceSequence:
    """Anytime-valid confidence sequence for a common conditional mean, by betting.

    Parameters
    ----------
    x : array_like
        Observations ``x_0..x_{n-1}`` in the order they were made.
    lower, upper : float or array_like
        Bounds known *before* each observation was made: ``lower[t] <= x[t] <= upper[t]``,
        ``lower[t] < upper[t]``. A number applies to every observation.
    confidence : float
        Probability, at least, that all intervals contain the mean simultaneously.
    grid : int
        Number of candidate means on ``[min(lower), max(upper)]`` (at least 2). More points
        give tighter bounds; validity does not depend on it.

    Returns
    -------
    ConfidenceSequence
        ``low``, ``high`` and the running mean after each observation, and ``excludes``.

    Raises
    ------
    StatsInputError
        If ``x`` is empty or not 1-D, a bound has the wrong length, ``lower >= upper`` or an
        observation lies outside its bounds (the message names the first such position),
        ``confidence`` is outside (0, 1) or ``grid < 2``.

    Notes
    -----
    Assumes ``E[x_t | x_0..x_{t-1}] = m`` for every ``t`` with one unknown ``m``: i.i.d.
    draws, or draws whose sampling distribution was fixed from past observations only and
    corrected by importance weights. The bounds must be predictable too (fixed before
    ``x_t`` is drawn; a bound that depends on which item was then drawn is not). Validity
    breaks if which observation comes next depends on its own outcome, or if the mean
    drifts; it does *not* break by looking at the intervals after every observation and
    stopping whenever one likes: with probability at least ``confidence`` every interval
    of the sequence contains ``m``.

    The method is the hedged capital process of Waudby-Smith & Ramdas (2023, JRSS-B,
    "Estimating means of bounded random variables by betting"): for each candidate ``m``
    the wealths ``K+ = prod(1 + l+_t (x_t - m))`` and ``K- = prod(1 - l-_t (x_t - m))``
    with their predictable plug-in bet ``l_t = sqrt(2 log(2/a) / (s2_{t-1} t log(1+t)))``
    (``s2`` a regularised running variance), truncated to ``l+_t <= 1/2 / (m - lower_t)``
    and ``l-_t <= 1/2 / (upper_t - m)`` so that no factor can reach zero. ``K+`` falls and
    ``K-`` rises with ``m``, so ``low_t`` is the largest grid point with ``K+/2 >= 1/a``
    (every smaller ``m`` is excluded too) and ``high_t`` the smallest with ``K-/2 >= 1/a``:
    the true boundary lies between that grid point and its neighbour, so reporting the
    grid point widens the interval. This is a superset of the hedged set
    ``{m : (K+ + K-)/2 < 1/a}``, hence valid by Ville's inequality; the running
    intersection is then valid too. Cost: ``O(n * grid)``.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> x = np.random.default_rng(0).binomial(1, 0.3, 2000)
    >>> cs = stats.confidence_sequence(x, 0, 1)
    >>> bool(cs.low[-1] < 0.3 < cs.high[-1]), bool(cs.high[-1] - cs.low[-1] < 0.1)
    (True, True)
    >>> cs.excludes(0.5) is not None
    True
    """
    obs = as_float_1d(x, "x")
    n = obs.shape[0]
    lo = _per_observation(lower, n, "lower")
    hi = _per_observation(upper, n, "upper")
    if np.any(lo >= hi):
        t = _first_bad(lo >= hi)
        raise StatsInputError(
            f"lower must be below upper for every observation; at position {t} lower = "
            f"{float(lo[t])} >= upper = {float(hi[t])}. Pass the range each observation can "
            "take."
        )
    outside = (obs < lo) | (obs > hi)
    if np.any(outside):
        t = _first_bad(outside)
        raise StatsInputError(
            f"x[{t}] = {float(obs[t])} lies outside its bounds [{float(lo[t])}, "
            f"{float(hi[t])}]; the bounds must hold for every observation (widen them, or fix "
            "the observation)."
        )
    conf = check_confidence(confidence)
    size = as_positive_int(grid, "grid", minimum=2)
    alpha = 1.0 - conf

    # Predictable plug-in bets (W-S & R eq. 26), one per observation, not depending on m.
    t_idx = np.arange(1, n + 1, dtype=np.float64)
    mean_prior = 0.5 * (lo[0] + hi[0])
    var_prior = (0.5 * (hi[0] - lo[0])) ** 2
    running_mean = (mean_prior + np.cumsum(obs)) / (t_idx + 1.0)
    var_after = (var_prior + np.cumsum((obs - running_mean) ** 2)) / (t_idx + 1.0)
    var_before = np.concatenate(([var_prior], var_after[:-1]))
    bet = np.sqrt(2.0 * math.log(2.0 / alpha) / (var_before * t_idx * np.log1p(t_idx)))

    points = np.linspace(float(lo.min()), float(hi.max()), size)
    threshold = math.log(2.0 / alpha)  # K/2 >= 1/alpha
    low = np.full(n, points[0])
    high = np.full(n, points[-1])
    low_count = np.zeros(n, dtype=np.intp)  # grid points excluded from below, per t
    low_open = np.ones(n, dtype=np.bool_)
    high_count = np.zeros(n, dtype=np.intp)
    high_open = np.ones(n, dtype=np.bool_)
    for start in range(0, size, _GRID_CHUNK):
        m_up = points[start : start + _GRID_CHUNK]
        low_count, low_open = _excluded_prefix(
            obs, lo, hi, bet, m_up, threshold, low_count, low_open, up=True
        )
        m_down = points[::-1][start : start + _GRID_CHUNK]
        high_count, high_open = _excluded_prefix(
            obs, lo, hi, bet, m_down, threshold, high_count, high_open, up=False
        )
    has_low = low_count > 0
    low[has_low] = points[low_count[has_low] - 1]
    has_high = high_count > 0
    high[has_high] = points[::-1][high_count[has_high] - 1]
    low = np.maximum.accumulate(np.maximum(low, np.maximum.accumulate(lo)))
    high = np.minimum.accumulate(np.minimum(high, np.minimum.accumulate(hi)))
    estimate = np.cumsum(obs) / t_idx
    return ConfidenceSequence(low=low, high=high, estimate=estimate, confidence=conf)


def _excluded_prefix(
    obs: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    bet: NDArray[np.float64],
    m: NDArray[np.float64],
    threshold: float,
    count: NDArray[np.intp],
    still_open: NDArray[np.bool_],
    *,
    up: bool,
) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Extend, per time, the run of consecutive excluded candidates (from the bottom of the
    grid for ``up``, from the top otherwise) by the candidates ``m`` of one chunk."""
    if not np.any(still_open):
        return count, still_open
    with np.errstate(divide="ignore", invalid="ignore"):
        if up:
            room = m[None, :] - lo[:, None]  # how far x can fall below m
            step = obs[:, None] - m[None, :]
        else:
            room = hi[:, None] - m[None, :]
            step = m[None, :] - obs[:, None]
        lam = np.minimum(bet[:, None], _TRUNCATION / room)
        impossible = room < 0  # m outside this observation's bounds: not its mean
        factor = np.log1p(np.where(impossible, 0.0, lam * step))
        factor[impossible] = np.inf
    wealth = np.cumsum(factor, axis=0)
    excluded = wealth >= threshold
    run = np.where(excluded.all(axis=1), excluded.shape[1], np.argmin(excluded, axis=1))
    new_count = count + np.where(still_open, run, 0)
    return new_count.astype(np.intp), still_open & (run == excluded.shape[1])


def sequential_sign(
    differences: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    weight_bound: ArrayLike | float | None = None,
    confidence: float = 0.95,
) -> SignDecision:
    """Decide the sign of a mean paired difference, checking after every observation.

    Parameters
    ----------
    differences : array_like
        Paired differences in [-1, 1] in the order observed, e.g. ``correct_A -
        correct_B`` per cell (each in {-1, 0, 1}).
    weights : array_like, optional
        Importance weights ``p/q`` of each observation (see :func:`importance_allocation`);
        omitted: every weight is 1 (uniform sampling).
    weight_bound : float or array_like, optional
        Required with ``weights``: a bound on each weight fixed before that observation was
        drawn, e.g. the ``weight_bound`` of the allocation it was drawn from.
    confidence : float
        ``1 - alpha``: the chance of a wrong decision is at most ``alpha``.

    Returns
    -------
    SignDecision
        The decision (+1, -1 or 0 undecided), the index at which it was reached, and the
        two log wealths after each observation.

    Raises
    ------
    StatsInputError
        If the differences are empty or outside [-1, 1], weights are negative, exceed their
        bound or come without one (the message names the first bad position), or
        ``confidence`` is outside (0, 1).

    Notes
    -----
    Assumes each weighted difference ``x_t = d_t w_t`` has the same conditional mean
    ``m`` (the mean difference over the population) given everything observed before it:
    cells drawn i.i.d., or from a distribution chosen from earlier observations only,
    with ``w = p/q``. Choosing a cell using that cell's own outcome breaks this; so does a
    weight bound set after the cell was drawn. Looking after every observation and
    stopping at will is fine: that is what the procedure is for, unlike a fixed-sample
    test repeated after each batch.

    Two wealths bet on the observations: ``K+ = prod(1 + l+_t x_t)`` with ``l+_t >= 0``
    is a nonnegative supermartingale whenever ``m <= 0`` (and ``K-``, betting the other
    way, whenever ``m >= 0``). The decision is made at the first ``t`` with
    ``(K+ + K-)/2 >= 1/alpha``, in the direction of the larger wealth. By Ville's
    inequality, when ``m = 0`` a decision is ever made with probability at most
    ``alpha``, and when ``m != 0`` the wrong sign is ever decided with probability at
    most ``alpha``. Bets are the aGRAPA plug-in (Waudby-Smith & Ramdas 2023, sec. 5):
    ``l_t = mu / (v + mu^2)`` from the running mean ``mu`` and mean square ``v`` of earlier
    observations (one pseudo-observation 0 with square ``B^2/4``), truncated to
    ``1/2 / B_t`` with ``B_t`` the weight bound.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(1)
    >>> a, b = rng.random(3000) < 0.62, rng.random(3000) < 0.55
    >>> r = stats.sequential_sign(a.astype(int) - b.astype(int))
    >>> r.decision, r.stop is not None and r.stop < 3000
    (1, True)
    """
    x, bound = _weighted(differences, weights, weight_bound)
    conf = check_confidence(confidence)
    log_up, log_down = _sign_wealth(x, bound)
    evidence = np.logaddexp(log_up, log_down) - math.log(2.0)
    crossed = np.flatnonzero(evidence >= math.log(1.0 / (1.0 - conf)))
    if crossed.size == 0:
        return SignDecision(0, None, log_up, log_down, conf)
    t = int(crossed[0])
    return SignDecision(1 if log_up[t] > log_down[t] else -1, t, log_up, log_down, conf)


def sign_interval(
    differences: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    weight_bound: ArrayLike | float | None = None,
    confidence: float = 0.95,
    grid: int = 2001,
) -> ConfidenceSequence:
    """The anytime-valid confidence sequence that :func:`sequential_sign`'s test inverts:
    0 leaves it exactly when the test decides.

    Parameters
    ----------
    differences, weights, weight_bound, confidence
        As :func:`sequential_sign`.
    grid : int
        Candidate means, evenly spaced over [-1, 1] with 0 among them (an odd number).

    Returns
    -------
    ConfidenceSequence
        After each observation, the running intersection of the candidate means ``m`` the
        test does not reject; ``estimate`` the running mean of ``d w``.

    Notes
    -----
    The bets are :func:`sequential_sign`'s, computed once from the observations; for a
    candidate mean ``m`` the wealths are ``prod(1 + l+_t (x_t - m))`` and ``prod(1 - l-_t
    (x_t - m))``, test supermartingales under "mean <= m" and "mean >= m" (the bets are at
    most ``1/2 / B_t``, so every factor stays positive for ``|m| <= 1 <= B_t``). Their
    average is convex in ``m`` (each is a product of positive linear functions), so the
    candidates it does not reject form an interval; the reported bounds are just inside the
    grid points it rejects next to it (conservative by at most one grid step), and at ``m = 0``
    the average is the test's own, so the interval excludes 0 from the observation at which
    the test decides on. The mean difference of a population lies in [-1, 1]; every weight
    bound is at least 1 for an importance-weighted draw (some weight is at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(1)
    >>> d = (rng.random(3000) < 0.62).astype(int) - (rng.random(3000) < 0.55)
    >>> cs, test = stats.sign_interval(d), stats.sequential_sign(d)
    >>> cs.excludes(0.0) == test.stop
    True
    """
    x, bound = _weighted(differences, weights, weight_bound)
    conf = check_confidence(confidence)
    if (
        isinstance(grid, bool)
        or not isinstance(grid, numbers.Integral)
        or grid < 3
        or grid % 2 == 0
    ):
        raise StatsInputError(
            f"grid must be an odd integer >= 3 (0 among the points); got {grid!r}"
        )
    if np.any(bound < 1.0):
        t = _first_bad(bound < 1.0)
        raise StatsInputError(
            f"weight_bound[{t}] = {float(bound[t])} is below 1; the bound of an importance "
            "allocation is at least 1 (some weight p/q is)"
        )
    m = np.linspace(-1.0, 1.0, int(grid))
    lam_up, lam_down = _sign_bets(x, bound)
    threshold = math.log(1.0 / (1.0 - conf))
    n = x.shape[0]
    low, high = np.empty(n), np.empty(n)
    log_up, log_down = np.zeros(len(m)), np.zeros(len(m))
    lo, hi = -1.0, 1.0
    for t in range(n):  # O(n × grid); each step's set is an interval (see Notes)
        with np.errstate(divide="ignore"):  # a side that lost everything: log 0
            log_up += np.log1p(lam_up[t] * (x[t] - m))
            log_down += np.log1p(-lam_down[t] * (x[t] - m))
        kept = np.logaddexp(log_up, log_down) - math.log(2.0) < threshold
        if kept.any():  # (else every candidate is rejected, an error of the test: keep it)
            first, last = int(np.argmax(kept)), len(m) - 1 - int(np.argmax(kept[::-1]))
            # the set lies strictly inside the rejected grid points next to it
            if first > 0:
                lo = max(lo, float(np.nextafter(m[first - 1], np.inf)))
            if last < len(m) - 1:
                hi = min(hi, float(np.nextafter(m[last + 1], -np.inf)))
        low[t], high[t] = lo, max(hi, lo)
    estimate = np.cumsum(x) / np.arange(1, n + 1)
    return ConfidenceSequence(low=low, high=high, estimate=estimate, confidence=conf)


def _weighted(
    differences: ArrayLike, weights: ArrayLike | None, weight_bound: ArrayLike | float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The weighted differences ``d w`` and each one's bound, checked (see sequential_sign)."""
    d = as_float_1d(differences, "differences")
    n = d.shape[0]
    if np.any(np.abs(d) > 1.0):
        t = _first_bad(np.abs(d) > 1.0)
        raise StatsInputError(
            f"differences[{t}] = {float(d[t])} is outside [-1, 1]; pass per-cell differences of "
            "correctness (0/1 or a fraction) between the two models."
        )
    if weights is None:
        if weight_bound is not None:
            raise StatsInputError("weight_bound was given without weights; pass both or neither.")
        w = np.ones(n)
        bound = np.ones(n)
    else:
        w = as_float_1d(weights, "weights")
        if w.shape[0] != n:
            raise StatsInputError(
                f"weights must have one entry per difference; got {w.shape[0]} for {n}."
            )
        if weight_bound is None:
            raise StatsInputError(
                "weights need a weight_bound fixed before each draw (Allocation.weight_bound); "
                "a bound read off the drawn weights is not predictable."
            )
        bound = _per_observation(weight_bound, n, "weight_bound")
        if np.any(w < 0):
            t = _first_bad(w < 0)
            raise StatsInputError(
                f"weights[{t}] = {float(w[t])} is negative; weights are p/q >= 0."
            )
        if np.any(bound <= 0):
            t = _first_bad(bound <= 0)
            raise StatsInputError(f"weight_bound[{t}] = {float(bound[t])} must be positive.")
        if np.any(w > bound * (1 + 1e-12)):
            t = _first_bad(w > bound * (1 + 1e-12))
            raise StatsInputError(
                f"weights[{t}] = {float(w[t])} exceeds its bound {float(bound[t])}; pass the "
                "bound of the allocation the observation was drawn from."
            )
    return d * w, bound


def _sign_wealth(
    x: NDArray[np.float64], bound: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Log wealths of the aGRAPA bets for and against a positive mean (see sequential_sign)."""
    lam_up, lam_down = _sign_bets(x, bound)
    return np.cumsum(np.log1p(lam_up * x)), np.cumsum(np.log1p(-lam_down * x))


def _sign_bets(
    x: NDArray[np.float64], bound: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The aGRAPA bets (both >= 0) for and against a positive mean, each from the
    observations before it (see sequential_sign)."""
    n = x.shape[0]
    count = np.arange(1, n + 1, dtype=np.float64)  # earlier observations + 1 pseudo
    s1 = np.concatenate(([0.0], np.cumsum(x)[:-1]))
    s2 = np.concatenate(([0.0], np.cumsum(x * x)[:-1]))
    mu = s1 / count
    v = (0.25 * bound**2 + s2) / count
    lam = mu / (v + mu * mu)
    cap = _TRUNCATION / bound
    return np.clip(lam, 0.0, cap), np.clip(-lam, 0.0, cap)


def importance_allocation(
    disagreements: ArrayLike,
    cells: ArrayLike,
    *,
    floor: float = 0.2,
    prior: tuple[float, float] = (1.0, 1.0),
) -> Allocation:
    """Item sampling probabilities that favour items where the two models disagree.

    Parameters
    ----------
    disagreements : array_like of int
        Per item, how many of its cells seen so far had the models disagree (``d != 0``).
    cells : array_like of int
        Per item, how many of its cells were seen so far (``>= disagreements``).
    floor : float
        Share ``epsilon`` in (0, 1] of the probability spread uniformly over items; it
        bounds every weight by ``1 / floor``. ``floor=1`` is uniform sampling.
    prior : (float, float)
        Beta prior ``(a, b)`` of each item's disagreement rate.

    Returns
    -------
    Allocation
        ``probabilities`` q, ``weights`` p/q and ``weight_bound`` max p/q.

    Raises
    ------
    StatsInputError
        If the counts are not non-negative integers of equal, non-zero length, an item has
        more disagreements than cells (naming it), ``floor`` is outside (0, 1] or a prior
        parameter is not positive.

    Notes
    -----
    ``q_i = (1 - floor) sqrt(r_i) / sum_j sqrt(r_j) + floor / n``, with ``r_i`` the Beta
    posterior mean of item ``i``'s disagreement rate. Drawing item ``i`` with probability
    ``q_i`` (its format uniformly) and weighting its difference by ``p_i / q_i``
    (``p_i = 1/n``) keeps the conditional mean equal to the uniform mean difference, and
    ``q proportional to sqrt(r)`` minimises that observation's second moment
    ``sum p_i^2 r_i / q_i`` (Neyman allocation). Validity needs the counts to come from
    earlier cells only: compute the allocation, then draw the next cells from it. Whether
    it saves cells depends on how unevenly disagreement is spread over items
    (bench/decide_bench.py measures it); where it does not, uniform sampling
    (``floor=1``) is the simpler choice.

    Examples
    --------
    >>> from steadyeval import stats
    >>> a = stats.importance_allocation([0, 5, 20], [20, 20, 20], floor=0.3)
    >>> [round(float(q), 3) for q in a.probabilities]
    [0.187, 0.313, 0.499]
    >>> round(a.weight_bound, 3)
    1.781
    """
    dis = np.asarray(disagreements)
    seen = np.asarray(cells)
    for arr, name in ((dis, "disagreements"), (seen, "cells")):
        if arr.ndim != 1 or arr.size == 0:
            raise StatsInputError(
                f"{name} must be a non-empty 1-D array (one count per item); got shape {arr.shape}."
            )
        if arr.dtype.kind not in "iuf":
            raise StatsInputError(f"{name} must hold integer counts; got dtype {arr.dtype}.")
        bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.floor(arr))
        if np.any(bad):
            t = _first_bad(bad)
            as_count(arr[t].item(), f"{name}[{t}]")  # raises, naming the position
    if dis.shape != seen.shape:
        raise StatsInputError(
            f"disagreements and cells must have one count per item each; got lengths "
            f"{dis.shape[0]} and {seen.shape[0]}."
        )
    if np.any(dis > seen):
        t = _first_bad(dis > seen)
        raise StatsInputError(
            f"item {t} has {int(dis[t])} disagreements in {int(seen[t])} cells; count each "
            "cell once, disagreements <= cells."
        )
    eps = check_probability(floor, "floor", closed=True)
    if eps == 0.0:
        raise StatsInputError(
            "floor must be above 0: it bounds the importance weights by 1/floor. Use e.g. 0.2."
        )
    a, b = (float(v) for v in prior)
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise StatsInputError(f"prior must be two positive numbers (a, b); got {prior!r}.")
    n = dis.shape[0]
    rate = (dis + a) / (seen + a + b)
    root = np.sqrt(rate)
    q = (1.0 - eps) * root / root.sum() + eps / n
    weights = (1.0 / n) / q
    return Allocation(probabilities=q, weights=weights, weight_bound=float(weights.max()))
