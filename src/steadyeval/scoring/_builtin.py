"""The built-in scoring modes: generation, option and letter log-probabilities, top-k tokens,
and the prompt's own log-probability."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from ..conditions import ParsedKind, ScoredTrial, ScoringMode, register_scoring
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    Request,
    Response,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._options import option_scores
from ._text import is_refusal, match_option, max_over_golds, normalize_answer

if TYPE_CHECKING:
    from ..conditions import Trial

__all__ = [
    "GENERATE",
    "LETTER_LOGPROB",
    "OPTION_LOGPROB",
    "PROMPT_LOGPROB",
    "TOP_K",
    "Generate",
    "LetterLogprob",
    "OptionLogprob",
    "PromptLogprob",
    "TopK",
]

GENERATE = "generate"
OPTION_LOGPROB = "option-logprob"
LETTER_LOGPROB = "letter-logprob"
TOP_K = "top-k"
PROMPT_LOGPROB = "prompt-logprob"


def _correct(trial: Trial, kind: str, shown_index: int | None, refused: bool) -> bool:
    if not trial.item.answerable:
        return refused
    return kind == "option" and shown_index is not None and shown_index in trial.gold_displayed


def _source(trial: Trial, shown_index: int | None) -> int | None:
    if shown_index is None:
        return None
    src = trial.option_source[shown_index]
    return None if src < 0 else src


def _common(responses: Sequence[Response]) -> tuple[bool, int]:
    """Whether any response was truncated, and the largest input token count."""
    truncated = any(r.truncated for r in responses)
    return truncated, max((r.n_input_tokens for r in responses), default=0)


def _phrases(trial: Trial) -> tuple[str, ...]:
    cond = trial.condition
    return tuple(cond.refusal_phrases) + ((cond.format.escape,) if cond.format.escape else ())


class Generate(ScoringMode):
    """Generate an answer (greedy, or ``n_samples`` samples: one row each); free-form answers
    are scored by exact match and F1, list answers are mapped to an option."""

    name = GENERATE
    doc = "generate an answer; free form scored by EM/F1, lists mapped to an option"

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        cond = trial.condition
        gen = cond.generation
        n = 1 if gen.temperature == 0 else gen.n_samples
        return tuple(
            GenerateRequest(
                prompt=trial.prompt,
                max_new_tokens=gen.max_new_tokens,
                temperature=gen.temperature,
                top_p=gen.top_p,
                stop=gen.stop,
                sample_index=i,
                seed=gen.seed,
                chat=cond.chat,
                system=cond.system,
            )
            for i in range(n)
        )

    def samples(self, n_requests: int) -> list[range]:
        return [range(i, i + 1) for i in range(n_requests)]

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, GenerateResponse)
        truncated, n_in = _common(responses)
        text, phrases = resp.text, _phrases(trial)
        if trial.condition.format.kind == "free" or trial.options is None:
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
        return ScoredTrial(
            output=text,
            parsed=trial.options[m.position] if m.position is not None else text.strip(),
            parsed_kind=m.kind,
            parsed_option=_source(trial, m.position),
            correct=_correct(trial, m.kind, m.position, refused),
            refused=refused,
            truncated=truncated,
            n_input_tokens=n_in,
        )


class _Choice(ScoringMode):
    """Score every displayed option as a continuation of the prompt; the best one is chosen
    (under the condition's ``normalization``)."""

    needs_options = True
    #: What each option is scored as: its text or its label.
    continuation: ClassVar[Literal["text", "label"]]

    def _texts(self, trial: Trial) -> list[str]:
        assert trial.options is not None
        return list(trial.options if self.continuation == "text" else trial.labels)

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        cond = trial.condition
        prefix = cond.format.continuation_prefix
        return tuple(
            ScoreRequest(
                context=trial.prompt, continuation=prefix + t, chat=cond.chat, system=cond.system
            )
            for t in self._texts(trial)
        )

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        assert trial.options is not None
        truncated, n_in = _common(responses)
        scores = [r for r in responses if isinstance(r, ScoreResponse)]
        approximate = any(r.approximate for r in scores)
        if any(math.isnan(r.logprob) for r in scores):
            # A score that is not a number (a damaged model output, e.g. an fp16 overflow)
            # makes the comparison meaningless: no answer, marked as an error (correct is
            # null, so accuracy leaves it out), never the NaN option or a guess without it.
            raw = [r.logprob for r in scores]
            return ScoredTrial(
                output="",
                parsed=None,
                parsed_kind="error",
                correct=None,
                option_logprobs=raw,
                truncated=truncated,
                n_input_tokens=n_in,
                approximate=approximate,
            )
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
                approximate=approximate,
            )
        texts = self._texts(trial)
        s = option_scores(
            [r.logprob for r in scores],
            [r.n_tokens for r in scores],
            texts,
            normalization=trial.condition.normalization,
        )
        refused = trial.escape_index is not None and s.choice == trial.escape_index
        kind: ParsedKind = "refusal" if refused else "option"
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
            approximate=approximate,
        )


class OptionLogprob(_Choice):
    name = OPTION_LOGPROB
    shot_answer = "text"
    continuation = "text"
    doc = "score each option's text as a continuation; the most likely is the answer"


class LetterLogprob(_Choice):
    name = LETTER_LOGPROB
    continuation = "label"
    doc = "score each option's label (' A', ' B', ...); the most likely is the answer"


class TopK(ScoringMode):
    """The ``top_k`` most likely next tokens (or mask fillers); the first is the answer."""

    name = TOP_K
    doc = "the k most likely next tokens (or mask fillers); P@1 against the gold answers"

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        cond = trial.condition
        candidates = tuple(trial.item.options or ()) if cond.candidates == "options" else ()
        return (
            TopKRequest(
                prompt=trial.prompt,
                k=cond.top_k,
                chat=cond.chat,
                system=cond.system,
                candidates=candidates,
            ),
        )

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, TopKResponse)
        truncated, n_in = _common(responses)
        top = resp.tokens[0].strip() if resp.tokens else ""
        golds = {normalize_answer(g) for g in trial.item.gold_texts}
        return ScoredTrial(
            output=top,
            parsed=top,
            parsed_kind="token",
            correct=bool(top) and normalize_answer(top) in golds,
            confidence=math.exp(resp.logprobs[0]) if resp.logprobs else None,
            truncated=truncated,
            n_input_tokens=n_in,
        )


class PromptLogprob(ScoringMode):
    """The log-probability of the rendered prompt itself (memorisation checks)."""

    name = PROMPT_LOGPROB
    doc = "the log-probability of the prompt itself (memorisation checks)"

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        return (ScoreRequest(context="", continuation=trial.prompt, chat=False),)

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, ScoreResponse)
        truncated, n_in = _common(responses)
        return ScoredTrial(
            output="",
            parsed=None,
            parsed_kind="logprob",
            truncated=truncated,
            n_input_tokens=n_in,
            sequence_logprob=resp.logprob,
            approximate=resp.approximate,
        )


for _mode in (Generate(), OptionLogprob(), LetterLogprob(), TopK(), PromptLogprob()):
    register_scoring(_mode)
