"""Markdown for ``summary.md``: the knowledge study's tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "Section",
    "category_rows",
    "fmt_p",
    "fmt_pct",
    "knowledge_sections",
    "render_knowledge",
]


def fmt_pct(x: Any, digits: int = 1) -> str:
    """``0.4567`` → ``45.7%``; ``–`` for a missing value."""
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return f"{100 * float(x):.{digits}f}%"


def fmt_num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return f"{float(x):.{digits}f}"


def fmt_p(p: Any) -> str:
    if p is None or (isinstance(p, float) and p != p):
        return "–"
    return f"{float(p):.2g}" if float(p) < 0.001 else f"{float(p):.3f}"


def _scoring(name: str) -> str:
    return name.removesuffix("-logprob")


def _ci(d: Mapping[str, Any]) -> str:
    return f"{fmt_pct(d['accuracy'])} [{fmt_pct(d['low'])}, {fmt_pct(d['high'])}]"


def category_rows(analysis: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-category table: one column per (model, original-order condition); rows are
    the categories, then micro, macro and the clustered-by-subject interval overall."""
    conds = [a for a in analysis["accuracy"] if a["rotation"] in (0, None)]
    header = ["category"] + [
        (f"{a['model']} · " if len(analysis["models"]) > 1 else "") + a["condition"] for a in conds
    ]
    cats = sorted({r["category"] for r in analysis["per_category"]})
    lookup = {(r["model"], r["condition"], r["category"]): r for r in analysis["per_category"]}
    rows = []
    for c in cats:
        row = [c]
        for a in conds:
            r = lookup.get((a["model"], a["condition"], c))
            row.append(f"{_ci(r)} (n={r['n']})" if r else "–")
        rows.append(row)
    rows.append(["all (micro)"] + [f"{_ci(a['micro'])} (n={a['n']})" for a in conds])
    rows.append(["all (macro over subjects)"] + [fmt_pct(a["macro"]) for a in conds])
    rows.append(
        ["all, 95% CI clustered by subject"]
        + [f"[{fmt_pct(a['clustered_low'])}, {fmt_pct(a['clustered_high'])}]" for a in conds]
    )
    return header, rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return [*lines, ""]


class Section(NamedTuple):
    """One titled table of the study's report (Markdown in ``summary.md``, rich in the CLI)."""

    title: str
    header: list[str]
    rows: list[list[str]]


