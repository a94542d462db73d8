"""The formats report's paired tables: per subset and outcome, the agreement of every pair
of formats with McNemar (exact and mid-p) and Holm, a heatmap of the refusal flips, and the
noise floor (flips between conditions that should not differ)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...document import Block, Column, Heatmap, Table, format_cell
from ._report_labels import _in_order
from ._types import FormatPair, FormatsAnalysis

_VERBS = {"refused": ("refuses", "refuse"), "correct": ("is correct", "correct")}
_PHRASE_HELP = "flips between two formats that differ in one phrase"
_ORDER_HELP = "mean flips of A and B against themselves under other option orders"
#: McNemar's p where no question flips: there is nothing to test.
NO_DISCORDANT = "no discordant pairs"


def _heatmap(
    recs: Sequence[FormatPair], names: Mapping[str, str], subset: str, outcome: str
) -> Heatmap:
    """Flips between every pair of formats; cells above the noise floor are outlined."""
    order = list(dict.fromkeys(n for p in recs for n in (p.a, p.b)))
    index = {n: i for i, n in enumerate(order)}
    k = len(order)
    values = [[math.nan] * k for _ in range(k)]
    text = [["—" if i == j else "" for j in range(k)] for i in range(k)]
    marked = [[False] * k for _ in range(k)]
    floor = next((p.noise_floor for p in recs if p.noise_floor is not None), None)
    for p in recs:
        i, j = index[p.a], index[p.b]
        share = p.flips / p.n if p.n else math.nan
        ptext = format_cell(p.p_exact, "pvalue")
        test = f"p{ptext if ptext.startswith('<') else '=' + ptext}" if p.flips else "no flips"
        cell = f"{p.flips}/{p.n}\n{test}"
        for r, c in ((i, j), (j, i)):
            values[r][c] = share
            text[r][c] = cell
            marked[r][c] = floor is not None and p.flips > floor
    legend = (
        "cell: questions on which the two formats disagree / questions both have, and "
        "McNemar's exact p (no test where nothing flips); colour: share that flips"
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


def _pair_table(
    recs: Sequence[FormatPair], names: Mapping[str, str], subset: str, outcome: str
) -> Table:
    """The agreement of every pair of formats on ``outcome`` (``recs``: the ``pairs``
    records of one model, subset and outcome)."""
    one, both = _VERBS[outcome]
    return Table(
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
                names[p.a],
                names[p.b],
                p.total_a,
                p.total_b,
                p.both,
                p.neither,
                p.only_a,
                p.only_b,
                p.flips,
                p.p_exact if p.flips else NO_DISCORDANT,
                p.p_midp,
                p.p_holm,
                p.noise_floor,
                p.order_floor,
            )
            for p in recs
        ),
    )


def _noise_floor_table(a: FormatsAnalysis, names: Mapping[str, str], model: str) -> Table | None:
    """One model's noise floor: the flips between two formats that differ in one phrase and
    between each list format and itself under other option orders; None when there is none."""
    floors = [f for f in a.noise_floor if f.model == model]
    rows: list[tuple[str, str, str, int]] = []
    for f in floors:
        ph = f.phrase
        if ph.flips is not None:
            pair = f"{_named(names, ph.a)} vs {_named(names, ph.b)}"
            rows.append((f.subset, f.outcome, f"{pair} (one phrase differs)", ph.flips))
        for name in _in_order(names, f.order):
            for k, n in enumerate(f.order[name], start=1):
                what = f"{names[name]} vs itself under option order {k}"
                rows.append((f.subset, f.outcome, what, n))
    if not rows:
        return None
    return Table(
        "Noise floor",
        (
            Column("questions"),
            Column("outcome"),
            Column("two conditions that should not differ"),
            Column("flips", "int"),
        ),
        tuple(rows),
    )


def _named(names: Mapping[str, str], condition: str | None) -> str:
    """The label of ``condition`` (its name where it has none)."""
    return names.get(condition, condition) if condition is not None else str(None)


def _pair_blocks(
    a: FormatsAnalysis, names: Mapping[str, str], model: str, figures: bool
) -> list[Block]:
    """One model's paired tables per subset and outcome (refusals with a heatmap when
    ``figures``), then its noise floor."""
    blocks: list[Block] = []
    for subset in ("unanswerable", "answerable"):
        for outcome in ("refused", "correct"):
            recs = [
                p
                for p in a.pairs
                if p.model == model and p.subset == subset and p.outcome == outcome
            ]
            if not recs:
                continue
            if figures and outcome == "refused":
                blocks.append(_heatmap(recs, names, subset, outcome))
            blocks.append(_pair_table(recs, names, subset, outcome))
    floor = _noise_floor_table(a, names, model)
    if floor is not None:
        blocks.append(floor)
    return blocks
