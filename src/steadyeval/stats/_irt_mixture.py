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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_expit, logsumexp

if TYPE_CHECKING:
    from ._irt import IrtFit

GRID = np.linspace(-12.0, 8.0, 201)
#: Pseudo-counts of the weight of the low component (a Beta(1, 9) prior: about 10%, worth
#: 10 rows) and of the inverse-gamma hyperpriors on the two variances (worth 10 rows at
#: 1 logit², as in :mod:`._irt`).
_LOW_A, _LOW_B = 1.0, 9.0
_VAR_A, _VAR_B = 5.0, 5.0
#: The low component's centre stays at least this many bulk s.d. below the bulk's centre
#: (otherwise the two components could merge into one and the mixture mean nothing).
_GAP = 1.0


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


def grid_loglik(
    offset: NDArray[np.float64], index: NDArray[np.intp], y: NDArray[np.float64], size: int
) -> NDArray[np.float64]:
    """log P(cells of unit u | its effect t) on ``GRID`` for each unit (a row or a column):
    cell k has logit ``offset[k] + t`` and belongs to unit ``index[k]``."""
    per_cell = log_expit((2 * y[:, None] - 1) * (offset[:, None] + GRID[None, :]))
    out = np.zeros((size, len(GRID)))
    np.add.at(out, index, per_cell)
    return out


def grid_scale(ll: NDArray[np.float64], tau: float, prior_a: float, prior_b: float) -> float:
    """EM (to convergence, the other parameters fixed) for the scale of a N(0, τ²) prior from units' grid log-likelihoods
    (exact moments by quadrature, unlike the Laplace approximation, which understates
    the spread of effects seen through a few 0/1 cells), under an inverse-gamma
    hyperprior (shape ``prior_a``, scale ``prior_b``) on τ²."""
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


def fit_row_mixture(fit: IrtFit, iterations: int = 200, tol: float = 1e-6) -> RowMixture:
    """EM for π_low, (centre, s.d.) of the bulk and of the low component.

    Starts from the bulk at 0 with the fit's τ_row and the low component 3 τ_row below
    it; the hyperpriors (Beta on π_low, inverse-gamma on the variances) keep a
    component from collapsing when rows have one or two cells, and the low component's
    centre is kept at least ``_GAP`` bulk s.d. below the bulk's.
    """
    ll = row_loglik(fit)
    n = ll.shape[0]
    pi = _LOW_A / (_LOW_A + _LOW_B)
    centre = [0.0, -3.0 * fit.tau_row]
    scale = [fit.tau_row, fit.tau_row]
    last = -np.inf
    for _ in range(iterations):
        comp = np.stack(
            [
                np.log(1 - pi) + _log_normal(centre[0], scale[0]),
                np.log(pi) + _log_normal(centre[1], scale[1]),
            ]
        )  # (2, G)
        joint = ll[None, :, :] + comp[:, None, :]  # (2, rows, G)
        norm = logsumexp(joint, axis=(0, 2))
        post = np.exp(joint - norm[None, :, None])
        resp = post.sum(axis=2)  # (2, rows)
        pi = (resp[1].sum() + _LOW_A) / (n + _LOW_A + _LOW_B)
        for k in range(2):
            mass = resp[k].sum()
            mean = float((post[k] * GRID).sum() / max(mass, 1e-12))
            if k == 1:
                mean = min(mean, centre[0] - _GAP * scale[0])
            sq = float((post[k] * (GRID - mean) ** 2).sum())
            centre[k] = mean
            scale[k] = float(np.sqrt((sq + 2 * _VAR_B) / (mass + 2 * _VAR_A + 2)))
        total = float(norm.sum())
        if total - last < tol * max(1.0, abs(total)):
            break
        last = total
    log_post = logsumexp(joint, axis=0)
    log_post -= logsumexp(log_post, axis=1, keepdims=True)
    return RowMixture(float(pi), (centre[0], centre[1]), (scale[0], scale[1]), np.asarray(log_post))


def draw_grid(
    log_post: NDArray[np.float64], n_draws: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Draws (n_draws, units) from per-unit grid posteriors, jittered within a grid step."""
    cdf = np.cumsum(np.exp(log_post), axis=1)
    u = rng.random((n_draws, cdf.shape[0]))
    idx = np.empty(u.shape, dtype=np.intp)
    for k in range(cdf.shape[0]):
        idx[:, k] = np.searchsorted(cdf[k], u[:, k])
    idx = np.minimum(idx, len(GRID) - 1)
    step = GRID[1] - GRID[0]
    return np.asarray(GRID[idx] + (rng.random(idx.shape) - 0.5) * step)
