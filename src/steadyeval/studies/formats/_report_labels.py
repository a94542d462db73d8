"""Readable names of the formats study's conditions for its report, and the study's order of
conditions (``summary.json`` sorts the keys of the analysis' dicts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._types import FormatCondition, FormatsAnalysis

__all__ = ["condition_labels"]

_LABELS = {"free": "free form", "list": "list, no escape"}


def _label(cond: FormatCondition) -> str:
    if cond.variant == "base" and cond.name in _LABELS:
        return _LABELS[cond.name]
    if cond.role in ("escape", "control") and cond.variant == "base":
        word = "control word" if cond.role == "control" else "list +"
        return f'{word} "{cond.escape}"'
    return cond.name


def condition_labels(analysis: FormatsAnalysis) -> dict[str, str]:
    """Readable names of the study's conditions (``list-nota`` → ``list + "none of the
    above"``); variants keep their condition name."""
    return {c.name: _label(c) for c in analysis.conditions}


def _in_order(names: Mapping[str, str], keys: Iterable[str]) -> list[str]:
    """``keys`` in the study's condition order (``summary.json`` sorts dict keys)."""
    present = set(keys)
    return [n for n in names if n in present] + sorted(present - set(names))
