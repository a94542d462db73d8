"""PromptEval as its released code runs it (Maia Polo et al., NeurIPS 2024), written here
from a reading of that code, next to bench/spread_baseline.py's reading of the paper.

Source read: GitHub felipemaiapolo/prompteval at c238d6473f2e (2024-12-06; MIT). References
are file:line there; the paper's experiments are ``prompteval/dist_evaluation.py``, which
runs, per (task, model, seed), ``Baseline`` ("avg"), ``PromptEval()`` ("PE-Rasch") and, for
each covariate set X in ``[disc, emb, emb_ft]``, ``PromptEval(X=X)`` ("PE-<X>") and
``PromptEval(X=X, logreg=True)`` ("PE-<X>-logreg") (dist_evaluation.py:41-52), in the
method order of paper_results.npz.

What every variant shares:

- The fit is scikit-learn's ``LogisticRegression(C=reg, solver="liblinear",
  fit_intercept=False, random_state=0)`` with ``reg = 1e2`` (methods.py:16, 43): the L2
  penalty is ½‖w‖² on *every* coefficient (no free intercept), the loss weighted by C = 100
  (a N(0, 100) prior), where spread_baseline uses C = 1 with a free intercept.
- When every observed label is the same, one label, at ``RandomState(0).choice(n)``, is set
  to ``1 - median`` before fitting (methods.py:34-38), so liblinear gets two classes.
- Design rows are the observed cells in row-major order (format, then item), features
  [format covariates | item covariates] (``GenXY``, methods.py:381-410).
- Prediction: σ of the fitted logit (clipped to ±30, methods.py:413-424) on unobserved
  cells, the observed 0/1 kept on observed cells (``get_Y_hat``, methods.py:135-146 and
  213-224); a format's accuracy is the mean of its row over all items (methods.py:276, 280).

The variants (functions below, each ``f(rows, cols, y, shape, covariates=None)`` like
``spread_baseline.prompteval``, returning per-format accuracies):

- ``pe_rasch`` ("PE-Rasch"): ``ExtendedRaschModel`` with X = Z = identity
  (methods.py:88-101): format one-hot and item one-hot, the last item's column dropped and
  no intercept (methods.py:107-108); logit = θ_format + β_item with β_last = 0
  (methods.py:125-127).
- ``pe_discrete`` ("PE-discrete"): X = ``pca_filter(disc)`` (create_data.py:177-187): PCA
  with scikit-learn's defaults (centred, all components, no whitening) and only the
  components whose explained-variance ratio exceeds 1e-5 kept (utils.py:30-42). X *replaces*
  the format one-hot (no per-format effect); items one-hot, all of them, no intercept
  (methods.py:109-112); logit = X·γ + β_item (methods.py:128-130). ``check_multicolinearity``
  (utils.py:45-59) asserts the filtered X has full rank (true by construction).
- ``pe_discrete_logreg`` ("PE-discrete-logreg"): ``LogReg`` (methods.py:174-211): features
  [X | 1] (the item columns cut off, methods.py:198-200), the column of ones penalised like
  the rest; logit = X·γ + b, the same on every item of a format (methods.py:209).

In the paper, ``disc`` are counts read off the template text (casing, line breaks, special
characters, spaces, framing words: get_features.py:45-100); here the harness's one-hot
grammar features take their place, through the same ``pca_filter``. Centring makes each
feature's one-hot block sum to zero, so the filter drops one direction per feature (the
collinearity a raw one-hot has with the item one-hot).

Not here: a "PE-Rasch-logreg" is never run (``logreg=True`` only with covariates,
dist_evaluation.py:47-52; ``LogReg`` without X would add the last format's coefficient to
every format, methods.py:209); the embedding variants (EmbPT, EmbFT) need the templates'
text. The paper's cells come from ``StratSample`` (methods.py:323-378): repeatedly the
format with the fewest cells (ties at random), then its unseen item with the fewest cells
(ties at random), one ``RandomState(seed)`` per call, larger budgets extending the cells of
smaller ones (methods.py:262-264). The benchmark gives every method the same cells from its
own stratified sampler instead (as balanced over formats and items), so only the
estimators differ. The paper's "avg" is (Σy + 1e-10) / (n + 1e-10) per format
(methods.py:316-317): a format with no cells would get 1.0, never the case at the budgets
run here, where it equals ``spread_baseline.plain_average``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

#: methods.py:16 (``LogisticRegression(reg=1e2)``, passed as scikit-learn's C).
REG = 1e2
#: utils.py:30 (``pca_filter(X, pca_tol=1e-5)``).
PCA_TOL = 1e-5

Estimator = Callable[..., NDArray[np.float64]]


def pca_filter(x: NDArray[np.float64], tol: float = PCA_TOL) -> NDArray[np.float64]:
    """PCA scores of ``x`` (centred), the directions with explained-variance ratio <= tol
    dropped. Constant covariates give a (n, 0) array."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] == 0 or np.ptp(x, axis=0).max() == 0:
        return np.zeros((x.shape[0], 0))
    pca = PCA().fit(x)
    return np.asarray(pca.transform(x)[:, pca.explained_variance_ratio_ > tol])


