"""LLM-as-judge: a judge model grades a finished run's generated answers (docs/judge.md)."""

from ._common import check_rubric
from ._judge import (
    DEFAULT_RUBRIC,
    JUDGE_COLUMNS,
    VERDICT_PATTERN,
    JudgeAgreement,
    JudgeResult,
    Labels,
    judge_condition,
    judge_results,
    read_labels,
)
from ._pairwise import PAIRWISE_PATTERN, PAIRWISE_RUBRIC, PairwiseResult, judge_pairwise

__all__ = [
    "DEFAULT_RUBRIC",
    "JUDGE_COLUMNS",
    "PAIRWISE_PATTERN",
    "PAIRWISE_RUBRIC",
    "VERDICT_PATTERN",
    "JudgeAgreement",
    "JudgeResult",
    "Labels",
    "PairwiseResult",
    "check_rubric",
    "judge_condition",
    "judge_pairwise",
    "judge_results",
    "read_labels",
]
