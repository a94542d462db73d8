"""Pure scoring: the built-in scoring modes, parsed answers, correctness, refusals, EM/F1,
option scores. The modes' protocol and registry (:class:`ScoringMode`,
:func:`register_scoring`, :func:`get_scoring`) are defined with the conditions that name them
(:mod:`steadyeval.conditions`) and are public here too."""

from ..conditions import (
    ScoredTrial,
    ScoringMode,
    canonical_scoring,
    get_scoring,
    register_scoring,
    renamed_scoring,
    requests_for,
    score_trial,
    scoring_names,
)
from ._builtin import GENERATE, LETTER_LOGPROB, OPTION_LOGPROB, PROMPT_LOGPROB, TOP_K
from ._classifier import CLASSIFIER_HEAD, INPUTS_KEY
from ._options import OptionScores, best_index, option_scores, softmax
from ._text import (
    UNMATCHED_F1_THRESHOLD,
    OptionMatch,
    exact_match,
    is_refusal,
    match_option,
    max_over_golds,
    normalize_answer,
    token_f1,
)

__all__ = [
    "CLASSIFIER_HEAD",
    "GENERATE",
    "INPUTS_KEY",
    "LETTER_LOGPROB",
    "OPTION_LOGPROB",
    "PROMPT_LOGPROB",
    "TOP_K",
    "UNMATCHED_F1_THRESHOLD",
    "OptionMatch",
    "OptionScores",
    "ScoredTrial",
    "ScoringMode",
    "best_index",
    "canonical_scoring",
    "exact_match",
    "get_scoring",
    "is_refusal",
    "match_option",
    "max_over_golds",
    "normalize_answer",
    "option_scores",
    "register_scoring",
    "renamed_scoring",
    "requests_for",
    "score_trial",
    "scoring_names",
    "softmax",
    "token_f1",
]