def knowledge_sections(analysis: Mapping[str, Any]) -> list[Section]:
    """The report's tables, in order: categories, shots, calibration, rotations, templates,
    option scoring, letter vs option, memorisation (each only when the run has it)."""
    header, rows = category_rows(analysis)
    out = [Section("Accuracy per category", header, rows)]

    if any(len(s["by_shots"]) > 1 for s in analysis.get("shots", [])):
        rows = []
        for s in analysis["shots"]:
            for r in s["by_shots"]:
                vs = r.get("vs_fewest")
                rows.append(
                    [
                        s["model"],
                        _scoring(s["scoring"]),
                        s["template"],
                        str(r["n_shots"]),
                        f"{r['n_shots_used_mean']:.2f}",
                        _ci(r),
                        fmt_p(vs["pvalue"]) if vs else "–",
                    ]
                )
        out.append(
            Section(
                "Accuracy vs shots",
                [
                    "model",
                    "scoring",
                    "template",
                    "shots",
                    "mean shots used",
                    "accuracy [95% CI]",
                    "McNemar p vs fewest",
                ],
                rows,
            )
        )

    if analysis.get("calibration"):
        rows = [
            [
                c["model"],
                c["condition"],
                str(c["n"]),
                fmt_pct(c["mean_confidence"]),
                fmt_pct(c["accuracy"]),
                fmt_pct(c["rms"]),
                fmt_pct(c["ece"]),
                fmt_num(c["subject_correlation"]["r"]),
                fmt_p(c["subject_correlation"]["p"]),
            ]
            for c in analysis["calibration"]
        ]
        out.append(
            Section(
                "Calibration (RMS CE: bins of ~100 items; ECE: 10 bins; r: "
                "confidence vs accuracy across subjects)",
                ["model", "condition", "n", "confidence", "accuracy", "RMS CE", "ECE", "r", "p"],
                rows,
            )
        )

    if analysis.get("rotations"):
        rows = [
            [
                r["model"],
                _scoring(r["scoring"]),
                r["template"],
                str(r["n_shots"]),
                str(r["n"]),
                fmt_pct(r["original"]),
                "/".join(f"{100 * v:.1f}" for v in r["per_rotation"]),
                fmt_pct(r["all_rotations"]),
                fmt_pct(r["same_answer"]),
                fmt_p(r["pvalue"]),
            ]
            for r in analysis["rotations"]
        ]
        out.append(
            Section(
                "Option order (cyclic rotations)",
                [
                    "model",
                    "scoring",
                    "template",
                    "shots",
                    "n",
                    "original",
                    "per rotation (%)",
                    "all correct",
                    "same answer",
                    "Cochran p",
                ],
                rows,
            )
        )

    if analysis.get("templates"):
        rows = []
        for t in analysis["templates"]:
            per = ", ".join(f"{k}: {fmt_pct(v)}" for k, v in t["per_template"].items())
            bw = t["best_minus_worst"]
            mc = t.get("mcnemar")
            rows.append(
                [
                    t["model"],
                    _scoring(t["scoring"]),
                    str(t["n_shots"]),
                    per,
                    f"{fmt_pct(bw['estimate'])} [{fmt_pct(bw['low'])}, {fmt_pct(bw['high'])}]",
                    str(t["flipped_items"]),
                    fmt_p(mc["pvalue"]) if mc else "–",
                ]
            )
        out.append(
            Section(
                "Template sensitivity",
                [
                    "model",
                    "scoring",
                    "shots",
                    "accuracy per template",
                    "best − worst [95% CI]",
                    "items that flip",
                    "McNemar p",
                ],
                rows,
            )
        )

    if analysis.get("option_scoring"):
        rows = [
            [
                o["model"],
                o["condition"],
                str(o["n"]),
                *(fmt_pct(o["accuracy"][k]) for k in ("none", "token", "char")),
            ]
            for o in analysis["option_scoring"]
        ]
        out.append(
            Section(
                "Option scoring (accuracy by normalisation)",
                ["model", "condition", "n", "raw", "per token", "per char"],
                rows,
            )
        )

    if analysis.get("letter_vs_option"):
        rows = [
            [
                x["model"],
                x["template"],
                str(x["n_shots"]),
                fmt_pct(x["letter"]),
                fmt_pct(x["option"]),
                fmt_p(x["mcnemar"]["pvalue"]),
            ]
            for x in analysis["letter_vs_option"]
        ]
        out.append(
            Section(
                "Letter vs option scoring",
                ["model", "template", "shots", "letter", "option", "McNemar p"],
                rows,
            )
        )

    if analysis.get("memorisation"):
        rows = []
        for m in analysis["memorisation"]:
            a, i = m["across_subjects"], m["across_items"]
            rows.append(
                [
                    m["model"],
                    m["condition"],
                    str(m["n"]),
                    fmt_num(a["r"]),
                    fmt_p(a["p"]),
                    fmt_num(i["r"]),
                    fmt_p(i["p"]),
                ]
            )
        out.append(
            Section(
                "Memorisation check (question log-probability per token vs accuracy)",
                ["model", "condition", "n", "r across subjects", "p", "r across items", "p"],
                rows,
            )
        )
    if len(analysis.get("models", [])) == 1:
        out = [_drop_model(sec) for sec in out]
    return out


def _drop_model(section: Section) -> Section:
    if not section.header or section.header[0] != "model":
        return section
    return Section(section.title, section.header[1:], [r[1:] for r in section.rows])


def render_knowledge(analysis: Mapping[str, Any]) -> str:
    """The knowledge study's section of ``summary.md``."""
    out = ["## Knowledge study (MMLU)", ""]
    models = analysis.get("models", [])
    if len(models) == 1:
        out += [f"Model: `{models[0]}`", ""]
    for section in knowledge_sections(analysis):
        out += [f"### {section.title}", "", *_table(section.header, section.rows)]
    for note in analysis.get("notes", []):
        out.append(f"> {note}")
    return "\n".join(out).rstrip() + "\n"
