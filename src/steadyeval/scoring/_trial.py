"""Score one trial from its responses: the pure heart of re-scoring without a model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..conditions import Trial
from ..requests import GenerateResponse, Response, ScoreResponse, TopKResponse
from ._options import option_scores
from ._text import is_refusal, match_option, max_over_golds, normalize_answer

__all__ = ["ScoredTrial", "score_trial"]


@dataclass(frozen=True)
class ScoredTrial:
    """Everything scoring decides about one (trial, model, sample)."""

    output: str
    parsed: str | None
    parsed_kind: str  # "option" | "refusal" | "unmatched" | "free" | "token"
    truncated: bool
    n_input_tokens: int
    parsed_option: int | None = None  # index into the item's original options
    correct: bool | None = None
    refused: bool = False
    em: float | None = None
    f1: float | None = None
    option_logprobs: list[float] | None = None
    option_logprobs_per_token: list[float] | None = None
    option_logprobs_per_char: list[float] | None = None
    confidence: float | None = None
    sequence_logprob: float | None = None
    approximate: bool = False


def _correct(trial: Trial, kind: str, shown_index: int | None, refused: bool) -> bool:
    if not trial.item.answerable:
        return refused
    return kind == "option" and shown_index is not None and shown_index in trial.gold_displayed


def _source(trial: Trial, shown_index: int | None) -> int | None:
    if shown_index is None:
        return None
    src = trial.option_source[shown_index]
    return None if src < 0 else src


def score_trial(trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
    """Parse and score ``responses`` (one trial's, in ``requests_for`` order, one sample)."""
    cond = trial.condition
    truncated = any(getattr(r, "truncated", False) for r in responses)
    n_in = max((getattr(r, "n_input_tokens", 0) for r in responses), default=0)
    phrases = tuple(cond.refusal_phrases) + ((cond.format.escape,) if cond.format.escape else ())

    if cond.scoring == "generate":
        (resp,) = responses
        assert isinstance(resp, GenerateResponse)
        text = resp.text
        if cond.format.kind == "free" or trial.options is None:
            refused = is_refusal(text, phrases)
            em, f1 = (None, None)
            if trial.item.answerable and trial.item.gold_texts:
                em, f1 = max_over_golds(text, trial.item.gold_texts)
            correct = refused if not trial.item.answerable else bool(em == 1.0)
            return ScoredTrial(
                output=text,
                parsed=text.strip(),
                parsed_kind="refusal" if refused else "free",
                correct=correct,
                refused=refused,
                em=em,
                f1=f1,
                truncated=truncated,
                n_input_tokens=n_in,
            )
        m = match_option(
            text,
            trial.options,
            trial.labels,
            refusal_phrases=phrases,
            escape_index=trial.escape_index,
        )
        refused = m.kind == "refusal"
        parsed = trial.options[m.position] if m.position is not None else text.strip()
        return ScoredTrial(
            output=text,
            parsed=parsed,
            parsed_kind=m.kind,
            parsed_option=_source(trial, m.position),
            correct=_correct(trial, m.kind, m.position, refused),
            refused=refused,
            truncated=truncated,
            n_input_tokens=n_in,
        )

    if cond.scoring == "prompt-logprob":
        (resp,) = responses
        assert isinstance(resp, ScoreResponse)
        return ScoredTrial(
            output="",
            parsed=None,
            parsed_kind="logprob",
            truncated=truncated,
            n_input_tokens=n_in,
            sequence_logprob=resp.logprob,
            approximate=resp.approximate,
        )

    if cond.scoring == "top-k":
        (resp,) = responses
        assert isinstance(resp, TopKResponse)
        top = resp.tokens[0].strip() if resp.tokens else ""
        golds = {normalize_answer(g) for g in trial.item.gold_texts}
        correct = bool(top) and normalize_answer(top) in golds
        conf = math.exp(resp.logprobs[0]) if resp.logprobs else None
        return ScoredTrial(
            output=top,
            parsed=top,
            parsed_kind="token",
            correct=correct,
            confidence=conf,
            truncated=truncated,
            n_input_tokens=n_in,
        )

    assert trial.options is not None
    scores = [r for r in responses if isinstance(r, ScoreResponse)]
    if all(math.isinf(r.logprob) and r.logprob < 0 for r in scores):
        # No option has any probability (e.g. an API whose top log-probs list none of the
        # labels): choosing by the tie rule would bias towards the first option.
        raw = [r.logprob for r in scores]
        return ScoredTrial(
            output="",
            parsed=None,
            parsed_kind="unmatched",
            correct=False,
            option_logprobs=raw,
            option_logprobs_per_token=raw,
            option_logprobs_per_char=raw,
            truncated=truncated,
            n_input_tokens=n_in,
            approximate=any(r.approximate for r in scores),
        )
    texts = list(trial.options) if cond.scoring == "option-logprob" else list(trial.labels)
    s = option_scores(
        [r.logprob for r in scores],
        [r.n_tokens for r in scores],
        texts,
        normalization=cond.normalization,
    )
    refused = trial.escape_index is not None and s.choice == trial.escape_index
    kind = "refusal" if refused else "option"
    return ScoredTrial(
        output=texts[s.choice],
        parsed=trial.options[s.choice],
        parsed_kind=kind,
        parsed_option=_source(trial, s.choice),
        correct=_correct(trial, kind, s.choice, refused),
        refused=refused,
        option_logprobs=s.raw,
        option_logprobs_per_token=s.per_token,
        option_logprobs_per_char=s.per_char,
        confidence=s.confidence,
        truncated=truncated,
        n_input_tokens=n_in,
        approximate=any(r.approximate for r in scores),
    )
