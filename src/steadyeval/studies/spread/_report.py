"""The spread study's report sections, from its typed analysis alone (``summary.md`` and
``steadyeval report`` show the same numbers; the report adds the figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...document import (
    Bar,
    BarChart,
    Block,
    Column,
    LineChart,
    Note,
    Paragraph,
    Point,
    Preformatted,
    Section,
    Series,
    Table,
    format_cell,
)
from ._types import SpreadDesign

if TYPE_CHECKING:
    from ._types import FitDiagnostic, ModelSpread, SearchResult, SpreadAnalysis

__all__ = ["spread_report_sections"]

SOURCE = "spread study"


def _quantile_table(rec: ModelSpread, confidence: float) -> Table:
    pct = f"{confidence:.0%}"
    rows = [(f"{q.level:g}%", q.estimate, q.low, q.high) for q in rec.quantiles]
    s = rec.spread
    rows.append(("spread (best − worst)", s.estimate, s.low, s.high))
    return Table(
        "Accuracy over all formats: quantiles and spread",
        (
            Column("quantile"),
            Column("estimate", "pct"),
            Column(f"{pct} low", "pct"),
            Column(f"{pct} high", "pct"),
        ),
        tuple(rows),
        note="Posterior means and equal-tailed intervals of the per-format accuracy "
        "distribution over all formats and items (observed and unobserved cells).",
    )


def _extremes(rec: ModelSpread) -> list[Block]:
    blocks: list[Block] = [
        Table(
            "Best and worst format (estimated)",
            (
                Column("which"),
                Column("format"),
                Column("estimate", "pct"),
                Column("low", "pct"),
                Column("high", "pct"),
                Column("cells observed", "int"),
            ),
            tuple(
                (which, r.format, r.estimate, r.low, r.high, r.observed)
                for which, r in (("best", rec.best), ("worst", rec.worst))
            ),
        )
    ]
    for which, r in (("best", rec.best), ("worst", rec.worst)):
        if r.prompt:
            blocks.append(Preformatted(r.prompt, title=f"Example prompt, {which} format"))
    return blocks


def _search(s: SearchResult) -> list[Block]:
    rows = tuple(
        (which, r.format, r.posterior_mean, r.cells, r.correct)
        for which, r in (("best", s.best), ("worst", s.worst))
    )
    return [
        Paragraph(
            f"Thompson-sampling search: {format_cell(s.formats_evaluated, 'int')} formats "
            f"evaluated; prior mean (default format's first batch) "
            f"{format_cell(s.prior_mean, 'pct')}; found spread "
            f"{format_cell(s.spread, 'pct')}."
        ),
        Table(
            "Search result",
            (
                Column("which"),
                Column("format"),
                Column("posterior mean", "pct"),
                Column("cells", "int"),
                Column("correct", "int"),
            ),
            rows,
        ),
    ]


def _figures(rec: ModelSpread, confidence: float) -> list[Block]:
    dist = rec.distribution
    n = len(dist)
    curve = Series("estimated", tuple(Point((k + 0.5) / n, v) for k, v in enumerate(dist)))
    quant = Series(
        f"quantiles ({confidence:.0%} intervals)",
        tuple(Point(q.level / 100, q.estimate, q.low, q.high) for q in rec.quantiles),
    )
    bars = tuple(Bar(f"{q.level:g}%", q.estimate, q.low, q.high) for q in rec.quantiles)
    return [
        LineChart(
            "Estimated distribution of accuracy over formats (sorted, worst to best)",
            (curve, quant),
            x_label="share of formats",
            y_label="accuracy",
            x_range=(0.0, 1.0),
            x_is_share=True,
        ),
        BarChart("Quantiles of per-format accuracy", bars, value_label="accuracy"),
    ]


def _formats_table(rec: ModelSpread, design: SpreadDesign) -> Table:
    choices = {f.name: f.choices for f in design.formats}
    rows = sorted(rec.per_format, key=lambda r: -r.estimate)
    return Table(
        "Every format (sorted by estimate)",
        (
            Column("format"),
            Column("estimate", "pct"),
            Column("low", "pct"),
            Column("high", "pct"),
            Column("cells observed", "int"),
            Column("correct", "int"),
            Column("choices", wide=True),
        ),
        tuple(
            (
                r.format,
                r.estimate,
                r.low,
                r.high,
                r.observed,
                r.observed_correct,
                # sorted: the order summary.json keeps, so a reanalyze writes the same text
                "; ".join(f"{k}={v!r}" for k, v in sorted(choices[r.format].items())),
            )
            for r in rows
        ),
    )


def _interval(value: float, low: float, high: float) -> str:
    return f"{format_cell(value, 'pct')} [{format_cell(low, 'pct')}, {format_cell(high, 'pct')}]"


def headline_section(analysis: SpreadAnalysis, design: SpreadDesign) -> Section:
    """The study's answer, first in the report (before the generic per-format table): per
    model the estimated 5/50/95% quantiles and the spread with their intervals, and the
    best and worst format; then the fit check, one line per model (:func:`fit_check`),
    and each model's notes (what its cells cannot tell, what the check flags) as warnings."""
    confidence = design.confidence
    levels = (5.0, 50.0, 95.0)
    rows = []
    for rec in analysis.models:
        by_level = {q.level: q for q in rec.quantiles}
        shown = [
            _interval(by_level[lv].estimate, by_level[lv].low, by_level[lv].high)
            if lv in by_level
            else "–"
            for lv in levels
        ]
        sp, best, worst = rec.spread, rec.best, rec.worst
        rows.append(
            (
                rec.model,
                *shown,
                _interval(sp.estimate, sp.low, sp.high),
                f"{best.format} ({format_cell(best.estimate, 'pct')})",
                f"{worst.format} ({format_cell(worst.estimate, 'pct')})",
            )
        )
    columns = (
        Column("model"),
        *(Column(f"{lv:g}% quantile", "text") for lv in levels),
        Column("spread (best − worst)", "text"),
        Column("best format (estimate)", "text"),
        Column("worst format (estimate)", "text"),
    )
    intro = Paragraph(
        f"Accuracy over all {len(design.formats)} formats and {len(design.items)} items, "
        f"estimated from a sample of cells: quantiles of the per-format accuracy and the "
        f"spread, with {confidence:.0%} intervals in brackets, and the formats estimated best "
        "and worst. The generic table below shows only the cells that were observed."
    )
    table = Table("Estimated accuracy across formats", columns, tuple(rows))
    notes = [
        Note(f"{rec.model}: {note}", "warning") for rec in analysis.models for note in rec.notes
    ]
    blocks: list[Block] = [intro, table, fit_check(analysis), *notes]
    if len(analysis.models) > 1:
        blocks.append(
            Paragraph(
                "Which model is better over all the formats (the share of formats on which "
                "each wins, the expected difference with its interval): `steadyeval compare "
                "RUN_DIR --over formats` (docs/study-decide.md)."
            )
        )
    return Section.of("spread-headline", "Accuracy across formats", blocks, SOURCE, lead=True)


