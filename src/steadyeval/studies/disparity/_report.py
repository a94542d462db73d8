"""The disparity study's report sections, built from its typed analysis alone (``summary.md``
gets the tables, ``steadyeval report`` the same tables and the P@1-over-γ figure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._errors import show_path
from ...document import Block, Column, LineChart, Note, Paragraph, Point, Section, Series, Table
from ...items import shorten
from ._analysis import BASE
from ._types import DisparityAnalysis, DisparityDesign

__all__ = ["disparity_report_sections", "overlap_text"]

SOURCE = "disparity study"


def _gamma_text(g: str) -> str:
    return "as given" if g == BASE else f"{g}%"


def _p_table(a: DisparityAnalysis) -> Table:
    cells = {(c.model, c.gamma): c for c in a.cells}
    rows = []
    for g in a.gammas:
        row: list[Any] = [_gamma_text(g)]
        for m in a.models:
            c = cells.get((m, g))
            row.append(None if c is None else (c.p_at_1, c.low, c.high))
        rows.append(tuple(row))
    n = max((c.n for c in a.cells), default=0)
    return Table(
        "P@1 per model and γ",
        (
            Column("γ (overlap share)", help="share of probe-fact sentences in the corpus"),
            *(Column(m, "pct_ci", "P@1 [95% Wilson interval]") for m in a.models),
        ),
        tuple(rows),
        note=f"{n} facts per cell. 'as given': the model without further pre-training.",
    )


def _gap_table(a: DisparityAnalysis) -> Table:
    rows = tuple(
        (
            _gamma_text(r.gamma),
            f"{r.a} − {r.b}",
            r.n,
            r.p_a,
            r.p_b,
            (r.diff, r.low, r.high),
            r.only_a,
            r.only_b,
            r.pvalue if r.only_a + r.only_b else "no discordant facts",
        )
        for r in a.gaps
    )
    return Table(
        "Gap between models per γ (paired on the same facts)",
        (
            Column("γ"),
            Column("models (A − B)"),
            Column("facts", "int"),
            Column("P@1 A", "pct"),
            Column("P@1 B", "pct"),
            Column("A − B [95% CI]", "diff_ci", "paired interval of the difference"),
            Column("only A", "int", "facts only A gets right"),
            Column("only B", "int", "facts only B gets right"),
            Column("McNemar p", "pvalue", "exact McNemar test on the discordant facts"),
        ),
        rows,
    )


def _change_table(a: DisparityAnalysis) -> Table:
    rows = tuple(
        (
            r.model,
            f"{r.gamma}% vs {r.reference}%",
            r.n,
            (r.diff, r.low, r.high),
            r.only_a,
            r.only_b,
            r.pvalue if r.only_a + r.only_b else "no discordant facts",
        )
        for r in a.changes
    )
    return Table(
        "Change with the overlap share, per model",
        (
            Column("model"),
            Column("γ"),
            Column("facts", "int"),
            Column("change [95% CI]", "diff_ci", "P@1 at γ minus P@1 at the lowest γ"),
            Column("gained", "int", "facts right at γ only"),
            Column("lost", "int", "facts right at the lowest γ only"),
            Column("McNemar p", "pvalue"),
        ),
        rows,
    )


def _chart(a: DisparityAnalysis) -> LineChart:
    series = []
    for m in a.models:
        points = tuple(
            Point(int(c.gamma) / 100, c.p_at_1, c.low, c.high, n=c.n)
            for c in a.cells
            if c.model == m and c.gamma != BASE
        )
        series.append(Series(m, points))
    return LineChart(
        "P@1 against the overlap share γ",
        tuple(series),
        x_label="γ: share of probe-fact sentences in the further pre-training corpus",
        y_label="P@1",
        x_range=(0.0, 1.0),
        x_is_share=True,
        note="Whiskers: 95% Wilson intervals. Converging lines: the gap between models shrinks "
        "when both see the same data.",
    )


def overlap_text(corpus: Mapping[str, Any]) -> str | None:
    """One sentence on where the overlap corpus came from (``design.corpus``), or None
    when the design does not say (a run written before it was recorded)."""
    source = corpus.get("overlap_source")
    n = corpus.get("overlap_pool")
    if source is None or not isinstance(n, int):
        return None
    file = corpus.get("overlap_file") or {}
    path = show_path(file.get("path", "?"), 120)
    if source == "trex":
        text = (
            f"Overlap corpus: LAMA T-REx evidence sentences ({n:,} sentences from "
            f"{file.get('rows', 0):,} facts in {len(file.get('files', [])):,} file(s) of "
            f"{path}), the seed's corpus"
        )
        facts = corpus.get("overlap_facts") or {}
        if isinstance(facts.get("probed"), int):
            text += (
                f"; {facts.get('with_evidence', 0):,} of the {facts['probed']:,} probed facts "
                "have evidence in it"
            )
        missing = file.get("missing_relations") or []
        if missing:
            text += f"; no file for {len(missing)} probed relation(s)"
        return text + "."
    if source == "text":
        return f"Overlap corpus: {n:,} sentences read from {path} (one per line)."
    if source == "sentences":
        return f"Overlap corpus: {n:,} sentences given to the design."
    if source in _TEMPLATE_SOURCES:
        return (
            f"Overlap corpus: {n:,} sentences, the probed facts written with "
            f"{_TEMPLATE_SOURCES[source]}. This is a proxy: the seed used LAMA's Wikipedia "
            "evidence sentences (give them with --overlap-file)."
        )
    return f"Overlap corpus: {n:,} sentences ({shorten(str(source), 40)})."


_TEMPLATE_SOURCES = {
    "other-templates": "their relation's other templates",
    "probe-template": "the probed template itself",
}


def disparity_report_sections(
    analysis: DisparityAnalysis, design: DisparityDesign | None = None, *, figures: bool = True
) -> list[Section]:
    """The study's one section: where the overlap corpus came from (from ``design``), P@1
    per model × γ (and a figure), the gap between models per γ with McNemar's test, and each
    model's change across γ."""
    a = analysis
    blocks: list[Block] = [
        Paragraph(
            "Sample disparity (Cao et al., ACL 2022, section 6): each model is pre-trained "
            "further on corpora of the same size whose share γ of sentences states the probed "
            "facts, then probed (P@1). A gap between models that closes as γ grows comes from "
            "their pre-training data, not their ability."
        )
    ]
    source = None if design is None else overlap_text(design.corpus)
    if source is not None:
        blocks.append(Paragraph(source))
    if a.cells:
        blocks.append(_p_table(a))
        if figures:
            blocks.append(_chart(a))
    if a.gaps:
        blocks.append(_gap_table(a))
    if a.changes:
        blocks.append(_change_table(a))
    blocks += [Note(n) for n in a.notes]
    return [Section.of("disparity", "Sample disparity", blocks, SOURCE)]
