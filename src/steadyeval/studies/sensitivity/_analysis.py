"""The study's analysis: everything computed from the results and ``design.info``, returned
as a :class:`SensitivityAnalysis`.

Scores are on a 0–1 scale (P@1 for probes, accuracy for tasks); the report renders points.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ...stats import Interval, StatsWarning, kendall_w, spread
from ._reference import authors_mean, authors_percent, authors_std
from ._stopwords import DEFAULT_STOP_WORDS
from ._tensor import (
    Correctness,
    adjusted_scores,
    draw_subsets,
    rank_consistency_regimes,
    sampled_adjusted_scores,
    template_scores,
)
from ._types import (
    Adjusted,
    IntervalEstimate,
    ModelAdjusted,
    ModelPreference,
    NotApplicable,
    PooledSpread,
    PromptPreference,
    RankConsistency,
    Rankings,
    Regime,
    RegimeConsistency,
    SensitivityAnalysis,
    SensitivityDesign,
    UnitAdjusted,
    UnitPreference,
    UnitRankings,
)
from ._verbalization import verbalization

if TYPE_CHECKING:
    import pyarrow as pa

    from ...results import ResultsFrame

__all__ = ["analyze_sensitivity", "analyze_tensor"]

Metric = Literal["P@1", "accuracy", "score"]
Unit = Literal["relation", "subject", "item", "unit"]


def _f(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def _pct_text(x: float) -> str:
    return f"{100 * x:.1f}%"


def _interval(i: Interval) -> IntervalEstimate:
    return IntervalEstimate(estimate=_f(i.estimate), low=_f(i.low), high=_f(i.high))


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(vals)) if vals else None


def _reference_std(cells: NDArray[np.float64], ddof: int) -> float:
    """The authors' std across templates on the 0–1 scale: ``cells`` (templates × facts,
    0/1 or a share of samples) as their rounded percentages, then their rounded std."""
    n_facts = cells.shape[1]
    return authors_std([authors_percent(k, n_facts) for k in cells.sum(axis=1)], ddof) / 100


def _reference_mean_std(stds: Sequence[float | None]) -> float | None:
    """The mean of the units' stds as the authors' table writes it, on the 0–1 scale."""
    mean = authors_mean(round(100 * v, 2) for v in stds if v is not None)
    return None if math.isnan(mean) else mean / 100


def _unit_row(
    c: Correctness, m: int, u: int, s: NDArray[np.float64], opts: Mapping[str, Any]
) -> UnitPreference:
    """Prompt preference of model ``m`` on unit ``u`` over the unit's templates (all of
    them, unless the design kept every template of relations with different counts)."""
    avail = c.templates_available(u)
    mine = s[avail]
    none = IntervalEstimate(estimate=None, low=None, high=None)
    max_p = avg_p = cps = none
    if avail.size >= 2:
        sp = spread(
            np.ascontiguousarray(c.cells[u][m][avail, 0, :].T),  # rows gather faster
            n_resamples=int(opts["n_resamples"]),
            seed=int(opts["seed"]),
        )
        max_p, avg_p, cps = _interval(sp.max_p), _interval(sp.avg_p), _interval(sp.cps)
    ddof = int(opts.get("ddof", 0))
    std: float | None = None
    if avail.size > ddof and opts.get("std_rounding") == "reference":
        std = _reference_std(c.cells[u][m][avail, 0, :], ddof)
    elif avail.size > ddof:
        std = _f(np.std(mine, ddof=ddof))
    return UnitPreference(
        scores=[_f(v) for v in s],
        std=std,
        best=float(mine.max()),
        worst=float(mine.min()),
        gap=float(mine.max() - mine.min()),
        best_template=c.templates[int(avail[np.argmax(mine)])],
        worst_template=c.templates[int(avail[np.argmin(mine)])],
        max_p=max_p,
        avg_p=avg_p,
        cps=cps,
        n_facts=int(c.cells[u].shape[3]),
        n_templates=None if avail.size == len(c.templates) else int(avail.size),
    )


def _prompt_preference(
    c: Correctness, scores: NDArray[np.float64], opts: Mapping[str, Any], notes: list[str]
) -> PromptPreference | NotApplicable:
    n_t = len(c.templates)
    ddof = int(opts.get("ddof", 0))
    if n_t < 2:
        notes.append("one template per unit: prompt preference is not applicable")
        return NotApplicable(reason="one template per unit")
    reference = opts.get("std_rounding") == "reference"
    per_unit: dict[str, dict[str, UnitPreference]] = {}
    per_model: dict[str, ModelPreference] = {}
    for m, model in enumerate(c.models):
        rows = [_unit_row(c, m, u, scores[m, u], opts) for u in range(len(c.units))]
        per_unit[model] = dict(zip(c.units, rows, strict=True))
        gaps = [r.gap for r in rows]
        stds = [r.std for r in rows]
        per_model[model] = ModelPreference(
            original=_mean([r.scores[0] for r in rows]),
            mean_std=_reference_mean_std(stds) if reference else _mean(stds),
            mean_gap=_mean(gaps),
            share_gap_above=float(np.mean([g > opts["gap"] + 1e-12 for g in gaps])),
            mean_max_p=_mean([r.max_p.estimate for r in rows]),
            mean_avg_p=_mean([r.avg_p.estimate for r in rows]),
            mean_cps=_mean([r.cps.estimate for r in rows]),
            mean_best=_mean([r.best for r in rows]),
            mean_worst=_mean([r.worst for r in rows]),
        )
    return PromptPreference(
        gap=opts["gap"],
        std_ddof=ddof,
        std_rounding="reference" if reference else "exact",
        per_model=per_model,
        per_unit=per_unit,
    )


def _pooled(c: Correctness, opts: Mapping[str, Any]) -> dict[str, PooledSpread] | None:
    """Templates shared by every unit (generic tasks): spread over all items pooled."""
    if len(c.templates) < 2:
        return None
    out = {}
    for m, model in enumerate(c.models):
        x = np.concatenate([cell[m, :, 0, :].T for cell in c.cells], axis=0)
        sp = spread(x, n_resamples=int(opts["n_resamples"]), seed=int(opts["seed"]))
        out[model] = PooledSpread(
            scores=[float(v) for v in sp.per_condition],
            std=_interval(sp.std),
            best_minus_worst=_interval(sp.best_minus_worst),
            max_p=_interval(sp.max_p),
            avg_p=_interval(sp.avg_p),
            cps=_interval(sp.cps),
            n_items=sp.n_items,
        )
    return out


def _ranks(values: NDArray[np.float64]) -> tuple[int, ...]:
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.arange(1, len(values) + 1)
    return tuple(int(r) for r in ranks)


def _rankings(
    c: Correctness, scores: NDArray[np.float64], notes: list[str]
) -> Rankings | NotApplicable:
    if len(c.models) < 2:
        return NotApplicable(reason="one model: no ranking to compare")
    if len(c.templates) < 2:
        return NotApplicable(reason="one template per unit")
    per_unit: dict[str, UnitRankings] = {}
    changed = 0
    undefined = 0
    for u, unit in enumerate(c.units):
        by_template = scores[:, u, c.templates_available(u)].T  # (templates, models)
        rankings = {_ranks(row) for row in by_template}
        changed += len(rankings) > 1
        if len(by_template) < 2:  # a relation with one template (every template kept)
            per_unit[unit] = UnitRankings(n_rankings=1, kendall_w=None, kendall_w_pvalue=None)
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StatsWarning)
            w = kendall_w(by_template)
        if caught:
            undefined += 1
        per_unit[unit] = UnitRankings(
            n_rankings=len(rankings), kendall_w=_f(w.statistic), kendall_w_pvalue=_f(w.pvalue)
        )
    if undefined:
        notes.append(
            f"Kendall's W is undefined (every template ties all models) on {undefined} of "
            f"{len(c.units)} units"
        )
    return Rankings(
        n_units=len(c.units),
        units_ranking_changes=changed,
        share_units_ranking_changes=changed / len(c.units),
        mean_kendall_w=_mean([r.kendall_w for r in per_unit.values()]),
        per_unit=per_unit,
    )


def _adjusted(
    c: Correctness,
    scores: NDArray[np.float64],
    weights: Mapping[str, Sequence[float]] | None,
    opts: Mapping[str, Any],
) -> Adjusted:
    exact = adjusted_scores(c, weights)
    sampled = sampled_adjusted_scores(
        c,
        k_templates=opts["k_templates"],
        k_names=opts["k_names"],
        seed=int(opts["seed"]),
        weights=weights,
    )
    per_unit = {
        model: {
            unit: UnitAdjusted(
                original=float(scores[m, u, 0]),
                exact=float(exact[m, u]),
                sampled=float(sampled[m, u]),
            )
            for u, unit in enumerate(c.units)
        }
        for m, model in enumerate(c.models)
    }
    per_model = {
        model: ModelAdjusted(
            original=float(scores[m, :, 0].mean()),
            mean_over_templates=float(np.nanmean(scores[m], axis=1).mean()),
            exact=float(exact[m].mean()),
            sampled=float(sampled[m].mean()),
        )
        for m, model in enumerate(c.models)
    }
    return Adjusted(
        weights="data" if weights is not None else "uniform",
        k_templates=opts["k_templates"] or len(c.templates),
        k_names=opts["k_names"] or c.n_names,
        per_model=per_model,
        per_unit=per_unit,
    )


def _consistency(
    c: Correctness,
    weights: Mapping[str, Sequence[float]] | None,
    opts: Mapping[str, Any],
    notes: list[str],
) -> RankConsistency | NotApplicable:
    if len(c.models) < 2:
        return NotApplicable(reason="one model: no ranking to compare")
    n_units = len(c.units)
    if n_units < 2:
        return NotApplicable(reason=f"{n_units} unit: no subsets to draw")
    size = int(opts["subset_size"])
    if size >= n_units:
        new = max(1, n_units // 2)
        notes.append(
            f"subset size {size} is not smaller than the number of units ({n_units}); used {new}"
        )
        size = new
    seed = int(opts["seed"])
    subsets = draw_subsets(n_units, int(opts["n_subsets"]), size, seed)
    regimes: list[Regime] = ["original", "random", "intervention"]
    sampled = opts["k_templates"] is not None or opts["k_names"] is not None
    if sampled:
        regimes.append("intervention_sampled")
    results = rank_consistency_regimes(
        c,
        subsets=subsets,
        seed=seed + 1,
        k_templates=opts["k_templates"],
        k_names=opts["k_names"],
        weights=weights,
        regimes=regimes,
    )
    out: dict[Regime, RegimeConsistency] = {}
    for name, r in results.items():
        # Fixed unit scores: the share of subsets on which two models tie (up to noise).
        ties = float(r.tied.mean()) if name in ("original", "intervention") else None
        out[name] = RegimeConsistency(
            tied_subsets=ties,
            overall=float(r.overall),
            per_model={m: float(v) for m, v in zip(c.models, r.per_model, strict=True)},
            modal_rank={m: int(v) for m, v in zip(c.models, r.modal_rank, strict=True)},
            modal_ranking={m: int(v) for m, v in zip(c.models, r.modal_ranking, strict=True)},
        )
    tied = out["original"].tied_subsets
    if tied:
        notes.append(
            f"models tie (to floating-point noise) on {_pct_text(tied)} of the subsets "
            "under the original templates; a tie ranks the earlier model first, which makes "
            "rankings look more consistent than they are"
        )
    return RankConsistency(n_subsets=len(subsets), subset_size=size, n_units=n_units, regimes=out)


def analyze_tensor(
    c: Correctness,
    options: Mapping[str, Any],
    *,
    weights: Mapping[str, Sequence[float]] | None = None,
    pooled: bool = False,
    consistency_units: Correctness | None = None,
    metric: Metric = "score",
    unit: Unit = "unit",
) -> SensitivityAnalysis:
    """Every analysis of the study on a correctness tensor (see :func:`analyze_sensitivity`).

    ``options`` holds the :class:`AnalysisOptions` fields (as ``to_dict()`` gives them).
    ``pooled`` adds the spread over all units' facts pooled (templates shared by all units);
    ``consistency_units`` is the tensor whose units rank consistency subsamples (default
    ``c``); ``metric`` and ``unit`` name the score and the unit in the report.
    """
    notes: list[str] = []
    scores = template_scores(c)
    prompt_preference = _prompt_preference(c, scores, options, notes)
    rankings = _rankings(c, scores, notes)
    verbal = verbalization(c, options.get("stop_words") or (), notes)
    adjusted = _adjusted(c, scores, weights, options)
    consistency = _consistency(consistency_units or c, weights, options, notes)
    spread_pooled = _pooled(c, options) if pooled else None
    if len(c.models) < 2:
        notes.append("one model: rankings and rank consistency are not applicable")
    return SensitivityAnalysis(
        models=list(c.models),
        units=list(c.units),
        templates=list(c.templates),
        n_names=c.n_names,
        n_facts=int(sum(cell.shape[3] for cell in c.cells)),
        prompt_preference=prompt_preference,
        rankings=rankings,
        verbalization=verbal,
        adjusted=adjusted,
        rank_consistency=consistency,
        pooled=spread_pooled,
        notes=notes,
        metric=metric,
        unit=unit,
    )


def analyze_sensitivity(
    results: ResultsFrame | pa.Table, design: SensitivityDesign | Mapping[str, Any]
) -> SensitivityAnalysis:
    """The study's analysis, from the results and the design facts only (a
    :class:`SensitivityDesign`, or ``summary.json["design"]``).

    Returns a :class:`SensitivityAnalysis`: ``prompt_preference`` (per model and unit: the
    score under every template, std across templates (``std_ddof``: 0 by default, as the
    authors' ``np.std``; 1 on request), best, worst, best−worst, MaxP/AvgP/CPS with bootstrap
    intervals; per model the means and the share of units whose gap exceeds ``gap``),
    ``rankings`` (units where the model ranking changes with the template; Kendall's W of
    the model rankings across templates), ``verbalization`` (per unit, the share of facts
    whose prediction is the same under every name of the subject, stop-word predictions
    skipped; per model the mean over units, and the pooled share as a secondary figure),
    ``adjusted`` (backdoor-adjusted scores, exact and sampled), ``rank_consistency`` (three
    regimes, per model and overall) and ``notes`` (what was not applicable, and why).
    """
    from ...results import ResultsFrame as Frame

    results = Frame.of(results)  # a pyarrow Table is read as a frame
    facts = SensitivityDesign.from_json(design, source="design")
    c = Correctness.from_results(results, facts)
    opts = dict(facts.analysis)
    if opts.get("stop_words") is None and facts.kind == "probes":
        opts["stop_words"] = list(DEFAULT_STOP_WORDS)  # a run from before the option
    metric, unit = facts.metric, facts.unit
    if unit == "item":  # units are single items: analyse them pooled
        return analyze_tensor(c.pooled(), opts, consistency_units=c, metric=metric, unit=unit)
    return analyze_tensor(
        c,
        opts,
        weights=facts.weights,
        pooled=facts.kind == "task",
        metric=metric,
        unit=unit,
    )
