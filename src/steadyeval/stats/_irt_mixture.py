"""A two-component prior for the row effects of :mod:`._irt`: most rows (formats) in a bulk,
a minority far below it (formats the model cannot follow), fitted by EM on a grid.

Given the fitted intercept, column effects and covariate part, each row's likelihood is a
function of its own effect t alone; it is evaluated on a grid, so the mixture's
parameters are fitted by exact EM (responsibilities and moments by quadrature) and a row's
effect can be drawn from its exact one-dimensional posterior, which is bimodal when the
row's few cells cannot tell whether it is broken. A Gaussian (or Student-t) prior can
only shrink such a row toward the bulk.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

if TYPE_CHECKING:
    from ._irt import IrtFit

GRID = np.linspace(-12.0, 8.0, 201)
#: Pseudo-counts of the weight of the low component and of the inverse-gamma hyperpriors on
#: the two variances (worth 10 rows at 1 logit², as in :mod:`._irt`). The weight's prior
#: follows the gap's schedule (:func:`low_prior`): Beta(_LOW_A, _LOW_B) = Beta(1, 9) (mean
#: 10%, mode 0) up to ``_GAP_CELLS`` cells per row, Beta(_LOW_A_WIDE, _LOW_B_WIDE) =
#: Beta(2, 8) (mean 20%, mode 12.5%) from one cell per row later, linear in between.
#: Chosen on generator seeds 7000-7019 and 9000-9019 (bench/spread_calibrate.py, W1 / best
#: PromptEval of the estimator with covariates at 200/400/800/1,600 cells; before: 1.088,
#: 0.825, 0.795, 0.675): Beta(2, 8) at every budget 1.124 and 0.799 at 200 and 400 (Beta(2,
#: 6): 1.135, 0.797; Beta(1.5, 8.5): 1.105, 0.810; Beta(3, 12): 1.133, 0.792 with 95.0%
#: coverage at 400); scheduled 1.088, 0.803, 0.757, 0.658 (coverage 87.6%, 94.0%, 92.8%,
#: 93.0%). Tried and dropped: the variances' scale at 2.5 up to 1.5 cells per row (0.964 at
#: 200 cells there, but on the benchmark's matrices the estimator without covariates went
#: from W1 0.039 to 0.054 at 200 cells); at 2.5 throughout 0.964 and 0.897 at 200 and 400;
#: shape and scale 2.5: 1.013, 0.853; both 10: 1.173, 0.833.
_LOW_A, _LOW_B = 1.0, 9.0
_LOW_A_WIDE, _LOW_B_WIDE = 2.0, 8.0
_VAR_A, _VAR_B = 5.0, 5.0
#: The low component's centre stays at least ``gap`` bulk s.d. below the bulk's centre
#: (otherwise the two components could merge into one and the mixture mean nothing):
#: ``_GAP`` at up to ``_GAP_CELLS`` cells per row, rising linearly to ``_GAP_WIDE`` one
#: cell per row later (:func:`gap`). With about one cell per row a wide gap drags the
#: low-side rows of the bulk down with the broken ones; from two or three cells per row
#: on, a narrow one lets the low component drift up into the bulk (the broken formats'
#: accuracies came out ~4 points too high at 400 cells). Chosen on generator seeds
#: 7000-7019 and 9000-9019 of bench/spread_matrix.py (not the benchmark's 1000-1019):
#: W1 / PE-discrete's at 400 and 800 cells 0.879 and 0.822 with the gap at 1, 0.846 and
#: 0.789 at 3, 0.834 and 0.780 at 4 (1.07 and 1.12 at 200 cells: hence the schedule).
_GAP = 1.0
_GAP_WIDE = 4.0
_GAP_CELLS = 1.5


def _ramp(cells_per_row: float) -> float:
    """0 up to ``_GAP_CELLS`` cells per row, 1 from one cell per row more on, linear between."""
    return min(max(cells_per_row - _GAP_CELLS, 0.0), 1.0)


def gap(cells_per_row: float) -> float:
    """The least distance, in bulk s.d., between the two components' centres (see
    ``_GAP``): ``_GAP`` up to ``_GAP_CELLS`` cells per row, ``_GAP_WIDE`` from one
    cell per row more on, linear in between."""
    return _GAP + (_GAP_WIDE - _GAP) * _ramp(cells_per_row)


def low_prior(cells_per_row: float) -> tuple[float, float]:
    """The Beta prior's (a, b) on the low component's weight (see ``_LOW_A``): Beta(1, 9)
    up to ``_GAP_CELLS`` cells per row, Beta(2, 8) from one cell per row more on, linear
    in between."""
    r = _ramp(cells_per_row)
    return _LOW_A + (_LOW_A_WIDE - _LOW_A) * r, _LOW_B + (_LOW_B_WIDE - _LOW_B) * r


@dataclass(frozen=True)
class RowMixture:
    """π_low, the components' centres and s.d., and each row's log-posterior on ``GRID``."""

    weight_low: float
    centre: tuple[float, float]
    scale: tuple[float, float]
    log_post: NDArray[np.float64]  # (n_rows, len(GRID)), normalised per row

    def draw(self, n_draws: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Row effects (draws, rows) from each row's grid posterior (jittered within a step)."""
        return draw_grid(self.log_post, n_draws, rng)


