"""Full-Bayes posterior of the sparse two-way model of :mod:`._irt` by Gibbs sampling.

The model is the same, P(y=1) = σ(μ + θ_row + β_col [+ x_row·γ]), but nothing is fixed at
a mode: the prior scales of the columns and covariates, and the two-component prior of the
rows (a bulk at 0 and a minority of broken rows below it, :mod:`._irt_mixture`), are
sampled with the effects. With one or two cells per row or column the joint mode lets row
effects absorb column effects (two cells of one item agree far more often than chance, yet
the mode's item scale stays near its hyperprior); integrating the scales out does not.

Each row's and each column's effect has a one-dimensional full conditional given the
others, so every one is drawn exactly from its conditional evaluated on a grid of step 0.1
logit (jittered uniformly within the step, as in :mod:`._irt_mixture`). The intercept and
the covariates' effects (centred over the rows first, so that moving one does not move the
mean of the rows' effects) move together by one Metropolis-Hastings step proposed from the
Gaussian of a Newton step (:meth:`_Chain._block`): with one-hot grammar choices the levels
of a choice and the intercept are strongly correlated, and one-at-a-time moves creep.
The columns' prior is a Student-t, as a scale mixture of normals whose degrees of freedom
are drawn too (:meth:`_Chain._column_scales`): items that every format gets right, or wrong,
are common (BBH), and a normal prior pulls them toward the middle.
The items' and the broken component's variances have inverse-gamma full conditionals (the
hyperpriors of :mod:`._irt`, worth about ten units at one logit²); the formats' variance has
a weak exponential prior on its s.d. (``_FORMAT_SD_PER_CELL``: the data, not the prior,
should say how much formats differ; the more cells per format, the weaker it is) and is drawn
on a grid; the broken share has a Beta prior with most of its mass near 0
(``_BROKEN_SHARE``: no broken formats unless the cells show some) and the broken component's
centre a normal one, truncated to stay :func:`._irt_mixture.gap`
bulk s.d. below the bulk. (The truncated prior's normalising constant depends on the bulk
s.d.; the bulk s.d.'s draw and the rows' scale move leave it out, a slight change of the
prior that is not corrected for.)

With covariates, what the formats' grammar explains and what is left to the bulk share one
prior: the bulk's variance u and the covariate part's variance v (the spread over the rows
of x·γ, ``dim`` × the coefficients' variance) add up to the total format variance V =
u + v ~ the same prior as the bulk's alone, split by a share φ = v / V ~ Beta
(``_SHARE``), as R2-D2-type priors do. Independent priors on u and on each coefficient
(tried first) let the two parts add up to far more than the data hold: with one or two cells
per format the bulk's prior alone is already about the whole format variance, and the
distribution came out far too wide (W1 1.4× PromptEval's at 200 cells). u and v are drawn
from their full conditionals on a grid of log variances.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, log_expit
from scipy.stats import t as student_t
from scipy.stats import truncnorm

from ._irt_mixture import _VAR_A, _VAR_B, GRID, Units, draw_grid, gap
from ._validate import Progress

if TYPE_CHECKING:
    from ._irt import IrtFit

#: Inverse-gamma (shape, scale) of every variance: the mixture's (as ``_irt``'s hyperprior).
_HYPER = (_VAR_A, _VAR_B)
#: Prior of the broken component's centre (before its truncation): N(−3, 2²) logits.
_LOW_CENTRE = (-3.0, 2.0)
#: Sweeps discarded before the first kept draw, and sweeps between kept draws. The chain
#: starts from the empirical-Bayes mode (:func:`._irt.fit_irt`), so it starts near the bulk
#: of the posterior.
BURN_IN = 300
THIN = 2
#: Beta prior of the covariates' share φ of the format variance (see the module docstring):
#: uniform. On generator seeds 7000-7019 and 9000-9019 at 200 cells (W1 / PE-discrete's,
#: 150 draws, covariates drawn one at a time on a grid): Beta(1, 1) 0.798, Beta(2, 2)
#: 0.826; uncentred covariates drawn by Metropolis steps 0.834 and 0.820; centred, by
#: Metropolis 0.809. A rerun of the first gave 0.823: at 150 draws runs differ by ±0.02.
_SHARE = (1.0, 1.0)
#: Degrees of freedom the columns' Student-t prior may take (uniform over them). On
#: generator seeds 7000-7019 and 9000-9019 (W1 / PE-discrete's, 400 draws), against a
#: normal prior: 0.778 against 0.798 at 200 cells, 0.725 against 0.734 at 400.
_NU = np.array([1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0, 128.0])
#: Least eigenvalue of the block move's proposal precision where the Hessian is not positive
#: definite, relative to its largest (:func:`_proposal_factor`): a proposal s.d. of at most
#: 1,000 times the best-determined direction's.
_FLOOR = 1e-6
#: Scale moves (:meth:`_Chain._rescale_rows`, :meth:`_Chain._rescale_columns`) per sweep and
#: the s.d. of their log step: each costs one pass over the cells, far less than a sweep.
_RESCALE_TRIES = 5
_RESCALE_STEP = 0.2
#: Grid of the variances' logarithm.
_LOG_VAR = np.linspace(np.log(1e-3), np.log(50.0), 400)
_VAR = np.exp(_LOG_VAR)


def _draw(log_post: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """One draw per unit from its grid log density (units, len(GRID))."""
    return np.asarray(draw_grid(log_post, 1, rng)[0])


def _log_gauss(
    x: NDArray[np.float64], mean: NDArray[np.float64], chol: NDArray[np.float64]
) -> float:
    """log density (up to a constant) of N(mean, (L Lᵀ)⁻¹) at x, L = ``chol``."""
    with np.errstate(over="ignore"):  # far out (every cell right: no bound): -inf, rejected
        z = chol.T @ (x - mean)
        return float(np.sum(np.log(np.diag(chol))) - 0.5 * z @ z)


def _proposal_factor(hess: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cholesky factor (lower) of the block move's proposal precision at a point: ``hess``,
    the negative Hessian there, when it is positive definite (the Newton proposal), else
    ``hess`` with its eigenvalues raised to ``_FLOOR`` × its largest (at least 1).

    The Hessian is singular in floating point where every cell's probability is saturated
    (a proposal far out in a tail: p(1 − p) underflows, and the intercept has a flat
    prior) or where the cells do not inform a direction. The floored matrix is a function
    of the point alone, as the Hessian is, so the reverse proposal built the same way at the
    proposed point keeps the Metropolis-Hastings move exact; where the Hessian is positive
    definite nothing changes."""
    try:
        return np.asarray(np.linalg.cholesky(hess))
    except np.linalg.LinAlgError:
        vals, vecs = np.linalg.eigh(hess)
        floor = _FLOOR * max(1.0, float(np.max(np.abs(vals))))
        return np.asarray(np.linalg.cholesky((vecs * np.maximum(vals, floor)) @ vecs.T))


