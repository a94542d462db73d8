"""Pure scoring: responses to parsed answers, correctness, refusals, EM/F1, option scores."""

from ._options import OptionScores, option_scores, softmax
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
from ._trial import ScoredTrial, score_trial

__all__ = [
    "UNMATCHED_F1_THRESHOLD",
    "OptionMatch",
    "OptionScores",
    "ScoredTrial",
    "exact_match",
    "is_refusal",
    "match_option",
    "max_over_golds",
    "normalize_answer",
    "option_scores",
    "score_trial",
    "softmax",
    "token_f1",
]
