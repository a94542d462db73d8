"""Several models on shared formats and items: the spread model of :mod:`._irt_gibbs` with a
model axis, sampled by the same Gibbs chain.

P(y = 1) for model m on format f and item i is σ(μ_m + θ_f [+ x_f·γ] + δ_mf + β_i + α_mi):
the formats' shared effect θ (with the spread model's prior: a bulk and a broken minority,
and the covariates' share), the items' shared effect β (Student-t), one intercept per model,
and two interactions: δ, how far a model's liking of a format departs from the others' (what
makes a ranking flip from one format to another), and α, the same for items (two models
rarely miss the same items). Each interaction is N(0, σ²) with the spread model's
exponential prior on σ, its mean 1 logit × the distinct cells per (model, format) or
(model, item) (:func:`._irt_gibbs.format_sd_mean`), at most 1 logit: shrunk toward "the
models agree" unless the cells say otherwise.

With one model this is the spread model itself, drawn by the same sweeps (the chain's
model axis has one level and the interactions are left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._irt_gibbs import (
    _RESCALE_STEP,
    _RESCALE_TRIES,
    _VAR,
    _accept,
    _Chain,
    _draw,
    _log_format_var,
    _split_draw,
    _State,
    format_sd_mean,
    kept_sweeps,
)
from ._irt_mixture import GRID, Units
from ._validate import Progress

if TYPE_CHECKING:
    from ._irt import IrtFit


class CrossedDraws(NamedTuple):
    """Posterior draws of the crossed model (``d`` draws, ``k`` models, ``n`` formats, ``m``
    items): intercepts (d, k), formats' shared effects with their covariate part (d, n),
    items' shared effects (d, m), model × format (d, k, n) and model × item (d, k, m)
    interactions, and the interactions' s.d. (d,) each."""

    mu: NDArray[np.float64]
    theta: NDArray[np.float64]
    beta: NDArray[np.float64]
    delta: NDArray[np.float64]
    alpha: NDArray[np.float64]
    sd_format: NDArray[np.float64]
    sd_item: NDArray[np.float64]


@dataclass
class _CrossedState(_State):
    delta: NDArray[np.float64]  # (k, n)
    alpha: NDArray[np.float64]  # (k, m)
    var_mf: float
    var_mi: float


def _distinct_per_unit(unit: NDArray[np.intp], other: NDArray[np.intp], size: int) -> float:
    """Distinct (unit, other) pairs per unit: a repeated cell counts once."""
    width = int(other.max()) + 1 if len(other) else 1
    return len(np.unique(unit.astype(np.int64) * width + other)) / size


