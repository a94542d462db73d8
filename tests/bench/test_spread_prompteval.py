"""bench/spread_prompteval.py: PromptEval as its released code runs it (issue 41)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from ._script import load_bench_script

pe = load_bench_script("spread_prompteval")

# A 6 formats × 5 items matrix, 13 observed cells, two one-hot grammar features (3 and 2
# levels). The expected values are the per-format accuracies that PromptEval's own code
# (felipemaiapolo/prompteval c238d64, prompteval/methods.py and utils.pca_filter, run
# unchanged with scikit-learn 1.9.1) gave on these cells.
Y = np.array(
    [
        [1, 0, 1, 1, 0],
        [0, 0, 1, 0, 0],
        [1, 1, 1, 1, 0],
        [0, 1, 0, 1, 1],
        [1, 1, 1, 0, 1],
        [0, 0, 0, 0, 1],
    ],
    dtype=float,
)
X = np.hstack([np.eye(3)[[0, 1, 2, 0, 1, 2]], np.eye(2)[[0, 0, 1, 1, 0, 1]]])
ROWS = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5])
COLS = np.array([0, 1, 2, 1, 2, 0, 3, 4, 2, 3, 0, 4, 4])
THEIRS = {
    "PE-Rasch": [
        0.77531302289,
        0.774962587557,
        0.444500212487,
        0.376984823624,
        0.818367548867,
        0.818235312988,
    ],
    "PE-discrete": [
        0.790981098323,
        0.794808787893,
        0.486353703833,
        0.367240079499,
        0.80056691376,
        0.676601342832,
    ],
    "PE-discrete-logreg": [
        0.665921943431,
        0.649702482401,
        0.69914106735,
        0.502314157659,
        0.849702482401,
        0.798282134699,
    ],
}


@pytest.mark.parametrize("name", list(THEIRS))
def test_matches_their_code(name: str) -> None:
    estimate, _ = pe.VARIANTS[name]
    order = np.random.default_rng(0).permutation(len(ROWS))  # cell order does not matter
    r, c = ROWS[order], COLS[order]
    got = estimate(r, c, Y[r, c], Y.shape, X)
    assert got.shape == (6,)
    np.testing.assert_allclose(got, THEIRS[name], atol=1e-6)


def test_rasch_is_a_direct_sklearn_fit() -> None:
    """Format one-hot and item one-hot less the last item, C = 100, liblinear, no
    intercept; observed cells kept, σ(θ_f + β_i) elsewhere."""
    n_f, n_i = Y.shape
    design = np.hstack([np.eye(n_f)[ROWS], np.eye(n_i)[COLS][:, :-1]])
    fit = LogisticRegression(C=100.0, solver="liblinear", fit_intercept=False, random_state=0)
    w = fit.fit(design, Y[ROWS, COLS]).coef_.ravel()
    p = 1 / (1 + np.exp(-(w[:n_f, None] + np.append(w[n_f:], 0.0)[None, :])))
    p[ROWS, COLS] = Y[ROWS, COLS]
    got = pe.pe_rasch(ROWS, COLS, Y[ROWS, COLS], Y.shape)
    np.testing.assert_allclose(got, p.mean(axis=1), atol=1e-10)


def test_pca_filter_drops_the_one_hot_collinearity() -> None:
    """Centred, each feature's one-hot block loses a direction: 3 + 2 levels → 3 columns,
    spanning the centred covariates."""
    z = pe.pca_filter(X)
    assert z.shape == (6, 3)
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-12)
    centred = X - X.mean(axis=0)
    assert np.linalg.matrix_rank(np.hstack([z, centred])) == 3
    assert np.allclose(z, PCA().fit_transform(X)[:, :3])
    assert pe.pca_filter(np.ones((4, 2))).shape == (4, 0)  # constant covariates: none left


@pytest.mark.parametrize("name", list(THEIRS))
def test_one_class_and_unseen_format_and_item(name: str) -> None:
    """All observed cells 0 (liblinear needs two classes: PromptEval flips one label before
    fitting, methods.py:34-38); format 5 and item 4 have no cells. Observed cells keep their
    0; every estimate is a probability."""
    estimate, _ = pe.VARIANTS[name]
    r, c = np.array([0, 1, 2, 3, 4, 0]), np.array([0, 1, 2, 3, 0, 1])
    got = estimate(r, c, np.zeros(6), (6, 5), X)
    assert got.shape == (6,)
    assert np.all((got > 0) & (got < 1))
    full = estimate(np.repeat(np.arange(6), 5), np.tile(np.arange(5), 6), Y.ravel(), (6, 5), X)
    np.testing.assert_allclose(full, Y.mean(axis=1))  # everything observed: the row means


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        pe.pe_rasch(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 0.0]), (2, 2))
    with pytest.raises(ValueError, match="covariates"):
        pe.pe_discrete(ROWS, COLS, Y[ROWS, COLS], Y.shape)
    with pytest.raises(ValueError, match="outside"):
        pe.pe_rasch(np.array([2]), np.array([0]), np.array([1.0]), (2, 2))
