"""Limits on what an imported log may make steadyeval read and hold, checked while reading.

A log is untrusted input: a 67 KB ``.eval`` archive can hold a member that inflates to
gigabytes, and a few kilobytes of JSON such as ``[{},{},...]`` become objects twenty times
their size. Every importer therefore reads through these limits, each checked *before*
the bytes or objects it bounds are allocated (decompression streams in chunks and stops at
the limit). Each can be raised with an environment variable, which the error names:

=============================  ===========  =============================================
variable                       default      what it bounds
=============================  ===========  =============================================
``STEADYEVAL_MAX_MEMBER_MB``   128          one member of a ``.eval`` archive, decompressed
``STEADYEVAL_MAX_LOG_MB``      4096         all members of one ``.eval`` log, decompressed
``STEADYEVAL_MAX_LOG_MEMBERS`` 500000       members of one ``.eval`` archive
``STEADYEVAL_MAX_JSON_VALUES`` 10000000     values (objects, lists, scalars) of one JSON
                                            document: an archive member, a ``.json`` log,
                                            an lm-eval ``results_*.json``
``STEADYEVAL_MAX_FILE_MB``     512          a file read whole (a ``.json`` log, a results
                                            JSON)
``STEADYEVAL_MAX_KEPT_MB``     768          what one import holds at once: the fields it
                                            keeps of every log or record, and the
                                            document it is parsing (see
                                            :mod:`._import_memory`)
=============================  ===========  =============================================

JSON nesting is limited to :data:`steadyeval._files.MAX_JSON_DEPTH` levels.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._errors import DataError
from .._files import MAX_TEXT_BYTES, decode_utf8, limit_from_env, loads_json
from ..items import value_problem

__all__ = [
    "KEPT_DEFAULT",
    "ImportLimits",
    "LogBudget",
    "json_document",
    "member_too_big",
    "mib",
    "read_bounded",
]

_MB = 1024 * 1024
#: A JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into parsed text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_CHUNK = 1 << 20
#: The default of ``STEADYEVAL_MAX_KEPT_MB``.
KEPT_DEFAULT = 768


@dataclass(frozen=True)
class ImportLimits:
    """The limits an import reads under (see the module's table)."""

    member_bytes: int = 128 * _MB
    log_bytes: int = 4096 * _MB
    members: int = 500_000
    json_values: int = 10_000_000
    file_bytes: int = MAX_TEXT_BYTES
    kept_bytes: int = KEPT_DEFAULT * _MB

    @classmethod
    def from_env(cls) -> ImportLimits:
        """The defaults, or the values the environment variables set."""
        d = cls()
        return cls(
            member_bytes=limit_from_env("STEADYEVAL_MAX_MEMBER_MB", d.member_bytes),
            log_bytes=limit_from_env("STEADYEVAL_MAX_LOG_MB", d.log_bytes),
            members=limit_from_env("STEADYEVAL_MAX_LOG_MEMBERS", d.members, unit=1),
            json_values=limit_from_env("STEADYEVAL_MAX_JSON_VALUES", d.json_values, unit=1),
            file_bytes=limit_from_env("STEADYEVAL_MAX_FILE_MB", d.file_bytes),
            kept_bytes=limit_from_env("STEADYEVAL_MAX_KEPT_MB", d.kept_bytes),
        )


def mib(n: int) -> str:
    """``n`` bytes in MiB, for a message."""
    return f"{n / _MB:,.0f} MiB"


@dataclass
class LogBudget:
    """The decompressed bytes one log may still take (all its members together)."""

    where: str
    limits: ImportLimits
    spent: int = field(default=0)

    def spend(self, n: int) -> None:
        self.spent += n
        if self.spent > self.limits.log_bytes:
            raise DataError(
                f"{self.where}: its members decompress to more than "
                f"{mib(self.limits.log_bytes)} together, the limit for one log (a "
                "compression bomb?); set STEADYEVAL_MAX_LOG_MB to raise it"
            )


def member_too_big(where: str, limits: ImportLimits) -> DataError:
    """The error for a member larger than ``limits.member_bytes`` decompressed."""
    return DataError(
        f"{where}: decompresses to more than {mib(limits.member_bytes)}, the limit for one "
        "member of a log (a compression bomb?); set STEADYEVAL_MAX_MEMBER_MB to raise it"
    )


def read_bounded(
    read: Callable[[int], bytes], where: str, limits: ImportLimits, budget: LogBudget
) -> bytes:
    """Everything ``read`` (a decompressing stream's ``read(n)``) gives, in chunks, refused
    as soon as it passes the per-member limit or the log's budget: nothing larger than the
    limit is ever held."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limits.member_bytes:
            raise member_too_big(where, limits)
        budget.spend(len(chunk))
        chunks.append(chunk)


def _values_bound(text: str | bytes) -> int:
    """An upper bound on the number of values ``text`` parses to: every value but the first
    in a container follows a comma, and every container opens with a bracket."""
    if isinstance(text, bytes):
        return text.count(b",") + text.count(b"[") + text.count(b"{") + 1
    return text.count(",") + text.count("[") + text.count("{") + 1


def json_document(
    data: str | bytes, where: str, limits: ImportLimits, *, surrogates: bool = True
) -> Any:
    """The JSON value of ``data`` (an archive member's bytes, or a file's text), with its
    size in values, nesting, UTF-8 and (with ``surrogates``) lone surrogates checked; NaN
    and Infinity are read (other tools write them). Every failure is a :class:`DataError`
    naming ``where``. A reader that keeps only some fields passes ``surrogates=False`` and
    checks those (:func:`._import_fields.valid_text`)."""
    bound = _values_bound(data)
    if bound > limits.json_values:
        raise DataError(
            f"{where}: may hold up to {bound:,} JSON values, more than the limit of "
            f"{limits.json_values:,} for one document (it would take gigabytes to read); "
            "set STEADYEVAL_MAX_JSON_VALUES to raise it"
        )
    text = decode_utf8(data, where) if isinstance(data, bytes) else data
    value = loads_json(text, where, allow_nan=True)
    if surrogates and _SURROGATE_ESCAPE.search(text):
        problem = value_problem(value)
        if problem is not None:
            raise DataError(
                problem.message, file=where, field=problem.field, expected=problem.expected
            )
    return value
