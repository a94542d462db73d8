"""SQuAD normalisation, exact match, token F1, and mapping generated text to an option."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple

__all__ = [
    "UNMATCHED_F1_THRESHOLD",
    "OptionMatch",
    "exact_match",
    "is_refusal",
    "match_option",
    "max_over_golds",
    "normalize_answer",
    "token_f1",
]

#: An output that equals no option after normalisation is mapped to the option with the best
#: token F1 if that F1 is at least this value; below it the output is ``unmatched``.
UNMATCHED_F1_THRESHOLD = 0.5

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, drop punctuation and articles, squeeze whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1. Two empty answers score 1; one empty answer scores 0."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_over_golds(prediction: str, golds: Sequence[str]) -> tuple[float, float]:
    """(EM, F1) of a prediction: the best over the gold answers; ``(nan, nan)`` if none."""
    if not golds:
        return float("nan"), float("nan")
    em = max(exact_match(prediction, g) for g in golds)
    f1 = max(token_f1(prediction, g) for g in golds)
    return em, f1


def is_refusal(text: str, phrases: Sequence[str]) -> bool:
    """True when the normalised output equals a refusal phrase or starts with it."""
    norm = normalize_answer(text)
    for phrase in phrases:
        p = normalize_answer(phrase)
        if p and (norm == p or norm.startswith(p + " ")):
            return True
    # Refusal phrases are often punctuation-bearing (``no answer>``): compare raw too.
    raw = text.strip().lower()
    return any(phrase and raw.startswith(phrase.strip().lower()) for phrase in phrases)


class OptionMatch(NamedTuple):
    """How generated text maps to the displayed options."""

    kind: Literal["option", "refusal", "unmatched"]
    position: int | None
    method: Literal["exact", "label", "f1", "refusal", "none"]


_LABEL_RE = re.compile(r"^\s*\(?([A-Za-z])\)?(?:[.):]|\s|$)")


def _bare_label(text: str) -> str:
    """``text`` as a bare label would be written: without surrounding brackets, emphasis
    and a final ``.``, ``)`` or ``:`` (``"(iii)."`` -> ``"iii"``), case-folded."""
    t = text.strip().strip("*_ ").rstrip(".:").strip()
    if len(t) >= 2 and t[0] in "([" and t[-1] in ")]":
        t = t[1:-1].strip()
    return t.rstrip(")").strip().casefold()


def match_option(
    text: str,
    options: Sequence[str],
    labels: Sequence[str],
    *,
    refusal_phrases: Sequence[str] = (),
    escape_index: int | None = None,
    threshold: float = UNMATCHED_F1_THRESHOLD,
) -> OptionMatch:
    """Map a generated answer to one of the displayed options.

    Order of tests: exact match of an option text after SQuAD normalisation; a refusal
    phrase; a bare option label of any length (``"B"``, ``"(b)"``, ``"b."``, ``"iii"``,
    ``"γ"``); the option with the
    best token F1 if it reaches ``threshold``. Otherwise ``unmatched``. Choosing the escape
    option counts as a refusal.
    """
    norm = normalize_answer(text)

    def pick(i: int, method: Literal["exact", "label", "f1"]) -> OptionMatch:
        if escape_index is not None and i == escape_index:
            return OptionMatch("refusal", i, method)
        return OptionMatch("option", i, method)

    for i, opt in enumerate(options):
        if norm == normalize_answer(opt) and norm:
            return pick(i, "exact")
    if is_refusal(text, refusal_phrases):
        return OptionMatch("refusal", None, "refusal")
    bare = _bare_label(text)
    for i, label in enumerate(labels):
        if bare and bare == label.strip().casefold():
            return pick(i, "label")
    m = _LABEL_RE.match(text)
    if m and len(text.strip()) <= 4:
        lab = m.group(1)
        for i, label in enumerate(labels):
            if label.lower() == lab.lower():
                return pick(i, "label")
    scores = [token_f1(text, o) for o in options]
    if scores:
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        if scores[best] >= threshold:
            return pick(best, "f1")
    return OptionMatch("unmatched", None, "none")
