"""The decide study's report sections: the decision and what it cost, then the comparison
over formats (a sentence a paper can quote per pair, the per-format differences and their
plot, the probability of each ranking)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...document import (
    Block,
    Column,
    LineChart,
    Note,
    Paragraph,
    Point,
    Section,
    Series,
    Table,
)
from ._decide_types import DecideDesign

if TYPE_CHECKING:
    from ._decide_types import DecideAnalysis, PairDecision, PairOverFormats

__all__ = ["decide_report_sections", "level_text", "over_formats_sentence"]

SOURCE = "decide study"
#: Formats listed per pair (those with the most cells both models answered).
SHOWN = 20


def _pp(x: float) -> str:
    return f"{100 * x:+.1f}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def level_text(confidence: float) -> str:
    """A level as the user gave it: 95%, 99.9% (never 0.999 rounded up to "100%")."""
    return f"{100 * confidence:g}%"


def over_formats_sentence(o: PairOverFormats, confidence: float) -> str:
    """ "A is better than B on 83% of formats [71%, 92%]; expected difference +4.1 points
    [+2.0, +6.3]; ..." with the levels named."""
    p, d, f = o.p_better, o.difference, o.flip_share
    return (
        f"{o.a} is better than {o.b} on {_pct(p.estimate)} of formats [{_pct(p.low)}, "
        f"{_pct(p.high)}] (a tie counts half); expected difference {_pp(d.estimate)} points [{_pp(d.low)}, "
        f"{_pp(d.high)}] ({level_text(confidence)} posterior intervals; P({o.a} − {o.b} > 0) = "
        f"{o.prob_positive:.2f}); the other model wins on {_pct(f.estimate)} [{_pct(f.low)}, "
        f"{_pct(f.high)}] of formats."
    )


def _pair_level(level: float) -> str:
    """A pair's level with the digits its 1 − level needs (98.33%, 99.9933%, never 100%)."""
    rest = 100 * (1 - level)
    digits = max(2, 1 - math.floor(math.log10(rest))) if rest > 0 else 2
    return f"{100 * level:.{digits}f}%"


def _decision(a: DecideAnalysis) -> str:
    level = level_text(a.confidence)
    spent = (
        f"the whole budget of {a.cells:,} cells"
        if a.cells >= a.budget
        else f"{a.cells:,} of the budget's {a.budget:,} cells ({a.cells / a.budget:.0%})"
    )
    head = (
        f"Decision: undecided at {level} after {spent}"
        if a.decision == "undecided"
        else f"Decision: {a.decision} (at {level}, anytime-valid) after {spent}"
    )
    pairs = (
        ""
        if len(a.pairs) == 1
        else f"; {len(a.pairs)} pairs, each tested at {_pair_level(a.pairs[0].level)}"
    )
    return (
        f"{head}; {a.distinct_cells:,} distinct cells, each answered by every model{pairs}. "
        "The tests look after every batch and stay valid however often they look; the cost "
        "counts the last batch whole."
    )


def _pair_table(pairs: list[PairDecision]) -> Table:
    return Table(
        "Each pair's anytime-valid test",
        (
            Column("pair"),
            Column("decision"),
            Column("decided at cell", "int"),
            Column("winner better by more than"),
            Column("difference (anytime-valid interval)", "diff_ci"),
            Column("fixed design, cells"),
        ),
        tuple(
            (
                f"{p.a} − {p.b}",
                (
                    f"{p.winner} better (implied by the others)"
                    if p.implied
                    else f"{p.winner} better"
                    if p.winner
                    else "undecided"
                ),
                p.decided_at,
                "–" if p.margin is None else f"{100 * p.margin:.1f} pp",
                (p.difference.estimate, p.difference.low, p.difference.high),
                "–" if p.fixed_cells is None else f"{p.fixed_cells:,}",
            )
            for p in pairs
        ),
        note="decision: the pair's sign test (a mixture of two bets); 'better by more than': "
        "the bound that test gives, at the pair's level (it leaves 0 when the test decides). "
        "The interval is a separate two-sided confidence sequence at the same level, sized "
        "for the difference: it can still reach 0 when the test has decided. Both are "
        "anytime-valid. implied: the decided pairs give it (A > B and B > C: "
        "A > C), at the same confidence. fixed design: the cells at which a fixed-size "
        "interval at the pair's level, centred on the observed difference, excludes 0, "
        "(z s / d)² (it knows the difference in advance: an optimistic figure).",
    )


