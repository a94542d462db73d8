"""The decide study's report sections: the decision and what it cost, then the comparison
over formats (a sentence a paper can quote, the per-format differences and their plot)."""

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
    from ._decide_types import DecideAnalysis, OverFormatsResult, SequentialResult

__all__ = ["decide_report_sections", "over_formats_sentence"]

SOURCE = "decide study"
#: Formats listed in the per-format table (those with the most cells both models answered).
SHOWN = 20


def _pp(x: float) -> str:
    return f"{100 * x:+.1f}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def over_formats_sentence(o: OverFormatsResult, a: str, b: str, confidence: float) -> str:
    """ "A is better than B on 83% of formats [71%, 92%]; expected difference +4.1 points
    [+2.0, +6.3]; ..." with the levels named."""
    p, d, f = o.p_better, o.difference, o.flip_share
    return (
        f"{a} is better than {b} on {_pct(p.estimate)} of formats [{_pct(p.low)}, "
        f"{_pct(p.high)}]; expected difference {_pp(d.estimate)} points [{_pp(d.low)}, "
        f"{_pp(d.high)}] ({confidence:.0%} posterior intervals; P({a} − {b} > 0) = "
        f"{o.prob_positive:.2f}); the ranking flips on {_pct(f.estimate)} [{_pct(f.low)}, "
        f"{_pct(f.high)}] of formats."
    )


def _decision(s: SequentialResult, a: str, b: str) -> str:
    level = f"{s.confidence:.0%}"
    d = s.difference
    spent = (
        f"the whole budget of {s.cells:,} cells"
        if s.cells >= s.budget
        else f"{s.cells:,} of the budget's {s.budget:,} cells"
    )
    verdict = (
        f"undecided at {level} after {spent}"
        if s.decision == "undecided"
        else f"{a if s.decision == 'A' else b} is better (at {level}, anytime-valid) after "
        f"{s.cells:,} of the budget's {s.budget:,} cells ({s.cells / s.budget:.0%}; the test "
        f"crossed its threshold at cell {s.decided_at:,}, in the last batch)"
    )
    fixed = (
        f"; a fixed design, knowing the difference, would need about {s.fixed_cells:,} cells "
        f"for a {level} interval excluding 0"
        if s.fixed_cells is not None
        else ""
    )
    return (
        f"Decision: {verdict}; {s.distinct_cells:,} distinct cells, each answered by both "
        f"models. A − B = {_pp(d.estimate)} points, anytime-valid {level} interval "
        f"[{_pp(d.low)}, {_pp(d.high)}]{fixed}."
    )


def _plot(o: OverFormatsResult, confidence: float) -> LineChart:
    ranked = sorted(o.formats, key=lambda f: f.estimate)
    n = len(ranked)
    points = tuple(Point((k + 0.5) / n, f.estimate, f.low, f.high) for k, f in enumerate(ranked))
    low = min(min(f.low for f in ranked), 0.0)
    high = max(max(f.high for f in ranked), 0.0)
    pad = 0.05 * (high - low) or 0.01  # whiskers at the ends stay inside the frame
    low, high = max(low - pad, -1.0), min(high + pad, 1.0)
    return LineChart(
        f"A − B per format, sorted ({confidence:.0%} intervals)",
        (Series("A − B", points),),
        x_label="share of formats",
        y_label="accuracy difference",
        x_range=(0.0, 1.0),
        y_range=(low, high),
        x_is_share=True,
    )


def _table(o: OverFormatsResult) -> Table:
    shown = sorted(o.formats, key=lambda f: (-f.cells, f.estimate))[:SHOWN]
    return Table(
        "A − B on the formats with the most cells",
        (
            Column("format"),
            Column("A − B (interval)", "diff_ci"),
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
    """The decision (what it cost against the fixed design), then the comparison over the
    formats with its plot and the per-format table."""
    facts = DecideDesign.from_json(design, source="design")
    a, b = analysis.model_a, analysis.model_b
    o = analysis.over_formats
    blocks: list[Block] = [
        Paragraph(f"A = {a}; B = {b}; {len(facts.formats)} formats × {len(facts.items)} items."),
        Paragraph(_decision(analysis.sequential, "A", "B")),
        Paragraph(over_formats_sentence(o, "A", "B", facts.confidence)),
        *(Note(note, "warning") for note in analysis.notes),
        Table(
            "Mean accuracy over the formats",
            (
                Column("model"),
                Column("estimate", "pct"),
                Column("low", "pct"),
                Column("high", "pct"),
            ),
            tuple(
                (name, e.estimate, e.low, e.high)
                for name, e in (("A", o.accuracy_a), ("B", o.accuracy_b))
            ),
        ),
        *([_plot(o, facts.confidence)] if figures else []),
        _table(o),
    ]
    title = "Which model is better over the formats"
    return [Section.of("decide", title, blocks, source=SOURCE, lead=True)]
