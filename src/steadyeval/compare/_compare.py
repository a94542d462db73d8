"""Paired comparison of runs: the same items and conditions, different models or runs."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import stats
from .._errors import ConfigError, DataError
from ..results import read_results

__all__ = [
    "Arm",
    "Comparison",
    "ConditionDifference",
    "PairComparison",
    "cluster_labels",
    "compare_runs",
]

_KEY = ["item_id", "condition", "sample_index"]


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: a model's rows in one run."""

    label: str
    run: str
    model: str


@dataclass(frozen=True)
class ConditionDifference:
    """B − A on one condition (or ``"all conditions"`` pooled), over shared units.

    ``difference``/``se``/``low``/``high``/``pvalue`` come from
    :func:`steadyeval.stats.paired_difference` (clustered when a cluster key is given, and
    always by item for the pooled row); ``only_a``/``only_b`` are the discordant counts and
    ``mcnemar_p`` McNemar's exact p (not computed for the pooled row, whose units are not
    independent); ``holm_p`` adjusts ``mcnemar_p`` across the conditions of the pair.

    With no discordant pairs (:attr:`discordant` is 0: A and B agree on every unit) the
    difference is 0 with a zero-width interval and the tests are undefined (NaN): the data
    say nothing about a difference, and ``steadyeval compare`` prints "no discordant pairs".
    """

    condition: str
    n: int
    n_clusters: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    se: float
    low: float
    high: float
    pvalue: float
    only_a: int
    only_b: int
    mcnemar_p: float
    holm_p: float
    method: str

    @property
    def discordant(self) -> int:
        """Units on which A and B disagree (``only_a + only_b``)."""
        return self.only_a + self.only_b


@dataclass(frozen=True)
class PairComparison:
    """Arm B against arm A: one :class:`ConditionDifference` per shared condition."""

    a: Arm
    b: Arm
    conditions: tuple[ConditionDifference, ...]
    overall: ConditionDifference | None
    warnings: tuple[str, ...]
    shared_units: int
    only_in_a: int
    only_in_b: int


