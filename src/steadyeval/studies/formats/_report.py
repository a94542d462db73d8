"""The answer-format study's report sections, built from its analysis dict alone.

One builder serves ``summary.md`` (tables and text) and ``steadyeval report`` (the same
tables plus figures: outcome bars with Wilson intervals and refusal agreement heatmaps
with the noise floor), so a number never differs between the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...reports import (
    Bar,
    BarChart,
    Block,
    Column,
    Heatmap,
    Paragraph,
    Section,
    Table,
    format_cell,
)
from ._analysis import ANSWERABLE_OUTCOMES, UNANSWERABLE_OUTCOMES

__all__ = ["condition_labels", "formats_report_sections"]

SOURCE = "formats study"

#: The outcomes a format can produce (the others are 0 by construction and not shown).
_APPLICABLE = {
    "free": {"refused", "answered", "correct", "wrong"},
    "list": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "escape": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "control": {"refused", "decoy", "other", "unmatched", "correct", "wrong", "control"},
}
_LABELS = {"free": "free form", "list": "list, no escape"}
#: Outcomes in a fixed order (``summary.json`` sorts the keys of the analysis' dicts).
_OUTCOMES = {"unanswerable": UNANSWERABLE_OUTCOMES, "answerable": ANSWERABLE_OUTCOMES}
_VERBS = {"refused": ("refuses", "refuse"), "correct": ("is correct", "correct")}
_PHRASE_HELP = "flips between two formats that differ in one phrase"
_ORDER_HELP = "mean flips of A and B against themselves under other option orders"


def _label(cond: Mapping[str, Any]) -> str:
    if cond["variant"] == "base" and cond["name"] in _LABELS:
        return _LABELS[cond["name"]]
    if cond["role"] in ("escape", "control") and cond["variant"] == "base":
        word = "control word" if cond["role"] == "control" else "list +"
        return f'{word} "{cond["escape"]}"'
    return str(cond["name"])


def condition_labels(analysis: Mapping[str, Any]) -> dict[str, str]:
    """Readable names of the study's conditions (``list-nota`` → ``list + "none of the
    above"``); variants keep their condition name."""
    return {c["name"]: _label(c) for c in analysis["conditions"]}


def _in_order(names: Mapping[str, str], keys: Iterable[str]) -> list[str]:
    """``keys`` in the study's condition order (``summary.json`` sorts dict keys)."""
    present = set(keys)
    return [n for n in names if n in present] + sorted(present - set(names))


