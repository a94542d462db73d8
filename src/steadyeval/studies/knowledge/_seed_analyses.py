"""Three analyses of Hendrycks et al.'s paper that the other modules do not compute: the
per-subject gap between confidence and accuracy (their Figure 8), accuracy against question
length (their Figure 12) and UnifiedQA's input with and without the end marker (their
appendix A.3), each from the results table alone.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ... import stats
from ...results import ResultsFrame
from ...scoring import LETTER_LOGPROB, softmax
from ._comparisons import _int, _paired, _wide
from ._per_condition import _interval, _pearson

#: Resamples of each subject's gap interval (57 subjects × every condition).
GAP_RESAMPLES = 2_000
#: Question length bins, in characters: ``[edge_i, edge_{i+1})``, the last one open. 280 (a
#: tweet) is the seed's threshold; the bins halve and double from it.
LENGTH_EDGES: tuple[int, ...] = (0, 70, 140, 280, 560, 1120)
#: Above this many characters the seed reports a slightly positive correlation between
#: length and the true answer's probability.
LONG_QUESTION = 280
#: The fewest subjects whose clustered standard error the length slope uses (with fewer
#: clusters a clustered SE is too small; the ordinary one is used and the trend says so).
MIN_CLUSTERS = 10
#: The templates of UnifiedQA's input without and with the end marker.
END_MARKER_PAIR = ("unifiedqa", "unifiedqa-eos")


def _confidence_gaps(answered: pd.DataFrame, seed: int) -> list[dict[str, Any]]:
    """Per (model, condition) whose every row has a confidence, per subject: mean
    confidence, accuracy, and their difference with a paired bootstrap interval."""
    out: list[dict[str, Any]] = []
    cols = ["model", "condition", "subject", "confidence", "correct"]
    for (model, cond), g in answered[cols].groupby(["model", "condition"], observed=True):
        conf_all = g["confidence"].to_numpy(dtype=float)
        if np.isnan(conf_all).any():
            continue
        for subject, s in g.groupby("subject", sort=True, observed=True):
            conf = s["confidence"].to_numpy(dtype=float)
            corr = s["correct"].to_numpy(dtype=float)
            row: dict[str, Any] = {
                "model": model,
                "condition": cond,
                "subject": subject,
                "n": int(conf.size),
                "confidence": float(conf.mean()),
                "accuracy": float(corr.mean()),
                "gap": float(conf.mean() - corr.mean()),
                "low": None,
                "high": None,
            }
            if conf.size >= 2:
                boot = stats.paired_bootstrap(conf, corr, n_resamples=GAP_RESAMPLES, seed=seed)
                row.update(gap=boot.estimate, low=boot.low, high=boot.high)
            out.append(row)
    return out


def _true_label_probability(results: ResultsFrame, rows: NDArray[np.int64]) -> NDArray[Any]:
    """Per row in ``rows`` (table positions): the softmax of its option log-probabilities
    at the gold option's displayed position; NaN where the row has no scores or no gold."""
    table = results.table.take(rows).select(["option_logprobs", "option_source", "gold_options"])
    out = np.full(rows.size, math.nan)
    cols = [table.column(c).to_pylist() for c in table.column_names]
    for i, (lps, src, gold) in enumerate(zip(*cols, strict=True)):
        if not lps or not gold:
            continue
        shown = list(src) if src else list(range(len(lps)))
        if gold[0] not in shown or len(shown) != len(lps):
            continue
        if not np.isfinite(lps).all():
            continue
        out[i] = softmax(lps)[shown.index(gold[0])]
    return out


def _bins(chars: NDArray[Any], correct: NDArray[Any], prob: NDArray[Any]) -> list[dict[str, Any]]:
    out = []
    edges = [*LENGTH_EDGES, math.inf]
    for lo, hi in itertools.pairwise(edges):
        inside = (chars >= lo) & (chars < hi)
        n = int(inside.sum())
        if not n:
            continue
        p = prob[inside]
        out.append(
            {
                "low_chars": lo,
                "high_chars": None if math.isinf(hi) else int(hi),
                "n": n,
                **_interval(int(correct[inside].sum()), n),
                "true_label_probability": None if np.isnan(p).all() else float(np.nanmean(p)),
            }
        )
    return out


