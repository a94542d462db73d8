"""Markdown for the study's analysis: the seed's tables first, then every number behind them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_formats"]

#: The outcomes a format can produce (the others are 0 by construction and not shown).
_APPLICABLE = {
    "free": {"refused", "answered", "correct", "wrong"},
    "list": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "escape": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "control": {"refused", "decoy", "other", "unmatched", "correct", "wrong", "control"},
}
_LABELS = {
    "free": "free form",
    "list": "list, no escape",
}


def _label(cond: Mapping[str, Any]) -> str:
    if cond["variant"] == "base" and cond["name"] in _LABELS:
        return _LABELS[cond["name"]]
    if cond["role"] in ("escape", "control") and cond["variant"] == "base":
        word = "control word" if cond["role"] == "control" else "list +"
        return f'{word} "{cond["escape"]}"'
    return str(cond["name"])


def _num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1e-3 and x != 0 else f"{x:.{digits}f}"
    return str(x)


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * x:.1f}%"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], right: int = 1) -> list[str]:
    align = ["---"] * right + ["---:"] * (len(header) - right)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def _outcome_tables(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[str]:
    lines: list[str] = []
    recs = [r for r in a["outcomes"] if r["model"] == model]
    unans = [r for r in recs if r["subset"] == "unanswerable"]
    if unans:
        lines += [f"### Unanswerable questions (n = {unans[0]['n']})", ""]
        rows = []
        for r in unans:
            c = r["counts"]
            refused = str(c["refused"]) + (" (no escape offered)" if r["role"] == "list" else "")
            answered = (
                "–"
                if r["role"] != "free"
                else (f"{c['answered']} (near the decoy: {r.get('near_decoy', 0)})")
            )
            rows.append(
                [
                    names[r["condition"]],
                    refused,
                    c["decoy"],
                    c["other"],
                    answered,
                    c["unmatched"],
                    c["control"] if r["role"] == "control" else "–",
                    r["truncated"],
                ]
            )
        lines += _table(
            [
                "format",
                "refused",
                "chose the decoy",
                "chose another option",
                "answered (free form)",
                "unmatched",
                "chose the control word",
                "inputs truncated",
            ],
            rows,
        )
    ans = [r for r in recs if r["subset"] == "answerable"]
    if ans:
        lines += [f"### Answerable questions (n = {ans[0]['n']})", ""]
        rows = []
        for r in ans:
            c = r["counts"]
            extra = (
                f" (EM {_pct(r.get('em'))}, F1 {_pct(r.get('f1'))})" if r["role"] == "free" else ""
            )
            rows.append(
                [
                    names[r["condition"]],
                    f"{c['correct']}{extra}",
                    c["refused"],
                    c["wrong"],
                    c["unmatched"],
                    c["control"] if r["role"] == "control" else "–",
                    r["truncated"],
                ]
            )
        lines += _table(
            [
                "format",
                "correct",
                "refused",
                "wrong",
                "unmatched",
                "chose the control word",
                "inputs truncated",
            ],
            rows,
        )
    rows = []
    for r in recs:
        for outcome, v in r["rates"].items():
            if outcome not in _APPLICABLE[r["role"]]:
                continue
            rows.append(
                [
                    names[r["condition"]],
                    r["subset"],
                    outcome,
                    f"{v['count']}/{r['n']}",
                    _pct(v["rate"]),
                    f"{_pct(v['low'])}–{_pct(v['high'])}",
                    _pct(v["se_clustered"]),
                    v["n_clusters"],
                ]
            )
    if rows:
        lines += ["### Every rate (95% Wilson interval; standard error clustered by paragraph)", ""]
        lines += _table(
            [
                "format",
                "questions",
                "outcome",
                "count",
                "rate",
                "95% CI",
                "clustered SE",
                "paragraphs",
            ],
            rows,
            right=3,
        )
    return lines


def _pair_tables(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[str]:
    lines: list[str] = []
    for subset in ("unanswerable", "answerable"):
        for outcome in ("refused", "correct"):
            recs = [
                p
                for p in a["pairs"]
                if p["model"] == model and p["subset"] == subset and p["outcome"] == outcome
            ]
            if not recs:
                continue
            verb = {"refused": ("refuses", "refuse"), "correct": ("is correct", "correct")}
            one, both = verb[outcome]
            lines += [f"### Paired: {outcome}, {subset} questions", ""]
            rows = [
                [
                    names[p["a"]],
                    names[p["b"]],
                    p["total_a"],
                    p["total_b"],
                    p["both"],
                    p["neither"],
                    p["only_a"],
                    p["only_b"],
                    p["flips"],
                    _num(p["p_exact"]),
                    _num(p["p_midp"]),
                    _num(p["p_holm"]),
                    _num(p["noise_floor"]),
                    _num(p["order_floor"], 1),
                ]
                for p in recs
            ]
            lines += _table(
                [
                    "A",
                    "B",
                    f"A {outcome}",
                    f"B {outcome}",
                    f"both {both}",
                    f"neither {one}",
                    f"only A {one}",
                    f"only B {one}",
                    "flips",
                    "McNemar exact p",
                    "mid-p",
                    "Holm p",
                    "noise floor (flips)",
                    "order floor (flips)",
                ],
                rows,
                right=2,
            )
    floors = [f for f in a["noise_floor"] if f["model"] == model]
    if floors:
        lines += ["### Noise floor", ""]
        rows = []
        for f in floors:
            ph = f["phrase"]
            if ph["flips"] is not None:
                rows.append(
                    [
                        f["subset"],
                        f["outcome"],
                        f"{names.get(ph['a'], ph['a'])} vs "
                        f"{names.get(ph['b'], ph['b'])} (one phrase differs)",
                        ph["flips"],
                    ]
                )
            for name, flips in f["order"].items():
                rows.append(
                    [
                        f["subset"],
                        f["outcome"],
                        f"{names[name]} vs itself under another option order",
                        ", ".join(map(str, flips)),
                    ]
                )
        header = ["questions", "outcome", "two conditions that should not differ", "flips"]
        lines += _table(header, rows, right=3)
    return lines


def _extras(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[str]:
    lines: list[str] = []
    orders = [o for o in a["orders"] if o["model"] == model]
    if orders:
        lines += ["### Option orders: per-question refusal stability", ""]
        rows = [
            [
                names[o["condition"]],
                o["subset"],
                o["orders"] + 1,
                o["n"],
                f"{o['refusal_stable']} ({_pct(o['refusal_stable_rate'])}, "
                f"{_pct(o['low'])}–{_pct(o['high'])})",
                o["same_answer"],
                ", ".join(map(str, o["refusals_per_order"])),
            ]
            for o in orders
        ]
        lines += _table(
            [
                "format",
                "questions",
                "orders",
                "n",
                "same refusal in every order",
                "same answer in every order",
                "refusals per order",
            ],
            rows,
            right=2,
        )
    nd = [o for o in a["no_decoy"] if o["model"] == model]
    if nd:
        lines += ["### Lists without the decoy (unanswerable questions)", ""]
        rows = [
            [
                names[o["condition"]],
                o["n"],
                o["refused_with_decoy"],
                o["refused_without_decoy"],
                o["only_a"],
                o["only_b"],
                _num(o["p_exact"]),
                _num(o["p_midp"]),
            ]
            for o in nd
        ]
        lines += _table(
            [
                "format",
                "n",
                "refused with decoy",
                "refused without",
                "only with",
                "only without",
                "McNemar exact p",
                "mid-p",
            ],
            rows,
        )
    samp = [o for o in a["sampling"] if o["model"] == model]
    if samp:
        lines += ["### Sampling", ""]
        rows = [
            [
                o["condition"],
                o["subset"],
                o["n_items"],
                o["n_samples"],
                _pct(o["refusal_rate"]),
                _pct(o["se_clustered"]),
                o["unanimous"],
                o["greedy_refused"],
                o["majority_refused"],
                o["greedy_vs_majority_flips"],
            ]
            for o in samp
        ]
        lines += _table(
            [
                "condition",
                "questions",
                "n",
                "samples",
                "refusal rate",
                "clustered SE",
                "all samples agree",
                "greedy refused",
                "majority refused",
                "greedy vs majority flips",
            ],
            rows,
            right=2,
        )
    return lines


def _examples(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[str]:
    ex = [e for e in a["examples"] if e["model"] == model]
    if not ex:
        return []
    lines = [
        f"### Examples: {len(ex)} of {ex[0]['n_flipping']} questions whose refusal flips "
        "between formats (seeded choice)",
        "",
    ]
    for e in ex:
        kind = "answerable" if e["answerable"] else f'unanswerable, decoy "{e["decoy"]}"'
        lines.append(f"- **{e['question']}** ({e['title']}; {kind}; `{e['item_id']}`)")
        for name, o in e["outputs"].items():
            mark = " — refused" if o["refused"] else ""
            text = (o["output"] or "").replace("\n", " ").replace("|", "\\|")
            lines.append(f"  - {names[name]}: `{text}`{mark}")
    return [*lines, ""]


def render_formats(analysis: Mapping[str, Any]) -> str:
    """Render :func:`analyze_formats`' result as Markdown (the seed's tables come first)."""
    names = {c["name"]: _label(c) for c in analysis["conditions"]}
    lines = ["# Answer format and abstention", ""]
    for model in analysis["models"]:
        lines += [f"## Model `{model}`", ""]
        lines += _outcome_tables(analysis, names, model)
        lines += _pair_tables(analysis, names, model)
        lines += _extras(analysis, names, model)
        lines += _examples(analysis, names, model)
    det = analysis.get("determinism")
    if det:
        lines += [
            "## Determinism check",
            "",
            f"{det['questions']} questions rerun with an empty response cache "
            f"({det['model_calls']} model calls): {det['identical']} of {det['compared']} "
            f"answers identical; largest option log-probability difference "
            f"{_num(det['max_logprob_diff'])}.",
            "",
        ]
        for m in det["mismatches"]:
            lines.append(
                f"- `{m['item_id']}` {m['condition']} ({m['model']}): "
                f"`{m['output']}` vs `{m['main_output']}`"
            )
    return "\n".join(lines).rstrip() + "\n"