class _CrossedChain(_Chain):
    """:class:`._irt_gibbs._Chain` with a model axis: one intercept per model in the block
    move, and the two interactions drawn after it (:meth:`_interactions`)."""

    def __init__(self, fit: IrtFit, model: NDArray[np.intp], k: int) -> None:
        super().__init__(fit)
        self.model, self.k = model, k
        self.design = np.column_stack([np.eye(k)[model], self.x[self.rows]])
        self.mf = model * self.n + self.rows
        self.mi = model * self.m + self.cols
        self.mf_units, self.mi_units = Units.of(self.mf, k * self.n), Units.of(self.mi, k * self.m)
        # the spread model's schedule, capped at one logit: an interaction of a few logits
        # is not a neutral prior however many cells a unit has
        self.mean_mf = format_sd_mean(min(1.0, _distinct_per_unit(self.mf, self.cols, k * self.n)))
        self.mean_mi = format_sd_mean(min(1.0, _distinct_per_unit(self.mi, self.rows, k * self.m)))

    def start(self, fit: IrtFit) -> _CrossedState:
        base = super().start(fit)
        fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
        return _CrossedState(
            **fields,
            delta=np.zeros((self.k, self.n)),
            alpha=np.zeros((self.k, self.m)),
            var_mf=min(1.0, self.mean_mf) ** 2,
            var_mi=min(1.0, self.mean_mi) ** 2,
        )

    def _interactions(
        self, s: _State, eta: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        assert isinstance(s, _CrossedState)
        off = eta - s.delta.ravel()[self.mf]
        prior = -0.5 * GRID[None, :] ** 2 / s.var_mf
        s.delta = _draw(self.mf_units.loglik(off, self.y) + prior, rng).reshape(self.k, self.n)
        eta = off + s.delta.ravel()[self.mf]
        off = eta - s.alpha.ravel()[self.mi]
        prior = -0.5 * GRID[None, :] ** 2 / s.var_mi
        s.alpha = _draw(self.mi_units.loglik(off, self.y) + prior, rng).reshape(self.k, self.m)
        eta = off + s.alpha.ravel()[self.mi]
        s.var_mf = _split_draw(
            s.delta.size,
            float(np.sum(s.delta**2)),
            1.0,
            _log_format_var(_VAR, self.mean_mf),
            rng,
        )
        s.var_mi = _split_draw(
            s.alpha.size,
            float(np.sum(s.alpha**2)),
            1.0,
            _log_format_var(_VAR, self.mean_mi),
            rng,
        )
        for _ in range(_RESCALE_TRIES):
            eta = self._rescale_interactions(s, eta, rng)
        s.inter = s.delta.ravel()[self.mf] + s.alpha.ravel()[self.mi]
        return eta

    def _rescale_interactions(
        self, s: _CrossedState, eta: NDArray[np.float64], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        """Scale each interaction and its s.d. by one factor (a Metropolis move, as
        :meth:`._irt_gibbs._Chain._rescale_columns`): with a cell or two per (model, format)
        the effects and their variance otherwise follow each other and creep."""
        for name, index, mean in (
            ("delta", self.mf, self.mean_mf),
            ("alpha", self.mi, self.mean_mi),
        ):
            values = getattr(s, name)
            var = s.var_mf if name == "delta" else s.var_mi
            c = float(np.exp(rng.normal(0.0, _RESCALE_STEP)))
            new = eta + (c - 1) * values.ravel()[index]
            gain = self._gain(eta, new)
            gain += float(_log_format_var(c * c * var, mean) - _log_format_var(var, mean))
            gain += 2 * np.log(c)  # the Jacobian of the variance
            if _accept(gain, rng):
                setattr(s, name, c * values)
                if name == "delta":
                    s.var_mf = c * c * var
                else:
                    s.var_mi = c * c * var
                eta = new
        return eta


def crossed_draws(
    fit: IrtFit,
    model: NDArray[np.intp],
    k: int,
    n_draws: int,
    rng: np.random.Generator,
    progress: Progress | None = None,
) -> CrossedDraws:
    """Posterior draws of the crossed model, by ``BURN_IN`` + ``THIN`` × ``n_draws`` sweeps
    started at ``fit``'s mode (the two-way model fitted to every model's cells pooled):
    ``model`` is each of ``fit.cells``' cells' model, in [0, ``k``); ``progress(done,
    total)`` after each sweep."""
    chain = _CrossedChain(fit, model, k)
    state = chain.start(fit)
    n, m = fit.cells.n_rows, fit.cells.n_cols
    out = CrossedDraws(
        mu=np.empty((n_draws, k)),
        theta=np.empty((n_draws, n)),
        beta=np.empty((n_draws, m)),
        delta=np.empty((n_draws, k, n)),
        alpha=np.empty((n_draws, k, m)),
        sd_format=np.empty(n_draws),
        sd_item=np.empty(n_draws),
    )
    for d in kept_sweeps(lambda: chain.sweep(state, rng), n_draws, progress):
        out.mu[d], out.beta[d] = state.mu, state.beta
        out.theta[d] = state.theta + chain.x @ state.gamma
        out.delta[d], out.alpha[d] = state.delta, state.alpha
        out.sd_format[d], out.sd_item[d] = np.sqrt(state.var_mf), np.sqrt(state.var_mi)
    return out
