"""The knowledge study's analysis. Reads only the results table (and the seed).

Built to scale to millions of rows: the analysis frame keeps item ids as integer codes and
labels as categories, aggregates every condition's subjects and categories in one group-by,
pivots on numpy, and reads option scores straight from the table's list columns. Results are
those of the row-by-row rules (:func:`_rotation`, :func:`_argmax`), which rows with missing
or non-finite values still take.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ... import stats
from ...items import subject_info
from ...stats import StatsWarning

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
#: List columns: read by the option-scoring analysis only, straight from the table.
_LIST_COLUMNS = (
    "option_logprobs",
    "option_logprobs_per_token",
    "option_logprobs_per_char",
    "option_source",
    "gold_options",
)
_ANSWERED = ("letter-logprob", "option-logprob")
_SETTING = ["model", "scoring", "template", "n_shots"]
#: Label columns held as categories in the analysis frame.
_LABEL_COLUMNS = ("model", "condition", "scoring", "template", "subject", "category", "subcategory")
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


def _int(value: Any) -> int:
    """A group key (typed ``Hashable`` by pandas) as an int."""
    return int(value)


def _rotation(row: Mapping[Any, Any]) -> float:
    """The rotation of one row (see :func:`knowledge_frame`; :func:`_rotations_of` is the
    same rule on whole columns)."""
    if row["option_order"] == "original":
        return 0.0
    src = row["option_source"]
    if row["option_order"] == "rotated" and src is not None and len(src):
        return float(src[0])
    return math.nan  # shuffled or unknown: not a rotation


def _sorted_codes(column: pa.ChunkedArray) -> tuple[NDArray[np.int64], list[str]] | None:
    """Each value's rank among the column's sorted distinct values (``pd.factorize(...,
    sort=True)``'s codes) and those values, from a dictionary encoding: the million strings
    are never turned into Python objects. None for a column with nulls or not of strings."""
    if column.null_count or not pa.types.is_string(column.type):
        return None
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_pylist()
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values), dtype=np.int64)
    codes: NDArray[np.int64] = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    return codes, [values[i] for i in order]


def _rotations_of(table: pa.Table) -> NDArray[np.float64]:
    """Per row: 0 for the original order, the first shown option's source index for a
    rotation, NaN otherwise."""
    order = table.column("option_order")
    src = table.column("option_source")
    out = np.full(table.num_rows, math.nan)
    original = pc.fill_null(pc.equal(order, "original"), False).to_numpy(zero_copy_only=False)
    out[original] = 0.0
    length = pc.fill_null(pc.list_value_length(src), 0)
    rotated = pc.and_(pc.fill_null(pc.equal(order, "rotated"), False), pc.greater(length, 0))
    mask = rotated.to_numpy(zero_copy_only=False)
    if mask.any():
        first = pc.list_element(src.filter(rotated), 0)
        out[mask] = pc.cast(first, pa.float64()).to_numpy(zero_copy_only=False)
    return out


def _categories(
    df: pd.DataFrame, items: NDArray[np.int64]
) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """Category and subcategory of each item (``items``: the rows' item codes), from the
    item's first row (metadata, else MMLU's subject table). Each distinct (metadata,
    subject) is looked at once."""
    _, first_rows = np.unique(items, return_index=True)  # per item code, its first row
    metas = df["metadata"].iloc[first_rows].to_numpy(dtype=object)
    subjects = df["subject"].iloc[first_rows].to_numpy(dtype=object)
    pairs: dict[tuple[Any, Any], tuple[str, str]] = {}
    cat = np.empty(first_rows.size, dtype=object)
    sub = np.empty(first_rows.size, dtype=object)
    for i, key in enumerate(zip(metas, subjects, strict=True)):
        hit = pairs.get(key)
        if hit is None:
            meta, subject = key
            m = json.loads(meta) if meta else {}
            info = subject_info(str(subject))
            hit = pairs[key] = (
                m.get("category") or (info.category if info else "uncategorised"),
                m.get("subcategory") or (info.subcategory if info else "uncategorised"),
            )
        cat[i], sub[i] = hit
    return cat, sub


def _sorted_categorical(per_item: NDArray[np.object_], items: NDArray[np.int64]) -> pd.Series:
    """``per_item[items]`` as a categorical series whose categories are sorted."""
    labels: list[str] = sorted(set(per_item.tolist()))
    index = {v: i for i, v in enumerate(labels)}
    codes = np.asarray([index[v] for v in per_item], dtype=np.int64)
    return pd.Series(pd.Categorical.from_codes(codes[items], categories=pd.Index(labels)))


def _frame(table: pa.Table, *, lists: bool) -> pd.DataFrame:
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"results table lacks column(s) {', '.join(missing)}")
    table = table.select(_COLUMNS)
    scalar = table if lists else table.drop_columns(list(_LIST_COLUMNS))
    df: pd.DataFrame = scalar.to_pandas()
    # Item ids as their ranks in sorted order.
    coded = _sorted_codes(table.column("item_id"))
    if coded is None:
        items = pd.factorize(df["item_id"], sort=True)[0].astype(np.int64)
    else:
        items = coded[0]
    cat, sub = _categories(df, items)
    if lists:
        df["category"] = pd.Series(cat[items], index=df.index)
        df["subcategory"] = pd.Series(sub[items], index=df.index)
        df["rotation"] = _rotations_of(table)
        return df
    # For the analysis: item ids as codes (sorting, pivoting and joining on them behave as
    # on the ids, without copying a million strings per group of rows) and labels as
    # categories (sorted like the labels); every groupby on this frame passes observed=True.
    df["category"] = _sorted_categorical(cat, items).set_axis(df.index)
    df["subcategory"] = _sorted_categorical(sub, items).set_axis(df.index)
    df["rotation"] = _rotations_of(table)
    df["item_id"] = items
    for c in _LABEL_COLUMNS:
        if not isinstance(df[c].dtype, pd.CategoricalDtype):
            coded = _sorted_codes(table.column(c)) if c in table.column_names else None
            if coded is None:
                df[c] = df[c].astype("category")
            else:
                df[c] = pd.Categorical.from_codes(coded[0], categories=pd.Index(coded[1]))
    return df.drop(columns="metadata")


def knowledge_frame(table: pa.Table) -> pd.DataFrame:
    """The rows the analysis uses, with ``category``, ``subcategory`` and ``rotation``.

    Category and subcategory come from each row's ``metadata`` (as the loader set them),
    else from MMLU's subject table. ``rotation`` is the index of the original option shown
    first (0 for original order; NaN for other orders). The index is the row's position in
    ``table``.
    """
    return _frame(table, lists=True)


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
        self.truncated = df["truncated"].fillna(False).astype(bool).to_numpy()
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
    ece = stats.expected_calibration_error(conf, corr, n_bins=10)
    bins = stats.reliability_bins(conf, corr, n_bins=10)
    by_subject = groups.by("subject", g)
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


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def _lists(table: pa.Table, column: str, rows: NDArray[np.int64]) -> pa.ChunkedArray:
    return table.column(column).take(pa.array(rows, type=pa.int64()))


def _flat(lists: pa.ChunkedArray) -> tuple[NDArray[Any], NDArray[np.int64]] | None:
    """The lists concatenated, and their lengths; None if a list or a value is null or a
    list is empty (those rows take the row-by-row path, which says what is wrong)."""
    if lists.null_count:
        return None
    lengths = np.asarray(pc.list_value_length(lists).to_numpy(zero_copy_only=False), np.int64)
    values = pc.list_flatten(lists)
    if not lengths.size or int(lengths.min()) == 0 or values.null_count:
        return None
    return np.asarray(values.to_numpy(zero_copy_only=False)), lengths


def _starts(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def _first_where(hit: NDArray[np.bool_], lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per list (of ``lengths``): the first position where ``hit`` holds, or -1."""
    starts = _starts(lengths)
    local = np.arange(hit.size, dtype=np.int64) - np.repeat(starts, lengths)
    big = int(lengths.max())
    first = np.minimum.reduceat(np.where(hit, local, big), starts)
    return np.where(first == big, -1, first).astype(np.int64)


def _gold_positions(table: pa.Table, rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per row: where the gold option (``gold_options[0]``) was shown (``option_source``)."""
    src_lists, gold_lists = (
        _lists(table, "option_source", rows),
        _lists(table, "gold_options", rows),
    )
    src, gold = _flat(src_lists), _flat(gold_lists)
    if src is not None and gold is not None:
        values, lengths = src
        first_gold = gold[0][_starts(gold[1])]
        pos = _first_where(values == np.repeat(first_gold, lengths), lengths)
        if bool(np.all(pos >= 0)):
            return pos
    return np.asarray(  # the row rule, which raises on a row without its gold option
        [
            list(s).index(g[0])
            for s, g in zip(src_lists.to_pandas(), gold_lists.to_pandas(), strict=True)
        ],
        dtype=np.int64,
    )


def _argmaxes(table: pa.Table, column: str, rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """:func:`_argmax` of the list of ``column`` on each of ``rows`` (first of equal maxima)."""
    lists = _lists(table, column, rows)
    flat = _flat(lists)
    if flat is not None:
        values, lengths = flat
        x = values.astype(float)
        if bool(np.all(np.isfinite(x))):
            top = np.repeat(np.maximum.reduceat(x, _starts(lengths)), lengths)
            return _first_where(x == top, lengths)
    return np.asarray([_argmax(list(v)) for v in lists.to_pandas()], dtype=np.int64)


def _option_scoring(df: pd.DataFrame, table: pa.Table) -> list[dict[str, Any]]:
    """Accuracy of option-scored conditions under each normalisation (``df``'s index holds
    the rows' positions in ``table``, whose list columns are read)."""
    opt = df.loc[df["scoring"] == "option-logprob", ["model", "condition"]]
    if opt.empty:
        return []
    # The list columns are read once for every option-scored row, then split by condition.
    rows = opt.index.to_numpy(dtype=np.int64)
    gold = _gold_positions(table, rows)
    norms = {"none": "option_logprobs", "token": "option_logprobs_per_token"}
    norms["char"] = "option_logprobs_per_char"
    hits = opt.assign(**{n: _argmaxes(table, col, rows) == gold for n, col in norms.items()})
    out = []
    for (model, cond), g in hits.groupby(["model", "condition"], observed=True):
        acc = {n: float(np.mean(g[n].to_numpy())) for n in norms}
        out.append({"model": model, "condition": cond, "n": len(g), "accuracy": acc})
    return out


def _letter_vs_option(orig: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for (model, template, k), g in orig.groupby(["model", "template", "n_shots"], observed=True):
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
    df = _frame(table, lists=False)
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
        groups = _Groups(answered[_PER_CONDITION])
        for g in range(len(groups)):
            first = groups.df.iloc[int(groups.positions(g)[0])]
            model, cond = first["model"], first["condition"]
            head = {
                "model": model,
                "condition": cond,
                "scoring": first["scoring"],
                "template": first["template"],
                "n_shots": int(first["n_shots"]),
                "rotation": None if math.isnan(first["rotation"]) else int(first["rotation"]),
            }
            acc.append({**head, **_accuracy(groups, g)})
            key = {"model": model, "condition": cond}
            cat += [{**key, **r} for r in _group_acc(groups, g, "category")]
            sub += [{**key, **r} for r in _group_acc(groups, g, "subcategory")]
            subj += [{**key, **r} for r in _group_acc(groups, g, "subject")]
            if not np.isnan(groups.confidence[groups.positions(g)]).any():
                cal.append({**head, **_calibration(groups, g)})
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
        result["option_scoring"] = _option_scoring(answered, table)
    result["notes"] = notes
    return result
