"""The knowledge study's report sections, built from its typed analysis alone.

One builder serves ``summary.md`` (tables and text), the CLI's tables and
``steadyeval report`` (the same tables plus figures: per-category bars, accuracy vs shots
lines, reliability diagrams), so a number never differs between them. The study's
``shots`` and ``calibration`` sections take the place of the report's generic ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import stats
from ...document import (
    Bar,
    BarChart,
    Block,
    Column,
    LineChart,
    Note,
    Paragraph,
    Point,
    RefLine,
    Section,
    Series,
    Table,
    format_cell,
)
from ._report_seed import seed_sections
from ._types import (
    CalibrationResult,
    CategoryAccuracy,
    ConditionAccuracy,
    KnowledgeAnalysis,
    LetterVsOption,
    Memorisation,
    OptionScoring,
    RotationResult,
    ShotCount,
    TemplateSpread,
    WilsonAccuracy,
)

__all__ = ["knowledge_report_sections"]

SOURCE = "knowledge study"
#: Most charts (category bars) or lines (reliability) drawn; every number is in the tables.
MAX_FIGURES = 8
_CHANCE = RefLine(0.25, "chance (4 options)")
Row = tuple[Any, ...]
#: The records that hold an accuracy with its Wilson interval.
WithInterval = WilsonAccuracy | CategoryAccuracy | ShotCount


def _scoring(name: str) -> str:
    return name.removesuffix("-logprob")


def _ci(d: WithInterval) -> tuple[float, float, float]:
    return (d.accuracy, d.low, d.high)


def _original(analysis: KnowledgeAnalysis) -> list[ConditionAccuracy]:
    """Accuracy records of conditions in the original option order."""
    return [a for a in analysis.accuracy if a.rotation in (0, None)]


class _Tables:
    """Builds tables that get a leading ``model`` column only when the run has several."""

    def __init__(self, models: Sequence[str]) -> None:
        self.many = len(models) > 1

    def __call__(
        self,
        title: str,
        columns: Sequence[Column],
        rows: Sequence[Row],
        note: str | None = None,
    ) -> Table:
        """``rows`` start with the model; it is dropped for a one-model run."""
        cols = (Column("model"), *columns) if self.many else tuple(columns)
        body = tuple(tuple(r) if self.many else tuple(r[1:]) for r in rows)
        return Table(title, cols, body, note=note)

    def label(self, model: str, name: str) -> str:
        """A figure title: ``model: name``, or ``name`` for a one-model run."""
        return f"{model}: {name}" if self.many else name


def _categories(a: KnowledgeAnalysis, tables: _Tables, figures: bool) -> list[Block]:
    conds = _original(a)
    per = [
        r
        for r in a.per_category
        if any(r.model == c.model and r.condition == c.condition for c in conds)
    ]
    cats = sorted({r.category for r in per})
    lookup = {(r.model, r.condition, r.category): r for r in per}
    sizes = {c: {r.n for r in per if r.category == c} for c in cats}
    columns: list[Column] = [Column("condition")]
    for c in cats:
        if len(sizes[c]) == 1:
            columns.append(Column(f"{c} (n={next(iter(sizes[c]))})", "pct_ci", "Wilson 95%"))
        else:
            columns += [Column(c, "pct_ci", "Wilson 95%"), Column(f"{c} n", "int")]
    columns += [
        Column("all (micro)", "pct_ci", "items pooled; Wilson 95%"),
        Column("n", "int"),
        Column("all (macro over subjects)", "pct", "mean of the subjects' accuracies"),
        Column("all, 95% CI clustered by subject", "pct_ci", "micro accuracy, SE clustered"),
    ]
    rows = []
    for acc in conds:
        row: list[Any] = [acc.model, acc.condition]
        for c in cats:
            r = lookup.get((acc.model, acc.condition, c))
            row.append(_ci(r) if r else None)
            if len(sizes[c]) != 1:
                row.append(r.n if r else None)
        clustered = (acc.micro.accuracy, acc.clustered_low, acc.clustered_high)
        row += [_ci(acc.micro), acc.n, acc.macro, clustered]
        rows.append(tuple(row))
    blocks: list[Block] = [
        tables(
            "Accuracy per category",
            columns,
            rows,
            note="Conditions in the original option order; accuracy [95% interval].",
        )
    ]
    if figures:
        for acc in conds[:MAX_FIGURES]:
            bars = [
                Bar(c, *_ci(r), n=r.n)
                for c in cats
                if (r := lookup.get((acc.model, acc.condition, c)))
            ]
            bars.append(Bar("all (micro)", *_ci(acc.micro), n=acc.n))
            blocks.append(
                BarChart(
                    tables.label(acc.model, f"{acc.condition}: accuracy per category"),
                    tuple(bars),
                    value_label="accuracy (95% Wilson interval)",
                    reference=(_CHANCE,),
                )
            )
        if len(conds) > MAX_FIGURES:
            note = f"Bars for the first {MAX_FIGURES} of {len(conds)} conditions; all are in the table."
            blocks.append(Note(note))
    return blocks


def _shots(a: KnowledgeAnalysis, tables: _Tables, figures: bool) -> Section | None:
    shots = a.shots
    if not any(len(s.by_shots) > 1 for s in shots):
        return None
    rows = []
    for s in shots:
        for r in s.by_shots:
            vs = r.vs_fewest
            rows.append(
                (
                    s.model,
                    _scoring(s.scoring),
                    s.template,
                    r.n_shots,
                    r.n_shots_used_mean,
                    _ci(r),
                    vs.pvalue if vs else None,
                )
            )
    blocks: list[Block] = [
        Paragraph(
            "Accuracy per number of shots in the original option order, per scoring and "
            "template, with a 95% Wilson interval; McNemar's exact test pairs each shot count "
            "with the fewest on the same items."
        )
    ]
    if figures:
        for model in a.models:
            series = tuple(
                Series(
                    f"{_scoring(s.scoring)} · {s.template}",
                    tuple(Point(r.n_shots, *_ci(r), n=r.n) for r in s.by_shots),
                )
                for s in shots
                if s.model == model
            )
            if series:
                blocks.append(
                    LineChart(
                        tables.label(model, "Accuracy vs shots"),
                        series[:MAX_FIGURES],
                        x_label="shots",
                        y_label="accuracy",
                        note=_capped(len(series), "lines"),
                    )
                )
    blocks.append(
        tables(
            "",
            (
                Column("scoring"),
                Column("template"),
                Column("shots", "int"),
                Column("mean shots used", "float", "fewer when the prompt did not fit"),
                Column("accuracy [95% CI]", "pct_ci", "Wilson interval"),
                Column("McNemar p vs fewest", "pvalue"),
            ),
            rows,
        )
    )
    return Section.of("shots", "Accuracy vs shots", blocks, source=SOURCE)


def _capped(n: int, what: str) -> str | None:
    if n <= MAX_FIGURES:
        return None
    return f"first {MAX_FIGURES} of {n} {what} drawn; all are in the table"


def _reliability(cal: CalibrationResult) -> tuple[Point, ...]:
    """Non-empty bins of the reliability diagram, with a Wilson interval per bin."""
    rel = cal.reliability
    points = []
    for conf, acc, k in zip(rel.confidence, rel.accuracy, rel.count, strict=True):
        if not k or conf is None or acc is None:
            continue
        ci = stats.wilson_interval(round(acc * k), int(k))
        points.append(Point(conf, acc, ci.low, ci.high, int(k)))
    return tuple(points)


def _calibration(a: KnowledgeAnalysis, tables: _Tables, figures: bool) -> Section | None:
    cal = a.calibration
    if not cal:
        return None
    blocks: list[Block] = [
        Paragraph(
            "Confidence is the probability of the chosen option (softmax over the options). "
            "RMS calibration error uses bins of about 100 items, ECE 10 equal-width bins; r is "
            "Pearson's correlation of confidence and accuracy across subjects."
        )
    ]
    if figures:
        for model in a.models:
            mine = [c for c in cal if c.model == model and c.rotation in (0, None)]
            series = tuple(Series(c.condition, _reliability(c)) for c in mine)
            if series:
                blocks.append(
                    LineChart(
                        tables.label(model, "Reliability diagram"),
                        series[:MAX_FIGURES],
                        x_label="confidence",
                        y_label="accuracy",
                        x_range=(0.0, 1.0),
                        diagonal=True,
                        x_is_share=True,
                        note=_capped(len(series), "conditions")
                        or "Original option order; 10 bins, each at its mean confidence with a "
                        "95% Wilson interval on its accuracy.",
                    )
                )
    rows = [
        (
            c.model,
            c.condition,
            c.n,
            c.mean_confidence,
            c.accuracy,
            c.rms,
            c.rms_reference,
            c.ece,
            c.brier,
            c.subject_correlation.r,
            c.subject_correlation.p,
        )
        for c in cal
    ]
    blocks.append(
        tables(
            "Calibration by condition",
            (
                Column("condition"),
                Column("n", "int"),
                Column("confidence", "pct", "mean confidence"),
                Column("accuracy", "pct"),
                Column("RMS CE", "pct", "RMS calibration error (textbook), bins of ~100 items"),
                Column(
                    "RMSCE (ref.)",
                    "pct",
                    "the MMLU authors' calib_tools.rmsce: folded confidences, "
                    "sqrt(sqrt(sum of squared weighted gaps))",
                ),
                Column("ECE", "pct", "expected calibration error, 10 equal-width bins"),
                Column("Brier", "float"),
                Column("r", "float", "confidence vs accuracy across subjects (Pearson)"),
                Column("p", "pvalue"),
            ),
            rows,
        )
    )
    return Section.of("calibration", "Calibration", blocks, source=SOURCE)


def _one_table(
    sid: str, title: str, tables: _Tables, columns: Sequence[Column], rows: Sequence[Row]
) -> Section:
    return Section.of(f"knowledge-{sid}", title, [tables("", columns, rows)], source=SOURCE)


def _rotations(rotations: Sequence[RotationResult], tables: _Tables) -> Section:
    rows = [
        (
            r.model,
            _scoring(r.scoring),
            r.template,
            r.n_shots,
            r.n,
            r.original,
            " / ".join(format_cell(v, "pct") for v in r.per_rotation),
            r.all_rotations,
            r.any_rotation,
            r.same_answer,
            r.pvalue,
        )
        for r in rotations
    ]
    columns = (
        Column("scoring"),
        Column("template"),
        Column("shots", "int"),
        Column("n", "int"),
        Column("original", "pct"),
        Column("per rotation", help="accuracy with each option shown first in turn"),
        Column("all correct", "pct", "correct under every rotation (CircularEval)"),
        Column("any correct", "pct"),
        Column("same answer", "pct", "the same option chosen under every rotation"),
        Column("Cochran p", "pvalue", "Cochran's Q across the rotations"),
    )
    return _one_table("rotations", "Option order (cyclic rotations)", tables, columns, rows)


def _templates(templates: Sequence[TemplateSpread], tables: _Tables) -> Section:
    rows = []
    for t in templates:
        per = ", ".join(f"{k}: {format_cell(v, 'pct')}" for k, v in t.per_template.items())
        bw = t.best_minus_worst
        rows.append(
            (
                t.model,
                _scoring(t.scoring),
                t.n_shots,
                t.n,
                per,
                (bw.estimate, bw.low, bw.high),
                t.flipped_items,
                t.mcnemar.pvalue if t.mcnemar else None,
            )
        )
    columns = (
        Column("scoring"),
        Column("shots", "int"),
        Column("n", "int"),
        Column("accuracy per template"),
        Column("best − worst [95% CI]", "diff_ci", "bootstrap interval over items"),
        Column("items that flip", "int"),
        Column("McNemar p", "pvalue", "two templates only"),
    )
    return _one_table("templates", "Template sensitivity", tables, columns, rows)


def _option_scoring(scorings: Sequence[OptionScoring], tables: _Tables) -> Section:
    rows = [
        (o.model, o.condition, o.n, o.accuracy.none, o.accuracy.token, o.accuracy.char)
        for o in scorings
    ]
    columns = (
        Column("condition"),
        Column("n", "int"),
        Column("raw", "pct", "sum of the option's token log-probabilities"),
        Column("per token", "pct"),
        Column("per char", "pct"),
    )
    title = "Option scoring (accuracy by normalisation)"
    return _one_table("option-scoring", title, tables, columns, rows)


def _letter_vs_option(pairs: Sequence[LetterVsOption], tables: _Tables) -> Section:
    rows = [(x.model, x.template, x.n_shots, x.letter, x.option, x.mcnemar.pvalue) for x in pairs]
    columns = (
        Column("template"),
        Column("shots", "int"),
        Column("letter", "pct"),
        Column("option", "pct"),
        Column("McNemar p", "pvalue"),
    )
    return _one_table("letter-vs-option", "Letter vs option scoring", tables, columns, rows)


def _memorisation(checks: Sequence[Memorisation], tables: _Tables) -> Section:
    rows = []
    for m in checks:
        s, i = m.across_subjects, m.across_items
        rows.append((m.model, m.condition, m.n, s.r, s.p, i.r, i.p))
    columns = (
        Column("condition"),
        Column("n", "int"),
        Column("r across subjects", "float"),
        Column("p across subjects", "pvalue"),
        Column("r across items", "float"),
        Column("p across items", "pvalue"),
    )
    title = "Memorisation check (question log-probability per token vs accuracy)"
    return _one_table("memorisation", title, tables, columns, rows)


def _robustness(a: KnowledgeAnalysis, tables: _Tables) -> list[Section]:
    """The comparisons' sections, each only when the run has it."""
    out = []
    if a.rotations:
        out.append(_rotations(a.rotations, tables))
    if a.templates:
        out.append(_templates(a.templates, tables))
    if a.option_scoring:
        out.append(_option_scoring(a.option_scoring, tables))
    if a.letter_vs_option:
        out.append(_letter_vs_option(a.letter_vs_option, tables))
    if a.memorisation:
        out.append(_memorisation(a.memorisation, tables))
    return out


