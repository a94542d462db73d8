"""A sparse two-way logistic model of correctness: P(y=1) = σ(μ + θ_row + β_col [+ x_row·γ]).

Rows are conditions (prompt formats), columns are items; only some (row, column) cells are
observed. :func:`fit_irt` fits the model by penalised maximum likelihood with priors whose
scales are estimated from the data (empirical Bayes), and :func:`irt_distribution`
(:mod:`._irt_posterior`, re-exported here) turns the fit into the distribution of per-row
accuracies over all columns, its quantiles and their intervals, from posterior draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sparse
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from ._errors import StatsInputError
from ._irt_factor import LaplaceFactor
from ._irt_mixture import grid_loglik, grid_scale
from ._irt_posterior import QUANTILES, IrtDistribution, irt_distribution, widen
from ._validate import as_count, as_positive_int

__all__ = [
    "MAX_EFFECTS",
    "MAX_GRID",
    "MAX_ROW_EFFECTS",
    "QUANTILES",
    "IrtCells",
    "IrtDistribution",
    "IrtFit",
    "check_size",
    "fit_irt",
    "irt_distribution",
    "max_columns",
    "widen",
]

#: Inverse-gamma hyperprior on a prior variance τ²: worth about 2·_HYPER_A = 10 pseudo-rows
#: with τ² near _HYPER_B / _HYPER_A = 1 (one logit: the size of format effects reported by
#: PromptEval and FormatSpread). It keeps τ from collapsing when rows have one or two cells.
_HYPER_A = 5.0
_HYPER_B = 5.0
#: The largest covariate value :func:`fit_irt` accepts (its squares enter the Hessian).
_MAX_COVARIATE = 1e6


@dataclass(frozen=True, eq=False)
class IrtCells:
    """Observed cells of a rows × columns 0/1 matrix, validated when built (directly or by
    :meth:`of`, which takes any array-likes): a shape within the estimator's limits
    (:func:`check_size`), 1-D inputs of equal lengths, integer indices in range, y in
    {0, 1}, not empty. The arrays are read-only copies (a caller's later change to its
    own arrays does not reach them; a pickled copy is not checked again when loaded)."""

    rows: NDArray[np.intp]
    cols: NDArray[np.intp]
    y: NDArray[np.float64]
    n_rows: int
    n_cols: int

    def __post_init__(self) -> None:
        for name, value in zip(
            ("rows", "cols", "y", "n_rows", "n_cols"),
            _checked(self.rows, self.cols, self.y, self.n_rows, self.n_cols),
            strict=True,
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def of(
        cls, rows: ArrayLike, cols: ArrayLike, y: ArrayLike, n_rows: int, n_cols: int
    ) -> IrtCells:
        """The cells, from any array-likes (validated once, as the class says)."""
        given: tuple[Any, ...] = (rows, cols, y, n_rows, n_cols)
        return cls(*given)

    def flat_index(self) -> NDArray[np.int64]:
        """Each cell's position in the row-major n_rows × n_cols matrix (one per observed
        cell; a cell observed twice appears twice)."""
        return self.rows.astype(np.int64) * self.n_cols + self.cols

    def distinct_per_row(self) -> NDArray[np.int64]:
        """Distinct observed cells of each row: a cell observed twice counts once (a repeat
        says nothing about how far rows differ beyond the cell's own noise)."""
        rows = np.unique(self.flat_index()) // self.n_cols
        return np.asarray(np.bincount(rows, minlength=self.n_rows))


#: The most rows + columns + covariate columns (formats + items + grammar choices) the
#: estimator takes: the Gibbs sampler draws every effect on a grid each sweep. The fit
#: factorises only the row side densely (:mod:`._irt_factor`), so columns are cheap there.
MAX_EFFECTS = 20_000
#: The most rows + covariate columns (formats + grammar choices): the block of the
#: Laplace precision :func:`fit_irt` factorises densely at every Newton step (cubic in it;
#: the earlier dense fit's limit on rows + columns, so every shape it took still fits).
MAX_ROW_EFFECTS = 6_000
#: The most cells of one completed matrix (rows × columns, × models for
#: :func:`compare_formats`): every posterior draw completes it, so the analysis's time (and
#: the comparison's memory, a few arrays of this size) grows with it. The earlier limit of
#: 6,000 rows + columns allowed 3,000 × 3,000. All of MMLU (14,042 items × 100 formats,
#: 1.4M cells, 24 covariate columns, 28,084 observed cells, 400 draws) took 380 s and
#: 1.8 GB on one core with `estimate_spread` (the fit itself 10 s); 3,000 × 14,000 (a
#: reviewer's shape, now refused) about 0.7 s per draw for the completion alone.
MAX_GRID = 9_000_000


def max_columns(n_rows: int, n_covariates: int = 0, models: int = 1) -> int:
    """The most columns (items) ``MAX_EFFECTS`` and ``MAX_GRID`` allow with ``n_rows``
    rows, ``n_covariates`` covariate columns and ``models`` models.

    Parameters
    ----------
    n_rows : int
        Rows (formats), at least 1.
    n_covariates : int
        Covariate columns of the rows.
    models : int
        Models fitted together (:func:`compare_formats`); 1 for :func:`estimate_spread`.

    Returns
    -------
    int
        The size of item sample that fits (negative when the rows alone are over).

    Notes
    -----
    It bounds only the columns: the rows and covariate columns have their own limit,
    ``MAX_ROW_EFFECTS``, which :func:`check_size` checks first.

    Examples
    --------
    >>> from steadyeval import stats
    >>> stats.max_columns(100, 24)
    19876
    """
    return min(MAX_EFFECTS - n_rows - n_covariates, MAX_GRID // (models * n_rows))


def check_size(
    n_rows: int,
    n_cols: int,
    n_covariates: int = 0,
    *,
    models: int = 1,
    rows: str = "rows (formats)",
    cols: str = "columns (items)",
) -> None:
    """A :class:`StatsInputError` when the shape is over ``MAX_ROW_EFFECTS`` (rows +
    covariate columns), ``MAX_EFFECTS`` (rows + columns + covariate columns) or
    ``MAX_GRID`` (models × rows × columns); ``rows`` and ``cols`` name the axes in the
    message (e.g. "formats", "items")."""
    covs = f" + {n_covariates:,} covariate columns" if n_covariates else ""
    if n_rows + n_covariates > MAX_ROW_EFFECTS:
        dense = f"{rows} + covariate columns" if covs else rows
        raise StatsInputError(
            f"{n_rows:,} {rows}{covs} is over the estimator's limit of {MAX_ROW_EFFECTS:,} "
            f"(its fit factorises a dense matrix of {dense} squared at every step); use at "
            f"most {MAX_ROW_EFFECTS - n_covariates:,} {rows}"
            + (
                " or fewer covariate columns (e.g. their leading principal components)"
                if covs
                else ""
            )
        )
    if n_rows + n_cols + n_covariates > MAX_EFFECTS:
        raise StatsInputError(
            f"{n_rows:,} {rows} + {n_cols:,} {cols}{covs} is over the estimator's limit of "
            f"{MAX_EFFECTS:,} (the sampler draws every effect each sweep); use fewer {cols} "
            f"(a sample) or fewer {rows}"
        )
    if models * n_rows * n_cols > MAX_GRID:
        per = f"{models} models × " if models > 1 else ""
        raise StatsInputError(
            f"{per}{n_rows:,} {rows} × {n_cols:,} {cols} = {models * n_rows * n_cols:,} "
            f"cells is over the estimator's limit of {MAX_GRID:,} (every posterior draw "
            "completes that matrix); use fewer "
            f"{cols} (at most {max_columns(n_rows, 0, models):,} with these {rows}) or fewer "
            f"{rows}"
        )


def _checked(
    rows: ArrayLike, cols: ArrayLike, y: ArrayLike, n_rows: Any, n_cols: Any
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64], int, int]:
    """:class:`IrtCells`' fields, validated (see there)."""
    n_rows = as_positive_int(n_rows, "n_rows")
    n_cols = as_positive_int(n_cols, "n_cols")
    check_size(n_rows, n_cols)
    r, c = _indices(rows, "rows", n_rows), _indices(cols, "cols", n_cols)
    try:
        v = np.array(y, dtype=np.float64)  # a copy: the cells cannot change once checked
    except (TypeError, ValueError, OverflowError):
        raise StatsInputError("y must hold only 0 and 1 (correct = 1)") from None
    v = _one_d(v, "y")
    if not (len(r) == len(c) == len(v)):
        raise StatsInputError(
            f"rows, cols and y must have equal lengths; got {len(r)}, {len(c)}, {len(v)}"
        )
    if len(r) == 0:
        raise StatsInputError("no observed cells; observe at least one cell")
    if not np.all((v == 0) | (v == 1)):
        raise StatsInputError("y must hold only 0 and 1 (correct = 1)")
    return _frozen(r), _frozen(c), _frozen(v), n_rows, n_cols


def _frozen(a: NDArray[Any]) -> NDArray[Any]:
    """A read-only view of ``a`` (a copy the caller does not hold), which cannot be made
    writable again (its base is read-only)."""
    a.setflags(write=False)
    return a.view()


def _one_d(a: NDArray[Any], name: str) -> NDArray[Any]:
    """``a`` as one entry per observed cell (a scalar: one cell); 2-D and up refused."""
    if a.ndim > 1:
        raise StatsInputError(
            f"{name} must be a 1-D array, one entry per observed cell; got shape {a.shape}"
        )
    return a.ravel()


def _indices(values: ArrayLike, name: str, size: int) -> NDArray[np.intp]:
    """``values`` as integer indices in [0, ``size``), or :class:`StatsInputError`."""
    try:
        a = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        a = np.asarray([None])
    a = _one_d(a, name)
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.floor(a)):
        a = a.astype(np.float64)
    elif a.dtype.kind not in "iu" and a.size:
        raise StatsInputError(f"{name} must hold integer indices; got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() >= size):
        at = int(np.flatnonzero((a < 0) | (a >= size))[0])
        raise StatsInputError(
            f"cell indices out of range: {name} must be in [0, {size}); got {int(a[at])} at "
            f"position {at}"
        )
    return np.array(a, dtype=np.intp)  # a copy: the cells cannot change once checked


@dataclass(frozen=True, eq=False)
class IrtFit:
    """A fitted model. ``mean`` is the posterior mode of (μ, θ, β, γ) stacked;
    ``precision`` the Laplace precision (the negative Hessian there), factorised by
    blocks; ``tau_row`` and ``tau_col`` the estimated prior scales of θ and β."""

    cells: IrtCells
    covariates: NDArray[np.float64] | None
    mean: NDArray[np.float64]
    precision: LaplaceFactor
    tau_row: float
    tau_col: float
    iterations: int

    @property
    def intercept(self) -> float:
        return float(self.mean[0])

    @property
    def theta(self) -> NDArray[np.float64]:
        """Row effects, covariate part included (``x_row·γ + θ_row``)."""
        n = self.cells.n_rows
        theta = self.mean[1 : 1 + n].copy()
        if self.covariates is not None:
            theta += self.covariates @ self.mean[1 + n + self.cells.n_cols :]
        return theta

    @property
    def beta(self) -> NDArray[np.float64]:
        n = self.cells.n_rows
        return self.mean[1 + n : 1 + n + self.cells.n_cols].copy()

    def draw(
        self, n_draws: int, rng: np.random.Generator, resid: NDArray[np.float64] | None = None
    ) -> tuple[NDArray[np.float64], ...]:
        """Laplace-posterior draws: intercept (d,), row effects (d, rows), col effects (d, cols).
        ``resid`` (d, rows) replaces the draws of the row effects' own part (not the
        covariates'), e.g. by draws from :class:`._irt_mixture.RowMixture`."""
        par = self.draw_parameters(n_draws, rng)
        n, m = self.cells.n_rows, self.cells.n_cols
        theta = par[:, 1 : 1 + n] if resid is None else resid
        if self.covariates is not None:
            theta = theta + par[:, 1 + n + m :] @ self.covariates.T
        return par[:, 0], theta, par[:, 1 + n : 1 + n + m]

    def draw_parameters(self, n_draws: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Laplace-posterior draws of (μ, θ, β, γ) stacked, shape (n_draws, parameters)."""
        return np.asarray(self.mean + self.precision.draw(n_draws, rng))


class _Problem:
    """The penalised negative log-likelihood with its gradient and Hessian, computed from the
    cell indices (no dense design matrix): parameters are (μ, θ, β, γ) stacked."""

    def __init__(self, cells: IrtCells, x: NDArray[np.float64] | None) -> None:
        self.cells = cells
        self.x = np.zeros((cells.n_rows, 0)) if x is None else x
        self.n, self.m, self.k = cells.n_rows, cells.n_cols, self.x.shape[1]
        self.size = 1 + self.n + self.m + self.k

    def eta(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        n, m = self.n, self.m
        row_eff = w[1 : 1 + n] + self.x @ w[1 + n + m :]
        return np.asarray(w[0] + row_eff[self.cells.rows] + w[1 + n : 1 + n + m][self.cells.cols])

    def objective(self, w: NDArray[np.float64], prec: NDArray[np.float64]) -> float:
        eta = self.eta(w)
        nll = float(np.sum(np.logaddexp(0.0, eta) - self.cells.y * eta))
        return nll + 0.5 * float(np.sum(prec * w * w))

    def gradient(self, w: NDArray[np.float64], prec: NDArray[np.float64]) -> NDArray[np.float64]:
        r = expit(self.eta(w)) - self.cells.y
        by_row = np.bincount(self.cells.rows, r, minlength=self.n)
        by_col = np.bincount(self.cells.cols, r, minlength=self.m)
        g = np.concatenate([[r.sum()], by_row, by_col, self.x.T @ by_row])
        return np.asarray(g + prec * w)

    def factor(self, w: NDArray[np.float64], prec: NDArray[np.float64]) -> LaplaceFactor:
        """The negative Hessian at ``w``, factorised by blocks (:class:`LaplaceFactor`):
        the row side (μ, θ, γ) dense, the columns' block diagonal, the cross block sparse
        (a row meets a column only at an observed cell)."""
        p = expit(self.eta(w))
        wt = p * (1 - p)
        n, m, k, x = self.n, self.m, self.k, self.x
        sr = np.bincount(self.cells.rows, wt, minlength=n)
        sc = np.bincount(self.cells.cols, wt, minlength=m)
        rc = sparse.csr_matrix((wt, (self.cells.rows, self.cells.cols)), shape=(n, m))
        # the row side, stacked as (μ, θ, γ)
        block = np.zeros((1 + n + k, 1 + n + k))
        t, g = slice(1, 1 + n), slice(1 + n, 1 + n + k)
        block[0, 0] = wt.sum()
        block[0, t], block[0, g] = sr, x.T @ sr
        block[t, g] = sr[:, None] * x
        block[g, g] = x.T @ (sr[:, None] * x)
        block[t, 0], block[g, 0], block[g, t] = block[0, t], block[0, g], block[t, g].T
        dense = np.concatenate([np.arange(1 + n), np.arange(1 + n + m, self.size)])
        block[np.diag_indices_from(block)] += prec[dense] + np.concatenate([[0.0], sr, np.zeros(k)])
        cross = sparse.vstack(
            [sparse.csr_matrix(sc[None, :]), rc, sparse.csr_matrix(x.T @ rc)], format="csr"
        )
        diagonal = np.arange(1 + n, 1 + n + m)
        return LaplaceFactor.of(block, cross, sc + prec[diagonal], dense, diagonal)


def _map(
    problem: _Problem, prec: NDArray[np.float64], start: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Posterior mode: Newton's method with step halving (the objective is strictly convex,
    so it converges from any start; a few steps from a warm start)."""
    w = start.copy()
    f = problem.objective(w, prec)
    for _ in range(100):
        g = problem.gradient(w, prec)
        step = problem.factor(w, prec).solve(g)
        t = 1.0
        while True:
            trial = w - t * step
            ft = problem.objective(trial, prec)
            if ft <= f - 1e-4 * t * float(g @ step) or t < 1e-8:
                break
            t /= 2
        w, f_old, f = trial, f, ft
        if f_old - f < 1e-10 * max(1.0, abs(f)) and float(np.max(np.abs(g))) < 1e-6:
            break
    return w


def fit_irt(
    cells: IrtCells,
    covariates: ArrayLike | None = None,
    *,
    max_iter: int = 50,
    tol: float = 1e-2,
) -> IrtFit:
    """Fit P(y=1) = σ(μ + θ_row + β_col [+ x_row·γ]) to the observed cells.

    Parameters
    ----------
    cells : IrtCells
        The observed cells.
    covariates : array_like, shape (n_rows, k), optional
        Row covariates (e.g. a format's grammar choices, one-hot).
    max_iter, tol : int, float
        Empirical-Bayes iterations and the relative change of the prior scales that stops them.

    Returns
    -------
    IrtFit

    Raises
    ------
    StatsInputError
        If the covariates are not finite numbers of shape (n_rows, k), at most 1e6 in
        absolute value.

    Notes
    -----
    Priors: θ_row ~ Student-t(2 d.o.f., scale τ_row) (as a scale mixture of normals, its
    weights updated by EM), β_col ~ N(0, τ_col²), γ ~ N(0, τ_cov²), μ flat
    (a tiny precision, 1e-4). The mode is found by Newton's method with step halving on the
    penalised log-likelihood (analytic gradient and Hessian; strictly convex). Each scale
    τ (rows, columns, covariates) is estimated by MacKay's evidence update
    τ² = (Σ θ̂² + 2b) / (n − Σ Var θ / τ² + 2a + 2), Var from the inverse Hessian at the mode
    and (a, b) an inverse-gamma hyperprior worth ~10 pseudo-rows at τ = 1 logit; τ_col by
    EM for its marginal likelihood with each column's effect integrated out on a grid
    (same hyperprior), all repeated until they settle (empirical Bayes: the data decide
    how much rows and columns are pooled). Cells
    are assumed independent given the parameters; row × column interactions are not
    modelled, so with many cells per row the intervals are only as good as that assumption.

    Examples
    --------
    >>> from steadyeval import stats
    >>> cells = stats.IrtCells.of([0, 0, 1, 1, 2], [0, 1, 1, 2, 0], [1, 0, 1, 1, 0], 3, 4)
    >>> fit = stats.fit_irt(cells)
    >>> fit.theta.shape, fit.beta.shape
    ((3,), (4,))
    """
    x = _covariates(covariates, cells.n_rows, cells.n_cols)
    problem = _Problem(cells, x)
    try:
        w, scales, it = _fit(problem, as_count(max_iter, "max_iter"), float(tol))
        prec = scales.precisions(problem)
        w = _map(problem, prec, w)
        factor = problem.factor(w, prec)
    except np.linalg.LinAlgError:  # the penalised Hessian is positive definite, but in floats
        raise StatsInputError(
            "the fit's Hessian is not positive definite in floating point (covariates of "
            "very different scales?); scale the covariates"
        ) from None
    return IrtFit(cells, x, np.asarray(w, dtype=np.float64), factor, scales.row, scales.col, it)


def _covariates(
    covariates: ArrayLike | None, n_rows: int, n_cols: int
) -> NDArray[np.float64] | None:
    """The covariates as a finite (n_rows, k) array of moderate values, or an error; each
    column is one more effect of the fit's dense block (:func:`check_size`)."""
    if covariates is None:
        return None
    try:
        x = np.asarray(covariates, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise StatsInputError("covariates must be an array of numbers") from None
    if x.ndim != 2 or x.shape[0] != n_rows:
        raise StatsInputError(f"covariates must have shape (n_rows={n_rows}, k); got {x.shape}")
    check_size(n_rows, n_cols, x.shape[1])
    if not np.all(np.isfinite(x)) or (x.size and float(np.max(np.abs(x))) > _MAX_COVARIATE):
        raise StatsInputError(
            f"covariates must be finite and at most {_MAX_COVARIATE:g} in absolute value "
            "(scale them: one-hot choices or standardised values)"
        )
    return x


def _fit(problem: _Problem, max_iter: int, tol: float) -> tuple[NDArray[np.float64], _Scales, int]:
    """The empirical-Bayes iterations: the mode, then the prior scales, until they settle."""
    cells = problem.cells
    w = np.zeros(problem.size)
    mean_y = float(np.clip(cells.y.mean(), 0.02, 0.98))
    w[0] = float(np.log(mean_y / (1 - mean_y)))
    scales = _Scales(np.ones(cells.n_rows), 1.0, 1.0, 1.0)
    it = 0
    while it < max_iter:
        it += 1
        w = _map(problem, scales.precisions(problem), w)
        var = problem.factor(w, scales.precisions(problem)).diag_inverse()
        new = scales.update(problem, w, var)
        done = all(
            abs(u - v) <= tol * v
            for u, v in ((new.row, scales.row), (new.col, scales.col), (new.cov, scales.cov))
        )
        scales = new
        if done:
            break
    return w, scales, it


#: Degrees of freedom of the Student-t prior of the row effects: heavy tails let a few
#: catastrophic formats stand apart instead of being shrunk into the crowd.
_ROW_DF = 2.0


@dataclass(frozen=True)
class _Scales:
    """Prior scales: per-row weights λ (θ_row ~ N(0, τ_row²/λ_row), a Student-t prior as a
    scale mixture), τ_row, τ_col and τ_cov."""

    weights: NDArray[np.float64]
    row: float
    col: float
    cov: float

    def precisions(self, problem: _Problem) -> NDArray[np.float64]:
        n, m = problem.n, problem.m
        prec = np.full(problem.size, 1.0 / self.cov**2)
        prec[0] = 1e-4
        prec[1 : 1 + n] = self.weights / self.row**2
        prec[1 + n : 1 + n + m] = 1.0 / self.col**2
        return prec

    def update(
        self, problem: _Problem, w: NDArray[np.float64], var: NDArray[np.float64]
    ) -> _Scales:
        """One EM step for λ, MacKay's evidence update for τ_row and τ_cov, and τ_col by
        EM on a grid (exact marginal likelihood of each column's cells; the Laplace
        evidence understates the spread of item difficulties seen through 1-2 cells)."""
        n, m = problem.n, problem.m
        t, b, g = slice(1, 1 + n), slice(1 + n, 1 + n + m), slice(1 + n + m, problem.size)
        row = _evidence_scale(w[t], var[t], self.row, self.weights)
        weights = (_ROW_DF + 1) / (_ROW_DF + (w[t] ** 2 + var[t]) / row**2)
        cells = problem.cells
        offset = problem.eta(w) - w[b][cells.cols]
        col = grid_scale(grid_loglik(offset, cells.cols, cells.y, m), self.col, _HYPER_A, _HYPER_B)
        cov = _evidence_scale(w[g], var[g], self.cov, np.ones(problem.k)) if problem.k else self.cov
        return _Scales(weights, row, col, cov)


def _evidence_scale(
    est: NDArray[np.float64], var: NDArray[np.float64], tau: float, weights: NDArray[np.float64]
) -> float:
    """MacKay's evidence update of a Gaussian prior's scale under an inverse-gamma hyperprior
    on τ² (shape ``_HYPER_A``, scale ``_HYPER_B``): (Σ λ est² + 2b) / (n_eff + 2a + 2), with
    n_eff = n − Σ λ var/τ² the number of well-determined parameters."""
    effective = max(len(est) - float(np.sum(weights * var)) / tau**2, 0.0)
    total = float(np.sum(weights * est**2))
    return float(np.sqrt((total + 2 * _HYPER_B) / (effective + 2 * _HYPER_A + 2)))
