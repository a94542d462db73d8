"""Comparisons across the knowledge study's axes, pairing items by ``item_id``: accuracy vs
shots, option order (cyclic rotations, CircularEval), template sensitivity, letter vs option
scoring; and the memorisation check (question-only log-probability vs correctness).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ... import stats
from ...scoring import LETTER_LOGPROB, OPTION_LOGPROB, PROMPT_LOGPROB
from ._frame import _SETTING
from ._per_condition import _interval, _pearson


def _int(value: Any) -> int:
    """A group key (typed ``Hashable`` by pandas) as an int."""
    return int(value)


def _paired(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    """McNemar (exact) on two correctness series indexed by item id (common items only)."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
    table = stats.agreement_table(both["a"].to_numpy(bool), both["b"].to_numpy(bool))
    test = table.mcnemar()
    return {
        "n": table.n,
        "only_first": table.only_a,
        "only_second": table.only_b,
        "pvalue": test.pvalue,
    }


def _unique_conditions(df: pd.DataFrame, keys: list[str]) -> list[str]:
    """Settings (``keys``) held by more than one condition: cannot be compared by axis."""
    counts = df.groupby(keys, dropna=False, observed=True)["condition"].nunique()
    return [" / ".join(map(str, k)) for k in counts[counts > 1].index]


def _correct_by_item(g: pd.DataFrame) -> pd.Series:
    return g.set_index("item_id")["correct"].astype(bool)


def _shots(orig: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, scoring, template), g in orig.groupby(
        ["model", "scoring", "template"], observed=True
    ):
        ks = sorted(g["n_shots"].unique())
        base = _correct_by_item(g[g["n_shots"] == ks[0]])
        rows = []
        for k in ks:
            gk = g[g["n_shots"] == k]
            kk, n = int(gk["correct"].sum()), len(gk)
            row: dict[str, Any] = {
                "n_shots": int(k),
                "n": n,
                **_interval(kk, n),
                "n_shots_used_mean": float(gk["n_shots_used"].mean()),
            }
            if k != ks[0]:
                row["vs_fewest"] = _paired(base, _correct_by_item(gk))
            rows.append(row)
        out.append({"model": model, "scoring": scoring, "template": template, "by_shots": rows})
    return out


