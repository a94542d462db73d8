"""The spread estimator on small and degenerate grids (issue 37, class 7): a result with a
warning or a clear error, never a numerical traceback; the block move's fallback where the
Hessian is not positive definite is exact and changes nothing where it is."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from scipy.special import expit, log_expit

from steadyeval import stats
from steadyeval.stats import _irt_gibbs, _irt_posterior
from steadyeval.studies.spread import generate_formats
from steadyeval.studies.spread._irt_design import stratified_cells
from steadyeval.studies.spread._irt_search import search_summary, thompson_search

ONE_HOT = np.eye(3)


def _grid(name: str) -> tuple[list[int], list[int], list[int], int, int]:
    rng = np.random.default_rng(0)
    rows, cols = np.repeat(np.arange(10), 3).tolist(), rng.integers(0, 20, 30).tolist()
    return {
        "one item": ([0], [0], [1], 1, 1),
        "one item, three formats": ([0, 1, 2], [0, 0, 0], [1, 0, 1], 3, 1),
        "two items, one format": ([0, 0], [0, 1], [1, 0], 1, 2),
        "two items": ([0, 1], [0, 1], [1, 0], 2, 2),
        "full 2x2": ([0, 0, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1], 2, 2),
        "full 2x2 all correct": ([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1], 2, 2),
        "all correct": (rows, cols, [1] * 30, 10, 20),
        "all wrong": (rows, cols, [0] * 30, 10, 20),
        "one format of 100": ([0] * 5, [5, 6, 7, 8, 9], [0, 0, 1, 0, 0], 100, 12),
        "one format of 100, all correct": ([0] * 5, [5, 6, 7, 8, 9], [1] * 5, 100, 12),
    }[name]


def _covariates(kind: str, n: int) -> Any:
    return {
        "none": None,
        "constant": np.ones((n, 2)),
        "one-hot": ONE_HOT[np.arange(n) % 3],
        "no columns": np.zeros((n, 0)),
    }[kind]


GRIDS = [
    "one item",
    "one item, three formats",
    "two items, one format",
    "two items",
    "full 2x2",
    "full 2x2 all correct",
    "all correct",
    "all wrong",
    "one format of 100",
    "one format of 100, all correct",
]


@pytest.mark.parametrize("covariates", ["none", "constant", "one-hot", "no columns"])
@pytest.mark.parametrize("grid", GRIDS)
def test_degenerate_grids_give_a_result(grid: str, covariates: str) -> None:
    rows, cols, y, n, m = _grid(grid)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = stats.fit_irt(stats.IrtCells.of(rows, cols, y, n, m), _covariates(covariates, n))
        dist = stats.irt_distribution(fit, n_draws=20, seed=0)
    for values in (dist.accuracy, dist.quantiles, dist.quantile_low, dist.quantile_high):
        assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))
    assert np.all(dist.quantile_low <= dist.quantile_high)
    assert np.all(np.isfinite(dist.effect_sd))
    messages = [str(w.message) for w in caught if w.category is stats.StatsWarning]
    assert all(w.category is stats.StatsWarning for w in caught), [str(w.message) for w in caught]
    same = len(set(y)) == 1
    alike = ("every observed cell", "every cell of the")  # (the second: all of them observed)
    assert any(t.startswith(alike) for t in messages) == same
    assert any("only one of the" in t and " rows " in t for t in messages) == (
        n > 1 and len(set(rows)) == 1
    )


def test_one_format_with_the_grammar_covariates_on_every_seed() -> None:
    """The first pass of `study spread --method search`: the default format's five cells
    among 100 formats with the grammar's one-hot covariates. The Newton proposal jumps to
    where every cell is saturated (p(1 - p) underflows; the intercept's prior is flat), and
    the Hessian there was not positive definite: LinAlgError on every seed tried."""
    x = np.asarray([g.covariates() for g in generate_formats(100, 0)])
    cells = stats.IrtCells.of([0] * 5, [5, 6, 7, 8, 9], [0, 0, 1, 0, 0], 100, 12)
    fit = stats.fit_irt(cells, x)
    for seed in range(3):
        with pytest.warns(stats.StatsWarning, match="only one of the 100 rows"):
            dist = stats.irt_distribution(fit, n_draws=50, seed=seed)
        assert np.all(np.isfinite(dist.quantiles))
        assert 0 <= dist.quantiles[0] <= dist.quantiles[-1] <= 1


def test_the_fallback_factor_floors_only_what_is_not_positive_definite() -> None:
    spd = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(_irt_gibbs._proposal_factor(spd), np.linalg.cholesky(spd))
    singular = np.array([[0.0, 0.0], [0.0, 31.0]])  # the intercept's curvature underflowed
    chol = _irt_gibbs._proposal_factor(singular)
    floored = chol @ chol.T
    assert np.all(np.linalg.eigvalsh(floored) > 0)
    np.testing.assert_allclose(floored, np.diag([31.0 * _irt_gibbs._FLOOR, 31.0]))


def _matrix(seed: int) -> tuple[stats.IrtFit, int]:
    rng = np.random.default_rng(seed)
    n_f, n_i = 40, 30
    x = np.eye(4)[rng.integers(0, 4, n_f)]
    theta = x @ rng.normal(0, 1, 4) + rng.normal(0, 0.5, n_f)
    p = expit(0.3 + theta[:, None] + rng.normal(0, 1, n_i)[None, :])
    y = (rng.random((n_f, n_i)) < p).astype(float)
    rows, cols = stratified_cells(n_f, n_i, 100, seed=seed)
    return stats.fit_irt(stats.IrtCells.of(rows, cols, y[rows, cols], n_f, n_i), x), seed


def test_draws_are_unchanged_where_the_hessian_is_positive_definite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fit, seed = _matrix(3)
    floored: list[int] = []
    real = _irt_gibbs._proposal_factor

    def plain(hess: np.ndarray) -> np.ndarray:
        return np.linalg.cholesky(hess)  # raises where the fallback would step in

    def counting(hess: np.ndarray) -> np.ndarray:
        try:
            np.linalg.cholesky(hess)
        except np.linalg.LinAlgError:
            floored.append(1)
        return real(hess)

    monkeypatch.setattr(_irt_gibbs, "_proposal_factor", plain)
    before = _irt_gibbs.gibbs_draws(fit, 20, np.random.default_rng(seed))
    monkeypatch.setattr(_irt_gibbs, "_proposal_factor", counting)
    after = _irt_gibbs.gibbs_draws(fit, 20, np.random.default_rng(seed))
    assert not floored
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_floored_proposal_keeps_the_block_move_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """The block move with every proposal built by the fallback (a floor far above the
    Hessian, so the proposal is not Newton's, and its centre depends on the point) still
    leaves the intercept's conditional posterior invariant: its mean and s.d. over many
    moves match the exact ones, computed by quadrature."""
    rows, cols, y = [0, 0, 0, 0], [0, 1, 2, 3], [1.0, 0.0, 1.0, 1.0]
    fit = stats.fit_irt(stats.IrtCells.of(rows, cols, y, 1, 4))
    chain = _irt_gibbs._Chain(fit)
    state = chain.start(fit)
    state.theta[:] = 0.0
    offset = np.array([0.4, -0.3, 0.0, 0.8])  # the columns' effects, held fixed
    state.beta = offset.copy()

    def floored(hess: np.ndarray) -> np.ndarray:
        vals, vecs = np.linalg.eigh(hess)
        return np.linalg.cholesky((vecs * np.maximum(vals, 3.0 + vals**2)) @ vecs.T)

    monkeypatch.setattr(_irt_gibbs, "_proposal_factor", floored)
    rng = np.random.default_rng(0)
    mus = np.empty(20_000)
    for k in range(len(mus)):
        eta = state.mu[0] + state.theta[chain.rows] + state.beta[chain.cols]
        chain._block(state, eta, rng)
        mus[k] = state.mu[0]
    grid = np.linspace(-15, 15, 6001)
    sign = 2 * np.asarray(y) - 1
    log_post = log_expit(sign[None, :] * (grid[:, None] + offset[None, :])).sum(axis=1)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = float(w @ grid)
    sd = float(np.sqrt(w @ (grid - mean) ** 2))
    assert np.mean(mus) == pytest.approx(mean, abs=0.1 * sd)
    assert np.std(mus) == pytest.approx(sd, rel=0.08)


def test_the_chunk_size_never_changes_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    fit, _ = _matrix(5)
    whole = stats.irt_distribution(fit, n_draws=60, seed=1, sampler="laplace")
    monkeypatch.setattr(_irt_posterior, "_CHUNK_CELLS", 7 * 40 * 30)  # 7 draws a chunk
    chunked = stats.irt_distribution(fit, n_draws=60, seed=1, sampler="laplace")
    np.testing.assert_array_equal(whole.quantile_draws, chunked.quantile_draws)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: stats.IrtCells.of([0.5], [0], [1], 2, 2), "integer indices"),
        (lambda: stats.IrtCells.of(["a"], [0], [1], 2, 2), "integer indices"),
        (lambda: stats.IrtCells.of([0], [0], [1], 2.0, 2), "n_rows must be an integer"),
        (lambda: stats.IrtCells.of([0], [0], [1], 10**5, 10**5), "over the estimator's limit"),
        (
            lambda: stats.IrtCells.of([0], [0], [1], 100, 19_901),
            r"100 rows \(formats\) \+ 19,901 columns \(items\) is over the estimator's limit of 20,000",
        ),
        (
            lambda: stats.IrtCells.of([0], [0], [1], 6_001, 2),
            r"6,001 rows \(formats\) is over the estimator's limit of 6,000",
        ),
        (lambda: stats.IrtCells.of([0], [0], [np.nan], 2, 2), "only 0 and 1"),
        (
            lambda: stats.fit_irt(stats.IrtCells.of([0], [0], [1], 2, 2), [[1e200], [0.0]]),
            "at most 1e\\+06",
        ),
        (
            lambda: stats.fit_irt(stats.IrtCells.of([0], [0], [1], 2, 2), [["a"], ["b"]]),
            "covariates must be an array of numbers",
        ),
        (lambda: search_summary(np.zeros(0, np.intp), np.zeros(0), 3, (1, 1)), "no cells"),
        (
            lambda: thompson_search(
                lambda r, c: [1.0] * len(r), 3, 4, 8, batch=2, prior_strength=0.0
            ),
            "prior_strength > 0",
        ),
        (lambda: stratified_cells(3, 3, 2, exclude=np.zeros((2, 2), bool)), "exclude must"),
        (
            lambda: stats.irt_distribution(
                stats.fit_irt(stats.IrtCells.of([0, 1], [0, 1], [1, 0], 2, 2)), n_draws=0
            ),
            "n_draws must be an integer >= 1",
        ),
        (
            lambda: stats.irt_distribution(
                stats.fit_irt(stats.IrtCells.of([0, 1], [0, 1], [1, 0], 2, 2)), n_draws=10**9
            ),
            "ask for fewer draws",
        ),
        (
            lambda: stats.irt_distribution(
                stats.fit_irt(stats.IrtCells.of([0, 1], [0, 1], [1, 0], 2, 2)), levels=(5, 150)
            ),
            "levels must be percentages",
        ),
    ],
)
def test_bad_estimator_input_is_a_stats_input_error(call: Any, match: str) -> None:
    with pytest.raises(stats.StatsInputError, match=match):
        call()


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_every_cell_observed_and_alike_is_exact_not_uncertain(value: float) -> None:
    """Every cell of the matrix observed and all correct (or all wrong): the accuracies are
    the data's own, so the warning says so instead of asking for more cells."""
    rows, cols = np.divmod(np.arange(12), 4)
    with pytest.warns(stats.StatsWarning) as caught:
        dist = stats.irt_distribution(
            stats.fit_irt(stats.IrtCells.of(rows, cols, np.full(12, value), 3, 4)),
            n_draws=20,
            seed=0,
        )
    assert np.all(dist.accuracy == value) and np.all(dist.quantile_high == value)
    text = " ".join(str(w.message) for w in caught)
    word = "correct" if value else "wrong"
    assert f"every cell of the 3 × 4 matrix is observed and {word}" in text
    assert f"every row's accuracy is {value:.0%}" in text and "observe more" not in text
