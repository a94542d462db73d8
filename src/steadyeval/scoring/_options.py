"""Per-option log-probability statistics (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

__all__ = ["OptionScores", "best_index", "option_scores", "softmax"]


def best_index(scores: Sequence[float]) -> int | None:
    """The index of the largest score, ties to the first. NaN never wins (``max`` with NaN
    keeps whatever came first, so a NaN first option would be picked); ``None`` when every
    score is NaN."""
    best: int | None = None
    for i, x in enumerate(scores):
        if not math.isnan(x) and (best is None or x > scores[best]):
            best = i
    return best


def softmax(values: Sequence[float]) -> list[float]:
    """Numerically stable softmax; ``[]`` for empty input."""
    if not values:
        return []
    import numpy as np  # here, so importing the scoring modes stays cheap

    arr = np.asarray(values, dtype=np.float64)
    arr = arr - np.max(arr)
    e = np.exp(arr)
    return [float(x) for x in e / e.sum()]


class OptionScores(NamedTuple):
    raw: list[float]
    per_token: list[float]
    per_char: list[float]
    choice: int
    confidence: float
    probs: list[float]


def option_scores(
    logprobs: Sequence[float],
    n_tokens: Sequence[int],
    texts: Sequence[str],
    *,
    normalization: Literal["none", "token", "char"] = "none",
) -> OptionScores:
    """Raw, per-token and per-character normalised scores; the choice under ``normalization``.

    Ties go to the first option; an option whose score is NaN is never chosen (a
    :class:`ValueError` when every score is). Confidence is the softmax (over the options)
    of the scores used for the choice, evaluated at the chosen option.
    """
    if not logprobs:
        raise ValueError("option_scores needs at least one option")
    raw = [float(x) for x in logprobs]
    per_token = [lp / max(n, 1) for lp, n in zip(raw, n_tokens, strict=True)]
    per_char = [lp / max(len(t), 1) for lp, t in zip(raw, texts, strict=True)]
    used = {"none": raw, "token": per_token, "char": per_char}[normalization]
    choice = best_index(used)
    if choice is None:
        raise ValueError("option_scores: every option's score is NaN; there is no choice")
    probs = softmax(used)
    conf = probs[choice] if not math.isnan(probs[choice]) else float("nan")
    return OptionScores(raw, per_token, per_char, choice, conf, probs)
