"""The formats report's outcome tables: per format, what it did on the unanswerable and the
answerable questions (the seed's tables, with bar charts of refusals, decoys and correct
answers), and every rate with its Wilson interval and clustered standard error."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ...document import Bar, BarChart, Block, Column, Table
from ._types import AnswerableOutcome, Outcome, OutcomeRate, UnanswerableOutcome

#: The outcomes a format can produce (the others are 0 by construction and not shown).
_APPLICABLE = {
    "free": {"refused", "answered", "correct", "wrong"},
    "list": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "escape": {"refused", "decoy", "other", "unmatched", "correct", "wrong"},
    "control": {"refused", "decoy", "other", "unmatched", "correct", "wrong", "control"},
}

R = TypeVar("R", UnanswerableOutcome, AnswerableOutcome)


def _ci(rate: OutcomeRate) -> tuple[float, float, float]:
    return (rate.rate, rate.low, rate.high)


def _only(role: str, value: Any, *roles: str) -> Any:
    """``value`` where the format's role can produce it, else None (shown as a dash)."""
    return value if role in roles else None


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _bars(
    title: str,
    recs: Sequence[R],
    names: Mapping[str, str],
    rate: Callable[[R], OutcomeRate],
    value_label: str,
) -> BarChart:
    """One bar per format: the rate ``rate`` picks from its record."""
    return BarChart(
        title,
        tuple(
            Bar(names[r.condition], *_ci(rate(r)), n=r.n)
            for r in recs
            if not _missing(rate(r).rate)
        ),
        value_label=f"{value_label} (95% Wilson interval)",
    )


def _unanswerable_table(unans: Sequence[UnanswerableOutcome], names: Mapping[str, str]) -> Table:
    """The seed's table of the unanswerable questions: what each format did."""
    rows = []
    for r in unans:
        c, role = r.counts, r.role
        rows.append(
            (
                names[r.condition],
                c.refused,
                c.decoy,
                c.other,
                _only(role, c.answered, "free"),
                _only(role, r.near_decoy, "free"),
                c.unmatched,
                _only(role, c.control, "control"),
                r.truncated,
            )
        )
    return Table(
        f"Unanswerable questions (n = {unans[0].n})",
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


def _unanswerable_bars(
    unans: Sequence[UnanswerableOutcome], names: Mapping[str, str]
) -> list[Block]:
    """Refusal rate by format; and, for the formats with options, the share that chose the
    decoy."""
    bars: list[Block] = [
        _bars(
            "Unanswerable questions: refusal rate by format",
            unans,
            names,
            lambda r: r.rates.refused,
            "share refused",
        )
    ]
    lists = [r for r in unans if r.role != "free"]
    if lists:
        bars.append(
            _bars(
                "Unanswerable questions: chose the decoy",
                lists,
                names,
                lambda r: r.rates.decoy,
                "share that chose the decoy",
            )
        )
    return bars


def _answerable_table(ans: Sequence[AnswerableOutcome], names: Mapping[str, str]) -> Table:
    """The seed's table of the answerable questions: what each format did."""
    rows = []
    for r in ans:
        c, role = r.counts, r.role
        rows.append(
            (
                names[r.condition],
                c.correct,
                _only(role, r.em, "free"),
                _only(role, r.f1, "free"),
                c.refused,
                c.wrong,
                c.unmatched,
                _only(role, c.control, "control"),
                r.truncated,
            )
        )
    return Table(
        f"Answerable questions (n = {ans[0].n})",
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


def _rates_table(recs: Sequence[Outcome], names: Mapping[str, str]) -> Table | None:
    """Every rate a format can produce, per subset; None when there is none."""
    rates: list[tuple[Any, ...]] = [
        (
            names[r.condition],
            r.subset,
            outcome,
            v.count,
            r.n,
            _ci(v),
            v.se_clustered,
            v.n_clusters,
        )
        for r in recs
        for outcome, v in r.rates.items()
        if outcome in _APPLICABLE[r.role]
    ]
    if not rates:
        return None
    return Table(
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


def _outcome_blocks(
    recs: Sequence[Outcome], names: Mapping[str, str], figures: bool
) -> list[Block]:
    """One model's outcome tables (``recs``: its ``outcomes`` records), with their bar charts
    when ``figures``, then the table of every rate."""
    blocks: list[Block] = []
    unans = [r for r in recs if isinstance(r, UnanswerableOutcome)]
    if unans:
        blocks.append(_unanswerable_table(unans, names))
        if figures:
            blocks.extend(_unanswerable_bars(unans, names))
    ans = [r for r in recs if isinstance(r, AnswerableOutcome)]
    if ans:
        blocks.append(_answerable_table(ans, names))
        if figures:
            blocks.append(
                _bars(
                    "Answerable questions: correct by format",
                    ans,
                    names,
                    lambda r: r.rates.correct,
                    "share correct",
                )
            )
    rates = _rates_table(recs, names)
    if rates is not None:
        blocks.append(rates)
    return blocks
