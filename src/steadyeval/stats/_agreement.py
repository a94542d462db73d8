"""Agreement between raters (e.g. an LLM judge and people): Cohen's kappa, Krippendorff's alpha.

Both take their point value from a coincidence/confusion table that is a sum over units, so
a bootstrap over units only re-weights per-unit contributions: resamples are drawn as
multinomial counts and evaluated in one matrix product, not one table per resample.
(For the two-way table of *paired binary outcomes* of two conditions, see
:class:`AgreementTable`.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError
from ._validate import SeedLike, as_positive_int, check_confidence, make_rng, warn

__all__ = ["RaterAgreement", "cohen_kappa", "krippendorff_alpha"]

_CHUNK_ELEMENTS = 1 << 21


@dataclass(frozen=True, slots=True)
class RaterAgreement:
    """Result of :func:`cohen_kappa` and :func:`krippendorff_alpha`.

    Attributes
    ----------
    estimate : float
        The agreement coefficient (1 perfect, 0 chance level, negative below chance); NaN
        when undefined.
    low, high : float
        Percentile bootstrap interval over units (items).
    confidence : float
        Nominal coverage of the interval.
    method : str
        ``"cohen-kappa"`` (with ``"-linear"`` / ``"-quadratic"`` when weighted) or
        ``"krippendorff-alpha-<level>"``.
    n_units : int
        Units (items) used: all of them for kappa; those with two or more ratings for alpha.
    n_categories : int
        Distinct values seen.
    n_resamples : int
        Bootstrap resamples drawn; ``n_valid_resamples`` of them had a defined coefficient.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    n_units: int
    n_categories: int
    n_resamples: int
    n_valid_resamples: int


def _labels(values: ArrayLike, name: str) -> NDArray[Any]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise StatsInputError(f"{name} must be 1-D (one label per item); got shape {arr.shape}.")
    if arr.size == 0:
        raise StatsInputError(f"{name} is empty; pass at least one item.")
    if arr.dtype.kind == "f" and bool(np.any(~np.isfinite(arr))):
        raise StatsInputError(
            f"{name} contains NaN or infinite values; drop the items a rater did not rate "
            "(or use krippendorff_alpha, which allows missing ratings)."
        )
    if arr.dtype == object and any(v is None for v in arr.tolist()):
        raise StatsInputError(f"{name} contains None; drop the items a rater did not rate.")
    return arr


def _interval(
    point: float, boot: NDArray[np.float64], conf: float, name: str
) -> tuple[float, float, int]:
    valid = boot[np.isfinite(boot)]
    if valid.size < boot.size:
        warn(
            f"{name}: {boot.size - valid.size} of {boot.size} bootstrap resamples had an "
            "undefined coefficient (one category only) and were left out of the interval.",
            stacklevel=4,
        )
    if not math.isfinite(point) or valid.size == 0:
        return math.nan, math.nan, int(valid.size)
    alpha = (1.0 - conf) / 2.0
    low, high = np.quantile(valid, [alpha, 1.0 - alpha])
    return float(low), float(high), int(valid.size)


