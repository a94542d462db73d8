"""When not to trust the sparse two-way model's distribution (:mod:`._irt_posterior`): a
check of how far the data, not the priors, set the distribution's width, and posterior
predictive checks of the model's additive assumption, from the posterior draws alone.

Rows are formats and columns items here, as in :func:`steadyeval.stats.estimate_spread`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sparse
from numpy.typing import NDArray
from scipy.special import expit

if TYPE_CHECKING:
    from ._irt import IrtCells

__all__ = ["SpreadDiagnostic", "diagnose"]

#: The format s.d.'s interval level (fixed, so that the flag does not move with the
#: ``confidence`` asked of the estimate).
SD_LEVEL = 0.9
#: ``prior_driven`` when the format s.d.'s 90% interval spans more than this factor
#: (high / low) and holds ``_PRIOR_MASS`` of the prior's mass. The factor was chosen on
#: additive logistic matrices (format s.d. 1 logit, 20-60 formats, 20-50 items) with an
#: earlier, tighter prior: 2.1-2.8 at 10 cells per format, 1.5-1.9 at 15 of 40 items and
#: 2.3-3.6 at one cell per format. Under the present prior the interval is wider where the
#: data say little (bench/spread_check.py: 3.2-26 at two cells of 40 items per format,
#: 1.9-6.9 at eight), which is what the mass condition sorts out.
_PRIOR_DRIVEN_RATIO = 3.0
#: ``prior_driven`` when fewer than this share of the formats have two or more observed
#: cells (stratified cells: below 1.5 cells per format).
_MIN_SHARE_TWO_CELLS = 0.5
#: The ratio alone does not say the width is the prior's: where formats barely differ the
#: interval's low end nears 0 and the ratio is large however many cells say so (20 formats
#: of 25 cells, no format effects: [0.07, 0.43] logits, a factor 6). So the ratio flags
#: only when the interval also holds at least this share of the prior's own mass (the
#: sampler's exponential prior on the formats' s.d.): the data have then not narrowed the
#: prior much. Zero format effects at 10-25 cells per format: 0.01-0.05 (not flagged); at
#: 2 cells per format: about 0.45 (flagged).
_PRIOR_MASS = 0.25
#: A posterior predictive p-value below this, or above 1 − this, sets ``misfit``.
_PPC_ALPHA = 0.05
#: Fewer posterior draws than this leave the p-values empty (NaN, never a misfit): over one
#: to a few draws a p-value is 0 or 1 by chance.
_MIN_PPC_DRAWS = 20
#: The most pairs of cells (two formats' cells of one item) the format × item check
#: multiplies per draw; beyond it the check runs on a random subset of the items.
_MAX_PAIRS = 500_000
#: The most values (draws × cells, or draws × pairs of cells) held at once by the checks.
_CHUNK_VALUES = 4_000_000


@dataclass(frozen=True)
class SpreadDiagnostic:
    """Whether the estimated distribution of per-format accuracy can be trusted.

    Attributes
    ----------
    format_sd, format_sd_low, format_sd_high : float
        Posterior mean of the s.d. of the format effects (covariate part included), in
        logits, and its 90% equal-tailed interval (always 90%, whatever the estimate's
        ``confidence``): how far formats differ, which sets the distribution's width.
    width_ratio : float
        ``format_sd_high / format_sd_low``: how well that width is known (NaN with one
        format).
    cells_per_format : float
        Distinct observed cells / formats (a cell observed twice counts once).
    share_two_cells : float
        Share of the formats with two or more distinct observed cells.
    prior_mass : float
        The share of the prior's mass on the formats' s.d. that lies in its 90% interval
        (how little the data narrowed the prior; NaN with one format, and where the prior
        is not the Gibbs sampler's, e.g. the Laplace sampler's empirical Bayes).
    prior_driven : bool
        The width is not set by the data: fewer than ``_MIN_SHARE_TWO_CELLS`` (half) of the
        formats have two cells, or ``width_ratio`` is over ``_PRIOR_DRIVEN_RATIO`` (3) and
        ``prior_mass`` at least ``_PRIOR_MASS`` (a quarter; the ratio alone where
        ``prior_mass`` is NaN). Never with one format (no width), nor when every cell is
        observed.
    ppc_format_p, ppc_item_p, ppc_interaction_p : float
        Posterior predictive p-values (see :func:`diagnose`): do the formats' totals, the
        items' totals and the formats' agreement on which items are hard look like data
        the fitted model makes? NaN where nothing can be checked (no format, or no item,
        with two cells; no two formats sharing two items) and with fewer than 20 posterior
        draws (``_MIN_PPC_DRAWS``).
    misfit : bool
        A p-value is below ``_PPC_ALPHA`` (0.05) or above 0.95. Never when every cell is
        observed: no cell is predicted, so the distribution is the data's own.
    message : str
        What is flagged and what to do, in plain text; empty when nothing is.
    """

    format_sd: float
    format_sd_low: float
    format_sd_high: float
    width_ratio: float
    cells_per_format: float
    share_two_cells: float
    prior_mass: float
    prior_driven: bool
    ppc_format_p: float
    ppc_item_p: float
    ppc_interaction_p: float
    misfit: bool
    message: str

    @property
    def flagged(self) -> bool:
        """Whether anything is flagged (``prior_driven`` or ``misfit``)."""
        return self.prior_driven or self.misfit


def _level(
    e: NDArray[np.float64], w: NDArray[np.float64], unit: NDArray[np.intp], size: int
) -> NDArray[np.float64]:
    """Per draw, Σ over units with two or more cells of (Σ residuals)² / Σ p(1 − p)."""
    d = e.shape[0]
    keep = np.bincount(unit, minlength=size)[unit] >= 2
    if not keep.any():
        return np.zeros(d)
    index = (np.arange(d)[:, None] * size + unit[None, keep]).ravel()
    total = np.bincount(index, e[:, keep].ravel(), minlength=d * size).reshape(d, size)
    var = np.bincount(index, w[:, keep].ravel(), minlength=d * size).reshape(d, size)
    ratio = np.divide(total**2, var, out=np.zeros_like(total), where=var > 0)
    return np.asarray(ratio.sum(axis=1))


@dataclass(frozen=True)
class _Pairs:
    """Ordered pairs of cells of one item in two formats that share two or more items,
    and the sparse (pairs × format pairs) matrix that sums them per format pair."""

    left: NDArray[np.intp]
    right: NDArray[np.intp]
    sums: sparse.csr_matrix

    @classmethod
    def of(cls, cells: IrtCells, rng: np.random.Generator) -> _Pairs | None:
        cols = cells.cols
        order = np.argsort(cols, kind="stable")
        per_col = np.bincount(cols, minlength=cells.n_cols)
        if int(np.sum(per_col * (per_col - 1))) > _MAX_PAIRS:  # a random subset of items
            shuffled = rng.permutation(cells.n_cols)
            total = np.cumsum(per_col[shuffled] * (per_col[shuffled] - 1))
            keep = np.zeros(cells.n_cols, dtype=bool)
            keep[shuffled[total <= _MAX_PAIRS]] = True
            order = order[keep[cols[order]]]
        sorted_cols = cols[order]
        k = per_col[sorted_cols]  # each cell's item's cell count
        left = np.repeat(np.arange(len(order)), k)
        offset = np.arange(len(left)) - np.repeat(np.cumsum(k) - k, k)
        right = np.repeat(_first(sorted_cols), k) + offset  # every cell of the same item
        rows = cells.rows
        left, right = order[left], order[right]
        pair = left != right
        left, right = left[pair], right[pair]
        key = rows[left].astype(np.int64) * cells.n_rows + rows[right]
        _, inverse, shared = np.unique(key, return_inverse=True, return_counts=True)
        keep_pair = shared[inverse] >= 2  # format pairs that share two items or more
        if not keep_pair.any():
            return None
        left, right = left[keep_pair], right[keep_pair]
        _, inverse = np.unique(key[keep_pair], return_inverse=True)
        n = len(left)
        sums = sparse.csr_matrix(
            (np.ones(n), (np.arange(n), inverse)), shape=(n, int(inverse.max()) + 1)
        )
        return cls(left, right, sums)

    def statistic(self, e: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per draw, the sum over 2 × 2 blocks of observed cells (two formats, two items)
        of the product of their four residuals (times 4: each block is met in both orders
        of its formats and of its items)."""
        prod = e[:, self.left] * e[:, self.right]
        per_pair = np.asarray(self.sums.T @ prod.T).T  # Σ over shared items, per format pair
        return np.asarray((per_pair**2).sum(axis=1) - (prod**2).sum(axis=1))