def _plot(o: PairOverFormats, confidence: float) -> LineChart:
    ranked = sorted(o.formats, key=lambda f: f.estimate)
    n = len(ranked)
    points = tuple(Point((k + 0.5) / n, f.estimate, f.low, f.high) for k, f in enumerate(ranked))
    low = min(min(f.low for f in ranked), 0.0)
    high = max(max(f.high for f in ranked), 0.0)
    pad = 0.05 * (high - low) or 0.01  # whiskers at the ends stay inside the frame
    low, high = max(low - pad, -1.0), min(high + pad, 1.0)
    return LineChart(
        f"{o.a} − {o.b} per format, sorted ({level_text(confidence)} intervals)",
        (Series(f"{o.a} − {o.b}", points),),
        x_label="share of formats",
        y_label="accuracy difference",
        x_range=(0.0, 1.0),
        y_range=(low, high),
        x_is_share=True,
    )


def _format_table(o: PairOverFormats) -> Table:
    shown = sorted(o.formats, key=lambda f: (-f.cells, f.estimate))[:SHOWN]
    return Table(
        f"{o.a} − {o.b} on the formats with the most cells",
        (
            Column("format"),
            Column(f"{o.a} − {o.b} (interval)", "diff_ci"),
            Column("cells both answered", "int"),
            Column("observed there", "diff_ci"),
        ),
        tuple(
            (
                f.format,
                (f.estimate, f.low, f.high),
                f.cells,
                (math.nan if f.observed is None else f.observed, math.nan, math.nan),
            )
            for f in sorted(shown, key=lambda f: f.estimate)
        ),
        note="estimate: the crossed model's (every format's accuracy over all items); "
        "observed: the mean difference on the cells of that format both models answered.",
    )


def decide_report_sections(
    analysis: DecideAnalysis, design: DecideDesign | Mapping[str, Any], *, figures: bool = True
) -> list[Section]:
    """The decision (each pair's test and what it cost against a fixed design), then the
    comparison over the formats: per pair a sentence, a plot and a per-format table, each
    model's mean accuracy and the probability of each ranking."""
    facts = DecideDesign.from_json(design, source="design")
    names = "; ".join(f"{m.label} = {m.model}" for m in analysis.accuracy)
    blocks: list[Block] = [
        Paragraph(f"{names}; {len(facts.formats)} formats × {len(facts.items)} items."),
        Paragraph(_decision(analysis)),
        _pair_table(analysis.pairs),
        *(Paragraph(over_formats_sentence(o, facts.confidence)) for o in analysis.over_formats),
        Paragraph(
            "These are the crossed model's posterior statements about this run's formats and "
            "items (observed cells count as observed), not a stopping rule: they are sharper "
            "than the tests above, which pay for looking after every batch; decide by the "
            "tests."
        ),
        *(Note(note, "warning") for note in analysis.notes),
        Table(
            "Mean accuracy over the formats",
            (
                Column("model"),
                Column("estimate", "pct"),
                Column("low", "pct"),
                Column("high", "pct"),
            ),
            tuple((m.label, m.estimate, m.low, m.high) for m in analysis.accuracy),
        ),
    ]
    if len(analysis.accuracy) > 2:
        blocks.append(
            Table(
                "Rankings by mean accuracy over the formats (best first)",
                (Column("ranking"), Column("probability", "float")),
                tuple((r.ranking, r.probability) for r in analysis.rankings),
            )
        )
    for o in analysis.over_formats:
        blocks += [*([_plot(o, facts.confidence)] if figures else []), _format_table(o)]
    title = "Which model is better over the formats"
    return [Section.of("decide", title, blocks, source=SOURCE, lead=True)]