@dataclass(frozen=True)
class Comparison:
    """Every arm compared with the first (the baseline)."""

    arms: tuple[Arm, ...]
    pairs: tuple[PairComparison, ...]
    outcome: str
    cluster: str | None
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data (NaN → ``None``) for ``--json``."""
        out: dict[str, Any] = _clean(asdict(self))
        return out


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, Mapping):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def _dig(meta: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(meta, Mapping) or part not in meta:
            return None
        meta = meta[part]
    return meta


def cluster_labels(table: pa.Table, key: str, where: str) -> list[str]:
    """A cluster label per row: the column ``key``, else ``metadata[key]`` (dotted paths
    such as ``doc.subject`` reach into nested metadata).

    Raises
    ------
    ValueError
        If some rows have no value for ``key``.
    """
    if key in table.column_names and key != "metadata":
        values = table.column(key).to_pylist()
    else:
        path = key.split(".")
        cache: dict[str, Any] = {}
        values = []
        for raw in table.column("metadata").to_pylist():
            if raw not in cache:
                cache[raw] = _dig(json.loads(raw) if raw else {}, path)
            values.append(cache[raw])
    missing = sum(v is None for v in values)
    if missing:
        raise DataError(
            f"{where}: {missing} of {len(values)} rows have no value for cluster key "
            f"'{_shown(key)}' (looked for a column of that name, then metadata.{_shown(key)}); "
            "pick a key every "
            "row has, e.g. subject or a metadata field such as paragraph"
        )
    return [v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values]


def _frame(
    table: pa.Table, model: str, outcome: str, cluster: str | None, where: str
) -> pd.DataFrame:
    cols = [*_KEY, "model", outcome, "item_hash", "prompt_hash"]
    missing = [c for c in cols if c not in table.column_names]
    if missing:
        raise DataError(f"{where}: results table has no column(s) {', '.join(missing)}")
    df = table.select(cols).to_pandas()
    if cluster is not None:
        df["cluster"] = cluster_labels(table, cluster, where)
    df = df.loc[df["model"] == model].drop(columns="model")
    df[outcome] = df[outcome].astype("float64")
    if df.duplicated(_KEY).any():
        dup = df.loc[df.duplicated(_KEY, keep=False), _KEY].head(1).to_dict("records")[0]
        raise DataError(
            f"{where}: model '{_shown(model, 60)}' has several rows for "
            f"{', '.join(f'{k}={_shown(v)}' for k, v in dup.items())}; a results table has one "
            "row per (item, condition, model, sample)"
        )
    return _item_means(df, outcome)


def _item_means(df: pd.DataFrame, outcome: str) -> pd.DataFrame:
    """Repeated samples (several ``sample_index`` values for an item and condition) as one
    unit per item and condition: the mean over its scored samples, at ``sample_index`` 0.
    The samples of an item are not independent units (pairing sample i of A with sample i
    of B, or counting each, would shrink the standard error: pseudo-replication). The frame
    records the most samples per item in ``attrs["samples"]``."""
    most = int(df.groupby(["item_id", "condition"], sort=False).size().max()) if len(df) else 1
    if most < 2:
        df.attrs["samples"] = 1
        return df
    first = df.groupby(["item_id", "condition"], sort=False, as_index=False).first()
    means = df.groupby(["item_id", "condition"], sort=False)[outcome].mean().to_numpy()
    first[outcome] = means
    first["sample_index"] = 0
    first.attrs["samples"] = most
    out: pd.DataFrame = first
    return out


def _difference(
    name: str,
    a: np.ndarray,
    b: np.ndarray,
    clusters: np.ndarray | None,
    confidence: float,
    with_mcnemar: bool,
) -> ConditionDifference:
    pd_ = stats.quietly(stats.paired_difference, b, a, clusters, confidence=confidence)
    ta = a > 0.5
    tb = b > 0.5
    only_a = int(np.sum(ta & ~tb))
    only_b = int(np.sum(~ta & tb))
    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    p = stats.quietly(stats.mcnemar, only_a, only_b).pvalue if with_mcnemar and binary else math.nan
    return ConditionDifference(
        condition=name,
        n=int(a.size),
        n_clusters=int(pd_.n_clusters),
        accuracy_a=float(a.mean()),
        accuracy_b=float(b.mean()),
        difference=float(pd_.estimate),
        se=float(pd_.se),
        low=float(pd_.low),
        high=float(pd_.high),
        pvalue=float(pd_.pvalue),
        only_a=only_a,
        only_b=only_b,
        mcnemar_p=float(p),
        holm_p=math.nan,
        method=str(pd_.method),
    )


def _shown(value: Any, limit: int = 40) -> str:
    """A value as a message shows it: characters that do not print (control characters,
    line and paragraph separators, direction overrides) escaped, so a name never breaks or
    reorders the message's line, and cut to ``limit`` characters."""
    text = str(value)
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[:limit])
    return shown if len(text) <= limit else f"{shown}... ({len(text):,} characters)"


def _examples(values: Sequence[Any], k: int = 5) -> str:
    shown = ", ".join(_shown(v) for v in list(values)[:k])
    return shown + (", …" if len(values) > k else "")


def _item_hash_note(fa: pd.DataFrame, fb: pd.DataFrame, a: Arm, b: Arm) -> str | None:
    """A warning when shared item ids have a different ``item_hash`` on the two sides."""
    ha = fa.groupby("item_id")["item_hash"].first()
    hb = fb.groupby("item_id")["item_hash"].first()
    shared_items = ha.index.intersection(hb.index)
    both = ha[shared_items].notna() & hb[shared_items].notna()
    diff_items = [i for i in shared_items[both] if ha[i] != hb[i]]
    if not diff_items:
        return None
    return (
        f"items differ: {len(diff_items)} of {len(shared_items)} shared item ids have a "
        f"different item_hash in {a.label} and {b.label} (the item's content changed): "
        f"{_examples(diff_items)}"
    )


def _prompt_hash_note(merged: pd.DataFrame, a: Arm, b: Arm) -> str | None:
    """A warning when shared units were asked with a different ``prompt_hash``."""
    pm = merged.loc[merged["prompt_hash_a"].notna() & merged["prompt_hash_b"].notna()]
    pdiff = pm.loc[pm["prompt_hash_a"] != pm["prompt_hash_b"]]
    if not len(pdiff):
        return None
    conds = sorted(set(pdiff["condition"]))
    return (
        f"prompts differ: {len(pdiff)} of {len(pm)} shared units were asked with a different "
        f"prompt_hash in {a.label} and {b.label}, in condition(s) {_examples(conds)}; "
        "a difference then mixes the model change with the prompt change"
    )


