"""The re-evaluation's metrics (FewNLU, after SuperGLUE): accuracy; CB the mean of accuracy
and macro-F1; MultiRC the mean of F1a (F1 over every answer, "true" the positive class) and
exact match over questions; the task average over tasks. Pure functions over predicted and
gold label indices."""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "TASK_METRICS",
    "TaskMetric",
    "accuracy",
    "binary_f1",
    "group_exact_match",
    "macro_f1",
    "task_average",
    "task_metric",
    "task_scores",
]

#: A prediction: the chosen option's index, or None when the answer matched no option.
Pred = int | None


def _check(preds: Sequence[Pred], golds: Sequence[int], what: str) -> bool:
    if len(preds) != len(golds):
        raise ValueError(f"{what}: {len(preds)} predictions but {len(golds)} gold labels")
    if not golds:
        warnings.warn(f"{what} of no items is undefined (NaN)", RuntimeWarning, stacklevel=3)
        return False
    return True


def accuracy(preds: Sequence[Pred], golds: Sequence[int]) -> float:
    """Share of predictions equal to the gold label (an unmatched answer is wrong)."""
    if not _check(preds, golds, "accuracy"):
        return math.nan
    return sum(p == g for p, g in zip(preds, golds, strict=True)) / len(golds)


def _f1(preds: Sequence[Pred], golds: Sequence[int], label: int) -> float:
    tp = sum(p == label and g == label for p, g in zip(preds, golds, strict=True))
    fp = sum(p == label and g != label for p, g in zip(preds, golds, strict=True))
    fn = sum(p != label and g == label for p, g in zip(preds, golds, strict=True))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def macro_f1(preds: Sequence[Pred], golds: Sequence[int]) -> float:
    """Unweighted mean of the per-label F1 over the labels seen in gold or predictions
    (scikit-learn's ``f1_score(average="macro")`` with ``zero_division=0``; an unmatched
    answer is a wrong prediction of no label)."""
    if not _check(preds, golds, "macro-F1"):
        return math.nan
    labels = sorted({*golds, *(p for p in preds if p is not None)})
    return sum(_f1(preds, golds, lab) for lab in labels) / len(labels)


def binary_f1(preds: Sequence[Pred], golds: Sequence[int], positive: int = 1) -> float:
    """F1 of the ``positive`` label (MultiRC's F1a over every answer option)."""
    if not _check(preds, golds, "F1"):
        return math.nan
    return _f1(preds, golds, positive)


def group_exact_match(preds: Sequence[Pred], golds: Sequence[int], groups: Sequence[str]) -> float:
    """Share of groups (MultiRC questions) whose every item is right."""
    if not _check(preds, golds, "exact match"):
        return math.nan
    if len(groups) != len(golds):
        raise ValueError(f"exact match: {len(groups)} groups for {len(golds)} items")
    right: dict[str, bool] = defaultdict(lambda: True)
    for p, g, grp in zip(preds, golds, groups, strict=True):
        right[grp] = right[grp] and p == g
    return sum(right.values()) / len(right)


Scores = dict[str, float]


@dataclass(frozen=True)
class TaskMetric:
    """A task's metric: its name, its parts and how they are computed; ``score`` (the part
    the study selects on and averages) is the mean of the parts."""

    name: str
    parts: tuple[str, ...]
    compute: Callable[[Sequence[Pred], Sequence[int], Sequence[str]], Scores]


def _acc(p: Sequence[Pred], g: Sequence[int], _: Sequence[str]) -> Scores:
    return {"accuracy": accuracy(p, g)}


def _cb(p: Sequence[Pred], g: Sequence[int], _: Sequence[str]) -> Scores:
    return {"accuracy": accuracy(p, g), "macro_f1": macro_f1(p, g)}


def _multirc(p: Sequence[Pred], g: Sequence[int], groups: Sequence[str]) -> Scores:
    return {"f1a": binary_f1(p, g, 1), "em": group_exact_match(p, g, groups)}


ACCURACY = TaskMetric("accuracy", ("accuracy",), _acc)
#: Each task's metric by task key (accuracy unless listed).
TASK_METRICS: Mapping[str, TaskMetric] = MappingProxyType(
    {
        "cb": TaskMetric("mean of accuracy and macro-F1", ("accuracy", "macro_f1"), _cb),
        "multirc": TaskMetric("mean of F1a and exact match", ("f1a", "em"), _multirc),
    }
)


def task_metric(task: str) -> TaskMetric:
    """The metric of the task keyed ``task`` (``rte``, ``cb``, ...)."""
    return TASK_METRICS.get(task.lower(), ACCURACY)


def task_scores(
    task: str, preds: Sequence[Pred], golds: Sequence[int], groups: Sequence[str] | None = None
) -> Scores:
    """The task's metric parts and their mean, ``score`` (e.g. CB: ``accuracy``,
    ``macro_f1``, ``score``)."""
    metric = task_metric(task)
    parts = metric.compute(preds, golds, groups if groups is not None else [""] * len(golds))
    return {**parts, "score": sum(parts.values()) / len(parts)}


def task_average(scores: Mapping[str, float]) -> float:
    """The mean score over tasks (ReCoRD is never among them); NaN if any is NaN."""
    if not scores:
        warnings.warn("the task average of no tasks is undefined (NaN)", RuntimeWarning, 2)
        return math.nan
    return sum(scores.values()) / len(scores)
