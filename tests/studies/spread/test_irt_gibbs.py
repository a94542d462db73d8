"""The full-Bayes (Gibbs) posterior of the sparse estimator, against the Laplace one."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_expit

from steadyeval.stats import StatsInputError
from steadyeval.stats._irt import IrtCells, fit_irt, irt_distribution
from steadyeval.stats._irt_gibbs import _Chain, _State, gibbs_draws
from steadyeval.studies.spread._irt_design import stratified_cells


def _additive(seed: int, n_f: int, n_i: int, tau_row: float, tau_col: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, tau_row, n_f)
    beta = rng.normal(0, tau_col, n_i)
    return (rng.random((n_f, n_i)) < expit(0.2 + theta[:, None] + beta[None, :])).astype(float)


def _w1(est: np.ndarray, true: np.ndarray) -> float:
    return float(np.mean(np.abs(np.sort(est) - np.sort(true))))


def test_gibbs_integrates_the_item_scale_out_where_the_mode_cannot_see_it() -> None:
    """About 1.5 cells per format and widely spread items: the empirical-Bayes mode takes
    the item scale near its hyperprior (the formats absorb the items' effects); the
    sampled item effects spread much wider, toward the 2.5 logits drawn, and the
    quantiles' posterior intervals cover the truth (25 of 30 here; true 90% intervals,
    were they independent, would cover fewer than 23 of 30 with probability 0.8%)."""
    covered = []
    for seed in range(6):
        y = _additive(seed, 100, 60, tau_row=0.8, tau_col=2.5)
        rows, cols = stratified_cells(*y.shape, 150, seed=seed)
        fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], *y.shape))
        assert fit.tau_col < 1.3
        _, _, beta = gibbs_draws(fit, 100, np.random.default_rng(seed))
        assert beta.std(axis=1).mean() > fit.tau_col + 0.3
        dist = irt_distribution(fit, n_draws=400, seed=seed)
        # two chains of different lengths: equal up to Monte Carlo error
        assert dist.effect_sd[1] == pytest.approx(beta.std(axis=1).mean(), abs=0.4)
        assert dist.effect_sd[1] > fit.tau_col + 0.3  # reported: the drawn spread, not the mode's
        tq = np.percentile(y.mean(axis=1), [5, 25, 50, 75, 95])
        covered += list((dist.quantile_low <= tq) & (tq <= dist.quantile_high))
    assert np.mean(covered) >= 0.75


def test_gibbs_draws_are_seeded_and_carry_the_covariates_part() -> None:
    rng = np.random.default_rng(4)
    n_f, n_i = 40, 30
    x = (np.arange(n_f) % 2).astype(float)[:, None]  # half the formats share a choice
    theta = 1.5 * x[:, 0] + rng.normal(0, 0.3, n_f)
    p = expit(-0.5 + theta[:, None] + rng.normal(0, 1.0, n_i)[None, :])
    y = (rng.random((n_f, n_i)) < p).astype(float)
    rows, cols = stratified_cells(n_f, n_i, 240, seed=0)
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], n_f, n_i), x)
    mu, th, beta = gibbs_draws(fit, 60, np.random.default_rng(1))
    assert mu.shape == (60,) and th.shape == (60, n_f) and beta.shape == (60, n_i)
    again = gibbs_draws(fit, 60, np.random.default_rng(1))
    np.testing.assert_array_equal(th, again[1])
    gap = th[:, x[:, 0] == 1].mean() - th[:, x[:, 0] == 0].mean()
    assert 0.8 < gap < 2.5  # the shared choice's +1.5 logits, seen through 6 cells per format


def test_sampler_is_validated() -> None:
    y = _additive(0, 10, 10, 1.0, 1.0)
    rows, cols = stratified_cells(10, 10, 30, seed=0)
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], 10, 10))
    with pytest.raises(StatsInputError, match="sampler must be 'gibbs' or 'laplace'"):
        irt_distribution(fit, sampler="nuts")


def _grammar_matrix(seed: int, n_f: int, n_i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Formats whose effects are mostly their grammar choices (4 one-hot dimensions of 3
    levels, 0.7 logit per level) plus their own 0.4; items spread 1.5 logits."""
    rng = np.random.default_rng(seed)
    choice = rng.integers(0, 3, (n_f, 4))
    x = np.concatenate([np.eye(3)[choice[:, d]] for d in range(4)], axis=1)
    theta = x @ rng.normal(0, 0.7, 12) + rng.normal(0, 0.4, n_f)
    p = expit(0.3 + theta[:, None] + rng.normal(0, 1.5, n_i)[None, :])
    return (rng.random((n_f, n_i)) < p).astype(float), x, theta


