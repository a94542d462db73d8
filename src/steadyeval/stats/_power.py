"""Sample size and minimum detectable difference for paired binary outcomes."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from scipy import stats as sps

from ._errors import StatsInputError
from ._validate import as_positive_int, check_probability, warn

__all__ = [
    "MinimumDetectableDifference",
    "PowerResult",
    "minimum_detectable_difference",
    "paired_power",
]


@dataclass(frozen=True, slots=True)
class PowerResult:
    """Result of :func:`paired_power`.

    Attributes
    ----------
    n : int
        Number of items (paired observations): the smallest integer reaching the target
        power, or the ``n`` that was given.
    n_exact : float
        Connor's formula before rounding up (equal to ``n`` when ``n`` was given).
    power : float
        Power of the two-sided test at ``n`` (at least the target when ``n`` was solved for).
    delta : float
        Difference in success probability, ``p_A - p_B``.
    discordance : float
        Probability that an item is discordant, ``P(only A) + P(only B)``.
    alpha : float
        Two-sided significance level.
    """

    n: int
    n_exact: float
    power: float
    delta: float
    discordance: float
    alpha: float


@dataclass(frozen=True, slots=True)
class MinimumDetectableDifference:
    """Result of :func:`minimum_detectable_difference`.

    Attributes
    ----------
    delta : float
        Smallest ``|p_A - p_B|`` detected with the given power (NaN if none is).
    n : int
        Number of items.
    discordance : float
        Assumed discordance probability.
    alpha, power : float
        Two-sided significance level and target power.
    """

    delta: float
    n: int
    discordance: float
    alpha: float
    power: float


def _check_design(delta: Any, discordance: Any) -> tuple[float, float]:
    psi = check_probability(discordance, "discordance", closed=True)
    if psi == 0.0:
        raise StatsInputError(
            "discordance is 0: the conditions never disagree, so no difference is detectable."
        )
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise StatsInputError(f"delta must be a number in [-1, 1]; got {delta!r}.")
    d = abs(float(delta))
    if d == 0.0 or not math.isfinite(d):
        raise StatsInputError(f"delta must be a non-zero finite difference; got {delta!r}.")
    if d > psi:
        raise StatsInputError(
            f"|delta| ({d}) cannot exceed discordance ({psi}): delta = P(only A) - P(only B) "
            "and discordance = P(only A) + P(only B)."
        )
    if psi - d * d <= 0.0:
        raise StatsInputError(
            "delta = ±1 with discordance 1 means every item flips one way; nothing to test."
        )
    return d, psi


def _power_at(n: float, d: float, psi: float, z_a: float) -> float:
    return float(sps.norm.cdf((d * math.sqrt(n) - z_a * math.sqrt(psi)) / math.sqrt(psi - d * d)))


def paired_power(
    delta: float,
    discordance: float,
    *,
    alpha: float = 0.05,
    power: float | None = None,
    n: int | None = None,
) -> PowerResult:
    """Items needed to detect a paired difference (or the power at a given ``n``).

    Parameters
    ----------
    delta : float
        Difference in success probability to detect, ``p_A - p_B`` (sign ignored).
    discordance : float
        Expected share of discordant items, ``P(only A) + P(only B)``; from a pilot or
        an earlier run (e.g. 103/300 for two answer formats in MISSION Study 1).
    alpha : float
        Two-sided significance level.
    power : float, optional
        Target power when solving for ``n`` (default 0.8). Leave out when ``n`` is given.
    n : int, optional
        Number of items; when given, the power at ``n`` is returned instead.

    Returns
    -------
    PowerResult
        ``n``, ``n_exact``, ``power``, ``delta``, ``discordance``, ``alpha``.

    Raises
    ------
    StatsInputError
        If ``discordance`` is not in (0, 1], ``delta`` is 0 or ``|delta| > discordance``,
        ``alpha``/``power`` are not in (0, 1), or both ``power`` and ``n`` are given.

    Notes
    -----
    Connor (1987), "Sample size for testing differences in proportions for the
    paired-sample design", Biometrics 43: ``n = (z_{1-a/2} sqrt(psi) + z_{power}
    sqrt(psi - delta^2))^2 / delta^2`` with discordance ``psi``. It is a large-sample
    normal approximation for McNemar's test that treats ``psi`` as known; the exact
    conditional test (:func:`mcnemar` default) is conservative and needs somewhat more
    items. Items are assumed independent; with clustered items inflate ``n`` by the
    design effect.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.paired_power(0.05, 0.34).n
    1066
    """
    d, psi = _check_design(delta, discordance)
    a = check_probability(alpha, "alpha")
    z_a = float(sps.norm.ppf(1.0 - a / 2.0))
    if n is not None:
        if power is not None:
            raise StatsInputError("pass either power (to solve for n) or n (to get power).")
        n_ = as_positive_int(n, "n")
        return PowerResult(n_, float(n_), _power_at(n_, d, psi, z_a), d, psi, a)
    target = check_probability(0.8 if power is None else power, "power")
    z_b = float(sps.norm.ppf(target))
    n_exact = (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - d * d)) ** 2 / (d * d)
    n_int = max(1, math.ceil(n_exact - 1e-9))
    return PowerResult(n_int, n_exact, _power_at(n_int, d, psi, z_a), d, psi, a)


def minimum_detectable_difference(
    n: int,
    discordance: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> MinimumDetectableDifference:
    """Smallest paired difference ``|p_A - p_B|`` detectable with ``n`` items.

    Parameters
    ----------
    n : int
        Number of items (paired observations).
    discordance : float
        Expected share of discordant items, ``P(only A) + P(only B)``.
    alpha : float
        Two-sided significance level.
    power : float
        Target power.

    Returns
    -------
    MinimumDetectableDifference
        ``delta``, ``n``, ``discordance``, ``alpha``, ``power``.

    Raises
    ------
    StatsInputError
        If ``n < 1`` or the probabilities are out of range.

    Warns
    -----
    StatsWarning
        If no difference up to ``discordance`` reaches the target power with ``n`` items;
        ``delta`` is NaN.

    Notes
    -----
    Inverts Connor's (1987) formula (see :func:`paired_power`) in closed form:
    ``delta = sqrt(psi) (z_a sqrt(n) + z_b sqrt(n + z_b^2 - z_a^2)) / (n + z_b^2)`` with
    ``z_a = z_{1-alpha/2}``, ``z_b = z_{power}``. Same assumptions: independent items,
    known discordance, large-sample normal approximation.

    Examples
    --------
    >>> from steadyeval import stats
    >>> round(stats.minimum_detectable_difference(300, 0.34).delta, 3)
    0.094
    """
    n_ = as_positive_int(n, "n")
    psi = check_probability(discordance, "discordance", closed=True)
    if psi == 0.0:
        raise StatsInputError(
            "discordance is 0: the conditions never disagree, so no difference is detectable."
        )
    a = check_probability(alpha, "alpha")
    target = check_probability(power, "power")
    z_a = float(sps.norm.ppf(1.0 - a / 2.0))
    z_b = float(sps.norm.ppf(target))
    inner = n_ + z_b * z_b - z_a * z_a
    delta = math.nan
    if inner >= 0.0:
        delta = math.sqrt(psi) * (z_a * math.sqrt(n_) + z_b * math.sqrt(inner)) / (n_ + z_b * z_b)
    if not (0.0 < delta <= psi):
        warn(
            f"minimum_detectable_difference: with n={n_} items and discordance {psi} no "
            f"difference reaches power {target}; delta is NaN. Use more items."
        )
        delta = math.nan
    return MinimumDetectableDifference(delta, n_, psi, a, target)
