"""The spread study's analysis, from the results frame and the design facts alone."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._errors import ConfigError
from ..._log import timed_steps
from ...stats import StatsWarning, estimate_spread
from ._irt_search import search_summary
from ._types import (
    ExtremeFormat,
    FitDiagnostic,
    FormatEstimate,
    ModelSpread,
    QuantileEstimate,
    SearchFormat,
    SearchResult,
    SpreadAnalysis,
    SpreadDesign,
    SpreadEstimate,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ...results import ResultsFrame
    from ...stats import SpreadDiagnostic

__all__ = ["SWEEPS", "analyze_spread", "model_cells"]

log = logging.getLogger(__name__)
#: What the estimator's progress counts (its Gibbs sweeps: 300 + 2 per draw).
SWEEPS = "sampler sweeps"

#: the columns the spread study reads
COLUMNS = ("model", "condition", "item_id", "correct", "prompt")


def _lookup(values: list[Any], index: Mapping[Any, int], codes: np.ndarray) -> np.ndarray:
    """Per row, the position in ``index`` of its value (-1: not there, or null)."""
    table = np.array([index.get(v, -1) for v in values] + [-1], dtype=np.intp)
    found: np.ndarray = table[codes]  # a null's code -1 reads the last slot
    return found


def model_cells(
    results: ResultsFrame, design: SpreadDesign | Mapping[str, Any], model: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """The observed (format, item) cells of ``model``, in the order of the table's rows:
    rows, cols, correct, and per format an example prompt (its first non-empty one; "" when
    the format has no cell, None when its prompts are null). A sampled cell (several
    samples) counts once, by its first row; an unscored answer (``correct`` null) counts as
    wrong."""
    results.require(COLUMNS, reader="the spread analysis")
    design = SpreadDesign.from_json(design, source="design")
    formats = {f.name: k for k, f in enumerate(design.formats)}
    items = {i: k for k, i in enumerate(design.items)}
    model_codes, models = results.codes("model")
    cond_codes, conds = results.codes("condition")
    item_codes, item_ids = results.codes("item_id")
    fmt = _lookup(conds, formats, cond_codes)
    mine = (fmt >= 0) & (model_codes == (models.index(model) if model in models else -2))
    rows = np.flatnonzero(mine)
    # the first row of each (format, item id) cell, in row order
    key = fmt[rows] * (len(item_ids) + 1) + (item_codes[rows] + 1)
    rows = rows[np.sort(np.unique(key, return_index=True)[1])]
    its = _lookup(item_ids, items, item_codes)[rows]
    if (its < 0).any():
        code = int(item_codes[rows[int(np.argmax(its < 0))]])
        item = item_ids[code] if code >= 0 else None
        raise ConfigError(f"results row of item {item!r}: not an item of the design")
    f = fmt[rows]
    y = (results.bools("correct")[rows] == 1).astype(float)
    prompts: list[str | None] = [""] * len(formats)
    for k, text in zip(f.tolist(), results.values("prompt", rows=rows), strict=True):
        prompts[k] = prompts[k] or text
    return f, its, y, prompts


def _per_format(
    design: SpreadDesign, dist: Any, rows: np.ndarray, y: np.ndarray
) -> list[FormatEstimate]:
    n_obs = np.bincount(rows, minlength=len(design.formats))
    n_correct = np.bincount(rows, weights=y, minlength=len(design.formats))
    return [
        FormatEstimate(
            format=f.name,
            estimate=float(dist.accuracy[k]),
            low=float(dist.accuracy_low[k]),
            high=float(dist.accuracy_high[k]),
            observed=int(n_obs[k]),
            observed_correct=int(n_correct[k]),
        )
        for k, f in enumerate(design.formats)
    ]


def _model_analysis(results: ResultsFrame, design: SpreadDesign, model: str) -> ModelSpread:
    rows, cols, y, prompts = model_cells(results, design, model)
    n_f, n_i = len(design.formats), len(design.items)
    if len(y) == 0:
        raise ConfigError(f"model {model!r} has no scored cells in the results table")
    x = design.covariates
    doing = f"estimating {n_f} formats × {n_i} items from {len(y)} cells ({design.draws} draws)"
    with (
        timed_steps(log, f"spread of {model}", doing, done="estimated", unit=SWEEPS) as steps,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", StatsWarning)
        estimate = estimate_spread(
            rows,
            cols,
            y,
            (n_f, n_i),
            np.asarray(x) if x else None,
            seed=design.seed,
            draws=design.draws,
            confidence=design.confidence,
            progress=steps,
        )
    dist = estimate.distribution
    # what the cells cannot tell (all correct, one format observed, ...) and when not to
    # trust the estimate (the fit check): shown with the result
    notes = list(dict.fromkeys(str(w.message) for w in caught if w.category is StatsWarning))
    if estimate.diagnostic.message:
        notes.append(estimate.diagnostic.message)
    for w in caught:
        if w.category is not StatsWarning:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    per_format = _per_format(design, dist, rows, y)
    best = int(np.argmax(dist.accuracy))
    worst = int(np.argmin(dist.accuracy))
    spread_est, spread_low, spread_high = dist.spread
    return ModelSpread(
        model=model,
        cells=len(y),
        cells_total=n_f * n_i,
        formats_observed=len(np.unique(rows)),
        # how far formats and items differ (posterior mean s.d. of their effects, logits)
        tau_format=dist.effect_sd[0],
        tau_item=dist.effect_sd[1],
        quantiles=[
            QuantileEstimate(level=lv, estimate=float(e), low=float(lo), high=float(hi))
            for lv, e, lo, hi in zip(
                dist.levels, dist.quantiles, dist.quantile_low, dist.quantile_high, strict=True
            )
        ],
        spread=SpreadEstimate(estimate=spread_est, low=spread_low, high=spread_high),
        distribution=[float(v) for v in dist.sorted_accuracy],
        per_format=per_format,
        best=ExtremeFormat(**per_format[best].model_dump(), prompt=prompts[best]),
        worst=ExtremeFormat(**per_format[worst].model_dump(), prompt=prompts[worst]),
        observed_mean=float(y.mean()),
        notes=notes,
        search=_search(design, rows, y, prompts) if design.method == "search" else None,
        diagnostic=_diagnostic(estimate.diagnostic),
    )


def _finite(value: float) -> float | None:
    """``value``, or None where it is NaN or infinite (summary.json holds no NaN)."""
    return float(value) if np.isfinite(value) else None


def _diagnostic(d: SpreadDiagnostic) -> FitDiagnostic:
    return FitDiagnostic(
        format_sd=d.format_sd,
        format_sd_low=d.format_sd_low,
        format_sd_high=d.format_sd_high,
        width_ratio=_finite(d.width_ratio),
        cells_per_format=d.cells_per_format,
        share_two_cells=d.share_two_cells,
        prior_driven=d.prior_driven,
        prior_mass=_finite(d.prior_mass),
        ppc_format_p=_finite(d.ppc_format_p),
        ppc_item_p=_finite(d.ppc_item_p),
        ppc_interaction_p=_finite(d.ppc_interaction_p),
        misfit=d.misfit,
        message=d.message,
    )


def _search(
    design: SpreadDesign, rows: np.ndarray, y: np.ndarray, prompts: list[str | None]
) -> SearchResult:
    """Thompson-search result: the Beta posterior means of the formats evaluated."""
    first = rows == 0
    batch = design.batch
    default_y = y[first][:batch]
    strength = 2.0  # as thompson_search's default prior_strength
    p0 = (float(default_y.sum()) + 0.5) / (len(default_y) + 1.0)
    prior = (p0 * strength, (1 - p0) * strength)
    best, worst, mean, pulls, succ = search_summary(rows, y, len(design.formats), prior)
    names = [f.name for f in design.formats]

    def one(k: int) -> SearchFormat:
        return SearchFormat(
            format=names[k],
            posterior_mean=float(mean[k]),
            cells=int(pulls[k]),
            correct=int(succ[k]),
            prompt=prompts[k],
        )

    return SearchResult(
        prior_mean=p0,
        best=one(best),
        worst=one(worst),
        spread=float(mean[best] - mean[worst]),
        formats_evaluated=int((pulls > 0).sum()),
    )


def analyze_spread(
    results: ResultsFrame | pa.Table, design: SpreadDesign | Mapping[str, Any]
) -> SpreadAnalysis:
    """Per model (sorted): the estimated distribution of accuracy over all formats
    (per-format estimates with intervals, quantiles with intervals, spread, best and worst
    format with an example prompt, the observed cells) and, for a search, the search's best
    and worst (see :class:`SpreadAnalysis`). ``design``: the design facts (a
    :class:`SpreadDesign`, or ``summary.json["design"]``)."""
    from ...results import ResultsFrame as Frame

    results = Frame.of(results)  # a pyarrow Table is read as a frame
    results.require(COLUMNS, reader="the spread analysis")
    facts = SpreadDesign.from_json(design, source="design")
    models = results.codes("model", order="sorted", nulls=False)[1]
    return SpreadAnalysis(models=[_model_analysis(results, facts, str(m)) for m in models])
