"""The spread study's analysis, from the results table and the design facts alone."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._errors import ConfigError
from ...stats import IrtCells, StatsWarning, fit_irt, irt_distribution
from ._irt_search import search_summary

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["analyze_spread", "model_cells"]


def model_cells(
    table: pa.Table, info: Mapping[str, Any], model: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The observed (format, item) cells of ``model``: rows, cols, correct, and prompts
    (first row of each format, for examples). A sampled cell (several samples) counts once,
    by its first sample; an unscored answer (``correct`` null) counts as wrong."""
    fmt_index = {f["name"]: k for k, f in enumerate(info["formats"])}
    item_index = {i: k for k, i in enumerate(info["items"])}
    cols = table.select(["model", "condition", "item_id", "correct", "sample_index", "prompt"])
    rows, its, ys = [], [], []
    prompts = [""] * len(fmt_index)
    seen = set()
    for rec in cols.to_pylist():
        if rec["model"] != model or rec["condition"] not in fmt_index:
            continue
        key = (rec["condition"], rec["item_id"])
        if key in seen:
            continue
        seen.add(key)
        if rec["item_id"] not in item_index:
            raise ConfigError(f"results row of item {rec['item_id']!r}: not an item of the design")
        f = fmt_index[rec["condition"]]
        rows.append(f)
        its.append(item_index[rec["item_id"]])
        ys.append(1.0 if rec["correct"] else 0.0)
        prompts[f] = prompts[f] or rec["prompt"]
    return np.asarray(rows, dtype=np.intp), np.asarray(its, dtype=np.intp), np.asarray(ys), prompts


def _per_format(
    info: Mapping[str, Any], dist: Any, rows: np.ndarray, y: np.ndarray
) -> list[dict[str, Any]]:
    n_obs = np.bincount(rows, minlength=len(info["formats"]))
    n_correct = np.bincount(rows, weights=y, minlength=len(info["formats"]))
    return [
        {
            "format": f["name"],
            "estimate": float(dist.accuracy[k]),
            "low": float(dist.accuracy_low[k]),
            "high": float(dist.accuracy_high[k]),
            "observed": int(n_obs[k]),
            "observed_correct": int(n_correct[k]),
        }
        for k, f in enumerate(info["formats"])
    ]


def _model_analysis(table: pa.Table, info: Mapping[str, Any], model: str) -> dict[str, Any]:
    rows, cols, y, prompts = model_cells(table, info, model)
    n_f, n_i = len(info["formats"]), len(info["items"])
    if len(y) == 0:
        raise ConfigError(f"model {model!r} has no scored cells in the results table")
    cells = IrtCells.of(rows, cols, y, n_f, n_i)
    x = info.get("covariates")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StatsWarning)
        fit = fit_irt(cells, np.asarray(x) if x else None)
        dist = irt_distribution(
            fit,
            confidence=float(info["confidence"]),
            n_draws=int(info["draws"]),
            seed=int(info["seed"]),
        )
    # what the cells cannot tell (all correct, one format observed, ...): shown with the result
    notes = list(dict.fromkeys(str(w.message) for w in caught if w.category is StatsWarning))
    for w in caught:
        if w.category is not StatsWarning:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    per_format = _per_format(info, dist, rows, y)
    best = int(np.argmax(dist.accuracy))
    worst = int(np.argmin(dist.accuracy))
    out: dict[str, Any] = {
        "model": model,
        "cells": len(y),
        "cells_total": n_f * n_i,
        "formats_observed": len(np.unique(rows)),
        # how far formats and items differ (posterior mean s.d. of their effects, logits)
        "tau_format": dist.effect_sd[0],
        "tau_item": dist.effect_sd[1],
        "quantiles": [
            {"level": lv, "estimate": float(e), "low": float(lo), "high": float(hi)}
            for lv, e, lo, hi in zip(
                dist.levels, dist.quantiles, dist.quantile_low, dist.quantile_high, strict=True
            )
        ],
        "spread": dict(zip(("estimate", "low", "high"), dist.spread, strict=True)),
        "distribution": [float(v) for v in dist.sorted_accuracy],
        "per_format": per_format,
        "best": {**per_format[best], "prompt": prompts[best]},
        "worst": {**per_format[worst], "prompt": prompts[worst]},
        "observed_mean": float(y.mean()),
        "notes": notes,
    }
    if info["method"] == "search":
        out["search"] = _search(info, rows, y, prompts)
    return out


def _search(
    info: Mapping[str, Any], rows: np.ndarray, y: np.ndarray, prompts: list[str]
) -> dict[str, Any]:
    """Thompson-search result: the Beta posterior means of the formats evaluated."""
    first = rows == 0
    batch = int(info["batch"])
    default_y = y[first][:batch]
    strength = 2.0  # as thompson_search's default prior_strength
    p0 = (float(default_y.sum()) + 0.5) / (len(default_y) + 1.0)
    prior = (p0 * strength, (1 - p0) * strength)
    best, worst, mean, pulls, succ = search_summary(rows, y, len(info["formats"]), prior)
    names = [f["name"] for f in info["formats"]]

    def one(k: int) -> dict[str, Any]:
        return {
            "format": names[k],
            "posterior_mean": float(mean[k]),
            "cells": int(pulls[k]),
            "correct": int(succ[k]),
            "prompt": prompts[k],
        }

    return {
        "prior_mean": p0,
        "best": one(best),
        "worst": one(worst),
        "spread": float(mean[best] - mean[worst]),
        "formats_evaluated": int((pulls > 0).sum()),
    }


def analyze_spread(table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
    """Per model: the estimated distribution of accuracy over all formats (per-format
    estimates with intervals, quantiles with intervals, spread, best and worst format with
    an example prompt, the observed cells) and, for a search, the search's best and worst."""
    models = sorted(set(table.column("model").to_pylist()))
    return {"models": [_model_analysis(table, info, m) for m in models]}
