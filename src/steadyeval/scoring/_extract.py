"""Finding the answer in generated text: reasoning traces set aside, then an extractor chosen
per condition (``Condition.extract``).

An extractor reads the text after any reasoning trace and returns the answer it found, or
nothing (the row is then ``unmatched``, a separate outcome from a wrong answer). What it
looks for depends on the kind of answer the item wants: an option label (the item's options
are shown), a number (every gold answer is a number) or text. Built in:

``strict``
    A declared answer: ``#### X`` (GSM8K's marker) first, else ``The answer is X`` (or
    ``The final answer is X``); the first such line.
``flexible``
    The last number (lm-eval's GSM8K ``flexible-extract`` pattern), the last option label,
    or the last non-empty line.
``options``
    The whole answer, mapped to an option (label, option text or best token overlap).
``auto``
    ``options`` for multiple choice, the whole answer for free form (the default).
``regex:PATTERN``
    The first match of a Python regular expression: its first non-empty group, or the whole
    match when it has none (as lm-eval's ``regex`` filter does).

:func:`register_extractor` adds one by name.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import regex

from .._errors import ConfigError

__all__ = [
    "EXTRACTORS",
    "REGEX_TIMEOUT_S",
    "THINK_END",
    "THINK_START",
    "AnswerKind",
    "Extraction",
    "Extractor",
    "answer_kind",
    "check_extract",
    "extract_answer",
    "extractor_names",
    "numeric_form",
    "register_extractor",
    "split_reasoning",
]

#: What an item's answer is: an option label, a number or text.
AnswerKind = Literal["option", "number", "text"]

#: The tags reasoning models put around their trace in the generated text.
THINK_START = "<think>"
THINK_END = "</think>"

#: The prefix of a user's pattern in ``Condition.extract``.
_REGEX = "regex:"
#: The longest a user's pattern may search one answer, in seconds: a pattern that
#: backtracks catastrophically (``(a+)+$`` on a long output) would otherwise hang the run.
#: A search that runs out finds nothing (``regex:timeout``), with a warning.
REGEX_TIMEOUT_S = 1.0
_log = logging.getLogger("steadyeval")


@dataclass(frozen=True)
class Extraction:
    """The answer an extractor found (``None``: none) and which rule found it."""

    answer: str | None
    extractor: str


#: An extractor: (answer text, answer kind, option labels) -> what it found, or None.
Extractor = Callable[[str, AnswerKind, Sequence[str]], Extraction | None]


def split_reasoning(text: str, reasoning: str | None = None) -> tuple[str, str | None]:
    """``(answer text, reasoning trace)`` of a generated ``text``.

    A trace the server returned apart (``reasoning``, e.g. an OpenAI-compatible server's
    ``reasoning_content``) is kept as it is; a trace in the text itself is what precedes the
    last ``</think>`` (its ``<think>`` dropped). A ``<think>`` that is never closed (the
    generation stopped while thinking) makes the whole text the trace and the answer empty.
    """
    end = text.rfind(THINK_END)
    if end >= 0:
        trace = text[:end]
        start = trace.find(THINK_START)
        trace = trace[start + len(THINK_START) :] if start >= 0 else trace
        answer = text[end + len(THINK_END) :]
    elif text.lstrip().startswith(THINK_START):
        answer, trace = "", text.lstrip()[len(THINK_START) :]
    else:
        return text, reasoning
    if reasoning:
        trace = reasoning + "\n" + trace
    return answer, trace


_NUMBER_GOLD = re.compile(r"-?[0-9]*\.?[0-9]+")
# lm-eval's GSM8K exact match ignores these (in this order) in answers and golds alike.
_NUMERIC_IGNORE = (re.compile(","), re.compile(r"\$"), re.compile(r"(?s).*#### "))
_TRAILING_DOT = re.compile(r"\.$")


def numeric_form(text: str) -> str:
    """``text`` as lm-eval's GSM8K exact match compares it: commas, dollar signs, anything
    up to ``#### `` and one final period removed, lowercased, stripped."""
    for pattern in _NUMERIC_IGNORE:
        text = pattern.sub("", text)
    return _TRAILING_DOT.sub("", text).lower().strip()


def answer_kind(options: Sequence[str] | None, golds: Sequence[str]) -> AnswerKind:
    """``option`` when options are shown, ``number`` when every gold answer is a number
    (in :func:`numeric_form`), else ``text``."""
    if options is not None:
        return "option"
    if golds and all(_NUMBER_GOLD.fullmatch(numeric_form(g)) for g in golds):
        return "number"
    return "text"


