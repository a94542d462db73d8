"""Report sections of the seed's analyses (:mod:`._seed_analyses`): confidence vs accuracy
per subject, accuracy vs question length, and UnifiedQA's end marker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...document import Bar, BarChart, Block, Column, Note, Paragraph, RefLine, Section
from ._types import ConfidenceGap, EndMarker, KnowledgeAnalysis, LengthBin, LengthTrend

if TYPE_CHECKING:
    from ._report import _Tables

SOURCE = "knowledge study"
#: Subjects named as the largest gaps of each condition.
NAMED_GAPS = 3
#: Most charts (length bars) drawn; every number is in the tables.
MAX_FIGURES = 8
_CHANCE = RefLine(0.25, "chance (4 options)")


def _points(value: float) -> str:
    return f"{100 * value:+.1f} pts"


def _order(gaps: Sequence[ConfidenceGap]) -> list[list[ConfidenceGap]]:
    """The gaps of each (model, condition), in the order they come, each sorted by |gap|
    (largest first; ties by subject)."""
    groups: dict[tuple[str, str], list[ConfidenceGap]] = {}
    for g in gaps:
        groups.setdefault((g.model, g.condition), []).append(g)
    return [sorted(v, key=lambda g: (-abs(g.gap), g.subject)) for v in groups.values()]


def _gaps(a: KnowledgeAnalysis, tables: _Tables) -> Section | None:
    if not a.confidence_gaps:
        return None
    groups = _order(a.confidence_gaps)
    named = []
    for group in groups:
        first = group[0]
        who = f"{first.model}, {first.condition}" if tables.many else first.condition
        top = "; ".join(
            f"{g.subject} {_points(g.gap)} (confidence {100 * g.confidence:.1f}%, "
            f"accuracy {100 * g.accuracy:.1f}%, n={g.n})"
            for g in group[:NAMED_GAPS]
        )
        named.append(f"{who}: {top}.")
    blocks: list[Block] = [
        Paragraph(
            "Per subject, the mean confidence (the chosen option's probability) minus the "
            "accuracy, as in the seed's Figure 8 (which reports gaps of up to 24 points): "
            "positive is overconfident. The interval is a 95% paired bootstrap over the "
            "subject's items. Largest gaps:"
        ),
        *(Paragraph(text) for text in named),
    ]
    rows = [
        (g.model, g.condition, g.subject, g.n, g.confidence, g.accuracy, (g.gap, g.low, g.high))
        for group in groups
        for g in group
    ]
    columns = (
        Column("condition"),
        Column("subject"),
        Column("n", "int"),
        Column("confidence", "pct", "mean probability of the chosen option"),
        Column("accuracy", "pct"),
        Column("gap [95% CI]", "diff_ci", "confidence − accuracy; paired bootstrap over items"),
    )
    note = "Sorted by |gap| within each condition."
    blocks.append(tables("Confidence − accuracy per subject", columns, rows, note=note))
    return Section.of(
        "knowledge-confidence-gaps", "Confidence vs accuracy per subject", blocks, source=SOURCE
    )


def _bin_label(b: LengthBin) -> str:
    if b.high_chars is None:
        return f"≥{b.low_chars} chars"
    return f"{b.low_chars}–{b.high_chars - 1} chars"


def _length(a: KnowledgeAnalysis, tables: _Tables, figures: bool) -> Section | None:
    if not a.length:
        return None
    blocks: list[Block] = [
        Paragraph(
            "Accuracy against the question's length in characters (the options not counted), "
            "as in the seed's Figure 12, in the original option order. The slope is a "
            "logistic regression of correctness on log2(characters): the change in log-odds "
            "per doubling of length, with a 95% interval from standard errors clustered by "
            "subject (from 10 subjects; the ordinary ones below that, as the column "
            "'clusters' says). Long questions come from a few subjects, so the slope mixes "
            "length with subject. r is Pearson's correlation of length and the true answer's "
            "probability (letter scoring) over questions longer than 280 characters, which "
            "the seed finds slightly positive."
        )
    ]
    if figures:
        for t in a.length[:MAX_FIGURES]:
            bars = tuple(Bar(_bin_label(b), b.accuracy, b.low, b.high, n=b.n) for b in t.bins)
            blocks.append(
                BarChart(
                    tables.label(t.model, f"{t.condition}: accuracy by question length"),
                    bars,
                    value_label="accuracy (95% Wilson interval)",
                    reference=(_CHANCE,),
                )
            )
        if len(a.length) > MAX_FIGURES:
            blocks.append(Note(f"Bars for the first {MAX_FIGURES} of {len(a.length)} conditions."))
    blocks.append(_trend_table(a.length, tables))
    blocks.append(_bin_table(a.length, tables))
    return Section.of("knowledge-length", "Accuracy vs question length", blocks, source=SOURCE)


def _trend_table(trends: Sequence[LengthTrend], tables: _Tables) -> Block:
    rows: list[tuple[Any, ...]] = []
    for t in trends:
        s, r = t.slope, t.long_questions
        slope = (
            f"{s.estimate:+.3f} [{s.low:+.3f}, {s.high:+.3f}]" if s.estimate is not None else t.note
        )
        clusters = t.n_clusters if t.n_clusters is not None else "none (ordinary SE)"
        rows.append((t.model, t.condition, t.n, slope, t.pvalue, clusters, r.n, r.r, r.p))
    columns = (
        Column("condition"),
        Column("n", "int"),
        Column("slope [95% CI]", help="log-odds of a correct answer per doubling of length"),
        Column("p", "pvalue", "Wald test of the slope"),
        Column("clusters", "int", "subjects the standard error is clustered by"),
        Column("n for r", "int", "questions over 280 characters with a letter score"),
        Column("r > 280 chars", "float", "length vs the true answer's probability (Pearson)"),
        Column("p (r)", "pvalue"),
    )
    return tables("Trend", columns, rows)


def _bin_table(trends: Sequence[LengthTrend], tables: _Tables) -> Block:
    rows = [
        (
            t.model,
            t.condition,
            _bin_label(b),
            b.n,
            (b.accuracy, b.low, b.high),
            b.true_label_probability,
        )
        for t in trends
        for b in t.bins
    ]
    columns = (
        Column("condition"),
        Column("length"),
        Column("n", "int"),
        Column("accuracy [95% CI]", "pct_ci", "Wilson interval"),
        Column("P(true answer)", "pct", "mean probability of the gold option (letter scoring)"),
    )
    return tables("Per length bin", columns, rows)


def _end_marker(pairs: Sequence[EndMarker], tables: _Tables) -> Section:
    rows = [
        (
            e.model,
            e.scoring.removesuffix("-logprob"),
            e.n_shots,
            e.n,
            e.n_truncated,
            e.without_marker,
            e.with_marker,
            (e.difference.estimate, e.difference.low, e.difference.high),
            e.mcnemar.pvalue,
        )
        for e in pairs
    ]
    columns = (
        Column("scoring"),
        Column("shots", "int"),
        Column("n", "int"),
        Column("cut", "int", "items left out: the prompt was cut under a template"),
        Column("without </s>", "pct", "template unifiedqa"),
        Column("with </s>", "pct", "template unifiedqa-eos"),
        Column("with − without [95% CI]", "diff_ci", "paired bootstrap over items"),
        Column("McNemar p", "pvalue"),
    )
    blocks: list[Block] = [
        Paragraph(
            "UnifiedQA's input (question \\n (a) … (d) …, normalised and lowercased) with and "
            "without the end marker </s>, paired by item; the seed (appendix A.3) reports a "
            "drop of a few points without it."
        ),
        tables("", columns, rows),
    ]
    added = sorted({e.model for e in pairs if "special_tokens=false" not in e.model})
    if added:  # a tokenizer that appends </s> itself (T5) adds one to both conditions
        blocks.append(
            Paragraph(
                "The columns count the </s> the prompt's text holds. A model whose tokenizer "
                "appends </s> itself (T5, UnifiedQA) reads one more in both: for "
                f"{', '.join(added)} that is one </s> against two, not the seed's none against "
                "one, unless the model is given as hf-seq2seq:NAME?special_tokens=false."
            )
        )
    return Section.of("knowledge-end-marker", "UnifiedQA end marker", blocks, source=SOURCE)


def seed_sections(analysis: KnowledgeAnalysis, tables: _Tables, figures: bool) -> list[Section]:
    """The sections of the seed's analyses the run has."""
    out = [s for s in (_gaps(analysis, tables), _length(analysis, tables, figures)) if s]
    if analysis.end_marker:
        out.append(_end_marker(analysis.end_marker, tables))
    return out
