"""The frozen evaluation item."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from functools import cached_property
from numbers import Integral
from types import MappingProxyType
from typing import Any

from .._errors import DataError
from ._text import encode_utf8, lone_surrogate, shorten, value_problem

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


def _where(item: Item) -> str:
    return f"item {shorten(repr(item.id))}" if isinstance(item.id, str) else "item"


def _wrong(item: Item, field: str, value: Any, expected: str) -> DataError:
    """``field`` holds ``value``, not what ``expected`` says (a string is shown, cut)."""
    got = f"the string {shorten(repr(value), 40)}" if isinstance(value, str) else "got "
    got += "" if isinstance(value, str) else type(value).__name__
    return DataError(got, file=_where(item), field=field, expected=expected)


def _check_fields(item: Item) -> None:
    """Each field of its type, as the loaders check a record's: text is ``str`` without a
    lone surrogate; a sequence of texts is a list or tuple, never one string (which would be
    read letter by letter); option indices are integers; ``answerable`` is a bool."""
    for name in ("id", "question", "context"):
        value = getattr(item, name)
        if not isinstance(value, str) and not (name == "context" and value is None):
            raise _wrong(item, name, value, "a string" + (" or None" if name == "context" else ""))
    texts: list[str] = [item.id, item.question, item.context or ""]
    for name in ("options", "answers", "aliases", "gold_options"):
        value = getattr(item, name)
        if value is None and name == "options":
            continue
        index = name == "gold_options"
        if not isinstance(value, list | tuple):
            kind = "option indices" if index else "strings"
            raise _wrong(item, name, value, f"a list or tuple of {kind}")
        for k, v in enumerate(value):
            ok = _is_index(v) if index else isinstance(v, str)
            if not ok:
                raise _wrong(item, f"{name}[{k}]", v, "an integer" if index else "a string")
        if not index:
            texts += value
    if not isinstance(item.answerable, bool):
        raise _wrong(item, "answerable", item.answerable, "True or False")
    if any(lone_surrogate(t) is not None for t in texts):  # never writable: say where
        fields = ("id", "question", "context", "options", "answers", "aliases")
        problem = value_problem({f: getattr(item, f) for f in fields})
        assert problem is not None
        raise DataError(
            problem.message, file=_where(item), field=problem.field, expected=problem.expected
        )


def _plain(item: Item) -> bool:
    """The common case, quickly: every field of its exact type and no lone surrogate (else
    :func:`_check_fields` finds the problem and says where)."""
    opts, answers, aliases, gold = item.options, item.answers, item.aliases, item.gold_options
    if not (
        type(item.id) is str
        and type(item.question) is str
        and (item.context is None or type(item.context) is str)
        and type(item.answerable) is bool
        and (opts is None or type(opts) in _SEQUENCES)
        and type(answers) in _SEQUENCES
        and type(aliases) in _SEQUENCES
        and type(gold) in _SEQUENCES
        and all(type(g) is int for g in gold)
    ):
        return False
    try:  # join refuses anything that is not text
        text = "".join(
            (item.id, item.question, item.context or "", *(opts or ()), *answers, *aliases)
        )
    except TypeError:
        return False
    try:  # UTF-8 refuses a lone surrogate, far faster than a search for one
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SEQUENCES = (list, tuple)


def _is_index(value: Any) -> bool:
    return type(value) is int or (isinstance(value, Integral) and not isinstance(value, bool))


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
        if not _plain(self):
            _check_fields(self)
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
        object.__setattr__(self, "gold_options", tuple(int(g) for g in self.gold_options))
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