def _verdict(d: FitDiagnostic) -> str:
    flags = [name for name, on in (("prior-driven", d.prior_driven), ("misfit", d.misfit)) if on]
    return ", ".join(flags) if flags else "ok"


def fit_check(analysis: SpreadAnalysis) -> Block:
    """One line per model: the formats' s.d. with its 90% interval, the cells per format,
    the posterior predictive p-values and the verdict; a note saying how to compute it
    when no model has a check (an analysis written before it)."""
    rows: list[tuple[Any, ...]] = []
    for rec in analysis.models:
        d = rec.diagnostic
        if d is None:
            rows.append((rec.model, "–", None, None, None, None, None, "not computed"))
            continue
        sd = f"{d.format_sd:.2f} [{d.format_sd_low:.2f}, {d.format_sd_high:.2f}]"
        rows.append(
            (
                rec.model,
                sd,
                d.cells_per_format,
                d.share_two_cells,
                d.ppc_format_p,
                d.ppc_item_p,
                d.ppc_interaction_p,
                _verdict(d),
            )
        )
    if all(rec.diagnostic is None for rec in analysis.models):
        return Note(
            "This analysis has no fit check (it was written before steadyeval computed one). "
            "Running steadyeval reanalyze on the run folder recomputes the analysis with it."
        )
    columns = (
        Column("model"),
        Column("format s.d. (logits, 90%)", help="how far formats differ: sets the width"),
        Column("cells per format", "float"),
        Column("formats with ≥ 2 cells", "pct"),
        Column("PPC p: formats", "pvalue", help="posterior predictive check of format totals"),
        Column("PPC p: items", "pvalue", help="posterior predictive check of item totals"),
        Column("PPC p: format × item", "pvalue", help="do formats agree on which items are hard"),
        Column("check"),
    )
    return Table(
        "Can the estimate be trusted? (fit check)",
        columns,
        tuple(rows),
        note="prior-driven: the distribution's width comes from the prior, not the cells "
        "(fewer than half the formats with two cells, or a format s.d. known only within a "
        "factor over 3 whose interval still holds a quarter of the prior's mass; a wide "
        "interval the data set is uncertainty, shown in the quantiles' intervals, not a "
        "flag); misfit: a posterior predictive p-value below 0.05 or above 0.95 "
        "(the additive model does not hold; intervals may be too narrow). A dash: nothing "
        "to check. See docs/study-spread.md.",
    )


def _model(design: SpreadDesign) -> str:
    """The fitted model, as the report names it (with the covariates' term when used)."""
    if design.covariates:
        return "σ(μ + θ_format + β_item + x_format·γ), x_format the grammar choices"
    return "σ(μ + θ_format + β_item)"


def spread_report_sections(
    analysis: SpreadAnalysis, design: SpreadDesign | Mapping[str, Any], *, figures: bool = True
) -> list[Section]:
    """The headline (:func:`headline_section`, first in the report), then one section per
    model: what was observed, the quantiles with intervals, the spread, best and worst
    formats with example prompts, (search) the search's result, figures and the per-format
    table. ``design``: the run's design facts (a :class:`SpreadDesign`, or
    the ``design`` of ``summary.json``)."""
    facts = SpreadDesign.from_json(design, source="design")
    confidence = facts.confidence
    out = [headline_section(analysis, facts)]
    for i, rec in enumerate(analysis.models):
        blocks: list[Block] = [
            Paragraph(
                f"{format_cell(rec.cells, 'int')} of {format_cell(rec.cells_total, 'int')} "
                f"(format, item) cells observed ({len(facts.formats)} formats × "
                f"{len(facts.items)} items; {facts.method}, {facts.sampler} cells); "
                f"mean observed accuracy {format_cell(rec.observed_mean, 'pct')}. "
                f"Unobserved cells are predicted by the fitted model {_model(facts)}; "
                "see docs/study-spread.md for when to trust the estimate."
            ),
            _quantile_table(rec, confidence),
            *(_figures(rec, confidence) if figures else []),
            *_extremes(rec),
            *(_search(rec.search) if rec.search is not None else []),
            _formats_table(rec, facts),
        ]
        title = f"Accuracy across prompt formats: {rec.model}"
        out.append(Section.of(f"spread-model-{i + 1}", title, blocks, source=SOURCE))
    return out