def _cells(
    rows: NDArray[np.intp], cols: NDArray[np.intp], y: NDArray[np.float64], shape: tuple[int, int]
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """The observed cells in row-major order (GenXY's order), checked."""
    rows, cols = np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
    y = np.asarray(y, dtype=np.float64)
    n_f, n_i = shape
    if not len(rows) == len(cols) == len(y) or len(y) == 0:
        raise ValueError(
            f"rows, cols, y: equal lengths >= 1 expected; got {len(rows)}, {len(cols)}, {len(y)}"
        )
    if rows.min() < 0 or rows.max() >= n_f or cols.min() < 0 or cols.max() >= n_i:
        raise ValueError(f"a cell lies outside the shape {shape}")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("y must be 0/1")
    order = np.lexsort((cols, rows))
    rows, cols, y = rows[order], cols[order], y[order]
    flat = rows * n_i + cols
    if np.any(flat[1:] == flat[:-1]):
        raise ValueError("a cell is observed twice (PromptEval's mask holds one value a cell)")
    return rows, cols, y


def _fit(features: NDArray[np.float64], labels: NDArray[np.float64]) -> NDArray[np.float64]:
    """methods.py:25-44: liblinear, C = REG, no intercept; one class gets one label flipped."""
    labels = labels.copy()
    if np.var(labels) == 0:
        labels[np.random.RandomState(0).choice(len(labels))] = 1 - np.median(labels)
    model = LogisticRegression(C=REG, solver="liblinear", fit_intercept=False, random_state=0)
    return np.asarray(model.fit(features, labels).coef_, dtype=np.float64).ravel()


def _accuracy(
    logits: NDArray[np.float64],
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    y: NDArray[np.float64],
) -> NDArray[np.float64]:
    """get_Y_hat + row mean: σ(logit) where unobserved, the observed value where observed."""
    p = 1.0 / (1.0 + np.exp(-np.clip(logits, -30.0, 30.0)))
    p[rows, cols] = y
    return np.asarray(p.mean(axis=1))


def _onehot(index: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    out = np.zeros((len(index), n))
    out[np.arange(len(index)), index] = 1.0
    return out


def pe_rasch(
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    y: NDArray[np.float64],
    shape: tuple[int, int],
    covariates: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """PE-Rasch as run: format and item one-hot, the last item's column dropped, all
    penalised (C = 100), no intercept. ``covariates`` is ignored (the signature is shared)."""
    rows, cols, y = _cells(rows, cols, y, shape)
    n_f, n_i = shape
    w = _fit(np.hstack([_onehot(rows, n_f), _onehot(cols, n_i)[:, :-1]]), y)
    beta = np.append(w[n_f:], 0.0)
    return _accuracy(w[:n_f, None] + beta[None, :], rows, cols, y)


def _covariates(covariates: NDArray[np.float64] | None, n_f: int) -> NDArray[np.float64]:
    if covariates is None:
        raise ValueError("this variant needs the format covariates")
    x = np.asarray(covariates, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != n_f:
        raise ValueError(f"covariates must be (n_formats, k) = ({n_f}, k); got {x.shape}")
    return pca_filter(x)


def pe_discrete(
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    y: NDArray[np.float64],
    shape: tuple[int, int],
    covariates: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """PE-discrete as run: PCA-filtered format covariates (no format one-hot) and item
    one-hot (all items), all penalised (C = 100), no intercept."""
    rows, cols, y = _cells(rows, cols, y, shape)
    n_f, n_i = shape
    x = _covariates(covariates, n_f)
    k = x.shape[1]
    w = _fit(np.hstack([x[rows], _onehot(cols, n_i)]), y)
    return _accuracy((x @ w[:k])[:, None] + w[None, k:], rows, cols, y)


def pe_discrete_logreg(
    rows: NDArray[np.intp],
    cols: NDArray[np.intp],
    y: NDArray[np.float64],
    shape: tuple[int, int],
    covariates: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """PE-discrete-logreg as run: PCA-filtered format covariates and a column of ones, all
    penalised (C = 100); no item effects (one probability a format)."""
    rows, cols, y = _cells(rows, cols, y, shape)
    n_f, n_i = shape
    x = _covariates(covariates, n_f)
    k = x.shape[1]
    w = _fit(np.hstack([x[rows], np.ones((len(rows), 1))]), y)
    logits = np.repeat((x @ w[:k] + w[k])[:, None], n_i, axis=1)
    return _accuracy(logits, rows, cols, y)


#: The variants, by the paper's names; those needing covariates are marked.
VARIANTS: dict[str, tuple[Estimator, bool]] = {
    "PE-Rasch": (pe_rasch, False),
    "PE-discrete": (pe_discrete, True),
    "PE-discrete-logreg": (pe_discrete_logreg, True),
}
