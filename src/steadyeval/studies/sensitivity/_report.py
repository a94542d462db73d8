"""The sensitivity study's report sections, built from its typed analysis alone.

One builder serves ``summary.md`` (tables and text) and ``steadyeval report`` (the same
tables plus figures: the score under each template per model, rank consistency bars per
regime), so a number never differs between the two. The study's ``rank-consistency``
section takes the place of the report's generic one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...document import (
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
    format_cell,
)
from ._types import (
    IntervalEstimate,
    PooledSpread,
    PromptPreference,
    RankConsistency,
    Rankings,
    Regime,
    SensitivityAnalysis,
    Verbalization,
)

__all__ = ["REGIMES", "sensitivity_report_sections"]

SOURCE = "sensitivity study"

#: How each rank-consistency regime is labelled, in the order the report shows them
#: (``summary.json`` sorts its keys).
REGIMES: dict[Regime, str] = {
    "original": "original template and name",
    "random": "random template and name per model",
    "intervention": "intervention (exact adjustment)",
    "intervention_sampled": "intervention (sampled adjustment)",
}


def _iv(i: IntervalEstimate) -> tuple[float | None, float | None, float | None]:
    return (i.estimate, i.low, i.high)


def _mean(values: Sequence[float | None]) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def _overview(a: SensitivityAnalysis, figures: bool) -> Section:
    metric, unit = a.metric, a.unit
    verb, adj = a.verbalization, a.adjusted
    pp = a.prompt_preference if isinstance(a.prompt_preference, PromptPreference) else None
    gap = format_cell(pp.gap, "pct") if pp else "–"
    ddof = pp.std_ddof if pp else 1
    rounded = ", authors' rounding" if pp and pp.std_rounding == "reference" else ""
    rows = []
    for model in a.models:
        p = pp.per_model[model] if pp else None
        j = adj.per_model[model]
        v = verb.per_model[model].stability if isinstance(verb, Verbalization) else None
        rows.append(
            (
                model,
                j.original,
                j.mean_over_templates,
                j.exact,
                j.sampled,
                *(
                    (None,) * 6
                    if p is None
                    else (
                        p.mean_std,
                        p.mean_gap,
                        p.share_gap_above,
                        p.mean_max_p,
                        p.mean_avg_p,
                        p.mean_cps,
                    )
                ),
                v,
            )
        )
    blocks: list[Block] = [
        Paragraph(
            f"Scores are {metric}, shown as percentages; {len(a.models)} model(s), "
            f"{len(a.units)} {unit}(s), {len(a.templates)} template(s) per {unit}, up to "
            f"{a.n_names} name(s) per subject, {a.n_facts} facts. Means over {unit}s."
        ),
        Table(
            f"{metric[:1].upper()}{metric[1:]} by model",
            (
                Column("model"),
                Column("original", "pct", "template 0 with the canonical name"),
                Column("mean over templates", "pct"),
                Column("adjusted (exact)", "pct", "backdoor adjustment over templates and names"),
                Column("adjusted (sampled)", "pct"),
                Column(
                    f"mean std (ddof {ddof}{rounded})",
                    "pct",
                    f"std across templates (ddof {ddof}{rounded}), mean over {unit}s",
                ),
                Column("mean best−worst", "pct"),
                Column(
                    f"share gap > {gap}", "pct", f"share of {unit}s whose best−worst exceeds it"
                ),
                Column("MaxP", "pct"),
                Column("AvgP", "pct"),
                Column("CPS", "pct"),
                Column(
                    "verbalization stability",
                    "pct",
                    f"mean over {unit}s of the share of facts stable under every name",
                ),
            ),
            tuple(rows),
            note=(
                f"Adjusted: Σ_p Σ_x P(p, x)·{metric} with {adj.weights} template weights; "
                f"sampled with K_p = {adj.k_templates} templates and K_x = {adj.k_names} "
                "names."
            ),
        ),
    ]
    if figures and pp:
        blocks.append(_template_lines(a))
    if a.pooled:
        blocks.append(_pooled(a, a.pooled))
    blocks += [Note(n) for n in a.notes]
    return Section.of("sensitivity", "Prompt and verbalization sensitivity", blocks, SOURCE)


def _template_lines(a: SensitivityAnalysis) -> LineChart:
    """Each model's score under each template (mean over units): crossing lines are
    rankings that change with the template."""
    assert isinstance(a.prompt_preference, PromptPreference)
    per_unit = a.prompt_preference.per_unit
    series = []
    for model in a.models:
        units = [per_unit[model][u] for u in a.units]
        points = tuple(
            Point(t, _mean([u.scores[t] for u in units]), n=sum(u.n_facts for u in units))
            for t in range(len(a.templates))
        )
        series.append(Series(model, points))
    names = ", ".join(f"{i} = {t}" for i, t in enumerate(a.templates))
    return LineChart(
        f"Score under each template (mean over {a.unit}s)",
        tuple(series),
        x_label="template",
        y_label=a.metric,
        note=f"Templates: {names} (0 is the original).",
    )


def _pooled(a: SensitivityAnalysis, pooled: Mapping[str, PooledSpread]) -> Table:
    rows = [
        (
            model,
            s.n_items,
            *s.scores,
            _iv(s.std),
            _iv(s.best_minus_worst),
            _iv(s.max_p),
            _iv(s.avg_p),
            _iv(s.cps),
        )
        for model in a.models
        if (s := pooled.get(model)) is not None
    ]
    return Table(
        f"All items pooled (templates shared by every {a.unit})",
        (
            Column("model"),
            Column("items", "int"),
            *(Column(t, "pct") for t in a.templates),
            Column("std (ddof 1) [95% CI]", "pct_ci", "bootstrap over items"),
            Column("best − worst [95% CI]", "diff_ci"),
            Column("MaxP [95% CI]", "pct_ci"),
            Column("AvgP [95% CI]", "pct_ci"),
            Column("CPS [95% CI]", "pct_ci"),
        ),
        tuple(rows),
    )


def _rankings(a: SensitivityAnalysis) -> Section:
    rk, unit = a.rankings, a.unit
    if not isinstance(rk, Rankings):
        blocks: list[Block] = [Paragraph(f"Not applicable: {rk.reason}.")]
    else:
        blocks = [
            Table(
                "",
                (
                    Column(f"{unit}s whose model ranking changes with the template", "int"),
                    Column(f"{unit}s", "int"),
                    Column("share", "pct"),
                    Column("mean Kendall's W across templates", "float"),
                ),
                (
                    (
                        rk.units_ranking_changes,
                        rk.n_units,
                        rk.share_units_ranking_changes,
                        rk.mean_kendall_w,
                    ),
                ),
            )
        ]
    return Section.of("sensitivity-rankings", "Model rankings across templates", blocks, SOURCE)


def _rank_consistency(a: SensitivityAnalysis, figures: bool) -> Section:
    rc, unit, models = a.rank_consistency, a.unit, a.models
    if not isinstance(rc, RankConsistency):
        blocks: list[Block] = [Paragraph(f"Not applicable: {rc.reason}.")]
        return Section.of("rank-consistency", "Rank consistency", blocks, SOURCE)
    blocks = [
        Paragraph(
            f"{rc.n_subsets} subsets of {rc.subset_size} of the {rc.n_units} {unit}s; "
            "share of subsets in which a model gets its most frequent rank (its modal rank), "
            "and in which the whole ranking is the most frequent one (overall)."
        )
    ]
    regimes = [(label, rc.regimes[k]) for k, label in REGIMES.items() if k in rc.regimes]
    if figures:
        for label, r in regimes:
            bars = [Bar(m, r.per_model[m]) for m in models] + [Bar("overall", r.overall)]
            title = f"Rank consistency: {label}"
            blocks.append(BarChart(title, tuple(bars), value_label="share of subsets"))
    rows: list[tuple[Any, ...]] = []
    for label, r in regimes:
        rows += [(label, m, r.per_model[m], r.modal_rank[m], None) for m in models]
        rows.append((label, "overall", r.overall, None, r.tied_subsets))
    columns = (
        Column("regime"),
        Column("model"),
        Column("share of subsets", "pct", "at the model's modal rank; overall: whole ranking"),
        Column("modal rank", "int"),
        Column("subsets with tied models", "pct", "a tie ranks the earlier model first"),
    )
    blocks.append(Table("", columns, tuple(rows)))
    return Section.of("rank-consistency", "Rank consistency", blocks, SOURCE)


def _verbalization_table(a: SensitivityAnalysis, verb: Verbalization) -> Table:
    unit = a.unit
    rows = []
    for m in a.models:
        v = verb.per_model[m]
        by_name = " / ".join(format_cell(s, "pct") for s in v.score_by_name)
        rows.append(
            (
                m,
                v.stability,
                v.n_units,
                v.stability_all_templates,
                v.pooled.stability_original_template,
                v.pooled.n_original_template,
                v.pooled.stability,
                v.pooled.n,
                v.skipped_stop_words,
                by_name,
            )
        )
    return Table(
        "",
        (
            Column("model"),
            Column(
                f"stable, mean over {unit}s",
                "pct",
                f"headline (as the paper): per {unit}, the share of facts stable under the "
                f"original template; mean over {unit}s",
            ),
            Column(f"{unit}s", "int"),
            Column(f"mean over {unit}s, all templates", "pct"),
            Column("pooled (original template)", "pct", f"secondary: facts of all {unit}s"),
            Column("facts", "int"),
            Column("pooled (all templates)", "pct", "secondary: (fact, template) pairs"),
            Column("pairs", "int"),
            Column("skipped", "int", "(fact, template) pairs left with < 2 non-stop-word names"),
            Column(f"{a.metric} by name index", help="name 0 is the canonical name"),
        ),
        tuple(rows),
    )


def _verbalization_units(a: SensitivityAnalysis, verb: Verbalization) -> Table | None:
    """One row per (unit, model) with at least one counted fact; None when no row."""
    rows = [
        (u, m, r.stability, r.n, r.stability_all_templates, r.n_all_templates)
        for m in a.models
        for u, r in verb.per_unit[m].items()
        if r.n_all_templates
    ]
    if not rows:
        return None
    unit = a.unit
    return Table(
        f"Verbalization stability per {unit} ({unit}s with a fact that has two names)",
        (
            Column(unit),
            Column("model"),
            Column("stable (original template)", "pct"),
            Column("facts", "int"),
            Column("stable (all templates)", "pct"),
            Column("(fact, template) pairs", "int"),
        ),
        tuple(rows),
    )


def _verbalization(a: SensitivityAnalysis) -> Section:
    verb, unit = a.verbalization, a.unit
    if not isinstance(verb, Verbalization):
        blocks: list[Block] = [Paragraph(f"Not applicable: {verb.reason}.")]
        return Section.of("sensitivity-verbalization", "Verbalization", blocks, SOURCE)
    n_stop = verb.n_stop_words
    rule = (
        f"predictions that are one of {n_stop} stop words are skipped (a fact counts when at "
        "least two of its names give another prediction)"
        if n_stop
        else "no stop-word rule"
    )
    blocks = [
        Paragraph(
            f"{verb.facts_with_aliases} facts have a subject with more than one name. "
            f"Stable: the prediction is the same under every name of the subject; {rule}. "
            f"The headline is the paper's: per {unit}, the share of stable facts under the "
            f"original template, averaged over {unit}s; pooled shares are secondary."
        ),
        _verbalization_table(a, verb),
    ]
    units = _verbalization_units(a, verb)
    if units is not None:
        blocks.append(units)
    return Section.of("sensitivity-verbalization", "Verbalization", blocks, SOURCE)


def _per_unit(a: SensitivityAnalysis) -> Section | None:
    pp, adj, unit = a.prompt_preference, a.adjusted, a.unit
    if not isinstance(pp, PromptPreference):
        return None
    rows = []
    for model in a.models:
        for u in a.units:
            r = pp.per_unit[model][u]
            rows.append(
                (
                    u,
                    model,
                    r.scores[0],
                    r.best,
                    r.best_template,
                    r.worst,
                    r.worst_template,
                    r.gap,
                    r.std,
                    adj.per_unit[model][u].exact,
                    r.n_facts,
                )
            )
    table = Table(
        "",
        (
            Column(unit),
            Column("model"),
            Column("original", "pct"),
            Column("best", "pct"),
            Column("best template"),
            Column("worst", "pct"),
            Column("worst template"),
            Column("best−worst", "pct"),
            Column(
                f"std (ddof {pp.std_ddof}"
                + (", authors' rounding" if pp.std_rounding == "reference" else "")
                + ")",
                "pct",
            ),
            Column("adjusted", "pct", "exact backdoor adjustment"),
            Column("facts", "int"),
        ),
        tuple(rows),
    )
    return Section.of("sensitivity-units", f"Per {unit}", [table], SOURCE)


def sensitivity_report_sections(
    analysis: SensitivityAnalysis, *, figures: bool = True
) -> list[Section]:
    """The study's report sections from its analysis (:func:`analyze_sensitivity`'s result,
    or ``summary.json``'s read back with ``SENSITIVITY_STUDY.read_analysis``): scores per
    model (original, adjusted, spread), rankings across templates, rank consistency per
    regime, verbalization and the per-unit table.

    Parameters
    ----------
    analysis : SensitivityAnalysis
        The analysis of a sensitivity run.
    figures : bool
        Add figures (score under each template per model, rank consistency bars).
        ``summary.md`` leaves them out: their numbers are in the tables.

    Returns
    -------
    list of Section
        Ids ``sensitivity``, ``sensitivity-rankings``, ``rank-consistency``,
        ``sensitivity-verbalization`` and ``sensitivity-units``.
    """
    out = [
        _overview(analysis, figures),
        _rankings(analysis),
        _rank_consistency(analysis, figures),
        _verbalization(analysis),
    ]
    units = _per_unit(analysis)
    return out + ([units] if units is not None else [])
