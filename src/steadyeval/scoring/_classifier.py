"""``classifier-head``: answers from a classification head (an ``hf-classifier`` model).

The head reads text pairs, not a prompt: an item carries them in its metadata as
``classifier_inputs``, a list of ``[text_a, text_b or null]`` pairs: one pair for a head over
the item's options as labels (in the options' order), or one pair per option for a
multiple-choice head. The answer is the option with the highest log-probability.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ..conditions import ScoredTrial, ScoringMode, register_scoring
from ..requests import ClassifyRequest, ClassifyResponse, Request, Response

if TYPE_CHECKING:
    from ..conditions import Condition, Trial

__all__ = ["CLASSIFIER_HEAD", "INPUTS_KEY", "ClassifierHead"]

CLASSIFIER_HEAD = "classifier-head"
#: The item metadata key holding a classifier's text pairs.
INPUTS_KEY = "classifier_inputs"


def _pair_ok(p: Any) -> bool:
    return (
        isinstance(p, Sequence)
        and not isinstance(p, str)
        and len(p) == 2
        and isinstance(p[0], str)
        and (p[1] is None or isinstance(p[1], str))
    )


def _pairs(trial: Trial) -> tuple[tuple[str, str | None], ...]:
    raw: Any = trial.item.metadata.get(INPUTS_KEY)
    if not raw or isinstance(raw, str) or not all(_pair_ok(p) for p in raw):
        raise ConfigError(
            f"item {trial.item.id!r}: scoring {CLASSIFIER_HEAD!r} needs metadata "
            f"{INPUTS_KEY!r}: a list of [text_a, text_b or null] pairs"
        )
    return tuple((str(a), None if b is None else str(b)) for a, b in raw)


class ClassifierHead(ScoringMode):
    """The head's log-probability of each option (see the module docstring)."""

    name = CLASSIFIER_HEAD
    needs_options = True
    doc = "a classification head's log-probabilities over the options (hf-classifier models)"

    def check(self, condition: Condition) -> None:
        super().check(condition)
        if condition.option_order != "original" or condition.format.escape is not None:
            raise ConfigError(
                f"condition {condition.name!r}: a classification head scores the options in "
                "their original order, without an escape option"
            )

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        pairs = _pairs(trial)
        return (ClassifyRequest(inputs=pairs, choices=len(pairs) > 1),)

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        (resp,) = responses
        assert isinstance(resp, ClassifyResponse) and trial.options is not None
        lps = list(resp.logprobs)
        if len(lps) != len(trial.options):
            raise ConfigError(
                f"item {trial.item.id!r}: the head gives {len(lps)} log-probabilities for "
                f"{len(trial.options)} options"
            )
        if any(math.isnan(x) for x in lps):  # a damaged output: no answer, never a NaN pick
            return ScoredTrial(
                output="",
                parsed=None,
                parsed_kind="error",
                correct=None,
                option_logprobs=lps,
                truncated=resp.truncated,
                n_input_tokens=resp.n_input_tokens,
            )
        choice = max(range(len(lps)), key=lambda j: (lps[j], -j))
        return ScoredTrial(
            output=trial.options[choice],
            parsed=trial.options[choice],
            parsed_kind="option",
            parsed_option=choice,
            # A head cannot abstain: on an unanswerable item every answer is wrong.
            correct=trial.item.answerable and choice in trial.gold_displayed,
            option_logprobs=lps,
            confidence=math.exp(lps[choice]),
            truncated=resp.truncated,
            n_input_tokens=resp.n_input_tokens,
        )


register_scoring(ClassifierHead())