def _logistic_slope(
    chars: NDArray[Any], correct: NDArray[Any], subject: NDArray[Any]
) -> tuple[dict[str, Any], float | None, int | None, str | None]:
    """Logit(correct) = a + b·log2(chars): b with its 95% interval and its Wald p-value,
    the SE clustered by subject when there are :data:`MIN_CLUSTERS` subjects or more (the
    number of clusters is returned; None: the ordinary SE); None with the reason when the
    fit is not defined."""
    none = {"estimate": None, "low": None, "high": None}
    x = np.log2(np.maximum(chars, 1.0))
    if correct.size < 3:
        return none, None, None, "fewer than 3 questions"
    if np.all(correct == correct[0]):
        return none, None, None, "every question is answered the same way (all right or all wrong)"
    if np.all(x == x[0]):
        return none, None, None, "every question has the same length"
    import statsmodels.api as sm

    design = sm.add_constant(x)
    groups = np.unique(subject, return_inverse=True)[1]
    n_groups = int(groups.max()) + 1
    clustered = n_groups >= MIN_CLUSTERS
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sm.Logit(correct, design)
            fit = (
                model.fit(disp=0, cov_type="cluster", cov_kwds={"groups": groups})
                if clustered
                else model.fit(disp=0)
            )
        b, se, p = float(fit.params[1]), float(fit.bse[1]), float(fit.pvalues[1])
    except Exception as exc:  # statsmodels: perfect separation, singular matrix
        return none, None, None, f"the logistic fit failed ({type(exc).__name__})"
    if not (math.isfinite(b) and math.isfinite(se)):
        return none, None, None, "the logistic fit did not converge (separated data)"
    z = 1.959963984540054
    ci = {"estimate": b, "low": b - z * se, "high": b + z * se}
    return ci, p, n_groups if clustered else None, None


def _length(answered: pd.DataFrame, results: ResultsFrame) -> list[dict[str, Any]]:
    """Accuracy against question length per (model, condition), from ``question_chars``
    (absent in a table written before it: no rows)."""
    if not results.has("question_chars"):
        return []
    chars_all = results.floats("question_chars")
    orig = answered[answered["rotation"] == 0]
    out: list[dict[str, Any]] = []
    for (model, cond), g in orig.groupby(["model", "condition"], observed=True):
        rows = g.index.to_numpy(dtype=np.int64)
        chars = chars_all[rows]
        keep = ~np.isnan(chars)
        if not keep.any():
            continue
        rows, chars = rows[keep], chars[keep]
        correct = g["correct"].to_numpy(dtype=float)[keep]
        subject = g["subject"].cat.codes.to_numpy()[keep]
        letter = (g["scoring"].astype(str) == LETTER_LOGPROB).to_numpy()[keep]
        prob = np.full(rows.size, math.nan)
        if letter.any():
            prob[letter] = _true_label_probability(results, rows[letter])
        slope, pvalue, clusters, note = _logistic_slope(chars, correct, subject)
        long_q = chars > LONG_QUESTION
        out.append(
            {
                "model": model,
                "condition": cond,
                "n": int(rows.size),
                "bins": _bins(chars, correct, prob),
                "slope": slope,
                "pvalue": pvalue,
                "n_clusters": clusters,
                "long_questions": _pearson(chars[long_q].tolist(), prob[long_q].tolist()),
                "note": note,
            }
        )
    return out


def _end_marker(orig: pd.DataFrame, seed: int) -> list[dict[str, Any]]:
    """UnifiedQA's input with and without ``</s>``, paired by item, per model × scoring ×
    shots that ran both. An item whose prompt was cut under either template is left out
    (counted in ``n_truncated``): a right cut removes the typed ``</s>``, so its two inputs
    may be the same."""
    pair = orig[orig["template"].isin(END_MARKER_PAIR)]
    out: list[dict[str, Any]] = []
    for (model, scoring, k), g in pair.groupby(["model", "scoring", "n_shots"], observed=True):
        if set(g["template"].unique()) != set(END_MARKER_PAIR):
            continue
        wide, cut = _wide(g, "template", list(END_MARKER_PAIR), ["correct", "truncated"])
        both = ~np.isnan(wide).any(axis=1)  # items asked both ways
        whole = ~(np.nan_to_num(cut) > 0).any(axis=1)
        mat = wide[both & whole]
        if not mat.shape[0]:
            continue
        diff: dict[str, Any] = {"estimate": float(mat[:, 1].mean() - mat[:, 0].mean())}
        diff.update(low=None, high=None)
        if mat.shape[0] >= 2:
            boot = stats.paired_bootstrap(mat[:, 1], mat[:, 0], seed=seed)
            diff.update(estimate=boot.estimate, low=boot.low, high=boot.high)
        first, second = (pd.Series(mat[:, i].astype(bool)) for i in (0, 1))
        out.append(
            {
                "model": model,
                "scoring": scoring,
                "n_shots": _int(k),
                "n": int(mat.shape[0]),
                "n_truncated": int((both & ~whole).sum()),
                "without_marker": float(mat[:, 0].mean()),
                "with_marker": float(mat[:, 1].mean()),
                "difference": diff,
                "mcnemar": _paired(first, second),
            }
        )
    return out