def _ci(rate: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return (rate["rate"], rate["low"], rate["high"])


def _only(role: str, value: Any, *roles: str) -> Any:
    """``value`` where the format's role can produce it, else None (shown as a dash)."""
    return value if role in roles else None


def _outcome_blocks(
    recs: Sequence[Mapping[str, Any]], names: Mapping[str, str], figures: bool
) -> list[Block]:
    blocks: list[Block] = []
    unans = [r for r in recs if r["subset"] == "unanswerable"]
    if unans:
        rows = []
        for r in unans:
            c, role = r["counts"], r["role"]
            rows.append(
                (
                    names[r["condition"]],
                    c["refused"],
                    c["decoy"],
                    c["other"],
                    _only(role, c["answered"], "free"),
                    _only(role, r.get("near_decoy", 0), "free"),
                    c["unmatched"],
                    _only(role, c["control"], "control"),
                    r["truncated"],
                )
            )
        blocks.append(
            Table(
                f"Unanswerable questions (n = {unans[0]['n']})",
                (
                    Column("format"),
                    Column("refused", "int"),
                    Column("chose the decoy", "int"),
                    Column("chose another option", "int"),
                    Column("answered (free form)", "int"),
                    Column("near the decoy", "int", "free-form answers close to the decoy"),
                    Column("unmatched", "int"),
                    Column("chose the control word", "int"),
                    Column("inputs truncated", "int"),
                ),
                tuple(rows),
                note=(
                    "'list, no escape' offers no refusal option: its refusals are answers that "
                    "refused anyway. 'near the decoy': free-form answers whose token F1 with "
                    "the decoy reaches the threshold for matching an option."
                ),
            )
        )
        if figures:
            blocks.append(
                _bars("Unanswerable questions: refusal rate by format", unans, names, "refused")
            )
            lists = [r for r in unans if r["role"] != "free"]
            if lists:
                blocks.append(
                    _bars("Unanswerable questions: chose the decoy", lists, names, "decoy")
                )
    ans = [r for r in recs if r["subset"] == "answerable"]
    if ans:
        rows = []
        for r in ans:
            c, role = r["counts"], r["role"]
            rows.append(
                (
                    names[r["condition"]],
                    c["correct"],
                    _only(role, r.get("em"), "free"),
                    _only(role, r.get("f1"), "free"),
                    c["refused"],
                    c["wrong"],
                    c["unmatched"],
                    _only(role, c["control"], "control"),
                    r["truncated"],
                )
            )
        blocks.append(
            Table(
                f"Answerable questions (n = {ans[0]['n']})",
                (
                    Column("format"),
                    Column("correct", "int"),
                    Column("EM", "pct", "exact match of the free-form answer"),
                    Column("F1", "pct", "token F1 of the free-form answer"),
                    Column("refused", "int"),
                    Column("wrong", "int"),
                    Column("unmatched", "int"),
                    Column("chose the control word", "int"),
                    Column("inputs truncated", "int"),
                ),
                tuple(rows),
            )
        )
        if figures:
            blocks.append(_bars("Answerable questions: correct by format", ans, names, "correct"))
    rates: list[tuple[Any, ...]] = [
        (
            names[r["condition"]],
            r["subset"],
            outcome,
            v["count"],
            r["n"],
            _ci(v),
            v["se_clustered"],
            v["n_clusters"],
        )
        for r in recs
        for outcome in _OUTCOMES[r["subset"]]
        if outcome in _APPLICABLE[r["role"]] and (v := r["rates"].get(outcome)) is not None
    ]
    if rates:
        blocks.append(
            Table(
                "Every rate (95% Wilson interval; standard error clustered by paragraph)",
                (
                    Column("format"),
                    Column("questions"),
                    Column("outcome"),
                    Column("count", "int"),
                    Column("n", "int"),
                    Column("rate [95% CI]", "pct_ci", "Wilson interval"),
                    Column("clustered SE", "pct", "standard error clustered by paragraph"),
                    Column("paragraphs", "int"),
                ),
                tuple(rates),
            )
        )
    return blocks


def _bars(
    title: str, recs: Sequence[Mapping[str, Any]], names: Mapping[str, str], outcome: str
) -> BarChart:
    return BarChart(
        title,
        tuple(
            Bar(names[r["condition"]], *_ci(r["rates"][outcome]), n=r["n"])
            for r in recs
            if not _missing(r["rates"][outcome]["rate"])
        ),
        value_label=f"share {outcome} (95% Wilson interval)"
        if outcome != "decoy"
        else "share that chose the decoy (95% Wilson interval)",
    )


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _heatmap(
    recs: Sequence[Mapping[str, Any]], names: Mapping[str, str], subset: str, outcome: str
) -> Heatmap:
    """Flips between every pair of formats; cells above the noise floor are outlined."""
    order = list(dict.fromkeys(n for p in recs for n in (p["a"], p["b"])))
    index = {n: i for i, n in enumerate(order)}
    k = len(order)
    values = [[math.nan] * k for _ in range(k)]
    text = [["—" if i == j else "" for j in range(k)] for i in range(k)]
    marked = [[False] * k for _ in range(k)]
    floor = next((p["noise_floor"] for p in recs if p["noise_floor"] is not None), None)
    for p in recs:
        i, j = index[p["a"]], index[p["b"]]
        share = p["flips"] / p["n"] if p["n"] else math.nan
        ptext = format_cell(p["p_exact"], "pvalue")
        cell = f"{p['flips']}/{p['n']}\np{ptext if ptext.startswith('<') else '=' + ptext}"
        for r, c in ((i, j), (j, i)):
            values[r][c] = share
            text[r][c] = cell
            marked[r][c] = floor is not None and p["flips"] > floor
    legend = (
        "cell: questions on which the two formats disagree / questions both have, and "
        "McNemar's exact p; colour: share that flips"
    )
    if floor is not None:
        legend += (
            f"; outlined: more flips than the noise floor ({floor} flips between two formats "
            "that differ in one phrase)"
        )
    labels = tuple(names[n] for n in order)
    return Heatmap(
        title=f"Agreement on {outcome}, {subset} questions",
        row_labels=labels,
        col_labels=labels,
        values=tuple(tuple(r) for r in values),
        text=tuple(tuple(r) for r in text),
        marked=tuple(tuple(r) for r in marked) if floor is not None else (),
        value_label="share of questions that flip",
        legend=legend,
    )


def _pair_blocks(
    a: Mapping[str, Any], names: Mapping[str, str], model: str, figures: bool
) -> list[Block]:
    blocks: list[Block] = []
    for subset in ("unanswerable", "answerable"):
        for outcome in ("refused", "correct"):
            recs = [
                p
                for p in a["pairs"]
                if p["model"] == model and p["subset"] == subset and p["outcome"] == outcome
            ]
            if not recs:
                continue
            if figures and outcome == "refused":
                blocks.append(_heatmap(recs, names, subset, outcome))
            one, both = _VERBS[outcome]
            blocks.append(
                Table(
                    f"Paired: {outcome}, {subset} questions",
                    (
                        Column("A"),
                        Column("B"),
                        Column(f"A {outcome}", "int"),
                        Column(f"B {outcome}", "int"),
                        Column(f"both {both}", "int"),
                        Column(f"neither {one}", "int"),
                        Column(f"only A {one}", "int"),
                        Column(f"only B {one}", "int"),
                        Column("flips", "int", "only A + only B"),
                        Column("McNemar exact p", "pvalue"),
                        Column("mid-p", "pvalue", "McNemar mid-p"),
                        Column("Holm p", "pvalue", "Holm-adjusted across the pairs of this table"),
                        Column("noise floor (flips)", "int", _PHRASE_HELP),
                        Column("order floor (flips)", "float", _ORDER_HELP),
                    ),
                    tuple(
                        (
                            names[p["a"]],
                            names[p["b"]],
                            p["total_a"],
                            p["total_b"],
                            p["both"],
                            p["neither"],
                            p["only_a"],
                            p["only_b"],
                            p["flips"],
                            p["p_exact"],
                            p["p_midp"],
                            p["p_holm"],
                            p["noise_floor"],
                            p["order_floor"],
                        )
                        for p in recs
                    ),
                )
            )
    floors = [f for f in a["noise_floor"] if f["model"] == model]
    rows = []
    for f in floors:
        ph = f["phrase"]
        if ph["flips"] is not None:
            pair = f"{names.get(ph['a'], ph['a'])} vs {names.get(ph['b'], ph['b'])}"
            rows.append((f["subset"], f["outcome"], f"{pair} (one phrase differs)", ph["flips"]))
        for name in _in_order(names, f["order"]):
            for k, n in enumerate(f["order"][name], start=1):
                what = f"{names[name]} vs itself under option order {k}"
                rows.append((f["subset"], f["outcome"], what, n))
    if rows:
        blocks.append(
            Table(
                "Noise floor",
                (
                    Column("questions"),
                    Column("outcome"),
                    Column("two conditions that should not differ"),
                    Column("flips", "int"),
                ),
                tuple(rows),
            )
        )
    return blocks


def _extra_blocks(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[Block]:
    blocks: list[Block] = []
    orders = [o for o in a["orders"] if o["model"] == model]
    if orders:
        blocks.append(
            Table(
                "Option orders: per-question refusal stability",
                (
                    Column("format"),
                    Column("questions"),
                    Column("orders", "int", "the original order and the shuffled ones"),
                    Column("n", "int"),
                    Column("same refusal in every order", "int"),
                    Column("share [95% CI]", "pct_ci", "Wilson interval"),
                    Column("same answer in every order", "int"),
                    Column("refusals per order", help="original order first"),
                ),
                tuple(
                    (
                        names[o["condition"]],
                        o["subset"],
                        o["orders"] + 1,
                        o["n"],
                        o["refusal_stable"],
                        (o["refusal_stable_rate"], o["low"], o["high"]),
                        o["same_answer"],
                        ", ".join(format_cell(k, "int") for k in o["refusals_per_order"]),
                    )
                    for o in orders
                ),
            )
        )
    nd = [o for o in a["no_decoy"] if o["model"] == model]
    if nd:
        blocks.append(
            Table(
                "Lists without the decoy (unanswerable questions)",
                (
                    Column("format"),
                    Column("n", "int"),
                    Column("refused with decoy", "int"),
                    Column("refused without", "int"),
                    Column("only with", "int"),
                    Column("only without", "int"),
                    Column("McNemar exact p", "pvalue"),
                    Column("mid-p", "pvalue"),
                ),
                tuple(
                    (
                        names[o["condition"]],
                        o["n"],
                        o["refused_with_decoy"],
                        o["refused_without_decoy"],
                        o["only_a"],
                        o["only_b"],
                        o["p_exact"],
                        o["p_midp"],
                    )
                    for o in nd
                ),
            )
        )
    samp = [o for o in a["sampling"] if o["model"] == model]
    if samp:
        blocks.append(
            Table(
                "Sampling",
                (
                    Column("condition"),
                    Column("questions"),
                    Column("n", "int"),
                    Column("samples", "int"),
                    Column("refusal rate", "pct"),
                    Column("clustered SE", "pct"),
                    Column("all samples agree", "int"),
                    Column("greedy refused", "int"),
                    Column("majority refused", "int"),
                    Column("greedy vs majority flips", "int"),
                ),
                tuple(
                    (
                        o["condition"],
                        o["subset"],
                        o["n_items"],
                        o["n_samples"],
                        o["refusal_rate"],
                        o["se_clustered"],
                        o["unanimous"],
                        o["greedy_refused"],
                        o["majority_refused"],
                        o["greedy_vs_majority_flips"],
                    )
                    for o in samp
                ),
            )
        )
    return blocks


def _examples(a: Mapping[str, Any], names: Mapping[str, str], model: str) -> list[Block]:
    ex = [e for e in a["examples"] if e["model"] == model]
    if not ex:
        return []
    formats = _in_order(names, {n for e in ex for n in e["outputs"]})

    def shown(o: Mapping[str, Any] | None) -> str | None:
        if o is None:
            return None
        return (o["output"] or "") + (" — refused" if o["refused"] else "")

    return [
        Table(
            f"Examples: {len(ex)} of {ex[0]['n_flipping']} questions whose refusal flips "
            "between formats (seeded choice)",
            (
                Column("question", wide=True),
                Column("article"),
                Column("item"),
                Column("answerable", "bool"),
                Column("decoy"),
                *(Column(names[n], wide=True) for n in formats),
            ),
            tuple(
                (
                    e["question"],
                    e["title"],
                    e["item_id"],
                    e["answerable"],
                    e["decoy"],
                    *(shown(e["outputs"].get(n)) for n in formats),
                )
                for e in ex
            ),
            note="Each format's output; '— refused' marks a refusal.",
        )
    ]


def _determinism(det: Mapping[str, Any]) -> Section:
    blocks: list[Block] = [
        Paragraph(
            f"{format_cell(det['questions'], 'int')} questions rerun under the greedy formats "
            "with an empty response cache, so every request reached the model again."
        ),
        Table(
            "",
            (
                Column("questions", "int"),
                Column("model calls", "int"),
                Column("answers compared", "int"),
                Column("identical", "int"),
                Column("largest option log-probability difference", "float"),
            ),
            (
                (
                    det["questions"],
                    det["model_calls"],
                    det["compared"],
                    det["identical"],
                    det["max_logprob_diff"],
                ),
            ),
        ),
    ]
    if det["mismatches"]:
        blocks.append(
            Table(
                "Answers that differ (first 10)",
                (
                    Column("item"),
                    Column("condition"),
                    Column("model"),
                    Column("rerun output", wide=True),
                    Column("main output", wide=True),
                ),
                tuple(
                    (m["item_id"], m["condition"], m["model"], m["output"], m["main_output"])
                    for m in det["mismatches"]
                ),
            )
        )
    return Section.of("formats-determinism", "Determinism check", blocks, source=SOURCE)


def formats_report_sections(analysis: Mapping[str, Any], *, figures: bool = True) -> list[Section]:
    """The study's report sections from :func:`analyze_formats`' result (as stored in
    ``summary.json``): per model the seed's outcome tables, every rate with its Wilson
    interval and clustered SE, the paired tables with McNemar and Holm, the noise floor,
    option orders, decoy removal, sampling and seeded examples; then the determinism check.

    Parameters
    ----------
    analysis : mapping
        ``summary.json["analysis"]`` of a formats run.
    figures : bool
        Add figures (outcome bars, refusal agreement heatmaps). ``summary.md`` leaves them
        out: their numbers are in the tables.

    Returns
    -------
    list of Section
    """
    names = condition_labels(analysis)
    out = []
    for i, model in enumerate(analysis["models"]):
        recs = [r for r in analysis["outcomes"] if r["model"] == model]
        blocks = [
            *_outcome_blocks(recs, names, figures),
            *_pair_blocks(analysis, names, model, figures),
            *_extra_blocks(analysis, names, model),
            *_examples(analysis, names, model),
        ]
        title = f"Answer format and abstention: {model}"
        out.append(Section.of(f"formats-model-{i + 1}", title, blocks, source=SOURCE))
    det = analysis.get("determinism")
    if det:
        out.append(_determinism(det))
    return out
