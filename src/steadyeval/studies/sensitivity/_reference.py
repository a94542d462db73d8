"""The causal-probing authors' rounding (c-box/causalEval at commit
85d237dff997ad4b044a0f329e15cf6531676c75), for the figures the study offers "as the authors
computed them". Percentages throughout, as theirs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["authors_mean", "authors_percent", "authors_std"]


def authors_percent(correct: float, total: int) -> float:
    """P@1 of a template as their ``cal_mention_precision`` returns it:
    ``round(correct * 100 / total, 2)`` (``prompt_variance.py`` line 50)."""
    return round(float(correct) * 100 / total, 2)


def authors_std(percentages: Sequence[float] | NDArray[np.float64], ddof: int = 0) -> float:
    """A unit's std across templates as their ``cal_precision_stat`` computes it:
    ``round(float(np.std(lst)), 2)`` of the rounded percentages (``prompt_variance.py``
    line 87; ``ddof`` 0 there)."""
    return round(float(np.std(np.asarray(percentages, dtype=np.float64), ddof=ddof)), 2)


def authors_mean(values: Iterable[float]) -> float:
    """A column's mean as their ``get_table_stat`` writes it: ``round(float(np.mean(col)),
    2)`` (``utils/utils.py`` line 280); NaN for no value."""
    vals = [v for v in values if not math.isnan(v)]
    return round(float(np.mean(vals)), 2) if vals else math.nan
