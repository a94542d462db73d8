"""Errors raised by steadyeval. Every error says where the problem is and what was expected."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DataError",
    "ModelSpecError",
    "SteadyevalDeprecationWarning",
    "SteadyevalError",
    "StorageError",
    "UnsupportedRequestError",
    "show_path",
]


#: The longest path or field name an error message echoes whole.
MAX_ECHO = 200


def printable(path: object) -> str:
    """``path`` as text for the terminal: a character that does not print (an escape, a
    newline, a byte that is not UTF-8) written as Python writes it in a string (``\\x1b``,
    ``\\n``, ``\\udcff``), so a file name can neither drive the terminal nor split a line."""
    text = str(path)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def show_path(path: object, limit: int = MAX_ECHO) -> str:
    """``path`` as text for a message: whole when short, else its start and end (where the
    file name is) around ``...``, so a hostile 5,000-character path makes a short line;
    characters that do not print escaped (:func:`printable`); quoted when it starts or ends
    with a space."""
    text = printable(path)
    if text != text.strip():  # ' ' or 'a.jsonl ' would read as nothing, or as another name
        text = repr(text)
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}...{text[-(limit - head - 3) :]} ({len(text):,} characters)"


class SteadyevalError(Exception):
    """Base class of every error steadyeval raises on purpose."""


class DataError(SteadyevalError, ValueError):
    """A data file or row is malformed.

    Carries the file, the 1-based line (JSONL) or row (CSV, data rows after any header),
    the field and what was expected, so the message can point a user at the exact spot.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.expected = expected
        self.reason = message
        parts = []
        if file is not None:
            parts.append(show_path(file))
        if line is not None:
            parts.append(f"line {line}")
        if field is not None:
            parts.append(f"field {show_path(field, 120)!r}")
        where = ", ".join(parts)
        text = f"{where}: {message}" if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


class ConfigError(SteadyevalError, ValueError):
    """A configuration value is wrong: names the key, where it is and what is allowed."""


class ModelSpecError(SteadyevalError, ValueError):
    """A model spec (``BACKEND:NAME?key=value``) cannot be parsed or resolved."""


class StorageError(SteadyevalError, OSError):
    """A file could not be written (disk full, quota, read-only, permission): names the file
    and the reason. Whatever was being replaced is unchanged (steadyeval writes through a
    temporary file renamed into place) and the response cache keeps every answer received,
    so the same command resumes once there is room."""


class UnsupportedRequestError(SteadyevalError):
    """A backend was asked for a request kind it does not support."""


class SteadyevalDeprecationWarning(DeprecationWarning):
    """A deprecated name or option was used; the message names its replacement. The CLI
    prints these as ``warning: ...`` lines."""