def _first(sorted_cols: NDArray[np.intp]) -> NDArray[np.intp]:
    """For each position of a sorted array, the position of the first equal value."""
    if len(sorted_cols) == 0:
        return np.zeros(0, dtype=np.intp)
    new = np.r_[True, sorted_cols[1:] != sorted_cols[:-1]]
    return np.asarray(np.maximum.accumulate(np.where(new, np.arange(len(sorted_cols)), 0)))


def _pvalue(observed: NDArray[np.float64], replicated: NDArray[np.float64]) -> float:
    """Share of draws whose replicated statistic is at least the observed one (ties
    count half)."""
    return float(np.mean(replicated > observed) + 0.5 * np.mean(replicated == observed))


def _predictive(
    cells: IrtCells,
    mu: NDArray[np.float64],
    theta: NDArray[np.float64],
    beta: NDArray[np.float64],
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """The three posterior predictive p-values (formats, items, format × item), NaN where
    nothing can be checked or there are fewer than ``_MIN_PPC_DRAWS`` draws."""
    if len(mu) < _MIN_PPC_DRAWS:
        return float("nan"), float("nan"), float("nan")
    rows, cols, y = cells.rows, cells.cols, cells.y
    checks = {
        "formats": bool(np.any(np.bincount(rows) >= 2)),
        "items": bool(np.any(np.bincount(cols) >= 2)),
    }
    pairs = _Pairs.of(cells, rng)
    n_draws = len(mu)
    stats = np.zeros((3, 2, n_draws))  # (check, observed / replicated, draw)
    chunk = max(1, _CHUNK_VALUES // max(len(y), 0 if pairs is None else len(pairs.left)))
    for lo in range(0, n_draws, chunk):
        hi = min(lo + chunk, n_draws)
        p = expit(mu[lo:hi, None] + theta[lo:hi][:, rows] + beta[lo:hi][:, cols])
        w = p * (1 - p)
        replicated = (rng.random(p.shape) < p).astype(np.float64)
        for k, e in enumerate((y - p, replicated - p)):
            stats[0, k, lo:hi] = _level(e, w, rows, cells.n_rows)
            stats[1, k, lo:hi] = _level(e, w, cols, cells.n_cols)
            if pairs is not None:
                stats[2, k, lo:hi] = pairs.statistic(e)
    done = (checks["formats"], checks["items"], pairs is not None)
    out = [_pvalue(stats[i, 0], stats[i, 1]) if done[i] else float("nan") for i in range(3)]
    return out[0], out[1], out[2]


def _wide(ratio: float, mass: float) -> bool:
    """The width rule of ``prior_driven``: the interval spans more than the ratio and holds
    at least ``_PRIOR_MASS`` of the prior's mass (the ratio alone where the mass is NaN)."""
    return bool(ratio > _PRIOR_DRIVEN_RATIO and not mass < _PRIOR_MASS)


def _message(d: SpreadDiagnostic, n_formats: int) -> str:
    """What is flagged and what to do (plain text; empty when nothing is)."""
    parts = []
    if d.prior_driven and d.share_two_cells < _MIN_SHARE_TWO_CELLS:
        few = (
            f"only {d.share_two_cells:.0%} of the {n_formats} formats have"
            if d.share_two_cells
            else f"none of the {n_formats} formats has"
        )
        parts.append(
            f"{few} two or more observed cells ({d.cells_per_format:.1f} cells per format): "
            "how much formats differ is then not identified by the data beyond the "
            "covariates, so the distribution's width (its quantiles and the spread) comes "
            "mostly from the prior"
        )
    if d.prior_driven and _wide(d.width_ratio, d.prior_mass):
        held = (
            f" and holds {d.prior_mass:.0%} of the prior's mass"
            if np.isfinite(d.prior_mass)
            else ""
        )
        parts.append(
            f"the formats' s.d. is poorly determined: its 90% interval "
            f"[{d.format_sd_low:.2f}, {d.format_sd_high:.2f}] logits spans a factor "
            f"{d.width_ratio:.1f} (over {_PRIOR_DRIVEN_RATIO:g}){held}"
        )
    if parts:
        more = (
            "at least 2-3 cells per format"
            if d.cells_per_format < 3
            else f"{d.cells_per_format:.1f} now"
        )
        parts[-1] += (
            f"; observe more cells per format ({more}) before reading the distribution's width"
        )
    if d.misfit:
        shown = ", ".join(
            f"{name} p = {p:.3f}"
            for name, p in (
                ("format totals", d.ppc_format_p),
                ("item totals", d.ppc_item_p),
                ("format × item", d.ppc_interaction_p),
            )
            if np.isfinite(p)
        )
        parts.append(
            f"the posterior predictive check rejects the model ({shown}; flagged below "
            f"{_PPC_ALPHA:g} or above {1 - _PPC_ALPHA:g}): the model's additive assumption "
            "(a format moves every item alike) does not hold for these cells, so the "
            "intervals may be too narrow; read per-format estimates with care and evaluate "
            "the formats that matter on more items"
        )
    if not parts:
        return ""
    text = "; ".join(parts)
    return "fit check: " + text + "."


def diagnose(
    cells: IrtCells,
    mu: NDArray[np.float64],
    theta: NDArray[np.float64],
    beta: NDArray[np.float64],
    rng: np.random.Generator,
    prior_sd_mean: float | None = None,
) -> SpreadDiagnostic:
    """The fit check of :class:`SpreadDiagnostic` from posterior draws of the intercept
    (d,), the format effects with their covariate part (d, formats) and the item effects
    (d, items).

    Notes
    -----
    **Width.** Each draw's s.d. of the format effects over the formats is a draw of how
    far formats differ; its 90% interval and the share of formats with two or more cells
    say whether the data set it. With zero or one cell per format, how much formats differ
    is not identified by the data beyond the covariates: one cell cannot tell a format's
    effect from an item's or from chance, so the width is the prior's. ``prior_sd_mean``
    (the mean of the Gibbs sampler's exponential prior on that s.d.; None for another
    prior) lets a wide interval be told from one the prior set: see ``prior_mass``.

    **Posterior predictive checks.** For each draw, with p = σ(μ + θ_format + β_item) at
    the observed cells and residuals e = y − p, three discrepancies are computed on the
    observed cells and on cells replicated from that draw (Bernoulli(p)):

    - formats: Σ over formats with two or more cells of (Σ e)² / Σ p(1 − p), whether the
      formats' totals differ more (or less) than the model says;
    - items: the same over items with two or more cells;
    - format × item: the sum over every 2 × 2 block of observed cells (two formats that
      share two items) of the product of its four residuals. Under the additive model the
      residuals are independent and it is near 0; when formats disagree on which items are
      hard (an interaction) it is positive, whatever the interaction's sign.

    Each p-value is the share of draws whose replicated discrepancy is at least the
    observed one (ties count half). Posterior predictive p-values are conservative (near
    0.5 more often than uniform), and a check sees only what the observed cells hold: at
    two or three cells per format few formats share two items, so an interaction goes
    unseen. An interaction that cancels over the formats in their totals (half the
    formats reversing the other half's order of items) is seen only by the format × item
    check. Beyond ``_MAX_PAIRS`` pairs of cells that check runs on a random subset of the
    items.

    Nothing is flagged when every cell of the matrix is observed: no cell is predicted, so
    the distribution is the data's own whatever the priors or the model (the p-values are
    still computed).
    """
    n_formats = cells.n_rows
    sd = theta.std(axis=1)
    alpha = (1 - SD_LEVEL) / 2
    low, high = (float(v) for v in np.quantile(sd, [alpha, 1 - alpha]))
    ratio = high / low if low > 0 else (float("inf") if high > 0 else float("nan"))
    # the exponential prior's mass in [low, high] (none without a width: one format)
    mass = (
        float(np.exp(-low / prior_sd_mean) - np.exp(-high / prior_sd_mean))
        if prior_sd_mean and n_formats > 1
        else float("nan")
    )
    per_format = cells.distinct_per_row()
    share = float(np.mean(per_format >= 2))
    # every cell observed: nothing is predicted, the distribution is the data's own
    unseen = int(per_format.sum()) < n_formats * cells.n_cols
    p_format, p_item, p_inter = _predictive(cells, mu, theta, beta, rng)
    ps = np.array([p_format, p_item, p_inter])
    ps = ps[np.isfinite(ps)]
    diagnostic = SpreadDiagnostic(
        format_sd=float(sd.mean()),
        format_sd_low=low,
        format_sd_high=high,
        width_ratio=ratio,
        cells_per_format=float(per_format.sum()) / n_formats,
        share_two_cells=share,
        prior_mass=mass,
        prior_driven=bool(
            unseen and n_formats > 1 and (share < _MIN_SHARE_TWO_CELLS or _wide(ratio, mass))
        ),
        ppc_format_p=p_format,
        ppc_item_p=p_item,
        ppc_interaction_p=p_inter,
        misfit=bool(unseen and np.any((ps < _PPC_ALPHA) | (ps > 1 - _PPC_ALPHA))),
        message="",
    )
    return replace(diagnostic, message=_message(diagnostic, n_formats))
