"""The frozen evaluation item."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from .._errors import DataError
from ._text import encode_utf8, shorten, value_problem

__all__ = ["Item", "canonical_json", "plain_json"]


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept. Used for every content hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def plain_json(value: Any) -> Any:
    """A frozen value (mappings, tuples) as plain JSON data (dicts, lists)."""
    if isinstance(value, Mapping):
        return {k: plain_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain_json(v) for v in value]
    return value


@dataclass(frozen=True, eq=True)
class Item:
    """One evaluation item.

    Parameters
    ----------
    id : str
        Unique within its data set.
    question : str
        The question (or cloze statement, e.g. ``"[X] was born in [Y] ."``).
    context : str or None
        A passage the question is about.
    options : tuple of str or None
        Answer options in their original order, for multiple-choice items.
    answers : tuple of str
        Gold answer texts (several are allowed for free-form questions).
    gold_options : tuple of int
        Indices into ``options`` of the correct options (empty for free-form items or
        unanswerable ones).
    answerable : bool
        False when the right behaviour is to abstain.
    aliases : tuple of str
        Names of the item's main entity; ``aliases[0]`` is the canonical one.
    metadata : mapping
        Anything else (subject, paragraph id, relation, split, ...). JSON values only.
    answer : str, list of str or int, keyword only
        The data files' ``answer`` field, as there: a text or list of texts (with options, a
        text must be one of them and marks it gold), or an option index. Not stored as
        such (``item.answer`` is None): it sets ``answers`` and ``gold_options``. Give it or
        those, not both.
    """

    id: str
    question: str
    context: str | None = None
    options: tuple[str, ...] | None = None
    answers: tuple[str, ...] = ()
    gold_options: tuple[int, ...] = ()
    answerable: bool = True
    aliases: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    _: KW_ONLY
    answer: InitVar[str | list[str] | tuple[str, ...] | int | None] = None

    def __post_init__(self, answer: str | list[str] | tuple[str, ...] | int | None) -> None:
        if not isinstance(self.metadata, Mapping):
            raise DataError(
                f"got {type(self.metadata).__name__}",
                file=f"item {shorten(repr(self.id))}",
                field="metadata",
                expected="a mapping of JSON values",
            )
        problem = value_problem(self.metadata)  # iterative: deep metadata cannot overflow here
        if problem is not None:
            raise DataError(
                problem.message,
                file=f"item {shorten(repr(self.id))}",
                field=f"metadata.{problem.field}",
                expected=problem.expected,
            )
        object.__setattr__(self, "metadata", _freeze(dict(self.metadata)))
        if self.options is not None:
            object.__setattr__(self, "options", tuple(self.options))
        if answer is not None:
            self._set_answer(answer)
        object.__setattr__(self, "answers", tuple(self.answers))
        object.__setattr__(self, "gold_options", tuple(self.gold_options))
        object.__setattr__(self, "aliases", tuple(self.aliases))
        n = len(self.options) if self.options is not None else 0
        for g in self.gold_options:
            if not 0 <= g < n:
                raise DataError(
                    f"gold option {g!r} outside 0..{n - 1}",
                    file=f"item {shorten(repr(self.id))}",
                    field="gold_options",
                    expected="indices of the options",
                )

    def _set_answer(self, answer: str | list[str] | tuple[str, ...] | int) -> None:
        from ._record_fields import parse_answer

        if self.answers or self.gold_options:
            raise DataError(
                "give answer, or answers/gold_options, not both",
                file=f"item {shorten(repr(self.id))}",
                field="answer",
            )
        value = list(answer) if isinstance(answer, tuple) else answer
        answers, gold = parse_answer(
            {"answer": value}, self.options, self.answerable, file=f"item {self.id!r}", line=None
        )
        object.__setattr__(self, "answers", answers)
        object.__setattr__(self, "gold_options", gold)

    def __hash__(self) -> int:
        return hash(self.hash)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict holding every field."""
        return {
            "id": self.id,
            "question": self.question,
            "context": self.context,
            "options": list(self.options) if self.options is not None else None,
            "answers": list(self.answers),
            "gold_options": list(self.gold_options),
            "answerable": self.answerable,
            "aliases": list(self.aliases),
            "metadata": plain_json(self.metadata),
        }

    @cached_property
    def hash(self) -> str:
        """Content hash (16 hex digits) of every field, stable across processes."""
        data = self.to_dict()
        digest = hashlib.sha256(encode_utf8(canonical_json(data), data, f"item {self.id!r}"))
        return digest.hexdigest()[:16]

    @property
    def gold_texts(self) -> tuple[str, ...]:
        """Gold answers as text: the answers, else the texts of the gold options."""
        if self.answers:
            return self.answers
        if self.options is not None:
            return tuple(self.options[g] for g in self.gold_options)
        return ()
