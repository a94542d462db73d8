"""The formats report's tables beyond the seed's: option order stability, lists without the
decoy, sampling, and seeded examples of questions whose refusal flips between formats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...document import Block, Column, Table, format_cell
from ._report_labels import _in_order
from ._types import (
    DecoyRemoval,
    ExampleOutput,
    FormatsAnalysis,
    OrderStability,
    SampledCondition,
)


def _orders_table(orders: Sequence[OrderStability], names: Mapping[str, str]) -> Table:
    """Per list format: how many questions keep their refusal (and answer) in every option
    order."""
    return Table(
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
                names[o.condition],
                o.subset,
                o.orders + 1,
                o.n,
                o.refusal_stable,
                (o.refusal_stable_rate, o.low, o.high),
                o.same_answer,
                ", ".join(format_cell(k, "int") for k in o.refusals_per_order),
            )
            for o in orders
        ),
    )


def _no_decoy_table(nd: Sequence[DecoyRemoval], names: Mapping[str, str]) -> Table:
    """Per list format: refusals of the unanswerable questions with and without the decoy."""
    return Table(
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
                names[o.condition],
                o.n,
                o.refused_with_decoy,
                o.refused_without_decoy,
                o.only_a,
                o.only_b,
                o.p_exact,
                o.p_midp,
            )
            for o in nd
        ),
    )


def _sampling_table(samp: Sequence[SampledCondition]) -> Table:
    """Per sampled condition: the refusal rate over samples, and greedy vs majority."""
    return Table(
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
                o.condition,
                o.subset,
                o.n_items,
                o.n_samples,
                o.refusal_rate,
                o.se_clustered,
                o.unanimous,
                o.greedy_refused,
                o.majority_refused,
                o.greedy_vs_majority_flips,
            )
            for o in samp
        ),
    )


def _extra_blocks(a: FormatsAnalysis, names: Mapping[str, str], model: str) -> list[Block]:
    """One model's tables of option orders, lists without the decoy and sampling (those its
    run has)."""
    blocks: list[Block] = []
    orders = [o for o in a.orders if o.model == model]
    if orders:
        blocks.append(_orders_table(orders, names))
    nd = [o for o in a.no_decoy if o.model == model]
    if nd:
        blocks.append(_no_decoy_table(nd, names))
    samp = [o for o in a.sampling if o.model == model]
    if samp:
        blocks.append(_sampling_table(samp))
    return blocks


def _examples(a: FormatsAnalysis, names: Mapping[str, str], model: str) -> list[Block]:
    ex = [e for e in a.examples if e.model == model]
    if not ex:
        return []
    formats = _in_order(names, {n for e in ex for n in e.outputs})

    def shown(o: ExampleOutput | None) -> str | None:
        if o is None:
            return None
        return (o.output or "") + (" — refused" if o.refused else "")

    return [
        Table(
            f"Examples: {len(ex)} of {ex[0].n_flipping} questions whose refusal flips "
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
                    e.question,
                    e.title,
                    e.item_id,
                    e.answerable,
                    e.decoy,
                    *(shown(e.outputs.get(n)) for n in formats),
                )
                for e in ex
            ),
            note="Each format's output; '— refused' marks a refusal.",
        )
    ]
