"""The published PromptEval estimator (Maia Polo et al., NeurIPS 2024), written here from the
paper's description, as the benchmark's baseline.

Model: P(Y_fi = 1) = σ(ψ_f·θ − β_i) with ψ_f the format's features: the one-hot identity
("PE-Rasch"), or the one-hot identity next to discrete format covariates ("PE-discrete");
items one-hot. Fitted as an L2-regularised logistic regression (the paper uses
scikit-learn's ``LogisticRegression``; here its objective with C = 1, intercept
unpenalised, minimised with L-BFGS). A format's accuracy is then estimated on all items:
(Σ observed y + Σ unobserved σ(η̂)) / n_items; the distribution and its quantiles are those
of these per-format estimates. The paper gives no intervals. Plain averaging ("avg") is the
per-format mean of the observed cells.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import expit


def _design(
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    n_f: int,
    n_i: int,
    x: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    k = 0 if x is None else x.shape[1]
    d = np.zeros((len(rows), 1 + n_f + n_i + k))
    at = np.arange(len(rows))
    d[:, 0] = 1.0
    d[at, 1 + rows] = 1.0
    d[at, 1 + n_f + cols] = 1.0
    if x is not None:
        d[:, 1 + n_f + n_i :] = x[rows]
    return d


def prompteval(
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    y: NDArray[np.float64],
    shape: tuple[int, int],
    covariates: NDArray[np.float64] | None = None,
    c: float = 1.0,
) -> NDArray[np.float64]:
    """Per-format accuracy estimates (PE-Rasch, or PE-discrete with ``covariates``)."""
    n_f, n_i = shape
    d = _design(rows, cols, n_f, n_i, covariates)
    prec = np.full(d.shape[1], 1.0 / c)
    prec[0] = 0.0

    def loss(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = d @ w
        val = float(np.sum(np.logaddexp(0.0, eta) - y * eta)) + 0.5 * float(np.sum(prec * w * w))
        return val, d.T @ (expit(eta) - y) + prec * w

    w = minimize(loss, np.zeros(d.shape[1]), jac=True, method="L-BFGS-B").x
    full = _design(
        np.repeat(np.arange(n_f), n_i), np.tile(np.arange(n_i), n_f), n_f, n_i, covariates
    )
    p = expit(full @ w).reshape(n_f, n_i)
    p[rows, cols] = y
    return np.asarray(p.mean(axis=1))


def plain_average(rows: NDArray[np.intp], y: NDArray[np.float64], n_f: int) -> NDArray[np.float64]:
    """Per-format mean of the observed cells (a format with none gets the overall mean)."""
    tot = np.bincount(rows, weights=y, minlength=n_f)
    cnt = np.bincount(rows, minlength=n_f)
    return np.where(cnt > 0, tot / np.maximum(cnt, 1), y.mean())