def knowledge_report_sections(
    analysis: KnowledgeAnalysis, *, figures: bool = True
) -> list[Section]:
    """The study's report sections from :func:`analyze_knowledge`' result (as stored in
    ``summary.json``): accuracy per category, accuracy vs shots, calibration, option order,
    template sensitivity, option scoring, letter vs option scoring, the memorisation
    check, confidence vs accuracy per subject, accuracy vs question length and UnifiedQA's
    end marker (each only when the run has it).

    Parameters
    ----------
    analysis : KnowledgeAnalysis
        A knowledge run's analysis (``summary.json``'s, read back with
        :func:`~steadyeval.studies.read_analysis`).
    figures : bool
        Add figures (category bars, accuracy vs shots, reliability diagrams). ``summary.md``
        leaves them out: their numbers are in the tables.

    Returns
    -------
    list of Section
        Ids ``knowledge``, ``shots``, ``calibration`` and ``knowledge-*``.
    """
    models = analysis.models
    tables = _Tables(models)
    head: list[Block] = []
    if len(models) == 1:
        head.append(Paragraph(f"Model: {models[0]}"))
    head += [Note(n, "warning") for n in analysis.notes]
    out = [
        Section.of(
            "knowledge",
            "Knowledge study (MMLU)",
            [*head, *_categories(analysis, tables, figures)],
            source=SOURCE,
        )
    ]
    for sec in (_shots(analysis, tables, figures), _calibration(analysis, tables, figures)):
        if sec is not None:
            out.append(sec)
    return out + _robustness(analysis, tables) + seed_sections(analysis, tables, figures)