def _labels_pattern(labels: Sequence[str]) -> str:
    ordered = sorted({str(x) for x in labels}, key=len, reverse=True)
    return "|".join(re.escape(x) for x in ordered) or r"[A-Z]"


_HASHES_NUMBER = re.compile(r"#### (\-?[0-9\.\,]+)")
_HASHES_LINE = re.compile(r"####[ \t]*(\S[^\n]*)")
_ANSWER_IS = r"(?i:the\s+(?:final\s+)?answer\s+is)[:\s]*"
_ANSWER_IS_NUMBER = re.compile(_ANSWER_IS + r"\$?(-?[0-9][0-9,]*(?:\.[0-9]+)?)")
_ANSWER_IS_LINE = re.compile(_ANSWER_IS + r"([^\n]*\S)")
_DECORATION = " \t*_\"'`"


def _clean_line(text: str) -> str:
    """A declared answer without markdown emphasis, quotes and one final period."""
    text = text.strip(_DECORATION)
    return text[:-1].rstrip(_DECORATION) if text.endswith(".") else text


def _strict(text: str, kind: AnswerKind, labels: Sequence[str]) -> Extraction | None:
    if kind == "number":
        for name, pattern in (
            ("strict:####", _HASHES_NUMBER),
            ("strict:answer-is", _ANSWER_IS_NUMBER),
        ):
            m = pattern.search(text)
            if m:
                return Extraction(m.group(1).strip(), name)
        return None
    if kind == "option":
        # a label stands alone: at the line's end or before punctuation ("B.", "(B)", "B,"),
        # never before a word ("A dog" is an option's text, read as the declared line)
        label = rf"\(?({_labels_pattern(labels)})\)?(?=\s*$|[.,;:)](?![A-Za-z]))"
        for name, prefix in (("strict:####", r"####[ \t]*"), ("strict:answer-is", _ANSWER_IS)):
            m = re.search(prefix + r"[*_\s]*" + label, text, flags=re.MULTILINE)
            if m:
                return Extraction(m.group(1), name)
        # else an option given by its text ("The answer is 4"): the declared line, mapped
        # to an option by the caller, as a text answer is
    return _declared_line(text)


def _declared_line(text: str) -> Extraction | None:
    """What follows ``####`` or "The answer is" on its line (emphasis, quotes and a final
    period removed)."""
    for name, pattern in (("strict:####", _HASHES_LINE), ("strict:answer-is", _ANSWER_IS_LINE)):
        m = pattern.search(text)
        if m and _clean_line(m.group(1)):
            return Extraction(_clean_line(m.group(1)), name)
    return None


# lm-eval's GSM8K ``flexible-extract``: the last match, its first non-empty group.
_FLEXIBLE_NUMBER = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")


def _flexible(text: str, kind: AnswerKind, labels: Sequence[str]) -> Extraction | None:
    if kind == "number":
        found = _FLEXIBLE_NUMBER.findall(text)
        if not found:
            return None
        last = next((g for g in found[-1] if g), "")
        return Extraction(last.strip(), "flexible:number") if last.strip() else None
    if kind == "option":
        alternatives = _labels_pattern(labels)
        for name, pattern in (
            ("flexible:label", rf"\(({alternatives})\)"),
            ("flexible:label", rf"(?<![A-Za-z0-9])({alternatives})(?=[.),:;](?![A-Za-z])|\s*$)"),
        ):
            found = re.findall(pattern, text, flags=re.MULTILINE)
            if found:
                return Extraction(found[-1], name)
        # no label: the last line, for the caller to map to an option's text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return Extraction(lines[-1], "flexible:last-line") if lines else None


def _whole(text: str, kind: AnswerKind, labels: Sequence[str]) -> Extraction | None:
    return Extraction(text.strip(), "options" if kind == "option" else "whole")


_REGISTRY: dict[str, Extractor] = {
    "auto": _whole,
    "options": _whole,
    "strict": _strict,
    "flexible": _flexible,
}
_BUILTIN = frozenset(_REGISTRY)


