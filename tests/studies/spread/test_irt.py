"""The sparse logistic estimator, the cell samplers and the Thompson search (pure arrays)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import expit

from steadyeval.stats import StatsInputError
from steadyeval.stats._irt import IrtCells, _Problem, fit_irt, irt_distribution, widen
from steadyeval.stats._irt_mixture import fit_row_mixture, gap, grid_loglik, grid_scale
from steadyeval.studies.spread._irt_design import adaptive_cells, stratified_cells
from steadyeval.studies.spread._irt_search import search_summary, thompson_search


def _matrix(seed: int, n_f: int = 40, n_i: int = 60, tau: float = 1.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, tau, n_f)
    beta = rng.normal(0, 1.0, n_i)
    return (rng.random((n_f, n_i)) < expit(0.3 + theta[:, None] + beta[None, :])).astype(float)


def test_gradient_and_hessian_match_finite_differences() -> None:
    rng = np.random.default_rng(0)
    rows, cols = stratified_cells(6, 5, 20, seed=1)
    cells = IrtCells.of(rows, cols, rng.integers(0, 2, 20), 6, 5)
    problem = _Problem(cells, rng.normal(size=(6, 2)))
    prec = rng.uniform(0.5, 2.0, problem.size)
    w = rng.normal(0, 0.5, problem.size)
    num = approx_fprime(w, lambda v: problem.objective(v, prec), 1e-6)
    np.testing.assert_allclose(problem.gradient(w, prec), num, atol=1e-4)
    hess = np.array(
        [approx_fprime(w, lambda v, k=k: problem.gradient(v, prec)[k], 1e-6) for k in range(len(w))]
    )
    # the block factorisation (Schur complement on the columns) against the dense Hessian
    factor = problem.factor(w, prec)
    g = rng.normal(size=len(w))
    np.testing.assert_allclose(factor.solve(g), np.linalg.solve(hess, g), rtol=1e-3, atol=1e-4)
    inverse = np.linalg.inv(hess)
    np.testing.assert_allclose(factor.diag_inverse(), np.diag(inverse), rtol=1e-3, atol=1e-5)
    draws = factor.draw(40_000, np.random.default_rng(1))
    np.testing.assert_allclose(np.cov(draws.T), inverse, atol=0.05)


def test_full_matrix_recovers_row_accuracies() -> None:
    y = _matrix(1)
    rows, cols = np.nonzero(np.ones_like(y))
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], *y.shape))
    dist = irt_distribution(fit, n_draws=100, seed=0)
    # every cell observed: the accuracy is the row mean, with no uncertainty left
    np.testing.assert_allclose(dist.accuracy, y.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(dist.quantiles, np.percentile(y.mean(axis=1), [5, 25, 50, 75, 95]))
    assert fit.tau_row > 0.6


def test_sparse_estimate_beats_plain_averaging_and_intervals_cover() -> None:
    covered, ours, avg = [], [], []
    for seed in range(6):
        y = _matrix(seed)
        rows, cols = stratified_cells(*y.shape, 160, seed=seed)
        cells = IrtCells.of(rows, cols, y[rows, cols], *y.shape)
        dist = irt_distribution(fit_irt(cells), n_draws=200, seed=seed)
        true = np.sort(y.mean(axis=1))
        tq = np.percentile(true, [5, 25, 50, 75, 95])
        covered += list((dist.quantile_low <= tq) & (tq <= dist.quantile_high))
        ours.append(np.mean(np.abs(dist.sorted_accuracy - true)))
        cnt = np.bincount(rows, minlength=y.shape[0])
        plain = np.bincount(rows, weights=y[rows, cols], minlength=y.shape[0]) / cnt
        avg.append(np.mean(np.abs(np.sort(plain) - true)))
    assert np.mean(ours) < 0.6 * np.mean(avg)
    assert np.mean(covered) >= 0.7


def test_calibrated_intervals_widen_the_posterior_ones_by_the_documented_factor() -> None:
    low, centre, high = (
        np.array([0.2, 0.5, 0.9]),
        np.array([0.3, 0.6, 0.95]),
        np.array([0.4, 0.8, 1.0]),
    )
    few_lo, few_hi = widen(low, centre, high, cells_per_row=1.0)  # factor 1.35
    np.testing.assert_allclose(few_lo, [0.165, 0.465, 0.8825])
    np.testing.assert_allclose(few_hi, [0.435, 0.87, 1.0])  # clipped to 1
    many_lo, many_hi = widen(low, centre, high, cells_per_row=10.0)  # factor 1.175
    np.testing.assert_allclose(many_lo, [0.1825, 0.4825, 0.89125])
    np.testing.assert_allclose(many_hi, [0.4175, 0.835, 1.0])
    y = _matrix(3)
    rows, cols = stratified_cells(*y.shape, 80, seed=3)  # 2 cells per row
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], *y.shape))
    raw = irt_distribution(fit, n_draws=100, seed=0, sampler="laplace", calibrate=False)
    cal = irt_distribution(fit, n_draws=100, seed=0, sampler="laplace")
    np.testing.assert_array_equal(cal.quantiles, raw.quantiles)  # same draws
    np.testing.assert_allclose(cal.quantiles, cal.quantile_draws.mean(axis=0))
    assert np.all(cal.quantile_low <= raw.quantile_low) and np.all(
        cal.quantile_high >= raw.quantile_high
    )
    ratio = (cal.quantile_high - cal.quantile_low) / (raw.quantile_high - raw.quantile_low)
    inner = (cal.quantile_low > 0) & (cal.quantile_high < 1)
    assert inner.sum() >= 3
    np.testing.assert_allclose(ratio[inner], 1.35)
    np.testing.assert_array_equal(cal.accuracy_low, raw.accuracy_low)  # per-row: not widened


def test_covariates_shape_checked_and_used() -> None:
    y = _matrix(2, n_f=20)
    rows, cols = stratified_cells(*y.shape, 100, seed=0)
    cells = IrtCells.of(rows, cols, y[rows, cols], *y.shape)
    with pytest.raises(StatsInputError, match="covariates must have shape"):
        fit_irt(cells, np.zeros((3, 2)))
    x = np.eye(20)[:, :3]
    fit = fit_irt(cells, x)
    assert fit.theta.shape == (20,)
    assert len(fit.mean) == 1 + 20 + 60 + 3


@pytest.mark.parametrize(
    ("rows", "cols", "y", "match"),
    [
        ([0], [0, 1], [1], "equal lengths"),
        ([5], [0], [1], "out of range"),
        ([0], [0], [2], "only 0 and 1"),
        ([], [], [], "no observed cells"),
    ],
)
def test_cells_validated(rows: list[int], cols: list[int], y: list[int], match: str) -> None:
    with pytest.raises(StatsInputError, match=match):
        IrtCells.of(rows, cols, y, 3, 3)


def test_stratified_cells_are_distinct_and_balanced() -> None:
    rows, cols = stratified_cells(37, 100, 400, seed=3)
    assert len(set(zip(rows.tolist(), cols.tolist(), strict=True))) == 400
    r, c = np.bincount(rows, minlength=37), np.bincount(cols, minlength=100)
    assert r.max() - r.min() <= 1 and c.max() - c.min() <= 1
    again = stratified_cells(37, 100, 400, seed=3)
    assert (again[0] == rows).all() and (again[1] == cols).all()
    full = stratified_cells(4, 5, 20, seed=0)
    assert len(set(zip(*full, strict=True))) == 20
    with pytest.raises(StatsInputError, match="budget"):
        stratified_cells(4, 5, 21, seed=0)


def test_adaptive_cells_go_to_the_least_certain_rows() -> None:
    y = _matrix(4, n_f=30)
    rows, cols = stratified_cells(*y.shape, 60, seed=0)
    extra_r, extra_c = stratified_cells(*y.shape, 200, seed=1)
    keep = extra_r < 5  # rows 0-4 are well observed
    rows, cols = np.concatenate([rows, extra_r[keep]]), np.concatenate([cols, extra_c[keep]])
    pairs = {(int(a), int(b)) for a, b in zip(rows, cols, strict=True)}
    rows = np.array([p[0] for p in pairs])
    cols = np.array([p[1] for p in pairs])
    dist = irt_distribution(fit_irt(IrtCells.of(rows, cols, y[rows, cols], *y.shape)), seed=0)
    taken = np.zeros(y.shape, dtype=bool)
    taken[rows, cols] = True
    new_r, new_c = adaptive_cells(dist, taken, 20, seed=0)
    assert not taken[new_r, new_c].any()
    assert not set(new_r.tolist()) & {0, 1, 2, 3, 4}


def test_thompson_search_finds_extremes_and_keeps_the_budget() -> None:
    rng = np.random.default_rng(5)
    acc = np.linspace(0.2, 0.8, 30)
    acc[7], acc[19] = 0.98, 0.02
    y = (rng.random((30, 100)) < acc[:, None]).astype(float)
    calls: list[int] = []

    def evaluate(rows: np.ndarray, cols: np.ndarray) -> list[float]:
        calls.append(len(cols))
        return list(y[rows, cols])

    res = thompson_search(evaluate, 30, 100, 600, batch=10, seed=0)
    assert sum(calls) == 600 == len(res.y)
    assert len(set(zip(res.rows.tolist(), res.cols.tolist(), strict=True))) == 600
    assert res.best == 7 and res.worst == 19
    np.testing.assert_array_equal(res.y, y[res.rows, res.cols])


def test_row_mixture_finds_broken_rows_and_their_posteriors_stay_low() -> None:
    rng = np.random.default_rng(7)
    n_f, n_i = 60, 80
    theta = rng.normal(0, 0.7, n_f)
    broken = np.arange(n_f) < 6
    theta[broken] -= 5.0
    beta = rng.normal(0, 1.0, n_i)
    y = (rng.random((n_f, n_i)) < expit(0.8 + theta[:, None] + beta[None, :])).astype(float)
    rows, cols = stratified_cells(n_f, n_i, 8 * n_f, seed=0)
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], n_f, n_i))
    mix = fit_row_mixture(fit)
    assert 0.03 < mix.weight_low < 0.3
    assert mix.centre[1] < mix.centre[0] - 2.5
    draws = mix.draw(200, np.random.default_rng(0))
    assert draws.shape == (200, n_f)
    assert draws[:, broken].mean() < draws[:, ~broken].mean() - 3
    # the mixture's rows sit further from the bulk than the Student-t fit's shrunk modes
    dist = irt_distribution(fit, n_draws=200, seed=0, sampler="laplace")
    plain = irt_distribution(fit, n_draws=200, seed=0, sampler="laplace", row_prior="fit")
    true_low = y[broken].mean()
    assert abs(dist.accuracy[broken].mean() - true_low) <= abs(
        plain.accuracy[broken].mean() - true_low
    )
    # the Gibbs sampler (default) samples the same two-component prior with its scales
    gibbs = irt_distribution(fit, n_draws=100, seed=0)
    assert abs(gibbs.accuracy[broken].mean() - true_low) < abs(
        plain.accuracy[broken].mean() - true_low
    )
    assert gibbs.accuracy[broken].max() < 0.1
    with pytest.raises(StatsInputError, match="row_prior"):
        irt_distribution(fit, row_prior="gaussian")


def test_gap_between_components_widens_with_cells_per_row() -> None:
    """The least distance (bulk s.d.) between the components: 1 up to 1.5 cells per row,
    4 from 2.5 on, linear in between; a fitted mixture keeps it."""
    assert gap(1.0) == gap(1.5) == 1.0
    assert gap(2.0) == pytest.approx(2.5)
    assert gap(2.5) == gap(10.0) == 4.0
    rng = np.random.default_rng(3)
    n_f, n_i = 40, 50
    y = (rng.random((n_f, n_i)) < expit(rng.normal(0, 1.0, n_f)[:, None])).astype(float)
    for per_row in (1, 4):
        rows, cols = stratified_cells(n_f, n_i, per_row * n_f, seed=0)
        mix = fit_row_mixture(fit_irt(IrtCells.of(rows, cols, y[rows, cols], n_f, n_i)))
        assert mix.centre[1] <= mix.centre[0] - gap(per_row) * mix.scale[0] + 1e-9


def test_grid_scale_recovers_the_spread_of_effects_seen_through_few_cells() -> None:
    """Three cells per unit: the fitted scale follows the true one (1.0 vs 2.5) within 20%,
    wherever it lies in the search range."""
    found = []
    for truth in (1.0, 2.5):
        rng = np.random.default_rng(3)
        units, per = 400, 3
        effect = rng.normal(0, truth, units)
        index = np.repeat(np.arange(units), per)
        offset = rng.normal(0, 0.5, units * per)
        y = (rng.random(units * per) < expit(offset + effect[index])).astype(float)
        found.append(grid_scale(grid_loglik(offset, index, y, units), 1.0, 5.0, 5.0))
        assert abs(found[-1] - truth) < 0.2 * truth, (truth, found[-1])
    assert found[1] > 2 * found[0]


def test_search_confirms_candidates_on_many_items() -> None:
    rng = np.random.default_rng(11)
    acc = rng.uniform(0.3, 0.7, 40)
    acc[3], acc[8] = 0.9, 0.88  # two close best rows
    y = (rng.random((40, 100)) < acc[:, None]).astype(float)
    res = thompson_search(lambda r, c: y[r, c], 40, 100, 800, batch=5, seed=0)
    assert len(res.y) == 800
    assert res.pulls[res.best] >= 50  # measured on many items, not one lucky batch
    assert res.best in (3, 8)
    two = thompson_search(lambda r, c: y[r, c], 40, 100, 800, batch=5, confirm=0.0, seed=0)
    assert len(two.y) == 800
    # the pick is by posterior bounds: one perfect batch does not beat a row measured on
    # many items with nearly the same mean (34/40)
    rows = np.array([0] * 5 + [1] * 40)
    ys = np.concatenate([np.ones(5), np.r_[np.ones(34), np.zeros(6)]])
    best, _, mean, _, _ = search_summary(rows, ys, 2, (1.0, 1.0))
    assert best == 1 and mean[0] > mean[1]
    # the best is not chosen among the worst side's candidates when those were measured on
    # more items (rows 2 and 3: broken formats confirmed on 60 items; row 1: 18/20)
    rows = np.array([0] * 5 + [1] * 20 + [2] * 60 + [3] * 60)
    ys = np.concatenate(
        [
            np.r_[np.ones(3), np.zeros(2)],
            np.r_[np.ones(18), np.zeros(2)],
            np.r_[np.ones(3), np.zeros(57)],
            np.zeros(60),
        ]
    )
    best, worst, _, _, _ = search_summary(rows, ys, 4, (1.0, 1.0))
    assert best == 1 and worst == 3