def _one_value(x: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per row of ``x``: exactly one distinct non-NaN value (``nunique(axis=1) == 1``)."""
    valid = ~np.isnan(x)
    low = np.where(valid, x, np.inf).min(axis=1, initial=np.inf)
    high = np.where(valid, x, -np.inf).max(axis=1, initial=-np.inf)
    same: NDArray[np.bool_] = valid.any(axis=1) & (low == high)
    return same


def _wide(
    g: pd.DataFrame, column: str, labels: Sequence[Any], values: Sequence[str]
) -> list[NDArray[np.float64]]:
    """``g.pivot(index="item_id", columns=column, values=v)`` for each of ``values``, on
    numpy: (items in sorted order) × ``labels`` matrices, NaN where an item lacks a label;
    the same error as ``pivot`` on a repeated (item, label) cell."""
    items = pd.factorize(g["item_id"], sort=True)[0]
    cols = pd.Index(labels).get_indexer(g[column].to_numpy())
    cell = items * len(labels) + cols
    if np.unique(cell).size != cell.size:
        raise ValueError("Index contains duplicate entries, cannot reshape")
    n = int(items.max()) + 1 if items.size else 0
    out = []
    for v in values:
        mat = np.full((n, len(labels)), np.nan)
        mat[items, cols] = g[v].to_numpy(dtype=float, na_value=np.nan)
        out.append(mat)
    return out


def _rotations(df: pd.DataFrame) -> list[dict[str, Any]]:
    rot = df.loc[
        df["rotation"].notna(), [*_SETTING, "item_id", "rotation", "correct", "parsed_option"]
    ]
    out = []
    for (model, scoring, template, k), g in rot.groupby(_SETTING, observed=True):
        rs = sorted(int(r) for r in g["rotation"].unique())
        if len(rs) < 2 or 0 not in rs:
            continue
        correct, picks = _wide(g, "rotation", rs, ["correct", "parsed_option"])
        complete = ~np.isnan(correct).any(axis=1)  # items asked under every rotation
        mat = correct[complete].astype(bool)
        picks = picks[complete]
        q = stats.cochran_q(mat)
        out.append(
            {
                "model": model,
                "scoring": scoring,
                "template": template,
                "n_shots": _int(k),
                "n": int(mat.shape[0]),
                "rotations": rs,
                "original": float(mat[:, 0].mean()),
                "per_rotation": [float(v) for v in mat.mean(axis=0)],
                "all_rotations": float(mat.all(axis=1).mean()),
                "any_rotation": float(mat.any(axis=1).mean()),
                "same_answer": float(_one_value(picks).mean()),
                "cochran_q": q.statistic,
                "pvalue": q.pvalue,
            }
        )
    return out


def _templates(orig: pd.DataFrame, seed: int) -> list[dict[str, Any]]:
    out = []
    for (model, scoring, k), g in orig.groupby(["model", "scoring", "n_shots"], observed=True):
        names = sorted(g["template"].unique())
        if len(names) < 2:
            continue
        (wide,) = _wide(g, "template", names, ["correct"])
        mat = wide[~np.isnan(wide).any(axis=1)]  # items asked under every template
        s = stats.spread(mat, seed=seed)
        flips = int((mat.min(axis=1) != mat.max(axis=1)).sum())
        entry: dict[str, Any] = {
            "model": model,
            "scoring": scoring,
            "n_shots": _int(k),
            "n": int(mat.shape[0]),
            "per_template": dict(zip(names, (float(v) for v in s.per_condition), strict=True)),
            "best_minus_worst": {
                "estimate": s.best_minus_worst.estimate,
                "low": s.best_minus_worst.low,
                "high": s.best_minus_worst.high,
            },
            "std": s.std.estimate,
            "flipped_items": flips,
        }
        if len(names) == 2:
            first, second = (pd.Series(mat[:, i].astype(bool)) for i in (0, 1))
            entry["mcnemar"] = _paired(first, second)
        out.append(entry)
    return out


def _letter_vs_option(orig: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, template, k), g in orig.groupby(["model", "template", "n_shots"], observed=True):
        letter = g[g["scoring"] == LETTER_LOGPROB]
        option = g[g["scoring"] == OPTION_LOGPROB]
        if letter.empty or option.empty:
            continue
        out.append(
            {
                "model": model,
                "template": template,
                "n_shots": _int(k),
                "letter": float(letter["correct"].mean()),
                "option": float(option["correct"].mean()),
                "mcnemar": _paired(_correct_by_item(letter), _correct_by_item(option)),
            }
        )
    return out


def _memorisation(df: pd.DataFrame, orig: pd.DataFrame) -> list[dict[str, Any]]:
    q = df[df["scoring"] == PROMPT_LOGPROB].copy()
    out: list[dict[str, Any]] = []
    if q.empty:
        return out
    q["per_token"] = q["sequence_logprob"] / q["n_input_tokens"].clip(lower=1)
    by_model: dict[Any, pd.DataFrame] = {}
    slim = orig[["model", "condition", "item_id", "subject", "correct"]]
    for (model, cond), g in slim.groupby(["model", "condition"], observed=True):
        qm = by_model.get(model)
        if qm is None:
            qm = by_model[model] = (
                q[q["model"] == model].drop_duplicates("item_id").set_index("item_id")
            )
        if qm.empty:
            continue
        j = g.set_index("item_id")[["subject", "correct"]].join(
            qm[["per_token", "sequence_logprob"]], how="inner"
        )
        j["correct"] = j["correct"].astype(float)
        per_subject = []
        for subject, s in j.groupby("subject", sort=True, observed=True):
            per_subject.append(
                {"subject": subject, **_pearson(s["per_token"].tolist(), s["correct"].tolist())}
            )
        by_s = j.groupby("subject", observed=True).agg(
            lp=("per_token", "mean"), tot=("sequence_logprob", "mean"), acc=("correct", "mean")
        )
        out.append(
            {
                "model": model,
                "condition": cond,
                "n": len(j),
                "across_subjects": _pearson(by_s["lp"].tolist(), by_s["acc"].tolist()),
                "across_subjects_total_logprob": _pearson(
                    by_s["tot"].tolist(), by_s["acc"].tolist()
                ),
                "across_items": _pearson(j["per_token"].tolist(), j["correct"].tolist()),
                "per_subject": per_subject,
            }
        )
    return out