def cohen_kappa(
    a: ArrayLike,
    b: ArrayLike,
    *,
    weights: Literal["linear", "quadratic"] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: SeedLike = 0,
) -> RaterAgreement:
    """Cohen's kappa between two raters, with a bootstrap interval over items.

    Parameters
    ----------
    a, b : array_like, shape (n_items,)
        The two raters' labels for the same items, in the same order (ints, strings:
        any mutually comparable labels). No missing values.
    weights : {None, "linear", "quadratic"}
        ``None``: unweighted kappa. ``"linear"`` / ``"quadratic"``: weighted kappa for
        ordered labels, disagreement ``|i - j|`` or ``(i - j)^2`` between the positions
        ``i, j`` of two labels in sorted order.
    confidence : float
        Nominal coverage of the interval.
    n_resamples : int
        Bootstrap resamples of the items.
    seed : int or numpy.random.Generator
        Seed of the bootstrap.

    Returns
    -------
    RaterAgreement
        ``estimate``, ``low``, ``high`` and counts.

    Raises
    ------
    StatsInputError
        If the arrays differ in length, are empty or hold missing labels, or ``weights``
        is unknown.

    Warns
    -----
    StatsWarning
        If both raters use one and the same label for every item (chance agreement is 1,
        kappa undefined: NaN), or some resamples are so.

    Notes
    -----
    ``kappa = 1 - sum(w * O) / sum(w * E)`` with the observed table ``O`` of label pairs,
    the table ``E`` expected from the raters' marginals under independence, and the
    disagreement weights ``w`` (``1 - identity`` unweighted), which is ``(p_o - p_e) /
    (1 - p_e)`` unweighted. Equal to scikit-learn's ``cohen_kappa_score`` (the test suite
    checks it). The interval resamples items (pairs of labels) with replacement and takes
    percentiles; it assumes independent items.

    Examples
    --------
    >>> from steadyeval import stats
    >>> a = ["y", "y", "n", "n", "y", "n"] * 3
    >>> b = ["y", "n", "n", "n", "y", "y"] * 3
    >>> round(stats.cohen_kappa(a, b).estimate, 4)
    0.3333
    """
    a_ = _labels(a, "a")
    b_ = _labels(b, "b")
    if a_.shape[0] != b_.shape[0]:
        raise StatsInputError(
            f"a and b must rate the same items; got {a_.shape[0]} and {b_.shape[0]} labels."
        )
    if weights not in (None, "linear", "quadratic"):
        raise StatsInputError(f'weights must be None, "linear" or "quadratic"; got {weights!r}.')
    conf = check_confidence(confidence)
    n_boot = as_positive_int(n_resamples, "n_resamples")
    rng = make_rng(seed)
    try:
        cats, codes = np.unique(np.concatenate([a_, b_]), return_inverse=True)
    except TypeError as exc:
        raise StatsInputError(f"labels must be mutually comparable: {exc}") from exc
    codes = codes.reshape(-1)
    n, v = a_.shape[0], cats.size
    pair, freq = np.unique(codes[:n] * v + codes[n:], return_counts=True)
    rows, cols = pair // v, pair % v
    pos = np.arange(v, dtype=np.float64)
    dist = np.abs(pos[:, None] - pos[None, :])
    w = {None: (dist > 0).astype(np.float64), "linear": dist, "quadratic": dist * dist}[weights]
    row_onehot = np.eye(v)[rows]  # pairs × categories
    col_onehot = np.eye(v)[cols]
    w_pair = w[rows, cols]

    def kappa(counts: NDArray[np.float64]) -> NDArray[np.float64]:
        total = counts.sum(axis=1)
        observed = counts @ w_pair / total
        expected = np.sum((counts @ row_onehot) @ w * (counts @ col_onehot), axis=1) / total**2
        with np.errstate(invalid="ignore", divide="ignore"):
            out: NDArray[np.float64] = np.where(expected > 0, 1.0 - observed / expected, np.nan)
        return out

    point = float(kappa(freq[None, :].astype(np.float64))[0])
    method = "cohen-kappa" if weights is None else f"cohen-kappa-{weights}"
    if not math.isfinite(point):
        warn(
            "cohen_kappa: both raters gave every item the same label, so chance agreement "
            "is 1 and kappa is undefined (NaN). Report the raw agreement instead."
        )
    counts = rng.multinomial(n, freq / n, size=n_boot).astype(np.float64)
    low, high, n_valid = _interval(point, kappa(counts), conf, "cohen_kappa")
    return RaterAgreement(point, low, high, conf, method, n, v, n_boot, n_valid)


def _ratings(ratings: ArrayLike) -> NDArray[np.float64]:
    try:
        arr = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(
            "ratings must be a numeric raters × units array with NaN for missing ratings "
            f"(code text categories as integers first); could not convert it ({exc})."
        ) from exc
    if arr.ndim != 2:
        raise StatsInputError(
            f"ratings must be 2-D (raters × units); got an array of shape {arr.shape}."
        )
    if np.any(np.isinf(arr)):
        raise StatsInputError("ratings contains infinite values; use NaN for a missing rating.")
    return arr


def _delta2(
    values: NDArray[np.float64], marginals: NDArray[np.float64], level: str
) -> NDArray[np.float64]:
    """Squared distances between categories; ``marginals`` (… × V) only matters for ordinal."""
    v = values.size
    if level == "nominal":
        return 1.0 - np.eye(v)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    # ordinal: (sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2 over categories in sorted order
    cum = np.cumsum(marginals, axis=-1)
    lo = np.minimum.outer(np.arange(v), np.arange(v))
    hi = np.maximum.outer(np.arange(v), np.arange(v))
    before = np.concatenate([np.zeros((*marginals.shape[:-1], 1)), cum[..., :-1]], axis=-1)
    span = cum[..., hi] - before[..., lo]
    d = span - (marginals[..., :, None] + marginals[..., None, :]) / 2.0
    out: NDArray[np.float64] = d * d
    return out


