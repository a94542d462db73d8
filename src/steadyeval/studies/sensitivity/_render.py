"""Markdown for the study's analysis (appended to ``summary.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["render_sensitivity"]

_REGIMES = {
    "original": "original template and name",
    "random": "random template and name per model",
    "intervention": "intervention (exact adjustment)",
    "intervention_sampled": "intervention (sampled adjustment)",
}


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * float(x):.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def render_sensitivity(analysis: Mapping[str, Any]) -> str:
    """The analysis as Markdown: overview per model, rankings, rank consistency, per unit."""
    a = analysis
    metric = a.get("metric", "score")
    unit = a.get("unit", "unit")
    lines = [
        "## Prompt and verbalization sensitivity",
        "",
        f"{metric} in points; {len(a['models'])} model(s), {len(a['units'])} {unit}(s), "
        f"{len(a['templates'])} template(s) per {unit}, up to {a['n_names']} name(s) per "
        f"subject, {a['n_facts']} facts.",
        "",
    ]
    pp, verb, adj = a["prompt_preference"], a["verbalization"], a["adjusted"]
    header = [
        "model",
        "original",
        "mean over templates",
        "adjusted (exact)",
        "adjusted (sampled)",
        "mean std",
        "mean best−worst",
        "share gap > " + (f"{100 * pp['gap']:.0f}" if pp.get("applicable") else "–"),
        "MaxP",
        "AvgP",
        "CPS",
        "verbalization stability",
    ]
    rows = []
    for model in a["models"]:
        p = pp["per_model"][model] if pp.get("applicable") else {}
        j = adj["per_model"][model]
        v = verb["per_model"][model]["stability"] if verb.get("applicable") else None
        rows.append(
            [
                model,
                _pct(j["original"]),
                _pct(j["mean_over_templates"]),
                _pct(j["exact"]),
                _pct(j["sampled"]),
                _pct(p.get("mean_std")),
                _pct(p.get("mean_gap")),
                _pct(p.get("share_gap_above")),
                _pct(p.get("mean_max_p")),
                _pct(p.get("mean_avg_p")),
                _pct(p.get("mean_cps")),
                _pct(v),
            ]
        )
    lines += _table(header, rows)
    lines += [
        "",
        f"Adjusted: Σ_p Σ_x P(p, x)·{metric} with {adj['weights']} template weights; sampled "
        f"with K_p = {adj['k_templates']} templates and K_x = {adj['k_names']} names.",
        "",
    ]
    rk = a["rankings"]
    lines.append("### Model rankings across templates")
    lines.append("")
    if rk.get("applicable"):
        lines.append(
            f"The model ranking changes with the template on {rk['units_ranking_changes']} of "
            f"{rk['n_units']} {unit}s ({_pct(rk['share_units_ranking_changes'])}%); mean "
            f"Kendall's W across templates: "
            + ("–" if rk["mean_kendall_w"] is None else f"{rk['mean_kendall_w']:.3f}")
            + "."
        )
    else:
        lines.append(f"Not applicable: {rk['reason']}.")
    lines += ["", "### Rank consistency", ""]
    rc = a["rank_consistency"]
    if rc.get("applicable"):
        lines.append(
            f"{rc['n_subsets']} subsets of {rc['subset_size']} of the {rc['n_units']} "
            f"{unit}s; share of subsets (%) in which a model gets its most frequent rank, and "
            "in which the whole ranking is the most frequent one."
        )
        lines.append("")
        rows = [
            [_REGIMES.get(name, name), _pct(r["overall"])]
            + [f"{_pct(r['per_model'][m])} (#{r['modal_rank'][m]})" for m in a["models"]]
            for name, r in rc["regimes"].items()
        ]
        lines += _table(["regime", "overall", *a["models"]], rows)
    else:
        lines.append(f"Not applicable: {rc['reason']}.")
    lines += ["", "### Verbalization", ""]
    if verb.get("applicable"):
        rows = [
            [
                m,
                _pct(verb["per_model"][m]["stability"]),
                str(verb["per_model"][m]["n"]),
                _pct(verb["per_model"][m]["stability_original_template"]),
                " / ".join(_pct(s) for s in verb["per_model"][m]["score_by_name"]),
            ]
            for m in a["models"]
        ]
        lines += _table(
            [
                "model",
                "stable (all templates)",
                "n",
                "stable (original template)",
                f"{metric} by name index",
            ],
            rows,
        )
    else:
        lines.append(f"Not applicable: {verb['reason']}.")
    if pp.get("applicable"):
        lines += ["", f"### Per {unit}", ""]
        rows = []
        for model in a["models"]:
            for u, r in pp["per_unit"][model].items():
                j = adj["per_unit"][model][u]
                rows.append(
                    [
                        u,
                        model,
                        _pct(r["scores"][0]),
                        f"{_pct(r['best'])} ({r['best_template']})",
                        f"{_pct(r['worst'])} ({r['worst_template']})",
                        _pct(r["gap"]),
                        _pct(r["std"]),
                        _pct(j["exact"]),
                        str(r["n_facts"]),
                    ]
                )
        lines += _table(
            [unit, "model", "original", "best", "worst", "best−worst", "std", "adjusted", "facts"],
            rows,
        )
    if a.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {n}" for n in a["notes"]]
    return "\n".join(lines) + "\n"
