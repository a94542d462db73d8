"""The knowledge study's analysis. Reads only the results table (and the seed)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ... import stats
from ...stats import StatsWarning
from ._subjects import subject_info

__all__ = ["analyze_knowledge", "knowledge_frame"]

_COLUMNS = [
    "model",
    "item_id",
    "condition",
    "template",
    "scoring",
    "option_order",
    "n_shots",
    "n_shots_used",
    "subject",
    "metadata",
    "correct",
    "confidence",
    "option_logprobs",
    "option_logprobs_per_token",
    "option_logprobs_per_char",
    "option_source",
    "gold_options",
    "parsed_option",
    "sequence_logprob",
    "n_input_tokens",
    "truncated",
]
_ANSWERED = ("letter-logprob", "option-logprob")
_SETTING = ["model", "scoring", "template", "n_shots"]


def _int(value: Any) -> int:
    """A group key (typed ``Hashable`` by pandas) as an int."""
    return int(value)


def _rotation(row: Mapping[Any, Any]) -> float:
    if row["option_order"] == "original":
        return 0.0
    src = row["option_source"]
    if row["option_order"] == "rotated" and src is not None and len(src):
        return float(src[0])
    return math.nan  # shuffled or unknown: not a rotation


def knowledge_frame(table: pa.Table) -> pd.DataFrame:
    """The rows the analysis uses, with ``category``, ``subcategory`` and ``rotation``.

    Category and subcategory come from each row's ``metadata`` (as the loader set them),
    else from MMLU's subject table. ``rotation`` is the index of the original option shown
    first (0 for original order; NaN for other orders).
    """
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"results table lacks column(s) {', '.join(missing)}")
    df: pd.DataFrame = table.select(_COLUMNS).to_pandas()
    cats: dict[str, tuple[str, str]] = {}
    for item_id, meta, subject in (
        df[["item_id", "metadata", "subject"]].drop_duplicates("item_id").itertuples(index=False)
    ):
        m = json.loads(meta) if meta else {}
        info = subject_info(str(subject))
        cats[item_id] = (
            m.get("category") or (info.category if info else "uncategorised"),
            m.get("subcategory") or (info.subcategory if info else "uncategorised"),
        )
    df["category"] = df["item_id"].map(lambda i: cats[i][0])
    df["subcategory"] = df["item_id"].map(lambda i: cats[i][1])
    df["rotation"] = [
        _rotation(r) for r in df[["option_order", "option_source"]].to_dict("records")
    ]
    return df


def _interval(k: int, n: int) -> dict[str, float]:
    ci = stats.wilson_interval(k, n)
    return {"accuracy": ci.estimate, "low": ci.low, "high": ci.high}


def _group_acc(df: pd.DataFrame, key: str) -> list[dict[str, Any]]:
    out = []
    for value, g in df.groupby(key, sort=True):
        k, n = int(g["correct"].sum()), len(g)
        out.append({key: value, "n": n, "correct": k, **_interval(k, n)})
    return out


def _accuracy(df: pd.DataFrame) -> dict[str, Any]:
    """Micro (items pooled) and macro (mean over subjects) accuracy of one condition."""
    k, n = int(df["correct"].sum()), len(df)
    per_subject = df.groupby("subject")["correct"].mean()
    corr = df["correct"].astype(float).to_numpy()
    se = stats.clustered_se(corr, df["subject"].to_numpy(dtype=str))
    ci = se.interval()
    return {
        "n": n,
        "correct": k,
        "micro": _interval(k, n),
        "macro": float(per_subject.mean()),
        "n_subjects": int(per_subject.size),
        "clustered_se": se.se,
        "clustered_low": ci.low,
        "clustered_high": ci.high,
        "n_shots_used_mean": float(df["n_shots_used"].mean()),
        "n_fewer_shots": int((df["n_shots_used"] < df["n_shots"]).sum()),
        "truncated": int(df["truncated"].fillna(False).astype(bool).sum()),
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


def _calibration(df: pd.DataFrame) -> dict[str, Any]:
    conf = df["confidence"].to_numpy(dtype=float)
    corr = df["correct"].to_numpy(dtype=bool)
    rms = stats.rms_calibration_error(conf, corr)
    ece = stats.expected_calibration_error(conf, corr, n_bins=10)
    bins = stats.reliability_bins(conf, corr, n_bins=10)
    by_subject = df.groupby("subject").agg(conf=("confidence", "mean"), acc=("correct", "mean"))
    return {
        "n": int(conf.size),
        "mean_confidence": float(conf.mean()),
        "accuracy": float(corr.mean()),
        "rms": rms.statistic,
        "rms_bins": rms.n_bins,
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
    counts = df.groupby(keys, dropna=False)["condition"].nunique()
    return [" / ".join(map(str, k)) for k in counts[counts > 1].index]


def _correct_by_item(g: pd.DataFrame) -> pd.Series:
    return g.set_index("item_id")["correct"].astype(bool)


def _shots(orig: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, scoring, template), g in orig.groupby(["model", "scoring", "template"]):
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


def _rotations(df: pd.DataFrame) -> list[dict[str, Any]]:
    rot = df[df["rotation"].notna()]
    out = []
    for (model, scoring, template, k), g in rot.groupby(_SETTING):
        rs = sorted(int(r) for r in g["rotation"].unique())
        if len(rs) < 2 or 0 not in rs:
            continue
        wide = g.pivot(index="item_id", columns="rotation", values="correct").dropna()
        picks = g.pivot(index="item_id", columns="rotation", values="parsed_option")
        picks = picks.loc[wide.index]
        mat = wide.to_numpy(dtype=bool)
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
                "same_answer": float((picks.nunique(axis=1) == 1).mean()),
                "cochran_q": q.statistic,
                "pvalue": q.pvalue,
            }
        )
    return out


def _templates(orig: pd.DataFrame, seed: int) -> list[dict[str, Any]]:
    out = []
    for (model, scoring, k), g in orig.groupby(["model", "scoring", "n_shots"]):
        names = sorted(g["template"].unique())
        if len(names) < 2:
            continue
        wide = g.pivot(index="item_id", columns="template", values="correct").dropna()
        mat = wide[names].to_numpy(dtype=float)
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
            entry["mcnemar"] = _paired(wide[names[0]].astype(bool), wide[names[1]].astype(bool))
        out.append(entry)
    return out


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def _option_scoring(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, cond), g in df[df["scoring"] == "option-logprob"].groupby(["model", "condition"]):
        gold = [
            list(src).index(gold[0])
            for src, gold in zip(g["option_source"], g["gold_options"], strict=True)
        ]
        acc = {}
        for norm, col in (
            ("none", "option_logprobs"),
            ("token", "option_logprobs_per_token"),
            ("char", "option_logprobs_per_char"),
        ):
            hits = [_argmax(list(v)) == gd for v, gd in zip(g[col], gold, strict=True)]
            acc[norm] = float(np.mean(hits))
        out.append({"model": model, "condition": cond, "n": len(g), "accuracy": acc})
    return out


def _letter_vs_option(orig: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, template, k), g in orig.groupby(["model", "template", "n_shots"]):
        letter = g[g["scoring"] == "letter-logprob"]
        option = g[g["scoring"] == "option-logprob"]
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
    q = df[df["scoring"] == "prompt-logprob"].copy()
    out: list[dict[str, Any]] = []
    if q.empty:
        return out
    q["per_token"] = q["sequence_logprob"] / q["n_input_tokens"].clip(lower=1)
    for (model, cond), g in orig.groupby(["model", "condition"]):
        qm = q[q["model"] == model].drop_duplicates("item_id").set_index("item_id")
        if qm.empty:
            continue
        j = g.set_index("item_id")[["subject", "correct"]].join(
            qm[["per_token", "sequence_logprob"]], how="inner"
        )
        j["correct"] = j["correct"].astype(float)
        per_subject = []
        for subject, s in j.groupby("subject", sort=True):
            per_subject.append(
                {"subject": subject, **_pearson(s["per_token"].tolist(), s["correct"].tolist())}
            )
        by_s = j.groupby("subject").agg(
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


def analyze_knowledge(table: pa.Table, info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every number of the knowledge study, from the results table alone.

    Parameters
    ----------
    table : pyarrow.Table
        A results table (letter/option-scored MMLU rows, optionally question-only
        ``prompt-logprob`` rows).
    info : mapping, optional
        Design facts; only ``seed`` (for the template-spread bootstrap) is read.

    Returns
    -------
    dict
        ``accuracy`` (per model × condition: micro with Wilson interval, macro over subjects,
        clustered-by-subject SE), ``per_category``, ``per_subcategory``, ``per_subject``,
        ``shots`` (accuracy vs shots, McNemar against the fewest), ``calibration`` (RMS
        calibration error with bins of ~100 items, ECE with 10 bins, Brier, reliability
        bins, Pearson r of confidence and accuracy across subjects), ``rotations``
        (CircularEval), ``templates`` (spread, McNemar), ``option_scoring`` (accuracy under
        each normalisation), ``letter_vs_option``, ``memorisation`` and ``notes``.

    Notes
    -----
    Axes come from the table's columns: ``scoring``, ``template``, ``n_shots`` and, for
    rotations, the option shown first (``option_source[0]``). Comparisons across an axis
    pair items by ``item_id`` and keep the items present in every condition compared.
    """
    seed = int((info or {}).get("seed", 0))
    df = knowledge_frame(table)
    answered = df[df["scoring"].isin(_ANSWERED) & df["correct"].notna()].copy()
    answered["correct"] = answered["correct"].astype(bool)
    notes: list[str] = []
    ambiguous = _unique_conditions(answered, [*_SETTING, "rotation"])
    if ambiguous:
        notes.append(
            "several conditions share scoring/template/shots/rotation, so comparisons across "
            f"those axes were skipped: {'; '.join(ambiguous)}"
        )
    orig = answered[answered["rotation"] == 0]
    result: dict[str, Any] = {"models": sorted(df["model"].unique().tolist())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        acc, cat, sub, subj, cal = [], [], [], [], []
        for (model, cond), g in answered.groupby(["model", "condition"], sort=False):
            first = g.iloc[0]
            head = {
                "model": model,
                "condition": cond,
                "scoring": first["scoring"],
                "template": first["template"],
                "n_shots": int(first["n_shots"]),
                "rotation": None if math.isnan(first["rotation"]) else int(first["rotation"]),
            }
            acc.append({**head, **_accuracy(g)})
            key = {"model": model, "condition": cond}
            cat += [{**key, **r} for r in _group_acc(g, "category")]
            sub += [{**key, **r} for r in _group_acc(g, "subcategory")]
            subj += [{**key, **r} for r in _group_acc(g, "subject")]
            if g["confidence"].notna().all():
                cal.append({**head, **_calibration(g)})
        result.update(
            accuracy=acc, per_category=cat, per_subcategory=sub, per_subject=subj, calibration=cal
        )
        if not ambiguous:
            result.update(
                shots=_shots(orig),
                rotations=_rotations(answered),
                templates=_templates(orig, seed),
                letter_vs_option=_letter_vs_option(orig),
                memorisation=_memorisation(df, orig),
            )
        else:
            result.update(
                shots=[], rotations=[], templates=[], letter_vs_option=[], memorisation=[]
            )
        result["option_scoring"] = _option_scoring(answered)
    result["notes"] = notes
    return result
