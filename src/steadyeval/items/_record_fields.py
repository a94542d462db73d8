"""Field checks for one generic item record (the JSONL/CSV/hub format of ``docs/data.md``):
one function per field group, each raising a :class:`DataError` that names the file, line
and field (used by :func:`steadyeval.items._loaders.items_from_records`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import DataError
from ._text import shorten

__all__ = [
    "KNOWN_FIELDS",
    "check_shape",
    "check_str",
    "parse_aliases",
    "parse_answer",
    "parse_answerable",
    "parse_id",
    "parse_metadata",
    "parse_options",
]

KNOWN_FIELDS = {
    "id",
    "question",
    "context",
    "options",
    "answer",
    "answerable",
    "metadata",
    "aliases",
}


def check_str(
    value: Any, *, file: str, line: int | None, field: str, optional: bool = False
) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise DataError(
            f"got {type(value).__name__} {value!r:.60}",
            file=file,
            line=line,
            field=field,
            expected="a string" + (" or null" if optional else ""),
        )
    return value


def check_shape(rec: Any, *, file: str, line: int) -> Mapping[str, Any]:
    """``rec`` as an object with only known fields and the required ``id`` and ``question``."""
    if not isinstance(rec, Mapping):
        raise DataError(
            f"a row must be a JSON object, got {type(rec).__name__}",
            file=file,
            line=line,
            expected='an object such as {"id": "q1", "question": "...", "answer": "..."}',
        )
    unknown = sorted(set(rec) - KNOWN_FIELDS)
    if unknown:
        raise DataError(
            f"unknown field(s) {shorten(', '.join(map(repr, unknown)), 120)}",
            file=file,
            line=line,
            field=shorten(unknown[0]),
            expected=f"only {', '.join(sorted(KNOWN_FIELDS))}; put anything else under 'metadata'",
        )
    for required in ("id", "question"):
        if required not in rec:
            raise DataError(
                "missing required field",
                file=file,
                line=line,
                field=required,
                expected="a non-empty string",
            )
    return rec


def parse_id(raw_id: Any, *, file: str, line: int) -> str:
    """The item id: a non-empty string or an integer (as its text)."""
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise DataError(
            f"got {type(raw_id).__name__}",
            file=file,
            line=line,
            field="id",
            expected="a string or an integer",
        )
    item_id = str(raw_id)
    if not item_id.strip():
        raise DataError("empty id", file=file, line=line, field="id", expected="a non-empty string")
    return item_id


def parse_options(raw_opts: Any, *, file: str, line: int) -> tuple[str, ...] | None:
    """The options: none (``None``), or at least 2 distinct strings."""
    if raw_opts is None:
        return None
    if not isinstance(raw_opts, list) or len(raw_opts) < 2:
        raise DataError(
            f"got {raw_opts!r:.60}",
            file=file,
            line=line,
            field="options",
            expected="a list of at least 2 strings",
        )
    for k, opt in enumerate(raw_opts):
        check_str(opt, file=file, line=line, field=f"options[{k}]")
    options = tuple(raw_opts)
    if len(set(options)) != len(options):
        raise DataError(
            "options repeat",
            file=file,
            line=line,
            field="options",
            expected="distinct option texts",
        )
    return options


def parse_answerable(answerable: Any, *, file: str, line: int) -> bool:
    if not isinstance(answerable, bool):
        raise DataError(
            f"got {answerable!r:.60}",
            file=file,
            line=line,
            field="answerable",
            expected="true or false",
        )
    return answerable


def parse_answer(
    rec: Mapping[str, Any],
    options: tuple[str, ...] | None,
    answerable: bool,
    *,
    file: str,
    line: int | None,
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``(answers, gold option indices)``; an answerable item must have an answer, and with
    options that answer must name one of them."""
    if "answer" not in rec or rec["answer"] is None:
        if answerable:
            raise DataError(
                "missing answer",
                file=file,
                line=line,
                field="answer",
                expected="a string, a list of strings or an option index (or 'answerable': false)",
            )
        return (), ()
    answers, gold = _answer_value(rec["answer"], options, file=file, line=line)
    if options is not None and not gold:
        gold = tuple(i for i, o in enumerate(options) if o in answers)
        if answerable and not gold:
            raise DataError(
                f"answer {answers[0]!r:.60} is not one of the options",
                file=file,
                line=line,
                field="answer",
                expected="an option's exact text or its index",
            )
    return answers, gold


def _answer_value(
    raw: Any, options: tuple[str, ...] | None, *, file: str, line: int | None
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A present ``answer``: an option index (→ gold), a string or a non-empty list of
    strings (→ answers)."""
    if isinstance(raw, bool):
        raise DataError(
            f"got {raw!r}",
            file=file,
            line=line,
            field="answer",
            expected="a string, a list of strings or an option index",
        )
    if isinstance(raw, int):
        if options is None or not 0 <= raw < len(options):
            n = 0 if options is None else len(options)
            raise DataError(
                f"option index {raw} but the item has {n} options",
                file=file,
                line=line,
                field="answer",
                expected=f"an index in 0..{n - 1}" if n else "options for an index",
            )
        return (), (raw,)
    if isinstance(raw, str):
        return (raw,), ()
    if isinstance(raw, list) and raw:
        for k, a in enumerate(raw):
            check_str(a, file=file, line=line, field=f"answer[{k}]")
        return tuple(raw), ()
    raise DataError(
        f"got {raw!r:.60}",
        file=file,
        line=line,
        field="answer",
        expected="a string, a non-empty list of strings or an option index",
    )


def parse_metadata(metadata: Any, *, file: str, line: int) -> dict[str, Any]:
    """The ``metadata`` object (absent or empty → ``{}``), copied."""
    metadata = metadata or {}
    if not isinstance(metadata, Mapping):
        raise DataError(
            f"got {type(metadata).__name__}",
            file=file,
            line=line,
            field="metadata",
            expected="an object",
        )
    return dict(metadata)


def parse_aliases(aliases: Any, *, file: str, line: int) -> tuple[str, ...]:
    """The ``aliases`` list of strings (absent or empty → ``()``)."""
    aliases = aliases or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise DataError(
            f"got {aliases!r:.60}",
            file=file,
            line=line,
            field="aliases",
            expected="a list of strings",
        )
    return tuple(aliases)