def test_covariates_share_the_format_variance_instead_of_adding_to_it() -> None:
    """About 1.5 cells per format, 12 covariate levels: the format variance is split
    between the covariates and the formats' own part (one prior on the total), so the
    drawn format effects spread about as the true ones do (1.15× here), and the estimated
    accuracy distribution is about as close to the truth as without the covariates (W1
    1.07×). Separate priors on the bulk and on each coefficient, the first version, drew
    them 1.5× too wide, with W1 1.6× that without covariates."""
    ratios, w_cov, w_none = [], [], []
    for seed in range(3):
        y, x, theta = _grammar_matrix(seed, 120, 60)
        rows, cols = stratified_cells(*y.shape, 180, seed=seed)
        cells = IrtCells.of(rows, cols, y[rows, cols], *y.shape)
        with_x = irt_distribution(fit_irt(cells, x), n_draws=100, seed=seed)
        ratios.append(with_x.effect_sd[0] / theta.std())
        w_cov.append(_w1(with_x.sorted_accuracy, y.mean(axis=1)))
        none = irt_distribution(fit_irt(cells), n_draws=100, seed=seed)
        w_none.append(_w1(none.sorted_accuracy, y.mean(axis=1)))
    assert 0.6 < np.mean(ratios) < 1.35, ratios
    assert np.mean(w_cov) <= 1.25 * np.mean(w_none), (w_cov, w_none)


def _chain_of(seed: int, covariates: bool) -> tuple[_Chain, _State]:
    y, x, _ = _grammar_matrix(seed, 40, 30)
    rows, cols = stratified_cells(*y.shape, 160, seed=seed)
    fit = fit_irt(IrtCells.of(rows, cols, y[rows, cols], *y.shape), x if covariates else None)
    chain = _Chain(fit)
    return chain, chain.start(fit)


def _eta(chain: _Chain, s: _State) -> np.ndarray:
    row = s.theta + chain.x @ s.gamma
    return np.asarray(s.mu[0] + row[chain.rows] + s.beta[chain.cols])


@pytest.mark.parametrize("covariates", [False, True])
def test_the_intercept_and_covariates_block_move_draws_its_exact_conditional(
    covariates: bool,
) -> None:
    """The Newton-proposal Metropolis-Hastings move of (μ, γ), repeated with everything
    else fixed, draws the intercept's conditional: its mean and s.d. against the exact
    ones computed on a fine grid (the covariates fixed at their draws' mean for that)."""
    chain, s = _chain_of(0, covariates)
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(3000):
        chain._block(s, _eta(chain, s), rng)
        draws.append(np.concatenate([s.mu, s.gamma]))
    w = np.asarray(draws)[500:]
    s.gamma = w[:, 1:].mean(axis=0)
    rest = _eta(chain, s) - s.mu[0]
    grid = np.linspace(-6, 6, 4001)
    log_post = np.array([np.sum(log_expit(chain.sign * (rest + g))) for g in grid])
    dens = np.exp(log_post - log_post.max())
    mean = float(np.sum(grid * dens) / dens.sum())
    sd = float(np.sqrt(np.sum((grid - mean) ** 2 * dens) / dens.sum()))
    if covariates:  # μ given γ at its mean is narrower than μ's marginal over γ
        assert abs(w[:, 0].mean() - mean) < 0.5 * sd
    else:
        assert w[:, 0].mean() == pytest.approx(mean, abs=0.1 * sd)
        assert w[:, 0].std() == pytest.approx(sd, rel=0.1)
    assert 0.5 < np.mean(np.any(np.diff(w, axis=0) != 0, axis=1)) < 1  # moves, not always


def test_the_items_prior_tail_follows_the_items() -> None:
    """The items' Student-t prior: its degrees of freedom, drawn given the item effects,
    are small for heavy-tailed effects (t with 2 d.o.f.) and large for normal ones."""
    chain, s = _chain_of(1, False)
    rng = np.random.default_rng(2)
    found = {}
    for name, beta in (
        ("heavy", rng.standard_t(2, 400)),
        ("normal", rng.normal(0, 1, 400)),
    ):
        s.beta, s.lam, s.nu = beta, np.ones(400), 8.0
        nus = []
        for _ in range(300):
            chain._column_scales(s, rng)
            nus.append(s.nu)
        found[name] = float(np.median(nus[50:]))
    assert found["heavy"] <= 3 and found["normal"] >= 16, found