def register_extractor(name: str, extractor: Extractor, *, replace: bool = False) -> None:
    """Add ``extractor`` under ``name`` (usable as ``Condition.extract``). It gets the
    answer text (the reasoning trace removed), the answer kind and the displayed option
    labels, and returns an :class:`Extraction` or None when it finds no answer."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][\w.-]*", name):
        raise ValueError(
            f"an extractor's name is a letter then letters, digits, '_', '.' or '-'; got {name!r}"
        )
    if name in _BUILTIN:
        raise ValueError(f"extractor {name!r} is built in and cannot be replaced")
    if name in _REGISTRY and not replace:
        raise ValueError(f"extractor {name!r} is already registered; pass replace=True")
    if not callable(extractor):
        raise TypeError(f"extractor {name!r} must be callable; got {type(extractor).__name__}")
    _REGISTRY[name] = extractor


def extractor_names() -> tuple[str, ...]:
    """The registered extractors' names (``regex:PATTERN`` aside)."""
    return tuple(_REGISTRY)


_PATTERNS: dict[str, regex.Pattern[str]] = {}
#: Patterns already warned about for running out of time (once per pattern and process).
_TIMED_OUT: set[str] = set()


def _compiled(spec: str) -> regex.Pattern[str]:
    """The user's pattern, compiled once (Python's ``re`` syntax; the ``regex`` module
    searches it, because it can stop a search after :data:`REGEX_TIMEOUT_S`)."""
    if spec not in _PATTERNS:
        source = spec[len(_REGEX) :]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", FutureWarning)
                re.compile(source)  # the syntax users write and lm-eval's filters use
            _PATTERNS[spec] = regex.compile(source, flags=regex.VERSION0)
        except FutureWarning as exc:
            raise ConfigError(
                f"extract {spec!r}: ambiguous pattern ({exc}): Python's re and the regex "
                "package read it differently (e.g. [[:digit:]]); escape the inner '[' or "
                "write the class out (\\d, [0-9])"
            ) from None
        except (re.error, regex.error, RecursionError, OverflowError) as exc:
            raise ConfigError(f"extract {spec!r}: not a valid regular expression ({exc})") from None
    return _PATTERNS[spec]


def check_extract(spec: str) -> None:
    """Raise :class:`ConfigError` unless ``spec`` names an extractor or is a valid
    ``regex:PATTERN``."""
    if spec.startswith(_REGEX):
        if not spec[len(_REGEX) :]:
            raise ConfigError("extract 'regex:' needs a pattern after the colon")
        _compiled(spec)
    elif spec not in _REGISTRY:
        raise ConfigError(
            f"unknown extract {spec!r}; choose from {', '.join(_REGISTRY)} or 'regex:PATTERN'"
        )


def _regex(pattern: regex.Pattern[str], text: str) -> Extraction | None:
    try:
        m = pattern.search(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        if pattern.pattern in _TIMED_OUT:
            return Extraction(None, "regex:timeout")
        _TIMED_OUT.add(pattern.pattern)
        _log.warning(
            "extract 'regex:%s' searched an answer of %d characters for over %g s and was "
            "stopped (no answer: regex:timeout; said once per pattern, the rows count them); "
            "a pattern with nested repetition such as (a+)+ can take exponential time",
            pattern.pattern[:60],
            len(text),
            REGEX_TIMEOUT_S,
        )
        return Extraction(None, "regex:timeout")
    if m is None:
        return None
    found = next((g for g in m.groups() if g), None) if m.groups() else m.group(0)
    return Extraction(found.strip(), "regex") if found and found.strip() else None


def extract_answer(
    spec: str, text: str, kind: AnswerKind, labels: Sequence[str] = ()
) -> Extraction:
    """The answer ``spec`` finds in ``text`` (a reasoning trace already removed); an
    :class:`Extraction` whose ``answer`` is None when it finds none."""
    if spec.startswith(_REGEX):
        found = _regex(_compiled(spec), text)
        if found is not None and found.answer is None:
            return found
    else:
        try:
            extractor = _REGISTRY[spec]
        except KeyError:
            check_extract(spec)
            raise
        found = extractor(text, kind, tuple(labels))
        bad = found is not None and (
            not isinstance(found, Extraction)
            or not isinstance(found.answer, str | None)
            or not isinstance(found.extractor, str)
        )
        if bad:
            raise TypeError(
                f"extractor {spec!r} returned {found!r:.80}; expected an Extraction(answer: "
                "str or None, extractor: str) or None"
            )
    return found if found is not None else Extraction(None, spec)


#: The built-in extractors' one-line descriptions (for ``--help`` and the docs).
EXTRACTORS: Mapping[str, str] = MappingProxyType(
    {
        "auto": "the whole answer (free form) or an option (multiple choice)",
        "options": "the whole answer mapped to an option",
        "strict": "a declared answer: '#### X', else 'The answer is X'",
        "flexible": "the last number, the last option label, or the last line",
        "regex:PATTERN": "the first match of PATTERN (its first non-empty group)",
    }
)