def _accept(gain: float, rng: np.random.Generator) -> bool:
    """Metropolis acceptance of a move whose log acceptance ratio is ``gain``."""
    return bool(np.log(rng.random()) < gain)


def _inv_gamma(rng: np.random.Generator, units: int, squares: float) -> float:
    """A variance from its inverse-gamma full conditional under the ``_HYPER`` prior."""
    return float((_HYPER[1] + 0.5 * squares) / rng.gamma(_HYPER[0] + 0.5 * units))


def _log_inv_gamma(var: float) -> float:
    """log density (up to a constant) of the ``_HYPER`` inverse-gamma prior of a variance."""
    return float(_log_inv_gamma_of(var))


def _log_inv_gamma_of(var: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """:func:`_log_inv_gamma` element-wise (e.g. on a grid of variances)."""
    return np.asarray(-(_HYPER[0] + 1) * np.log(var) - _HYPER[1] / var)


#: Prior of the formats' total variance V (bulk + covariate part): an exponential prior on
#: its s.d. √V, a penalised-complexity prior (Simpson et al., 2017) that shrinks toward
#: "formats do not differ" and lets the data, where they can, move it: its density is highest
#: at 0, so a narrow spread can be estimated as narrow. Its mean is ``_FORMAT_SD_PER_CELL``
#: logits × the distinct observed cells per format, at least one cell's
#: (:func:`formats_prior_mean`): at about one
#: cell per format the cells cannot tell a narrow spread from a wide one (bench/spread_priors.py --identify: the
#: covariance of two cells of one format, the only direct evidence, is noise there), so the
#: prior is the estimate's regulariser; with more cells per format the data can say how far
#: formats differ, and a prior held at one mean kept shrinking wide spreads (the bench family
#: at 400 cells, about two cells per format: W1 1.30× the best PromptEval's with the mean
#: fixed at 0.5 logit, 1.13× with this schedule). Chosen on the ``choose`` families of
#: bench/spread_families.py only (bench, narrow, guess; matrices 20-43, one seed, 200 and 400
#: cells; `python bench/spread_priors.py base cpf0.75 cpf1 cpsq0.5 cpsq0.6 --matrices
#: 20-43`): worst W1 / best PromptEval over those families and budgets 1.36 with the mean
#: fixed at 0.5 logit, 1.30, 1.25, 1.29 and 1.27 with the schedules (mean 0.75 or 1 × the
#: cells per format, 0.5 or 0.6 × its square). The schedules differ by less than the noise
#: between matrix sets (two disjoint sets of 12 ranked the fixed 0.5 and 1.0 logit means in
#: opposite orders); all beat the fixed mean at 400 cells on the bench family. The inverse
#: gamma used before them (worth ten formats at one logit²) held the s.d. near one logit
#: whatever the data said: on the ``narrow`` family (format s.d. 0.1-0.35 logit) the
#: estimated distribution came out 2-2.4× as wide as the truth.
_FORMAT_SD_PER_CELL = 1.0
#: Beta prior of the broken formats' share: most of its mass near 0 (mean 4%), so "no
#: broken formats" is the default and a broken component needs rows whose cells show it
#: (a model comparison between "bulk only" and "bulk + broken" folded into one prior). The
#: schedule used before (Beta(1, 9) rising to Beta(2, 8) with the cells per format) kept
#: about 10-20% of formats in the broken component whether or not there were any. On the
#: choose families, with the format s.d.'s prior mean then fixed at 0.5 logit: Beta(0.2, 5)
#: worst ratio 1.14, Beta(0.5, 5) 1.50, the schedule 1.56.
_BROKEN_SHARE = (0.2, 5.0)


def format_sd_mean(cells_per_format: float) -> float:
    """Mean (logits) of the exponential prior on an s.d. at ``cells_per_format`` observed
    cells per format (see ``_FORMAT_SD_PER_CELL``)."""
    return _FORMAT_SD_PER_CELL * cells_per_format


def formats_prior_mean(cells_per_format: float) -> float:
    """Mean (logits) of the prior on the formats' total s.d.: :func:`format_sd_mean`, never
    below its value at one cell per format. Fewer cells than formats say even less about how
    far formats differ, so they must not pull the width toward narrow: with the mean at 0.5
    logit at half a cell per format, wide spreads came out too narrow (400 formats × 60
    items, 200 cells, 8 matrices each: W1 1.36× and 1.34× the best PromptEval on the bench
    and wide-hostile families, 90% coverage 0.80; floored: 1.09× and 1.09×, coverage 0.90
    and 0.875; the narrow strong-narrow family 0.88× → 1.04×, coverage 1.00 → 0.90). Shapes
    the benchmark's families never take (they have at least one cell per format at 200 cells,
    where the floor changes nothing); measured after the schedule was chosen."""
    return format_sd_mean(max(cells_per_format, 1.0))


def _log_format_var(var: NDArray[np.float64] | float, mean: float) -> NDArray[np.float64]:
    """log density (up to a constant) of the formats' variance V under the exponential prior
    with mean ``mean`` on √V: −√V / mean − log √V (the last term from dV = 2√V d√V)."""
    sd = np.sqrt(var)
    return np.asarray(-sd / mean - np.log(sd))


def _log_split(
    u: NDArray[np.float64] | float, v: NDArray[np.float64] | float, mean: float
) -> NDArray[np.float64]:
    """log prior density (up to a constant) of the bulk's variance u and the covariate part's
    v: V = u + v under the formats' prior (:func:`_log_format_var` with ``mean``), φ = v / V
    Beta(``_SHARE``), Jacobian 1 / V."""
    total = np.asarray(u) + v
    phi = v / total
    return np.asarray(
        _log_format_var(total, mean)
        - np.log(total)  # the Jacobian
        + (_SHARE[0] - 1) * np.log(phi)
        + (_SHARE[1] - 1) * np.log1p(-phi)
    )


def _split_draw(
    units: int,
    squares: float,
    per_unit: float,
    log_prior: NDArray[np.float64],
    rng: np.random.Generator,
) -> float:
    """A variance w from its full conditional on the ``_LOG_VAR`` grid: ``units`` effects
    N(0, w / per_unit) with sum of squares ``squares``, prior ``log_prior`` (on the grid, in w)."""
    var = _VAR / per_unit
    log_post = log_prior - 0.5 * units * np.log(var) - 0.5 * squares / var + _LOG_VAR
    return float(np.exp(draw_grid(log_post[None, :], 1, rng, _LOG_VAR)[0, 0]))


@dataclass
class _State:
    mu: NDArray[np.float64]  # the intercept of every model (one without a model axis)
    theta: NDArray[np.float64]  # the rows' own effects (without the covariates' part)
    beta: NDArray[np.float64]
    gamma: NDArray[np.float64]
    var_col: float
    lam: NDArray[np.float64]  # the columns' own variance factors (Student-t prior)
    nu: float  # that prior's degrees of freedom
    var_cov: float
    weight_low: float
    centre_low: float
    scale: tuple[float, float]  # s.d. of the bulk and of the broken component
    #: each cell's part of the linear predictor from effects beyond the two-way model
    #: (:mod:`._irt_crossed`'s model × format and model × item interactions; 0 here)
    inter: NDArray[np.float64]


class _Chain:
    """The sampler's fixed parts (cells, covariates, sort orders) and one sweep."""

    def __init__(self, fit: IrtFit) -> None:
        cells = fit.cells
        self.rows, self.cols, self.y = cells.rows, cells.cols, cells.y
        self.sign = 2 * cells.y - 1
        self.n, self.m = cells.n_rows, cells.n_cols
        self.row_units, self.col_units = Units.of(self.rows, self.n), Units.of(self.cols, self.m)
        x = np.zeros((self.n, 0)) if fit.covariates is None else fit.covariates
        #: the covariates centred over the rows, and the spread of x·γ per unit of the
        #: coefficients' variance (the mean squared norm of a centred row); constant
        #: covariates only move the intercept and are left out
        self.x_mean = x.mean(axis=0)
        self.x = x - self.x_mean
        self.dim = float(np.mean(np.sum(self.x**2, axis=1))) if self.x.size else 0.0
        self.on = self.dim > 0
        if not self.on:
            self.x, self.x_mean = np.zeros((self.n, 0)), np.zeros(0)
        #: each cell's model (one here; :mod:`._irt_crossed` has several) and the block (μ,
        #: γ)'s design at the cells: a column of ones per model and the covariates
        self.model, self.k = np.zeros(len(self.y), dtype=np.intp), 1
        self.design = np.column_stack([np.ones(len(self.y)), self.x[self.rows]])
        # distinct cells per format: a repeated cell says nothing about how far formats differ
        per_row = float(cells.distinct_per_row().sum()) / self.n
        self.low_prior, self.gap = _BROKEN_SHARE, gap(per_row)
        self.sd_mean = formats_prior_mean(per_row)

    def start(self, fit: IrtFit) -> _State:
        n, m = fit.cells.n_rows, fit.cells.n_cols
        w = fit.mean
        gamma = w[1 + n + m :].copy() if self.on else np.zeros(0)
        mu = float(w[0] + self.x_mean @ gamma)  # the same predictor, covariates centred
        return _State(
            mu=np.full(self.k, mu),
            theta=w[1 : 1 + n].copy(),
            beta=w[1 + n : 1 + n + m].copy(),
            gamma=gamma,
            var_col=fit.tau_col**2,
            lam=np.ones(m),
            nu=8.0,
            var_cov=max(float(np.var(self.x @ gamma)) / self.dim, 1e-2) if self.on else 1.0,
            weight_low=self.low_prior[0] / sum(self.low_prior),
            centre_low=-3.0 * fit.tau_row,
            scale=(fit.tau_row, fit.tau_row),
            inter=np.zeros(len(self.y)),
        )

    def sweep(self, s: _State, rng: np.random.Generator) -> None:
        """One pass over every block, in place."""
        part = self.x @ s.gamma
        base = s.mu[self.model] + s.inter  # each cell's intercept (and interactions)
        s.theta = _draw(
            self.row_units.loglik(base + s.beta[self.cols] + part[self.rows], self.y)
            + self._row_prior(s)[None, :],
            rng,
        )
        row_eff = s.theta + part
        s.beta = _draw(
            self.col_units.loglik(base + row_eff[self.rows], self.y)
            - 0.5 * GRID[None, :] ** 2 / (s.var_col * s.lam[:, None]),
            rng,
        )
        eta = base + row_eff[self.rows] + s.beta[self.cols]
        self._block(s, eta, rng)
        eta = self._interactions(s, eta, rng)
        if self.on:
            self._covariate_variance(s, rng)
        self._column_scales(s, rng)
        self._mixture(s, rng)
        for _ in range(_RESCALE_TRIES):
            eta = self._rescale_columns(s, eta, rng)
            eta = self._rescale_rows(s, eta, rng)

    def _interactions(
        self, s: _State, eta: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        """Effects beyond the two-way model (none here; :mod:`._irt_crossed`): draws them
        and returns the cells' linear predictor after."""
        return eta

    def _gain(self, old: NDArray[np.float64], new: NDArray[np.float64]) -> float:
        """Log-likelihood ratio of the cells with linear predictors new / old."""
        return float(np.sum(log_expit(self.sign * new) - log_expit(self.sign * old)))

    def _newton(
        self, w: NDArray[np.float64], eta: NDArray[np.float64], precision: NDArray[np.float64]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        """The block (μ, γ) at ``w`` (``eta`` the cells' linear predictor there, prior
        precisions ``precision``): its log posterior, the Newton step's end and the
        Cholesky factor of the negative Hessian."""
        p = expit(eta)
        grad = self.design.T @ (self.y - p) - precision * w
        hess = (self.design.T * (p * (1 - p))) @ self.design + np.diag(precision)
        chol = _proposal_factor(hess)
        step = np.linalg.solve(chol.T, np.linalg.solve(chol, grad))
        log_post = float(np.sum(log_expit(self.sign * eta)) - 0.5 * precision @ w**2)
        return log_post, w + step, chol

    def _block(self, s: _State, eta: NDArray[np.float64], rng: np.random.Generator) -> None:
        """The intercept and the covariates' effects jointly, by one Metropolis-Hastings
        move proposed from the Gaussian of a Newton step: N(w + H⁻¹g, H⁻¹), g and H the
        gradient and negative Hessian of the block's log posterior at the current w; the
        reverse proposal is built at the proposed point. ``eta`` is updated in place.

        With one-hot grammar choices the centred columns of one choice add up to zero, so
        the likelihood is flat along that direction and one-at-a-time moves creep; the
        joint Gaussian proposal follows the posterior's correlations (it accepted 85-95% of
        moves on generated matrices at 200-1,600 cells)."""
        w = np.concatenate([s.mu, s.gamma])
        precision = np.concatenate([np.zeros(self.k), np.full(len(s.gamma), 1.0 / s.var_cov)])
        log_post, centre, chol = self._newton(w, eta, precision)
        new = centre + np.linalg.solve(chol.T, rng.standard_normal(len(w)))
        eta_new = eta + self.design @ (new - w)
        log_post_new, centre_new, chol_new = self._newton(new, eta_new, precision)
        gain = log_post_new - log_post
        gain += _log_gauss(w, centre_new, chol_new) - _log_gauss(new, centre, chol)
        if _accept(gain, rng):
            s.mu, s.gamma = new[: self.k], new[self.k :]
            eta[:] = eta_new

    def _format_prior(
        self, u: NDArray[np.float64] | float, v: NDArray[np.float64] | float
    ) -> NDArray[np.float64]:
        """log prior density of the bulk's variance ``u`` (and, with covariates, their part's
        ``v``): the split prior with covariates, the formats' prior on ``u`` alone without."""
        if self.on:
            return _log_split(u, v, self.sd_mean)
        return _log_format_var(u, self.sd_mean)

    def _covariate_variance(self, s: _State, rng: np.random.Generator) -> None:
        """The covariate part's variance given the bulk's (the split prior)."""
        prior = self._format_prior(s.scale[0] ** 2, _VAR)
        squares = float(s.gamma @ s.gamma)
        s.var_cov = _split_draw(len(s.gamma), squares, self.dim, prior, rng) / self.dim

    def _column_scales(self, s: _State, rng: np.random.Generator) -> None:
        """The columns' Student-t prior as a scale mixture: β_j ~ N(0, var_col λ_j), λ_j ~
        IG(ν/2, ν/2). var_col from its conditional given the λ_j, then ν (on ``_NU``,
        uniform) from its conditional with the λ_j integrated out (given them, ν hardly
        moves), then each λ_j given ν."""
        s.var_col = _inv_gamma(rng, len(s.beta), float(np.sum(s.beta**2 / s.lam)))
        z = s.beta / np.sqrt(s.var_col)
        log_post = student_t.logpdf(z[None, :], _NU[:, None]).sum(axis=1)
        p = np.exp(log_post - log_post.max())
        s.nu = float(rng.choice(_NU, p=p / p.sum()))
        s.lam = (0.5 * s.nu + 0.5 * z**2) / rng.gamma(0.5 * (s.nu + 1), size=len(z))

    def _rescale_columns(
        self, s: _State, eta: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        """Scale every column effect and their s.d. by one factor c (a Metropolis move);
        returns the cells' linear predictor after it.

        With one or two cells per column, the variance drawn given the effects and the
        effects given the variance follow each other: that chain creeps. Moving both at
        once keeps each effect's standardised value; the acceptance ratio is the
        likelihood's times the variance's hyperprior's times c² (the Jacobian of the
        variance; the effects' own Jacobian cancels against their prior)."""
        c = float(np.exp(rng.normal(0.0, _RESCALE_STEP)))
        new = eta + (c - 1) * s.beta[self.cols]
        gain = self._gain(eta, new)
        gain += _log_inv_gamma(c * c * s.var_col) - _log_inv_gamma(s.var_col) + 2 * np.log(c)
        if not _accept(gain, rng):
            return eta
        s.beta = c * s.beta
        s.var_col *= c * c
        return new

    def _rescale_rows(
        self, s: _State, eta: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        """The same move for every format effect: the rows' own effects, the covariates'
        effects and their priors (both components' s.d., the broken centre and the
        covariates' variance scale with them; the gap constraint is kept): Jacobian c² per
        variance and c for the centre. Returns the cells' linear predictor after it.

        Scaling the covariates' part too moves the formats' whole spread at once: with one
        or two cells per format, drawing the effects given the scales and the scales given
        the effects crept (two halves of one chain of 400 draws gave posterior mean format
        s.d. of 0.33 and 0.59 on one matrix)."""
        c = float(np.exp(rng.normal(0.0, _RESCALE_STEP)))
        part = self.x @ s.gamma
        new = np.asarray(eta + (c - 1) * (s.theta + part)[self.rows])
        gain = self._gain(eta, new)
        m0, sd0 = _LOW_CENTRE
        bulk, low = s.scale
        gain += _log_inv_gamma(c * c * low * low) - _log_inv_gamma(low * low)
        v = s.var_cov * self.dim  # the covariates' variance (with them) scales too
        gain += float(
            self._format_prior(c * c * bulk * bulk, c * c * v) - self._format_prior(bulk * bulk, v)
        )
        if self.on:
            gain += 2 * np.log(c)  # the Jacobian of v
        gain += (-((c * s.centre_low - m0) ** 2) + (s.centre_low - m0) ** 2) / (2 * sd0**2)
        gain += 5 * np.log(c)
        if not _accept(gain, rng):
            return eta
        s.theta = c * s.theta
        s.gamma = c * s.gamma
        s.var_cov *= c * c
        s.centre_low *= c
        s.scale = (c * s.scale[0], c * s.scale[1])
        return new

    def _row_prior(self, s: _State) -> NDArray[np.float64]:
        """log density of the two-component prior of a row's own effect on ``GRID``."""
        bulk, low = s.scale
        return np.asarray(
            np.logaddexp(
                np.log1p(-s.weight_low) - 0.5 * (GRID / bulk) ** 2 - np.log(bulk),
                np.log(s.weight_low) - 0.5 * ((GRID - s.centre_low) / low) ** 2 - np.log(low),
            )
        )

    def _mixture(self, s: _State, rng: np.random.Generator) -> None:
        """Component memberships, then the weight, the bulk's s.d., the broken centre (kept
        ``gap`` bulk s.d. below 0) and the broken s.d. from their full conditionals."""
        bulk, low = s.scale
        t = s.theta
        log_odds = (
            np.log(s.weight_low)
            - np.log1p(-s.weight_low)
            - 0.5 * ((t - s.centre_low) / low) ** 2
            + 0.5 * (t / bulk) ** 2
            + np.log(bulk / low)
        )
        broken = rng.random(len(t)) < expit(log_odds)
        k = int(broken.sum())
        a, b = self.low_prior
        s.weight_low = float(rng.beta(a + k, b + len(t) - k))
        squares = float(t[~broken] @ t[~broken])
        prior = self._format_prior(_VAR, s.var_cov * self.dim)
        bulk = float(np.sqrt(_split_draw(len(t) - k, squares, 1.0, prior, rng)))
        m0, sd0 = _LOW_CENTRE
        prec = 1 / sd0**2 + k / low**2
        mean = (m0 / sd0**2 + float(t[broken].sum()) / low**2) / prec
        sd = 1 / np.sqrt(prec)
        upper = (-self.gap * bulk - mean) / sd
        s.centre_low = float(truncnorm.rvs(-np.inf, upper, loc=mean, scale=sd, random_state=rng))
        dev = t[broken] - s.centre_low
        low = float(np.sqrt(_inv_gamma(rng, k, float(dev @ dev))))
        s.scale = (bulk, low)


def gibbs_draws(
    fit: IrtFit, n_draws: int, rng: np.random.Generator, progress: Progress | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Posterior draws of the intercept (d,), the row effects with their covariate part
    (d, rows) and the column effects (d, cols), by ``BURN_IN`` + ``THIN`` × ``n_draws``
    Gibbs sweeps started at the fit's mode; ``progress(done, total)`` after each sweep."""
    chain = _Chain(fit)
    state = chain.start(fit)
    n, m = fit.cells.n_rows, fit.cells.n_cols
    mu, theta, beta = np.empty(n_draws), np.empty((n_draws, n)), np.empty((n_draws, m))
    for d in kept_sweeps(lambda: chain.sweep(state, rng), n_draws, progress):
        mu[d], theta[d], beta[d] = state.mu[0], state.theta + chain.x @ state.gamma, state.beta
    return mu, theta, beta


def kept_sweeps(
    sweep: Callable[[], None], n_draws: int, progress: Progress | None = None
) -> Iterator[int]:
    """Run a chain: ``BURN_IN`` sweeps, then ``THIN`` before each of ``n_draws`` draws,
    yielding the draw's index once its sweeps are done (the caller keeps the state then);
    ``progress(done, total)`` after every sweep."""
    total, done = BURN_IN + THIN * n_draws, 0
    for d in range(-1, n_draws):
        for _ in range(BURN_IN if d < 0 else THIN):
            sweep()
            done += 1
            if progress is not None:
                progress(done, total)
        if d >= 0:
            yield d