def _log_sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """log σ(z) = min(z, 0) − log(1 + e^(−|z|)), stable for any z. The grid
    log-likelihoods are most of an estimate's time; this form runs about three times as
    fast as ``scipy.special.log_expit`` on their arrays and agrees with it to 2.3e-16
    (relative): the same posterior draws, bit for bit, on the checked matrices, and an
    estimate at 100 formats × 3,000 items 45.1 s → 41.7 s."""
    return np.minimum(z, 0.0) - np.log1p(np.exp(-np.abs(z)))


@dataclass(frozen=True)
class Units:
    """Cells grouped by the unit (a row or a column) they belong to, sorted once, so that
    every unit's grid log-likelihood is one ``reduceat`` over its cells (a sampler that
    evaluates them every sweep builds this once)."""

    order: NDArray[np.intp]  # cells sorted by unit
    present: NDArray[np.intp]  # the units that have cells
    starts: NDArray[np.intp]  # where each present unit's cells start in ``order``
    size: int

    @classmethod
    def of(cls, index: NDArray[np.intp], size: int) -> Units:
        order = np.argsort(index, kind="stable")
        present, starts = np.unique(index[order], return_index=True)
        return cls(order, present, starts, size)

    def loglik(self, offset: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        """log P(cells of unit u | its effect t) on ``GRID``, shape (..., size, len(GRID)):
        cell k has logit ``offset[..., k] + t`` (leading axes: e.g. posterior draws)."""
        sign = (2 * y[self.order] - 1)[:, None]
        per_cell = _log_sigmoid(sign * (offset[..., self.order, None] + GRID))
        out = np.zeros((*offset.shape[:-1], self.size, len(GRID)))
        out[..., self.present, :] = np.add.reduceat(per_cell, self.starts, axis=-2)
        return out


def grid_loglik(
    offset: NDArray[np.float64], index: NDArray[np.intp], y: NDArray[np.float64], size: int
) -> NDArray[np.float64]:
    """log P(cells of unit u | its effect t) on ``GRID`` for each unit (a row or a column):
    cell k has logit ``offset[k] + t`` and belongs to unit ``index[k]``."""
    return Units.of(index, size).loglik(offset, y)


def grid_scale(ll: NDArray[np.float64], tau: float, prior_a: float, prior_b: float) -> float:
    """EM (to convergence, the other parameters fixed) for the scale of a N(0, τ²) prior
    from units' grid log-likelihoods (exact moments by quadrature, unlike the Laplace
    approximation, which understates the spread of effects seen through a few 0/1
    cells), under an inverse-gamma hyperprior (shape ``prior_a``, scale ``prior_b``) on τ²."""
    for _ in range(500):  # EM for a variance is slow where units have few cells
        joint = ll + _log_normal(0.0, tau)[None, :]
        post = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        second = float((post * GRID**2).sum())
        new = float(np.sqrt((second + 2 * prior_b) / (ll.shape[0] + 2 * prior_a + 2)))
        done = abs(new - tau) < 1e-4 * tau
        tau = new
        if done:
            break
    return tau


def row_loglik(fit: IrtFit) -> NDArray[np.float64]:
    """log P(row's cells | t) on ``GRID`` for every row, the other parameters at the mode."""
    cells = fit.cells
    n, m = cells.n_rows, cells.n_cols
    offset = fit.mean[0] + fit.mean[1 + n : 1 + n + m][cells.cols]
    if fit.covariates is not None:
        offset = offset + (fit.covariates @ fit.mean[1 + n + m :])[cells.rows]
    return grid_loglik(offset, cells.rows, cells.y, n)


def _log_normal(centre: float, scale: float) -> NDArray[np.float64]:
    z = (GRID - centre) / scale
    return np.asarray(-0.5 * z * z - np.log(scale))


def fit_row_mixture(
    fit: IrtFit,
    iterations: int = 200,
    tol: float = 1e-6,
    weights: NDArray[np.float64] | None = None,
    start: RowMixture | None = None,
) -> RowMixture:
    """EM for π_low, (centre, s.d.) of the bulk and of the low component.

    Starts from the bulk at 0 with the fit's τ_row and the low component 3 τ_row below
    it; the hyperpriors (Beta on π_low, following the cells per row, :func:`low_prior`;
    inverse-gamma on the variances) keep a component from collapsing when rows have
    one or two cells, and the low component's centre is kept at least :func:`gap` bulk
    s.d. below the bulk's. ``weights`` (one per
    row, default 1) weight the rows' likelihoods: Dirichlet weights times the number of
    rows give a Bayesian-bootstrap replicate of the mixture (:func:`draw_with_mixture`);
    ``start`` (e.g. the unweighted fit) replaces the starting point.
    """
    ll = row_loglik(fit)
    n = ll.shape[0]
    least = gap(len(fit.cells.y) / n)
    low_a, low_b = low_prior(len(fit.cells.y) / n)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    pi = low_a / (low_a + low_b) if start is None else start.weight_low
    centre = [0.0, -3.0 * fit.tau_row] if start is None else list(start.centre)
    scale = [fit.tau_row, fit.tau_row] if start is None else list(start.scale)
    last = -np.inf
    for _ in range(iterations):
        comp = _components(pi, centre, scale)  # (2, G)
        joint = ll[None, :, :] + comp[:, None, :]  # (2, rows, G)
        norm = logsumexp(joint, axis=(0, 2))
        post = np.exp(joint - norm[None, :, None]) * w[None, :, None]
        resp = post.sum(axis=2)  # (2, rows)
        pi = (resp[1].sum() + low_a) / (w.sum() + low_a + low_b)
        for k in range(2):
            mass = resp[k].sum()
            mean = float((post[k] * GRID).sum() / max(mass, 1e-12))
            if k == 1:
                mean = min(mean, centre[0] - least * scale[0])
            sq = float((post[k] * (GRID - mean) ** 2).sum())
            centre[k] = mean
            scale[k] = float(np.sqrt((sq + 2 * _VAR_B) / (mass + 2 * _VAR_A + 2)))
        total = float((w * norm).sum())
        if total - last < tol * max(1.0, abs(total)):
            break
        last = total
    log_post = ll + logsumexp(_components(pi, centre, scale), axis=0)[None, :]
    log_post -= logsumexp(log_post, axis=1, keepdims=True)
    return RowMixture(float(pi), (centre[0], centre[1]), (scale[0], scale[1]), np.asarray(log_post))


def _components(pi: float, centre: list[float], scale: list[float]) -> NDArray[np.float64]:
    """log(weight × density) of the two components on ``GRID``, shape (2, G)."""
    return np.stack(
        [
            np.log(1 - pi) + _log_normal(centre[0], scale[0]),
            np.log(pi) + _log_normal(centre[1], scale[1]),
        ]
    )


def draw_rows_given(
    mixture: RowMixture,
    offset: NDArray[np.float64],
    rows: NDArray[np.intp],
    y: NDArray[np.float64],
    n_rows: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Row effects (draws, rows), each draw from the rows' exact grid posteriors under the
    mixture prior given that draw's other parameters: ``offset`` (draws, cells) holds each
    cell's logit without its row effect. Drawing the rows given the drawn intercept,
    columns and covariate effects keeps their posterior correlation (a row drawn given the
    mode alone would add the covariates' uncertainty on top of its own)."""
    log_prior = logsumexp(
        _components(mixture.weight_low, list(mixture.centre), list(mixture.scale)), axis=0
    )
    post = Units.of(rows, n_rows).loglik(offset, y) + log_prior[None, None, :]
    return draw_grid(post.reshape(-1, len(GRID)), 1, rng).reshape(post.shape[:2])


def draw_grid(
    log_post: NDArray[np.float64],
    n_draws: int,
    rng: np.random.Generator,
    grid: NDArray[np.float64] = GRID,
) -> NDArray[np.float64]:
    """Draws (n_draws, units) from per-unit log densities (units, len(grid)) on an evenly
    spaced ``grid``, unnormalised, each jittered uniformly within its grid step."""
    cdf = np.cumsum(np.exp(log_post - log_post.max(axis=1, keepdims=True)), axis=1)
    u = rng.random((n_draws, cdf.shape[0])) * cdf[:, -1]  # the normalisation, on u
    idx = np.stack([(cdf < draw[:, None]).sum(axis=1) for draw in u])
    idx = np.minimum(idx, len(grid) - 1)
    step = grid[1] - grid[0]
    return np.asarray(grid[idx] + (rng.random(idx.shape) - 0.5) * step)


#: Bayesian-bootstrap replicates of the mixture per call of :func:`draw_with_mixture`, and
#: the EM iterations of each (from the unweighted fit: a replicate moves it only a little).
BOOTSTRAP_GROUPS = 10
_BOOTSTRAP_ITERATIONS = 15


def draw_with_mixture(
    fit: IrtFit, n_draws: int, rng: np.random.Generator, groups: int = BOOTSTRAP_GROUPS
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Posterior draws of the intercept (d,), row effects (d, rows) and column effects
    (d, cols) with the rows' own effects from the two-component prior.

    The intercept, column and covariate effects come from the fit's Laplace posterior; each
    draw's row effects are then drawn from their exact grid posteriors given those
    (:func:`draw_rows_given`). The mixture itself is uncertain (with one or two cells per
    row, how many rows are broken and how far down they sit is known only roughly), so the
    draws are split into ``groups`` and each group uses the mixture refitted with its own
    Bayesian-bootstrap weights of the rows (Dirichlet(1, …, 1) × rows); intervals then carry
    the uncertainty of the prior, not only that of the rows given the prior. (Fitting each
    group's mixture given a posterior draw of the other parameters instead of their mode
    was tried: the bulk came out wider still.)
    """
    cells = fit.cells
    n, m = cells.n_rows, cells.n_cols
    par = fit.draw_parameters(n_draws, rng)
    mu, beta = par[:, 0], par[:, 1 + n : 1 + n + m]
    cov = np.zeros((n_draws, n))
    if fit.covariates is not None:
        cov = par[:, 1 + n + m :] @ fit.covariates.T
    offset = mu[:, None] + beta[:, cells.cols] + cov[:, cells.rows]
    own = np.empty((n_draws, n))
    bounds = np.linspace(0, n_draws, max(1, min(groups, n_draws)) + 1).astype(int)
    base = fit_row_mixture(fit)
    for lo, hi in itertools.pairwise(bounds):
        mixture = base
        if groups > 1:
            weights = rng.dirichlet(np.ones(n)) * n
            mixture = fit_row_mixture(fit, _BOOTSTRAP_ITERATIONS, weights=weights, start=base)
        own[lo:hi] = draw_rows_given(mixture, offset[lo:hi], cells.rows, cells.y, n, rng)
    return mu, own + cov, beta