def _condition_rows(
    usable: pd.DataFrame,
    order: Sequence[str],
    outcome: str,
    cluster: str | None,
    confidence: float,
) -> list[ConditionDifference]:
    """One difference per condition with usable units (in ``order``), with Holm-adjusted
    McNemar p-values across them."""
    rows: list[ConditionDifference] = []
    for cond in [c for c in order if c in set(usable["condition"])]:
        g = usable.loc[usable["condition"] == cond]
        clusters = g["cluster"].to_numpy() if cluster is not None else None
        rows.append(
            _difference(
                cond,
                g[f"{outcome}_a"].to_numpy(float),
                g[f"{outcome}_b"].to_numpy(float),
                clusters,
                confidence,
                True,
            )
        )
    finite = [i for i, r in enumerate(rows) if not math.isnan(r.mcnemar_p)]
    if finite:
        adj = stats.holm([rows[i].mcnemar_p for i in finite]).pvalues
        for i, p in zip(finite, adj, strict=True):
            rows[i] = _replace_holm(rows[i], float(p))
    return rows


def _pooled(
    usable: pd.DataFrame, outcome: str, cluster: str | None, confidence: float
) -> ConditionDifference:
    """The difference over all conditions' usable units, clustered (by item without a
    cluster key), without McNemar."""
    labels = (usable["cluster"] if cluster is not None else usable["item_id"]).to_numpy()
    return _difference(
        "all conditions",
        usable[f"{outcome}_a"].to_numpy(float),
        usable[f"{outcome}_b"].to_numpy(float),
        labels,
        confidence,
        False,
    )


def _compare_pair(
    a: Arm,
    fa: pd.DataFrame,
    b: Arm,
    fb: pd.DataFrame,
    outcome: str,
    cluster: str | None,
    confidence: float,
) -> PairComparison:
    notes: list[str] = []
    merged = fa.merge(fb, on=_KEY, how="inner", suffixes=("_a", "_b"))
    ka = set(map(tuple, fa[_KEY].itertuples(index=False)))
    kb = set(map(tuple, fb[_KEY].itertuples(index=False)))
    only_a, only_b = len(ka - kb), len(kb - ka)
    if only_a or only_b:
        notes.append(
            f"{only_a} (item, condition, sample) units only in {a.label} and {only_b} only in "
            f"{b.label} are left out; the comparison uses the {len(ka & kb)} shared units"
        )
    for arm, frame in ((a, fa), (b, fb)):
        if frame.attrs.get("samples", 1) > 1:
            notes.append(
                f"{arm.label} has up to {frame.attrs['samples']} samples per item and "
                "condition: each item's mean over them is one unit of the paired test (no "
                "McNemar test on means)"
            )
    for note in (_item_hash_note(fa, fb, a, b), _prompt_hash_note(merged, a, b)):
        if note is not None:
            notes.append(note)
    usable = merged.loc[merged[f"{outcome}_a"].notna() & merged[f"{outcome}_b"].notna()]
    if len(usable) < len(merged):
        notes.append(
            f"{len(merged) - len(usable)} shared units have no {outcome} value on one "
            "side and are left out"
        )
    order = list(dict.fromkeys(fa["condition"]))
    rows = _condition_rows(usable, order, outcome, cluster, confidence)
    overall = _pooled(usable, outcome, cluster, confidence) if len(rows) > 1 else None
    if not rows:
        raise DataError(_nothing_pairs(a, fa, b, fb, len(merged), outcome))
    return PairComparison(a, b, tuple(rows), overall, tuple(notes), len(usable), only_a, only_b)


def _key_overlap(name: str, values_a: Sequence[Any], values_b: Sequence[Any]) -> str:
    """How one join key's values overlap between A and B, e.g. ``"item ids: none shared
    (A has 12: q0, q1, …; B has 3: x0, x1, x2)"``."""
    va, vb = list(dict.fromkeys(values_a)), list(dict.fromkeys(values_b))
    shared = [v for v in va if v in set(vb)]
    if not shared:
        return (
            f"{name}: none shared (A has {len(va)}: {_examples(va)}; "
            f"B has {len(vb)}: {_examples(vb)})"
        )
    if len(shared) == len(va) == len(vb):
        return f"{name}: the same {len(shared)} ({_examples(shared)})"
    return f"{name}: {len(shared)} shared ({_examples(shared)}) of A's {len(va)} and B's {len(vb)}"