def krippendorff_alpha(
    ratings: ArrayLike,
    *,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: SeedLike = 0,
) -> RaterAgreement:
    """Krippendorff's alpha for any number of raters with missing ratings.

    Parameters
    ----------
    ratings : array_like of float, shape (n_raters, n_units)
        One row per rater, one column per unit (item); NaN where a rater did not rate a
        unit. Values are numbers (code text categories as integers).
    level : {"nominal", "ordinal", "interval"}
        Level of measurement: the distance between two values.
    confidence : float
        Nominal coverage of the interval.
    n_resamples : int
        Bootstrap resamples of the units.
    seed : int or numpy.random.Generator
        Seed of the bootstrap.

    Returns
    -------
    RaterAgreement
        ``estimate``, ``low``, ``high``, ``n_units`` (units with two or more ratings) and
        counts.

    Raises
    ------
    StatsInputError
        If ``ratings`` is not a 2-D numeric array, ``level`` is unknown, or no unit has two
        ratings.

    Warns
    -----
    StatsWarning
        If all pairable ratings have one value (no variation: alpha undefined, NaN), or
        some resamples are so.

    Notes
    -----
    ``alpha = 1 - D_o / D_e`` from the coincidence matrix ``o_ck`` (Krippendorff 2011,
    "Computing Krippendorff's Alpha-Reliability"): every unit with ``m_u >= 2`` ratings
    adds each ordered pair of its ratings by different raters with weight
    ``1 / (m_u - 1)``; ``n_c = sum_k o_ck``, ``n = sum_c n_c`` and
    ``alpha = 1 - (n - 1) sum o_ck d2_ck / sum n_c n_k d2_ck``. Distances ``d2``:
    nominal ``[c != k]``, interval ``(c - k)^2``, ordinal
    ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2``. Units with fewer than two ratings are
    left out. It agrees with the ``krippendorff`` package and with Krippendorff's worked
    example (0.743 nominal, 0.815 ordinal, 0.849 interval; the test suite checks both).
    The interval resamples units with replacement (percentiles, recomputing the ordinal
    distances in each resample); it is not Hayes & Krippendorff's (2007) bootstrap of
    pairable values.

    Examples
    --------
    >>> from steadyeval import stats
    >>> nan = float("nan")
    >>> ratings = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> round(stats.krippendorff_alpha(ratings).estimate, 3)
    0.743
    """
    arr = _ratings(ratings)
    if level not in ("nominal", "ordinal", "interval"):
        raise StatsInputError(f'level must be "nominal", "ordinal" or "interval"; got {level!r}.')
    conf = check_confidence(confidence)
    n_boot = as_positive_int(n_resamples, "n_resamples")
    rng = make_rng(seed)
    rated = np.isfinite(arr)
    pairable = rated.sum(axis=0) >= 2
    if not np.any(pairable):
        raise StatsInputError(
            "no unit has two or more ratings, so there is no agreement to measure; each "
            "unit needs at least two raters."
        )
    x = arr[:, pairable]
    values, inverse = np.unique(x[np.isfinite(x)], return_inverse=True)
    v, n_units = values.size, x.shape[1]
    h = np.zeros((n_units, v))  # how often each unit got each value
    unit = np.nonzero(np.isfinite(x))[1]
    np.add.at(h, (unit, inverse.reshape(-1)), 1.0)
    m = h.sum(axis=1)
    # per-unit coincidences (h h^T - diag h) / (m - 1), flattened: units × V^2
    o_units = (h[:, :, None] * h[:, None, :] - h[:, :, None] * np.eye(v)) / (m - 1)[:, None, None]
    o_flat = o_units.reshape(n_units, v * v)

    def alpha(weights: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty(weights.shape[0])
        chunk = max(1, _CHUNK_ELEMENTS // max(1, v * v))
        for start in range(0, weights.shape[0], chunk):
            w = weights[start : start + chunk]
            n_c = w @ h
            d2 = _delta2(values, n_c, level)
            d2 = np.broadcast_to(d2, (w.shape[0], v, v)).reshape(w.shape[0], v * v)
            observed = np.sum((w @ o_flat) * d2, axis=1)
            pairs = (n_c[:, :, None] * n_c[:, None, :]).reshape(w.shape[0], v * v)
            expected = np.sum(pairs * d2, axis=1)
            total = n_c.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start : start + chunk] = np.where(
                    expected > 0, 1.0 - (total - 1.0) * observed / expected, np.nan
                )
        return out

    point = float(alpha(np.ones((1, n_units)))[0])
    if not math.isfinite(point):
        warn(
            "krippendorff_alpha: every pairable rating has the same value, so expected "
            "disagreement is 0 and alpha is undefined (NaN)."
        )
    boot = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot)
    low, high, n_valid = _interval(
        point, alpha(boot.astype(np.float64)), conf, "krippendorff_alpha"
    )
    method = f"krippendorff-alpha-{level}"
    return RaterAgreement(point, low, high, conf, method, n_units, v, n_boot, n_valid)
