"""The sensitivity study's report sections, built from its analysis dict alone.

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

__all__ = ["REGIMES", "sensitivity_report_sections"]

SOURCE = "sensitivity study"

#: How each rank-consistency regime is labelled.
REGIMES = {
    "original": "original template and name",
    "random": "random template and name per model",
    "intervention": "intervention (exact adjustment)",
    "intervention_sampled": "intervention (sampled adjustment)",
}


def _ordered(regimes: Mapping[str, Any]) -> list[str]:
    """Regimes in the order of :data:`REGIMES` (``summary.json`` sorts dict keys)."""
    return [k for k in REGIMES if k in regimes] + sorted(set(regimes) - set(REGIMES))


def _iv(d: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return (d["estimate"], d["low"], d["high"])


def _mean(values: Sequence[float | None]) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def _overview(a: Mapping[str, Any], figures: bool) -> Section:
    metric, unit = a.get("metric", "score"), a.get("unit", "unit")
    pp, verb, adj = a["prompt_preference"], a["verbalization"], a["adjusted"]
    gap = format_cell(pp["gap"], "pct") if pp.get("applicable") else "–"
    rows = []
    for model in a["models"]:
        p = pp["per_model"][model] if pp.get("applicable") else {}
        j = adj["per_model"][model]
        v = verb["per_model"][model]["stability"] if verb.get("applicable") else None
        rows.append(
            (
                model,
                j["original"],
                j["mean_over_templates"],
                j["exact"],
                j["sampled"],
                p.get("mean_std"),
                p.get("mean_gap"),
                p.get("share_gap_above"),
                p.get("mean_max_p"),
                p.get("mean_avg_p"),
                p.get("mean_cps"),
                v,
            )
        )
    blocks: list[Block] = [
        Paragraph(
            f"Scores are {metric}, shown as percentages; {len(a['models'])} model(s), {len(a['units'])} {unit}(s), "
            f"{len(a['templates'])} template(s) per {unit}, up to {a['n_names']} name(s) per "
            f"subject, {a['n_facts']} facts. Means over {unit}s."
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
                    f"mean std (ddof {pp.get('std_ddof', 1)})",
                    "pct",
                    f"std across templates (ddof {pp.get('std_ddof', 1)}), mean over {unit}s",
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
                f"Adjusted: Σ_p Σ_x P(p, x)·{metric} with {adj['weights']} template weights; "
                f"sampled with K_p = {adj['k_templates']} templates and K_x = {adj['k_names']} "
                "names."
            ),
        ),
    ]
    if figures and pp.get("applicable"):
        blocks.append(_template_lines(a))
    pooled = a.get("pooled")
    if pooled:
        blocks.append(_pooled(a, pooled))
    blocks += [Note(n) for n in a.get("notes", [])]
    return Section.of("sensitivity", "Prompt and verbalization sensitivity", blocks, SOURCE)


def _template_lines(a: Mapping[str, Any]) -> LineChart:
    """Each model's score under each template (mean over units): crossing lines are
    rankings that change with the template."""
    templates = a["templates"]
    per_unit = a["prompt_preference"]["per_unit"]
    series = []
    for model in a["models"]:
        units = [per_unit[model][u] for u in a["units"]]
        points = tuple(
            Point(t, _mean([u["scores"][t] for u in units]), n=sum(u["n_facts"] for u in units))
            for t in range(len(templates))
        )
        series.append(Series(model, points))
    names = ", ".join(f"{i} = {t}" for i, t in enumerate(templates))
    return LineChart(
        f"Score under each template (mean over {a.get('unit', 'unit')}s)",
        tuple(series),
        x_label="template",
        y_label=a.get("metric", "score"),
        note=f"Templates: {names} (0 is the original).",
    )


def _pooled(a: Mapping[str, Any], pooled: Mapping[str, Any]) -> Table:
    templates = a["templates"]
    rows = [
        (
            model,
            pooled[model]["n_items"],
            *pooled[model]["scores"],
            _iv(pooled[model]["std"]),
            _iv(pooled[model]["best_minus_worst"]),
            _iv(pooled[model]["max_p"]),
            _iv(pooled[model]["avg_p"]),
            _iv(pooled[model]["cps"]),
        )
        for model in a["models"]
        if model in pooled
    ]
    return Table(
        f"All items pooled (templates shared by every {a.get('unit', 'unit')})",
        (
            Column("model"),
            Column("items", "int"),
            *(Column(t, "pct") for t in templates),
            Column("std (ddof 1) [95% CI]", "pct_ci", "bootstrap over items"),
            Column("best − worst [95% CI]", "diff_ci"),
            Column("MaxP [95% CI]", "pct_ci"),
            Column("AvgP [95% CI]", "pct_ci"),
            Column("CPS [95% CI]", "pct_ci"),
        ),
        tuple(rows),
    )


def _rankings(a: Mapping[str, Any]) -> Section:
    rk, unit = a["rankings"], a.get("unit", "unit")
    if not rk.get("applicable"):
        blocks: list[Block] = [Paragraph(f"Not applicable: {rk['reason']}.")]
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
                        rk["units_ranking_changes"],
                        rk["n_units"],
                        rk["share_units_ranking_changes"],
                        rk["mean_kendall_w"],
                    ),
                ),
            )
        ]
    return Section.of("sensitivity-rankings", "Model rankings across templates", blocks, SOURCE)


def _rank_consistency(a: Mapping[str, Any], figures: bool) -> Section:
    rc, unit, models = a["rank_consistency"], a.get("unit", "unit"), a["models"]
    if not rc.get("applicable"):
        blocks: list[Block] = [Paragraph(f"Not applicable: {rc['reason']}.")]
        return Section.of("rank-consistency", "Rank consistency", blocks, SOURCE)
    blocks = [
        Paragraph(
            f"{rc['n_subsets']} subsets of {rc['subset_size']} of the {rc['n_units']} {unit}s; "
            "share of subsets in which a model gets its most frequent rank (its modal rank), "
            "and in which the whole ranking is the most frequent one (overall)."
        )
    ]
    regimes = {k: rc["regimes"][k] for k in _ordered(rc["regimes"])}
    if figures:
        for name, r in regimes.items():
            bars = [Bar(m, r["per_model"][m]) for m in models] + [Bar("overall", r["overall"])]
            title = f"Rank consistency: {REGIMES.get(name, name)}"
            blocks.append(BarChart(title, tuple(bars), value_label="share of subsets"))
    rows: list[tuple[Any, ...]] = []
    for name, r in regimes.items():
        label = REGIMES.get(name, name)
        rows += [(label, m, r["per_model"][m], r["modal_rank"][m], None) for m in models]
        rows.append((label, "overall", r["overall"], None, r.get("tied_subsets")))
    columns = (
        Column("regime"),
        Column("model"),
        Column("share of subsets", "pct", "at the model's modal rank; overall: whole ranking"),
        Column("modal rank", "int"),
        Column("subsets with tied models", "pct", "a tie ranks the earlier model first"),
    )
    blocks.append(Table("", columns, tuple(rows)))
    return Section.of("rank-consistency", "Rank consistency", blocks, SOURCE)


def _verbalization_table(a: Mapping[str, Any], verb: Mapping[str, Any], unit: str) -> Table:
    metric = a.get("metric", "score")
    rows = []
    for m in a["models"]:
        v = verb["per_model"][m]
        pooled = v["pooled"]
        by_name = " / ".join(format_cell(s, "pct") for s in v["score_by_name"])
        rows.append(
            (
                m,
                v["stability"],
                v["n_units"],
                v["stability_all_templates"],
                pooled["stability_original_template"],
                pooled["n_original_template"],
                pooled["stability"],
                pooled["n"],
                v["skipped_stop_words"],
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
            Column(f"{metric} by name index", help="name 0 is the canonical name"),
        ),
        tuple(rows),
    )


def _verbalization_units(a: Mapping[str, Any], verb: Mapping[str, Any], unit: str) -> Table | None:
    """One row per (unit, model) with at least one counted fact; None when no row."""
    rows = [
        (u, m, r["stability"], r["n"], r["stability_all_templates"], r["n_all_templates"])
        for m in a["models"]
        for u, r in verb["per_unit"][m].items()
        if r["n_all_templates"]
    ]
    if not rows:
        return None
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


def _verbalization(a: Mapping[str, Any]) -> Section:
    verb, unit = a["verbalization"], a.get("unit", "unit")
    if not verb.get("applicable"):
        blocks: list[Block] = [Paragraph(f"Not applicable: {verb['reason']}.")]
        return Section.of("sensitivity-verbalization", "Verbalization", blocks, SOURCE)
    n_stop = verb.get("n_stop_words", 0)
    rule = (
        f"predictions that are one of {n_stop} stop words are skipped (a fact counts when at "
        "least two of its names give another prediction)"
        if n_stop
        else "no stop-word rule"
    )
    blocks = [
        Paragraph(
            f"{verb['facts_with_aliases']} facts have a subject with more than one name. "
            f"Stable: the prediction is the same under every name of the subject; {rule}. "
            f"The headline is the paper's: per {unit}, the share of stable facts under the "
            f"original template, averaged over {unit}s; pooled shares are secondary."
        ),
        _verbalization_table(a, verb, unit),
    ]
    units = _verbalization_units(a, verb, unit) if "per_unit" in verb else None
    if units is not None:
        blocks.append(units)
    return Section.of("sensitivity-verbalization", "Verbalization", blocks, SOURCE)


def _per_unit(a: Mapping[str, Any]) -> Section | None:
    pp, adj, unit = a["prompt_preference"], a["adjusted"], a.get("unit", "unit")
    if not pp.get("applicable"):
        return None
    rows = []
    for model in a["models"]:
        for u in a["units"]:
            r = pp["per_unit"][model][u]
            rows.append(
                (
                    u,
                    model,
                    r["scores"][0],
                    r["best"],
                    r["best_template"],
                    r["worst"],
                    r["worst_template"],
                    r["gap"],
                    r["std"],
                    adj["per_unit"][model][u]["exact"],
                    r["n_facts"],
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
            Column(f"std (ddof {pp.get('std_ddof', 1)})", "pct"),
            Column("adjusted", "pct", "exact backdoor adjustment"),
            Column("facts", "int"),
        ),
        tuple(rows),
    )
    return Section.of("sensitivity-units", f"Per {unit}", [table], SOURCE)


def sensitivity_report_sections(
    analysis: Mapping[str, Any], *, figures: bool = True
) -> list[Section]:
    """The study's report sections from :func:`analyze_sensitivity`' result (as stored in
    ``summary.json``): scores per model (original, adjusted, spread), rankings across
    templates, rank consistency per regime, verbalization and the per-unit table.

    Parameters
    ----------
    analysis : mapping
        ``summary.json["analysis"]`` of a sensitivity run.
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
