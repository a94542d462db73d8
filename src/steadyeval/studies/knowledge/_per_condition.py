"""Per (model, condition) summaries of the knowledge study: accuracy (micro with a Wilson
interval, macro over subjects, clustered by subject), accuracy per category, subcategory and
subject, and calibration.

Every condition's subjects and categories are aggregated in one group-by (:class:`_Groups`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ... import stats
from ._frame import _SETTING

#: What the per-condition summaries read.
_PER_CONDITION = [
    *_SETTING,
    "condition",
    "rotation",
    "correct",
    "subject",
    "category",
    "subcategory",
    "confidence",
    "n_shots_used",
    "truncated",
]


def _interval(k: int, n: int) -> dict[str, float]:
    ci = stats.wilson_interval(k, n)
    return {"accuracy": ci.estimate, "low": ci.low, "high": ci.high}


class _Groups:
    """The rows of every (model, condition), in the order they first appear, with the
    per-subject / per-category aggregates computed once for all of them."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        number = df.groupby(["model", "condition"], sort=False, observed=True).ngroup()
        self.number = number.to_numpy(dtype=np.int64)
        n = int(self.number.max()) + 1 if self.number.size else 0
        self.rows = np.argsort(self.number, kind="stable")  # each group in table order
        self.bounds = np.concatenate([[0], np.cumsum(np.bincount(self.number, minlength=n))])
        self.correct = df["correct"].to_numpy(dtype=bool)
        self.subject = df["subject"].cat.codes.to_numpy()  # codes sort as the subjects do
        self.confidence = df["confidence"].to_numpy(dtype=float)
        self.truncated = df["truncated"].to_numpy(dtype=bool)  # null read as False
        self._by: dict[str, tuple[pd.DataFrame, NDArray[np.int64]]] = {}

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def positions(self, g: int) -> NDArray[np.int64]:
        rows: NDArray[np.int64] = self.rows[self.bounds[g] : self.bounds[g + 1]]
        return rows

    def by(self, key: str, g: int) -> pd.DataFrame:
        """Group ``g``'s rows aggregated by ``key`` (sorted): count, correct, mean
        correctness and mean confidence."""
        if key not in self._by:
            agg = (
                self.df.assign(_group=self.number)
                .groupby(["_group", key], sort=True, observed=True)
                .agg(
                    k=("correct", "sum"),
                    n=("correct", "size"),
                    acc=("correct", "mean"),
                    conf=("confidence", "mean"),
                )
            )
            level = agg.index.get_level_values(0).to_numpy()
            self._by[key] = (agg, np.searchsorted(level, np.arange(len(self) + 1)))
        agg, bounds = self._by[key]
        part = agg.iloc[bounds[g] : bounds[g + 1]]
        return part.set_axis(part.index.get_level_values(1))


def _group_acc(groups: _Groups, g: int, key: str) -> list[dict[str, Any]]:
    out = []
    for value, k_, n_ in groups.by(key, g)[["k", "n"]].itertuples(name=None):
        k, n = int(k_), int(n_)
        out.append({key: value, "n": n, "correct": k, **_interval(k, n)})
    return out


def _accuracy(groups: _Groups, g: int) -> dict[str, Any]:
    """Micro (items pooled) and macro (mean over subjects) accuracy of one condition."""
    pos = groups.positions(g)
    correct = groups.correct[pos]
    k, n = int(correct.sum()), int(pos.size)
    per_subject = groups.by("subject", g)["acc"]
    se = stats.clustered_se(correct.astype(float), groups.subject[pos])
    ci = se.interval()
    used = groups.df["n_shots_used"].iloc[pos]
    return {
        "n": n,
        "correct": k,
        "micro": _interval(k, n),
        "macro": float(per_subject.mean()),
        "n_subjects": int(per_subject.size),
        "clustered_se": se.se,
        "clustered_low": ci.low,
        "clustered_high": ci.high,
        "n_shots_used_mean": float(used.mean()),
        "n_fewer_shots": int((used.to_numpy() < groups.df["n_shots"].to_numpy()[pos]).sum()),
        "truncated": int(groups.truncated[pos].sum()),
    }


def _pearson(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Pearson r with its two-sided p-value; None (with the reason) when undefined."""
    from scipy import stats as sps

    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    if xa.size < 3:
        return {"r": None, "p": None, "n": int(xa.size), "note": "fewer than 3 points"}
    if np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return {"r": None, "p": None, "n": int(xa.size), "note": "a variable is constant"}
    res = sps.pearsonr(xa, ya)
    return {"r": float(res.statistic), "p": float(res.pvalue), "n": int(xa.size), "note": None}


def _calibration(groups: _Groups, g: int) -> dict[str, Any]:
    pos = groups.positions(g)
    conf = groups.confidence[pos]
    corr = groups.correct[pos]
    rms = stats.rms_calibration_error(conf, corr)
    rmsce = stats.rms_calibration_error(conf, corr, mode="mmlu-reference")
    ece = stats.expected_calibration_error(conf, corr, n_bins=10)
    bins = stats.reliability_bins(conf, corr, n_bins=10)
    by_subject = groups.by("subject", g)
    return {
        "n": int(conf.size),
        "mean_confidence": float(conf.mean()),
        "accuracy": float(corr.mean()),
        "rms": rms.statistic,
        "rms_bins": rms.n_bins,
        "rms_reference": rmsce.statistic,
        "ece": ece.statistic,
        "brier": stats.brier_score(conf, corr).statistic,
        "reliability": {
            "confidence": bins.confidence.tolist(),
            "accuracy": bins.accuracy.tolist(),
            "count": bins.count.tolist(),
            "low": bins.low.tolist(),
            "high": bins.high.tolist(),
        },
        "subject_correlation": _pearson(by_subject["conf"].tolist(), by_subject["acc"].tolist()),
    }


def _setting(groups: _Groups, g: int) -> dict[str, Any]:
    """Group ``g``'s model, condition and setting (scoring, template, shots, rotation), from
    its first row."""
    first = groups.df.iloc[int(groups.positions(g)[0])]
    return {
        "model": first["model"],
        "condition": first["condition"],
        "scoring": first["scoring"],
        "template": first["template"],
        "n_shots": int(first["n_shots"]),
        "rotation": None if math.isnan(first["rotation"]) else int(first["rotation"]),
    }


def _per_condition(answered: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``accuracy``, ``per_category``, ``per_subcategory``, ``per_subject`` and
    ``calibration`` (conditions whose every row has a confidence) of every (model,
    condition) of the answered rows, in the order the conditions first appear."""
    acc, cat, sub, subj, cal = [], [], [], [], []
    groups = _Groups(answered[_PER_CONDITION])
    for g in range(len(groups)):
        head = _setting(groups, g)
        acc.append({**head, **_accuracy(groups, g)})
        key = {"model": head["model"], "condition": head["condition"]}
        cat += [{**key, **r} for r in _group_acc(groups, g, "category")]
        sub += [{**key, **r} for r in _group_acc(groups, g, "subcategory")]
        subj += [{**key, **r} for r in _group_acc(groups, g, "subject")]
        if not np.isnan(groups.confidence[groups.positions(g)]).any():
            cal.append({**head, **_calibration(groups, g)})
    return {
        "accuracy": acc,
        "per_category": cat,
        "per_subcategory": sub,
        "per_subject": subj,
        "calibration": cal,
    }
