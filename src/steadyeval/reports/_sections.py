"""Generic sections computed from any run's results table (and its summary)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import stats
from ..document import (
    Bar,
    BarChart,
    Block,
    Column,
    LineChart,
    Note,
    Paragraph,
    Point,
    Section,
    Series,
    Table,
)
from ..results import (
    RankConsistencyFacts,
    RankConsistencySetting,
    study_columns,
    summarize,
)
from ._context import ReportContext
from ._headline import accuracy_chart, headline_rows, headline_table, refusal_chart

__all__ = [
    "calibration_section",
    "headline_section",
    "rank_consistency_section",
    "shots_section",
    "spread_section",
]

_MAX_SERIES = 8


def headline_section(ctx: ReportContext) -> Section:
    """Accuracy with a Wilson interval per (model, condition), refusals, unmatched outputs;
    bars with intervals per model (and refusal bars when anything was refused)."""
    records = summarize(ctx.table)
    order = {(m, c): (i, j) for i, m in enumerate(ctx.models) for j, c in enumerate(ctx.conditions)}
    records.sort(key=lambda r: order.get((r["model"], r["condition"]), (1 << 30, 0)))
    metrics = [c for c in study_columns(ctx.table) if c.summary == "mean"]
    rows = headline_rows(ctx, records, [m.name for m in metrics])
    pct = f"{100 * ctx.options.confidence:g}%"
    blocks: list[Block] = [headline_table(rows, pct, metrics)]
    if ctx.labels:
        blocks.append(_labels_table(ctx))
    any_refused = any(r["refused"] for r in records)
    for model in ctx.models:
        blocks.append(accuracy_chart(model, rows, pct))
        if any_refused:
            mine = [r for r in records if r["model"] == model]
            blocks.append(refusal_chart(ctx, model, mine, pct))
    return Section.of("headline", "Headline results", blocks)


def _labels_table(ctx: ReportContext) -> Table:
    """Which condition each label stands for (the report shows every condition by one)."""
    source = f"the {ctx.study} study's" if ctx.study else "its study's"
    return Table(
        title="Condition labels",
        columns=(Column("shown as"), Column("condition (in results.parquet)")),
        rows=tuple((ctx.label(c), c) for c in ctx.conditions),
        note=f"Every part of this report shows a condition by {source} label for it.",
    )


#: Most matrix cells the spread bootstrap draws in total (resamples × items × conditions);
#: larger runs get fewer resamples (never under 200), and the report says so.
BOOTSTRAP_CELL_BUDGET = 200_000_000


def _resamples(wanted: int, cells: int) -> int:
    if cells * wanted <= BOOTSTRAP_CELL_BUDGET:
        return wanted
    return max(min(wanted, 200), BOOTSTRAP_CELL_BUDGET // max(cells, 1))


def _reps_text(used: set[int], wanted: int) -> str:
    if used <= {wanted}:
        return f"{wanted} resamples"
    shown = ", ".join(str(r) for r in sorted(used))
    return (
        f"{shown} resamples: fewer than the {wanted} asked for, to bound the time on this large run"
    )


def spread_section(ctx: ReportContext) -> Section | None:
    """How far accuracy moves across conditions, per model (``stats.spread``: worst, best,
    best − worst, MaxP, AvgP, CPS with bootstrap intervals over items)."""
    from ._agreement import outcome_matrix

    conditions = ctx.conditions
    if len(conditions) < 2:
        return None
    rows = []
    skipped = []
    used_reps: set[int] = set()
    for model in ctx.models:
        _, matrix = outcome_matrix(ctx.frame, model, "correct", conditions)
        present = [k for k in range(len(conditions)) if not np.all(np.isnan(matrix[:, k]))]
        sub = matrix[:, present]
        complete = sub[~np.isnan(sub).any(axis=1)]
        if len(present) < 2 or complete.shape[0] < 2:
            skipped.append(model)
            continue
        reps = _resamples(ctx.options.n_resamples, complete.size)
        used_reps.add(reps)
        s = stats.quietly(
            stats.spread,
            complete,
            n_resamples=reps,
            seed=ctx.options.seed,
            confidence=ctx.options.confidence,
        )

        def iv(x: stats.Interval) -> tuple[float, float, float]:
            return (x.estimate, x.low, x.high)

        worst = ctx.label(conditions[present[int(np.argmin(s.per_condition))]])
        best = ctx.label(conditions[present[int(np.argmax(s.per_condition))]])
        rows.append(
            (
                model,
                s.n_items,
                s.n_conditions,
                worst,
                iv(s.min),
                best,
                iv(s.max),
                iv(s.best_minus_worst),
                iv(s.std),
                iv(s.avg_p),
                iv(s.cps),
            )
        )
    if not rows:
        return None
    pct = f"{100 * ctx.options.confidence:g}%"
    blocks: list[Block] = [
        Paragraph(
            "Accuracy of each model under its worst and best condition, on the units "
            "(item, sample) that every condition has. Intervals are percentile bootstrap "
            f"intervals over items ({_reps_text(used_reps, ctx.options.n_resamples)}, seed "
            f"{ctx.options.seed}); the conditions themselves are fixed, so the intervals say "
            "nothing about conditions not tried, and best/worst intervals are biased outward "
            "because the best and worst are picked on the same data. CPS = (1 − (MaxP − AvgP)) "
            "· MaxP (Mizrahi et al. 2024)."
        ),
        Table(
            title="Worst and best condition per model",
            columns=(
                Column("model"),
                Column("units", "int"),
                Column("conditions", "int"),
                Column("worst"),
                Column(f"worst accuracy [{pct}]", "pct_ci"),
                Column("best"),
                Column(f"best accuracy (MaxP) [{pct}]", "pct_ci"),
                Column(f"best − worst [{pct}]", "diff_ci"),
                Column(f"std across conditions [{pct}]", "pct_ci"),
                Column(f"AvgP [{pct}]", "pct_ci"),
                Column(f"CPS [{pct}]", "pct_ci"),
            ),
            rows=tuple(rows),
        ),
    ]
    if skipped:
        blocks.append(
            Note(f"No spread for {', '.join(skipped)}: fewer than 2 conditions or 2 shared units.")
        )
    return Section.of("spread", "Spread across conditions", blocks)


def calibration_section(ctx: ReportContext) -> Section | None:
    """Reliability diagrams (``stats.reliability_bins``) of ``confidence`` vs ``correct``
    per model, one line per condition, with ECE and Brier score per condition."""
    df = ctx.frame
    usable = df.loc[df["confidence"].notna() & df["correct"].notna()]
    if usable.empty:
        return None
    conf_level = ctx.options.confidence
    blocks: list[Block] = [
        Paragraph(
            "Confidence is the probability the model gave its chosen answer (softmax over the "
            "options). Points are 10 equal-width bins (empty bins left out) at their mean "
            f"confidence, with a {100 * conf_level:g}% Wilson interval on each bin's accuracy; "
            "a calibrated model lies on the diagonal."
        )
    ]
    table_rows = []
    for model in ctx.models:
        series = []
        mine = usable.loc[usable["model"] == model]
        for cond in ctx.conditions:
            g = mine.loc[mine["condition"] == cond]
            if g.empty:
                continue
            conf = g["confidence"].to_numpy(dtype=float)
            corr = g["correct"].to_numpy(dtype=float) > 0.5
            bins = stats.reliability_bins(conf, corr, n_bins=10)
            points = []
            for c, a, k in zip(bins.confidence, bins.accuracy, bins.count, strict=True):
                if k == 0:
                    continue
                ci = stats.wilson_interval(round(a * k), int(k), conf_level)
                points.append(Point(float(c), float(a), ci.low, ci.high, int(k)))
            series.append(Series(ctx.label(cond), tuple(points)))
            ece = stats.expected_calibration_error(conf, corr, n_bins=10)
            brier = stats.quietly(stats.brier_score, conf, corr)
            table_rows.append(
                (
                    model,
                    ctx.label(cond),
                    int(conf.size),
                    float(conf.mean()),
                    float(corr.mean()),
                    ece.statistic,
                    brier.statistic,
                )
            )
        if not series:
            continue
        note = None
        if len(series) > _MAX_SERIES:
            note = f"first {_MAX_SERIES} of {len(series)} conditions drawn; all are in the table"
            series = series[:_MAX_SERIES]
        blocks.append(
            LineChart(
                title=f"{model}: reliability diagram",
                series=tuple(series),
                x_label="confidence",
                y_label="accuracy",
                x_range=(0.0, 1.0),
                diagonal=True,
                x_is_share=True,
                note=note,
            )
        )
    blocks.append(
        Table(
            title="Calibration by model and condition",
            columns=(
                Column("model"),
                Column("condition"),
                Column("n", "int"),
                Column("mean confidence", "pct"),
                Column("accuracy", "pct"),
                Column("ECE", "float", "expected calibration error, 10 equal-width bins"),
                Column("Brier", "float"),
            ),
            rows=tuple(table_rows),
        )
    )
    return Section.of("calibration", "Calibration", blocks)


def shots_section(ctx: ReportContext) -> Section | None:
    """Accuracy against the number of shots per model, with item-clustered intervals."""
    df = ctx.frame
    usable = df.loc[df["n_shots"].notna() & df["correct"].notna()]
    if usable["n_shots"].nunique() < 2:
        return None
    conf = ctx.options.confidence
    series = []
    rows = []
    for model in ctx.models:
        mine = usable.loc[usable["model"] == model]
        points = []
        for k in sorted(mine["n_shots"].unique()):
            g = mine.loc[mine["n_shots"] == k]
            scores = g["correct"].to_numpy(dtype=float)
            se = stats.quietly(stats.clustered_se, scores, g["item_code"].to_numpy())
            iv = se.interval(conf) if not math.isnan(se.se) else None
            low = iv.low if iv else math.nan
            high = iv.high if iv else math.nan
            points.append(Point(float(k), se.mean, low, high, int(scores.size)))
            n_cond = int(g["condition"].nunique())
            rows.append((model, int(k), n_cond, int(scores.size), (se.mean, low, high)))
        if len(points) >= 2:
            series.append(Series(model, tuple(points)))
    if not series:
        return None
    pct = f"{100 * conf:g}%"
    return Section.of(
        "shots",
        "Accuracy vs number of shots",
        [
            Paragraph(
                "Rows of every condition with the same number of shots are pooled; the "
                f"{pct} interval uses a standard error clustered by item (an item asked under "
                "several conditions is not several independent observations)."
            ),
            LineChart(
                title="Accuracy vs shots",
                series=tuple(series[:_MAX_SERIES]),
                x_label="shots",
                y_label="accuracy",
            ),
            Table(
                title="Accuracy by number of shots",
                columns=(
                    Column("model"),
                    Column("shots", "int"),
                    Column("conditions", "int"),
                    Column("rows", "int"),
                    Column(f"accuracy [{pct}, clustered by item]", "pct_ci"),
                ),
                rows=tuple(rows),
            ),
        ],
    )


def _rc_entries(analysis: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    raw = analysis.get("rank_consistency")
    if isinstance(raw, Mapping) and raw.get("applicable") is False:
        return []
    if isinstance(raw, Mapping) and isinstance(raw.get("regimes"), Mapping):
        raw = raw["regimes"]  # the sensitivity study: {"regimes": {name: result}, ...}
    if isinstance(raw, Mapping) and "per_model" in raw:
        return [("rank consistency", raw)]
    if isinstance(raw, Mapping):
        return [(str(k), v) for k, v in raw.items() if isinstance(v, Mapping) and "per_model" in v]
    if isinstance(raw, list):
        out = []
        for i, v in enumerate(raw):
            if isinstance(v, Mapping) and "per_model" in v:
                name = v.get("label") or v.get("setting") or v.get("name") or f"setting {i + 1}"
                out.append((str(name), v))
        return out
    return []


def _per_model(entry: Mapping[str, Any], models: Sequence[str]) -> list[tuple[str, float]]:
    per = entry["per_model"]
    if isinstance(per, Mapping):
        return [(str(k), float(v)) for k, v in per.items() if v is not None]
    names = entry.get("models", models)
    if isinstance(per, list) and isinstance(names, list) and len(names) == len(per):
        return [(str(m), float(v)) for m, v in zip(names, per, strict=True) if v is not None]
    raise ValueError(
        "analysis.rank_consistency.per_model must map model -> share, or be a list aligned "
        f"with a 'models' list; got {type(per).__name__} of length "
        f"{len(per) if isinstance(per, list) else '?'} for {len(names)} models"
    )


def _rc_facts(ctx: ReportContext) -> RankConsistencyFacts | None:
    """The rank consistency the run's analysis holds: from the typed analysis of a
    registered study, else read from ``summary.json`` (a study the registry does not know:
    ``rank_consistency`` as one result with ``per_model``, a mapping or list of them, or the
    sensitivity study's ``{"regimes": ...}``)."""
    if ctx.study_analysis is not None:
        return ctx.study_analysis.rank_consistency_facts()
    entries = _rc_entries(ctx.analysis)
    if not entries:
        return None
    models = list(ctx.analysis.get("models", ctx.models))
    raw = ctx.analysis.get("rank_consistency")
    sizes = {}
    if isinstance(raw, Mapping):
        sizes = {k: v for k in ("n_subsets", "subset_size", "n_units") if _count(v := raw.get(k))}
    settings = []
    for name, entry in entries:
        overall = entry.get("overall")
        modal = entry.get("modal_rank") if isinstance(entry.get("modal_rank"), Mapping) else {}
        assert isinstance(modal, Mapping)
        per = [(m, v) for m, v in _per_model(entry, models) if math.isfinite(v)]
        settings.append(
            RankConsistencySetting(
                setting=name,
                per_model=dict(per),
                modal_rank={m: modal[m] for m, _ in per if isinstance(modal.get(m), int)},
                overall=float(overall) if isinstance(overall, int | float) else None,
            )
        )
    return RankConsistencyFacts(**sizes, settings=settings)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def rank_consistency_section(ctx: ReportContext) -> Section | None:
    """Rank consistency bars when the run's analysis holds rank consistency results."""
    facts = _rc_facts(ctx)
    if facts is None or not facts.settings:
        return None
    design = ""
    if facts.n_subsets is not None and facts.subset_size is not None:
        design = f" ({facts.n_subsets} subsets of {facts.subset_size}"
        design += f" of {facts.n_units} units)" if facts.n_units is not None else ")"
    blocks: list[Block] = [
        Paragraph(
            f"Share of random subsets of units{design} on which each model gets its most "
            "frequent rank; 'overall' is the share of subsets whose whole ranking is the most "
            "frequent one (from the run's analysis)."
        )
    ]
    rows = []
    for s in facts.settings:
        bars = [Bar(m, v) for m, v in s.per_model.items()]
        if s.overall is not None:
            bars.append(Bar("overall", s.overall))
        blocks.append(
            BarChart(title=f"Rank consistency: {s.setting}", bars=tuple(bars), value_label="share")
        )
        rows += [(s.setting, m, v, s.modal_rank.get(m)) for m, v in s.per_model.items()]
        if s.overall is not None:
            rows.append((s.setting, "overall", s.overall, None))
    blocks.append(
        Table(
            title="Rank consistency",
            columns=(
                Column("setting"),
                Column("model"),
                Column("share at modal rank", "pct"),
                Column("modal rank", "int"),
            ),
            rows=tuple(rows),
        )
    )
    return Section.of("rank-consistency", "Rank consistency", blocks)
