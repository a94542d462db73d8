"""The built-in scoring modes: generation, option and letter log-probabilities, top-k tokens,
and the prompt's own log-probability."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .._errors import ConfigError
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
from ._extract import (
    AnswerKind,
    Extraction,
    answer_kind,
    check_extract,
    extract_answer,
    numeric_form,
    split_reasoning,
)
from ._options import option_scores
from ._text import is_refusal, match_option, max_over_golds, normalize_answer

if TYPE_CHECKING:
    from ..conditions import Condition, Trial

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
    """Generate an answer (greedy, or ``n_samples`` samples: one row each). A reasoning
    trace is set aside, the condition's extractor finds the answer in the rest, and it is
    scored: an option for multiple choice, a number as lm-eval's GSM8K compares numbers,
    free text by exact match and F1."""

    name = GENERATE
    extracts = True
    doc = "generate an answer; extracted, then scored (option, number, or EM/F1)"

    def check(self, condition: Condition) -> None:
        super().check(condition)
        try:
            check_extract(condition.extract)
        except ConfigError as exc:
            raise ConfigError(f"condition {condition.name!r}: {exc}") from None
        if condition.extract == "options" and condition.format.kind != "mc":
            raise ConfigError(
                f"condition {condition.name!r}: extract 'options' needs a multiple-choice "
                "format; use auto, strict, flexible or regex:PATTERN for free-form answers"
            )

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        cond = trial.condition
        gen = trial.generation or cond.generation
        max_new_tokens, stop = gen.limits
        n = 1 if gen.temperature == 0 else gen.n_samples
        return tuple(
            GenerateRequest(
                prompt=trial.prompt,
                max_new_tokens=max_new_tokens,
                temperature=gen.temperature,
                top_p=gen.top_p,
                stop=stop,
                sample_index=i,
                seed=gen.seed,
                chat=cond.chat,
                system=cond.system,
                turns=trial.turns,
            )
            for i in range(n)
        )

    def samples(self, n_requests: int) -> list[range]:
        return [range(i, i + 1) for i in range(n_requests)]

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, GenerateResponse)
        truncated, n_in = _common(responses)
        phrases = _phrases(trial)
        answer, reasoning = split_reasoning(resp.text, resp.reasoning)
        shown = trial.condition.format.kind == "mc" and trial.options is not None
        kind = answer_kind(trial.options if shown else None, trial.item.gold_texts)
        found = _extract(trial, answer, kind)
        if reasoning is not None and not answer.strip():
            found = Extraction(None, found.extractor)  # it stopped while thinking: no answer
        unmatched = ScoredTrial(
            output=resp.text,
            parsed=None,
            parsed_kind="unmatched",
            correct=False,
            truncated=truncated,
            n_input_tokens=n_in,
            reasoning=reasoning,
            extractor=found.extractor,
            n_output_tokens=resp.n_output_tokens,
        )
        # free form: a refusal phrase wins over any answer in the text; multiple choice:
        # the options are tried first (an escape option may be worded as a refusal)
        if (not shown or found.answer is None) and is_refusal(answer, phrases):
            return replace(
                unmatched,
                parsed=answer.strip(),
                parsed_kind="refusal",
                correct=not trial.item.answerable,
                refused=True,
                extractor="refusal",
            )
        if found.answer is None:
            return unmatched
        if not shown:
            # auto keeps the former comparison (SQuAD exact match) so earlier runs rescore
            # the same; an extractor's number is compared as lm-eval's GSM8K compares it
            numeric = kind == "number" and trial.condition.extract != "auto"
            return replace(unmatched, **_free(trial, found.answer, numeric))
        assert trial.options is not None
        m = match_option(
            found.answer,
            trial.options,
            trial.labels,
            refusal_phrases=phrases,
            escape_index=trial.escape_index,
        )
        refused = m.kind == "refusal"
        return replace(
            unmatched,
            parsed=trial.options[m.position] if m.position is not None else found.answer,
            parsed_kind=m.kind,
            parsed_option=_source(trial, m.position),
            correct=_correct(trial, m.kind, m.position, refused),
            refused=refused,
        )


def _extract(trial: Trial, answer: str, kind: AnswerKind) -> Extraction:
    """The condition's extractor on ``answer``; an extractor that fails is named, with the
    condition and item, instead of a bare exception from inside it."""
    spec = trial.condition.extract
    try:
        return extract_answer(spec, answer, kind, trial.labels)
    except Exception as exc:
        raise ConfigError(
            f"condition {trial.condition.name!r}, item {trial.item.id!r}: extractor "
            f"{spec!r} failed on an answer of {len(answer)} characters: "
            f"{type(exc).__name__}: {exc}"[:500]
        ) from exc


def _free(trial: Trial, answer: str, numeric: bool) -> dict[str, Any]:
    """A free-form answer's fields: a number as lm-eval's GSM8K exact match compares it
    (:func:`numeric_form`), text by SQuAD exact match and F1, against the gold answers."""
    golds = trial.item.gold_texts
    em: float | None = None
    f1: float | None = None
    if trial.item.answerable and golds:
        if numeric:
            em = f1 = float(numeric_form(answer) in {numeric_form(g) for g in golds})
        else:
            em, f1 = max_over_golds(answer, golds)
    correct = trial.item.answerable and em == 1.0
    return {"parsed": answer, "parsed_kind": "free", "correct": correct, "em": em, "f1": f1}


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
        prefix = trial.continuation_prefix
        if prefix is None:
            prefix = cond.format.continuation_prefix
        return tuple(
            ScoreRequest(
                context=trial.prompt,
                continuation=prefix + t,
                chat=cond.chat,
                system=cond.system,
                turns=trial.turns,
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
                turns=trial.turns,
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
