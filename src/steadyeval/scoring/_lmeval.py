"""Scoring an lm-eval task's items as lm-eval scores them (the ``lm-eval`` scoring mode).

One mode for every output type, chosen per item from what the lm-eval loader recorded:

- ``multiple_choice``: each option's log-probability as a continuation after the task's
  ``target_delimiter``; the most likely is the answer (lm-eval's ``acc``; ``acc_norm`` is the
  condition's ``normalization: char``, the option's log-probability over its length in
  characters).
- ``loglikelihood``: the gold continuation's log-probability; correct when it is the greedy
  continuation (lm-eval's ``acc``; its ``perplexity`` is ``exp(-mean(sequence_logprob))``).
- ``generate_until``: generate with the task's stop strings and token limit, apply the
  task's first filter (``regex``, ``take_first``, ...) and compare as lm-eval's
  ``exact_match`` does, with the task's ``regexes_to_ignore``, ``ignore_case`` and
  ``ignore_punctuation``. A condition's own ``extract`` replaces the filter.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ..conditions import LM_EVAL_TEMPLATE, ScoredTrial, ScoringMode, register_scoring
from ..requests import GenerateResponse, Request, Response, ScoreRequest, ScoreResponse
from ._builtin import Generate, OptionLogprob
from ._extract import split_reasoning

if TYPE_CHECKING:
    from ..conditions import Condition, Trial

__all__ = ["LM_EVAL", "LmEval", "lm_eval_exact_match", "lm_eval_filter"]

LM_EVAL = "lm-eval"
#: lm-eval's regex filter's answer when its pattern finds nothing.
_FALLBACK = "[invalid]"
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def lm_eval_filter(text: str, steps: Sequence[Mapping[str, Any]]) -> str:
    """``text`` through one lm-eval filter ensemble (``regex``, ``take_first``,
    ``remove_whitespace``, ``lowercase``, ``uppercase``), as lm-eval 0.4.13 applies them to
    one response."""
    for step in steps:
        fn = step.get("function")
        if fn == "regex":
            found = re.findall(str(step.get("regex_pattern", r"#### (\-?[0-9\.\,]+)")), text)
            fallback = str(step.get("fallback", _FALLBACK))
            if not found:
                text = fallback
                continue
            match = found[int(step.get("group_select", 0))]
            if isinstance(match, tuple):
                parts = [m for m in match if m]
                match = parts[0] if parts else fallback
            text = match.strip()
        elif fn == "remove_whitespace":
            text = text.strip()
        elif fn == "lowercase":
            text = text.lower()
        elif fn == "uppercase":
            text = text.upper()
        elif fn != "take_first":
            raise ConfigError(f"lm-eval filter step {fn!r} is not reproduced")
    return text


def lm_eval_exact_match(prediction: str, gold: str, rules: Mapping[str, Any]) -> bool:
    """lm-eval's ``exact_match`` of one prediction against one gold, under the task's
    ``regexes_to_ignore`` (removed from both, in order), ``ignore_case`` and
    ``ignore_punctuation``."""
    for pattern in rules.get("regexes_to_ignore", ()):
        prediction = re.sub(pattern, "", prediction)
        gold = re.sub(pattern, "", gold)
    if rules.get("ignore_case"):
        prediction, gold = prediction.lower(), gold.lower()
    if rules.get("ignore_punctuation"):
        prediction, gold = prediction.translate(_PUNCTUATION), gold.translate(_PUNCTUATION)
    return prediction == gold


#: The built-in modes each lm-eval output type is scored by (one instance, not one a row).
_OPTIONS = OptionLogprob()
_GENERATE = Generate()


def _kind(trial: Trial) -> str:
    return str(trial.item.metadata["lm_eval"]["output_type"])


class LmEval(ScoringMode):
    """lm-eval's own scoring of each item's task (see the module's text)."""

    name = LM_EVAL
    extracts = True
    doc = "an lm-eval task's own scoring (template lm-eval): acc, acc_norm, exact_match"

    def check(self, condition: Condition) -> None:
        if not condition.lm_eval:
            raise ConfigError(
                f"condition {condition.name!r}: scoring 'lm-eval' scores items as their "
                f"lm-eval task does; it needs template {LM_EVAL_TEMPLATE!r}"
            )
        _GENERATE.check(condition)  # a bad extract is refused here as for generate

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        kind = _kind(trial)
        if kind == "multiple_choice":
            return _OPTIONS.requests(trial)
        if kind == "generate_until":
            return _GENERATE.requests(trial)
        cond = trial.condition
        return (
            ScoreRequest(
                context=trial.prompt,
                continuation=str(trial.item.metadata["lm_eval"]["continuation"]),
                chat=cond.chat,
                system=cond.system,
            ),
        )

    def samples_for(self, trial: Trial, n_requests: int) -> list[range]:
        if _kind(trial) == "generate_until":
            return _GENERATE.samples(n_requests)
        return self.samples(n_requests)

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        kind = _kind(trial)
        if kind == "multiple_choice":
            return _OPTIONS.score(trial, responses)
        if kind == "generate_until":
            return self._generated(trial, responses)
        (resp,) = responses
        assert isinstance(resp, ScoreResponse)
        return ScoredTrial(
            output="",
            parsed=None,
            parsed_kind="logprob",
            correct=resp.is_greedy,
            truncated=resp.truncated,
            n_input_tokens=resp.n_input_tokens,
            sequence_logprob=resp.logprob,
            approximate=resp.approximate,
        )

    def _generated(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        scored = _GENERATE.score(trial, responses)
        if trial.condition.extract != "auto":
            return scored
        (resp,) = responses
        assert isinstance(resp, GenerateResponse)
        answer, _ = split_reasoning(resp.text, resp.reasoning)
        asked = trial.item.metadata["lm_eval"]
        first = asked["filters"][0]
        found = lm_eval_filter(answer, first["steps"])
        rules = asked["exact_match"]
        correct = any(lm_eval_exact_match(found, g, rules) for g in trial.item.gold_texts)
        matched = found != _FALLBACK or not any(
            s.get("function") == "regex" for s in first["steps"]
        )
        return replace(
            scored,
            parsed=found if matched else None,
            parsed_kind="free" if matched else "unmatched",
            parsed_option=None,
            correct=correct,
            refused=False,
            em=float(correct),
            f1=None,
            extractor=f"lm-eval:{first['name']}",
        )


register_scoring(LmEval())
