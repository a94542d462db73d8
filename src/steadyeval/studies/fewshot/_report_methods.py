"""The methods side-by-side section: methods × tasks (mean ± std of the chosen setting's K
test scores), the task average, the criteria per method, and paired comparisons."""

from __future__ import annotations

import math
from typing import Any

from ...document import Column, Paragraph, Section, Table
from ._types import MethodsTable

__all__ = ["methods_section", "pm"]


def pm(mean: Any, std: Any) -> str:
    """``62.5 ± 4.1`` (percentages); ``-`` for a missing cell, ``nan`` parts kept."""
    if mean is None:
        return "-"
    m = f"{100 * float(mean):.1f}"
    if std is None or math.isnan(float(std)):
        return m
    return f"{m} ± {100 * float(std):.1f}"


def _num(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _table(methods: MethodsTable) -> Table:
    tasks = methods.tasks
    rows = tuple(
        (
            r.method,
            *(pm(c.mean, c.std) if c else "-" for c in (r.tasks[t] for t in tasks)),
            _num(r.average),
            _num(r.spearman),
            _num(r.regret),
            _num(r.test_range_over_k),
        )
        for r in methods.rows
    )
    columns = (
        Column("method"),
        *(
            Column(t, "text", f"{t}: test score of the chosen setting, mean ± std over K")
            for t in tasks
        ),
        Column("avg", "pct", "task average of the test means"),
        Column(
            "(2) rho(dev, test)",
            "float",
            "Spearman of dev and test across settings, mean over tasks",
        ),
        Column("regret", "pct", "oracle minus chosen test score, mean over tasks"),
        Column("(3) test range over K", "pct", "mean over tasks"),
    )
    title = f"Methods × tasks ({methods.strategy}, K = {methods.k})"
    return Table(title, columns, rows)


def _paired(methods: MethodsTable) -> Table:
    rows = tuple(
        (
            f"{p.a} − {p.b}",
            p.n_pairs,
            _num(p.estimate),
            _num(p.low),
            _num(p.high),
            _num(p.pvalue),
            _num(p.pvalue_holm),
            f"{p.wins}/{p.losses}/{p.ties}",
        )
        for p in methods.paired
    )
    columns = (
        Column("comparison"),
        Column("pairs", "int", "(task, split) pairs: the same splits for both methods"),
        Column("mean diff", "pct"),
        Column("95% low", "pct"),
        Column("95% high", "pct"),
        Column("p", "float", "paired z-test on the split-level differences"),
        Column("p (Holm)", "float", "adjusted for the number of method pairs compared"),
        Column("wins/losses/ties", "text"),
    )
    return Table("Paired comparisons on the same splits", columns, rows)


def methods_section(methods: MethodsTable, source: str) -> Section:
    """The section (first in the report when several methods or tasks ran)."""
    intro = Paragraph(
        "The re-evaluation's table: each cell is the test score of the setting chosen by mean "
        "dev score, mean ± sample std over the K splits (accuracy; CB: mean of accuracy and "
        "macro-F1; MultiRC: mean of F1a and exact match). Every method sees the same splits, "
        "so methods are compared pairwise on the same (task, split) pairs."
    )
    blocks: list[Any] = [intro, _table(methods)]
    if methods.paired:
        blocks.append(_paired(methods))
    return Section.of("fewshot-methods", "Methods side by side", blocks, source, lead=True)