def _nothing_pairs(
    a: Arm, fa: pd.DataFrame, b: Arm, fb: pd.DataFrame, n_shared: int, outcome: str
) -> str:
    """Why arm B pairs with no unit of the baseline A: a line naming both arms, then one
    line per join key (item ids, conditions, sample indices) saying how they overlap; or
    that the shared units have no ``outcome`` on one side."""
    head = (
        f"nothing to compare: A ({_shown(a.model, 60)} in {_shown(a.run, 80)}) and "
        f"B ({_shown(b.model, 60)} in {_shown(b.run, 80)})"
    )
    if n_shared:
        return (
            f"{head} share {n_shared} (item, condition, sample) units, but none has a "
            f"{outcome} value on both sides; compare another --outcome"
        )
    keys = [
        _key_overlap(name, [str(v) for v in fa[col]], [str(v) for v in fb[col]])
        for name, col in zip(("item ids", "conditions", "sample indices"), _KEY, strict=True)
    ]
    if all(": none shared" not in k for k in keys):
        keys.append("each key is shared on its own, but no (item, condition, sample) is")
    return (
        f"{head} share no (item_id, condition, sample_index) unit (the models may differ: "
        "units are joined without them); compare runs of the same items and conditions:"
        + "".join(f"\n  {k}" for k in keys)
    )


def _replace_holm(r: ConditionDifference, p: float) -> ConditionDifference:
    d = asdict(r)
    d["holm_p"] = p
    return ConditionDifference(**d)


def compare_runs(
    runs: Sequence[str | Path],
    *,
    models: Sequence[str] | None = None,
    outcome: str = "correct",
    cluster: str | None = None,
    confidence: float = 0.95,
) -> Comparison:
    """Compare models or runs on the units (item, condition, sample) they share.

    Parameters
    ----------
    runs : sequence of path
        Run directories (or ``results.parquet`` files). Every model of every run is an
        *arm*; the first arm is the baseline A and every other arm is compared with it.
        One run with two models compares those models.
    models : sequence of str, optional
        Keep only these models (in every run).
    outcome : {"correct", "refused"}
        The 0/1 column compared.
    cluster : str, optional
        Cluster key for the standard error (a column such as ``subject``, or a metadata
        field such as ``paragraph``): items sharing it are not independent.
    confidence : float
        Coverage of the intervals.

    Returns
    -------
    Comparison
        Per pair and condition: accuracy of A and B, B − A with its paired SE and interval,
        McNemar's exact p and Holm-adjusted p across conditions, plus warnings when items
        (``item_hash``) or prompts (``prompt_hash``) differ between the arms.

    Raises
    ------
    DataError
        If an arm shares no unit with the baseline (or none with an ``outcome`` value on
        both sides): the message says which keys differ (item ids, conditions, sample
        indices) and names both models.

    Notes
    -----
    Units are joined on ``(item_id, condition, sample_index)``; the model may differ. An
    arm with several samples of an item under a condition (``generation.n_samples``) has
    one unit there, the mean over its samples (at ``sample_index`` 0): the samples of an
    item are not independent units, and McNemar's test is not computed on means. The
    per-condition SE is that of the paired differences (clustered when ``cluster`` is
    given); the pooled "all conditions" row always clusters (by item, or by ``cluster``)
    because an item appears once per condition. Holm controls the family-wise error over
    the conditions of one pair.
    """
    if outcome not in ("correct", "refused"):
        raise ConfigError(f"outcome must be 'correct' or 'refused'; got '{_shown(outcome)}'")
    if not runs:
        raise ConfigError("no runs given; pass at least one run directory")
    arms: list[tuple[Arm, pd.DataFrame]] = []
    for run in runs:
        path = Path(run)
        table = read_results(path)
        names = list(dict.fromkeys(table.column("model").to_pylist()))
        if models:
            names = [m for m in names if m in set(models)]
        for model in names:
            label = chr(ord("A") + len(arms)) if len(arms) < 26 else f"arm{len(arms) + 1}"
            arm = Arm(label=label, run=str(path), model=model)
            # clusters come from the baseline's rows (the other arms may lack the key)
            key = cluster if not arms else None
            arms.append((arm, _frame(table, model, outcome, key, str(path))))
    if len(arms) < 2:
        raise ConfigError(
            f"found {len(arms)} (run, model) arm(s); a comparison needs two: pass two run "
            "directories, or one run with two models"
            + (f" (--model kept only {_examples(list(models))})" if models else "")
        )
    base, fbase = arms[0]
    pairs = tuple(
        _compare_pair(base, fbase, arm, frame, outcome, cluster, confidence)
        for arm, frame in arms[1:]
    )
    return Comparison(tuple(a for a, _ in arms), pairs, outcome, cluster, confidence)
