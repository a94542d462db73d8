"""The study's analysis: reads only the results table (and the design facts).

Outcomes per format, paired refusal tables with McNemar and Holm, the noise floor, option
order stability, decoy removal, sampling, the determinism check and seeded examples.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ... import stats
from ...scoring import UNMATCHED_F1_THRESHOLD, normalize_answer, token_f1
from ._design import stable_rng

__all__ = [
    "ANSWERABLE_OUTCOMES",
    "UNANSWERABLE_OUTCOMES",
    "analyze_formats",
    "classify",
]

#: Outcome categories; each row falls in exactly one, so the counts of a format add up to n.
UNANSWERABLE_OUTCOMES = ("refused", "decoy", "other", "answered", "unmatched", "control")
ANSWERABLE_OUTCOMES = ("correct", "refused", "wrong", "unmatched", "control")
SUBSETS = ("unanswerable", "answerable")

_COLUMNS = [
    "model",
    "item_id",
    "condition",
    "sample_index",
    "output",
    "parsed",
    "parsed_kind",
    "parsed_option",
    "correct",
    "refused",
    "truncated",
    "answerable",
    "em",
    "f1",
    "option_logprobs",
    "metadata",
]

Row = dict[str, Any]


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a stats function whose NaN-with-warning result is expected here (recorded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.StatsWarning)
        return fn(*args, **kwargs)


def classify(row: Row, role: str, escape: str | None) -> str:
    """The outcome category of one row (see ``UNANSWERABLE_OUTCOMES``/``ANSWERABLE_OUTCOMES``).

    A control condition's escape option is a random word: choosing it is ``control``, not a
    refusal. Unmatched outputs are answers that matched no option (the seed's rule).
    """
    if row["refused"]:
        picked_escape = escape is not None and normalize_answer(row["parsed"] or "") == (
            normalize_answer(escape)
        )
        return "control" if role == "control" and picked_escape else "refused"
    kind = row["parsed_kind"]
    if kind == "unmatched":
        return "unmatched"
    if row["answerable"]:
        return "correct" if row["correct"] else "wrong"
    if kind == "option":
        decoy = row["meta"].get("decoy_option")
        return "decoy" if decoy is not None and row["parsed_option"] == decoy else "other"
    return "answered"


def _rate(k: int, n: int, indicator: np.ndarray, clusters: Sequence[str]) -> dict[str, Any]:
    ci = stats.wilson_interval(k, n)
    se = _quiet(stats.clustered_se, indicator.astype(float), list(clusters))
    return {
        "count": k,
        "rate": k / n,
        "low": ci.low,
        "high": ci.high,
        "se_clustered": se.se,
        "n_clusters": se.n_clusters,
    }


class _Table:
    """The results table as rows, indexed by (model, condition, variant, subset)."""

    def __init__(self, table: pa.Table, info: Mapping[str, Any]) -> None:
        rows = table.select(_COLUMNS).to_pylist()
        meta_cache: dict[str, dict[str, Any]] = {}
        for r in rows:
            r["meta"] = meta_cache.setdefault(r["metadata"], json.loads(r["metadata"]))
        self.rows: list[Row] = rows
        self.conditions: dict[str, dict[str, Any]] = {c["name"]: c for c in info["conditions"]}
        self.models: list[str] = list(dict.fromkeys(r["model"] for r in rows))
        self.item_order: dict[str, int] = {}
        for r in rows:
            self.item_order.setdefault(r["item_id"], len(self.item_order))
        self._index: dict[tuple[str, str], list[Row]] = defaultdict(list)
        for r in rows:
            self._index[(r["model"], r["condition"])].append(r)

    def base_names(self) -> list[str]:
        return [n for n, c in self.conditions.items() if c["variant"] == "base"]

    def select(
        self, model: str, condition: str, subset: str | None = None, variant: str = "base"
    ) -> list[Row]:
        """Rows of one (model, condition), first sample, items of one variant and subset."""
        out = []
        for r in self._index.get((model, condition), []):
            if r["meta"].get("variant", "base") != variant:
                continue
            if subset is not None and r["answerable"] != (subset == "answerable"):
                continue
            if r["sample_index"] == 0:
                out.append(r)
        return out

    def samples(self, model: str, condition: str) -> list[Row]:
        return [
            r
            for r in self._index.get((model, condition), [])
            if r["meta"].get("variant", "base") == "base"
        ]


# -- outcomes ------------------------------------------------------------------------------------


def _outcomes(t: _Table, model: str, subset: str, name: str) -> dict[str, Any] | None:
    rows = t.select(model, name, subset)
    if not rows:
        return None
    cond = t.conditions[name]
    cats = UNANSWERABLE_OUTCOMES if subset == "unanswerable" else ANSWERABLE_OUTCOMES
    labels = [classify(r, cond["role"], cond["escape"]) for r in rows]
    clusters = [str(r["meta"].get("paragraph_id", r["item_id"])) for r in rows]
    n = len(rows)
    arr = np.array(labels)
    out: dict[str, Any] = {
        "model": model,
        "subset": subset,
        "condition": name,
        "format": cond["format"],
        "role": cond["role"],
        "escape": cond["escape"],
        "n": n,
        "counts": {c: int(np.sum(arr == c)) for c in cats},
        "rates": {c: _rate(int(np.sum(arr == c)), n, arr == c, clusters) for c in cats},
        "truncated": sum(bool(r["truncated"]) for r in rows),
        "refused_without_escape": (
            int(np.sum(arr == "refused")) if cond["role"] in ("list",) else None
        ),
    }
    if subset == "unanswerable" and cond["role"] == "free":
        near = [
            r
            for r, lab in zip(rows, labels, strict=True)
            if lab == "answered"
            and r["meta"].get("decoy")
            and token_f1(r["output"] or "", r["meta"]["decoy"]) >= UNMATCHED_F1_THRESHOLD
        ]
        out["near_decoy"] = len(near)
    if subset == "answerable" and cond["role"] == "free":
        ems = [r["em"] for r in rows if r["em"] is not None and not math.isnan(r["em"])]
        f1s = [r["f1"] for r in rows if r["f1"] is not None and not math.isnan(r["f1"])]
        out["em"] = sum(ems) / len(ems) if ems else None
        out["f1"] = sum(f1s) / len(f1s) if f1s else None
    return out


# -- paired comparisons --------------------------------------------------------------------------


def _paired(
    a_rows: Sequence[Row], b_rows: Sequence[Row], key: str, field: str = "refused"
) -> tuple[dict[str, Any], list[str]] | None:
    """Agreement table and McNemar on ``field`` over the items both sides have (by ``key``)."""
    b_by = {_key(r, key): r for r in b_rows}
    common = [(r, b_by[_key(r, key)]) for r in a_rows if _key(r, key) in b_by]
    if not common:
        return None
    a = np.array([bool(x[field]) for x, _ in common])
    b = np.array([bool(y[field]) for _, y in common])
    table = stats.agreement_table(a, b)
    exact = _quiet(stats.mcnemar, table.only_a, table.only_b, method="exact")
    midp = _quiet(stats.mcnemar, table.only_a, table.only_b, method="midp")
    flipped = [_key(x, key) for (x, _), fa, fb in zip(common, a, b, strict=True) if fa != fb]
    return (
        {
            "n": table.n,
            "both": table.both,
            "neither": table.neither,
            "only_a": table.only_a,
            "only_b": table.only_b,
            "flips": table.discordant,
            "total_a": table.successes_a,
            "total_b": table.successes_b,
            "p_exact": exact.pvalue,
            "p_midp": midp.pvalue,
        },
        flipped,
    )


def _key(row: Row, key: str) -> str:
    return str(row["meta"].get(key, row["item_id"])) if key != "item_id" else row["item_id"]


def _with_holm(records: list[dict[str, Any]]) -> None:
    """Holm-adjust ``p_exact`` across ``records`` (one family); NaN p-values stay out."""
    finite = [i for i, r in enumerate(records) if not math.isnan(r["p_exact"])]
    for r in records:
        r["p_holm"] = math.nan
    if finite:
        adj = stats.holm([records[i]["p_exact"] for i in finite]).pvalues
        for i, p in zip(finite, adj, strict=True):
            records[i]["p_holm"] = float(p)


def _order_floor(t: _Table, model: str, subset: str, name: str, field: str) -> list[int]:
    """Flips on ``field`` between a list condition and itself under each seeded option order."""
    base = t.select(model, name, subset)
    out = []
    for v, c in t.conditions.items():
        if c["variant"] == "order" and c["base"] == name:
            res = _paired(base, t.select(model, v, subset), "item_id", field)
            if res is not None:
                out.append(res[0]["flips"])
    return out


def _pairs(t: _Table, info: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every pair of base formats, per model × subset × outcome (one Holm family each)."""
    names = t.base_names()
    floor_a, floor_b = info.get("noise_floor") or (None, None)
    pairs: list[dict[str, Any]] = []
    floors: list[dict[str, Any]] = []
    for model, subset in itertools.product(t.models, SUBSETS):
        fields = ("refused", "correct") if subset == "answerable" else ("refused",)
        for field in fields:
            phrase = None
            if floor_a in t.conditions and floor_b in t.conditions:
                res = _paired(
                    t.select(model, floor_a, subset),
                    t.select(model, floor_b, subset),
                    "item_id",
                    field,
                )
                phrase = res[0]["flips"] if res else None
            order = {n: _order_floor(t, model, subset, n, field) for n in names}
            order = {n: v for n, v in order.items() if v}
            order_mean = {n: float(np.mean(v)) for n, v in order.items()}
            if phrase is not None or order:
                floors.append(
                    {
                        "model": model,
                        "subset": subset,
                        "outcome": field,
                        "phrase": {"a": floor_a, "b": floor_b, "flips": phrase},
                        "order": order,
                        "order_mean": order_mean,
                    }
                )
            family = []
            for a, b in itertools.combinations(names, 2):
                res = _paired(
                    t.select(model, a, subset), t.select(model, b, subset), "item_id", field
                )
                if res is None:
                    continue
                own = [order_mean[n] for n in (a, b) if n in order_mean]
                family.append(
                    {
                        "model": model,
                        "subset": subset,
                        "outcome": field,
                        "a": a,
                        "b": b,
                        **res[0],
                        "noise_floor": phrase,
                        "order_floor": float(np.mean(own)) if own else None,
                    }
                )
            _with_holm(family)
            pairs.extend(family)
    return pairs, floors


# -- beyond the seed -------------------------------------------------------------------------


def _answer_key(row: Row) -> tuple[Any, ...]:
    """What a question's answer is, comparable across option orders (original indices)."""
    text = normalize_answer(row["output"] or "") if row["parsed_kind"] == "unmatched" else None
    return (row["refused"], row["parsed_kind"], row["parsed_option"], text)


def _orders(t: _Table) -> list[dict[str, Any]]:
    out = []
    for model in t.models:
        for name in t.base_names():
            variants = [
                v for v, c in t.conditions.items() if c["variant"] == "order" and c["base"] == name
            ]
            if not variants:
                continue
            for subset in SUBSETS:
                per = [t.select(model, n, subset) for n in (name, *variants)]
                if not per[0]:
                    continue
                by_item: dict[str, list[Row]] = defaultdict(list)
                for rows in per:
                    for r in rows:
                        by_item[r["item_id"]].append(r)
                full = [rs for rs in by_item.values() if len(rs) == len(per)]
                stable = sum(len({r["refused"] for r in rs}) == 1 for rs in full)
                same = sum(len({_answer_key(r) for r in rs}) == 1 for rs in full)
                n = len(full)
                ci = stats.wilson_interval(stable, n)
                out.append(
                    {
                        "model": model,
                        "subset": subset,
                        "condition": name,
                        "orders": len(variants),
                        "n": n,
                        "refusal_stable": stable,
                        "refusal_stable_rate": stable / n,
                        "low": ci.low,
                        "high": ci.high,
                        "same_answer": same,
                        "refusals_per_order": [
                            sum(bool(r["refused"]) for r in rows) for rows in per
                        ],
                    }
                )
    return out


def _no_decoy(t: _Table) -> list[dict[str, Any]]:
    out = []
    for model in t.models:
        for name in t.base_names():
            if t.conditions[name]["role"] == "free":
                continue
            without = t.select(model, name, "unanswerable", variant="no-decoy")
            if not without:
                continue
            res = _paired(t.select(model, name, "unanswerable"), without, "base_id")
            if res is None:
                continue
            rec = {"model": model, "condition": name, **res[0]}
            rec["refused_with_decoy"] = rec.pop("total_a")
            rec["refused_without_decoy"] = rec.pop("total_b")
            out.append(rec)
    return out


def _sampling(t: _Table) -> list[dict[str, Any]]:
    out = []
    for model in t.models:
        for name, cond in t.conditions.items():
            if cond["variant"] != "sampled":
                continue
            for subset in SUBSETS:
                rows = [
                    r for r in t.samples(model, name) if r["answerable"] == (subset == "answerable")
                ]
                if not rows:
                    continue
                per: dict[str, list[bool]] = defaultdict(list)
                para: dict[str, str] = {}
                for r in rows:
                    per[r["item_id"]].append(bool(r["refused"]))
                    para[r["item_id"]] = str(r["meta"].get("paragraph_id", r["item_id"]))
                ids = list(per)
                frac = np.array([np.mean(per[i]) for i in ids])
                se = _quiet(stats.clustered_se, frac, [para[i] for i in ids])
                greedy = {
                    r["item_id"]: bool(r["refused"]) for r in t.select(model, cond["base"], subset)
                }
                majority = {i: bool(np.mean(per[i]) > 0.5) for i in ids}
                common = [i for i in ids if i in greedy]
                out.append(
                    {
                        "model": model,
                        "subset": subset,
                        "condition": name,
                        "base": cond["base"],
                        "n_items": len(ids),
                        "n_samples": max(len(v) for v in per.values()),
                        "refusal_rate": float(frac.mean()),
                        "se_clustered": se.se,
                        "unanimous": sum(len(set(v)) == 1 for v in per.values()),
                        "greedy_refused": sum(greedy[i] for i in common),
                        "majority_refused": sum(majority[i] for i in common),
                        "greedy_vs_majority_flips": sum(greedy[i] != majority[i] for i in common),
                    }
                )
    return out


def _determinism(t: _Table, info: Mapping[str, Any]) -> dict[str, Any] | None:
    check = info.get("determinism")
    if not check:
        return None
    main = {(r["model"], r["item_id"], r["condition"]): r for r in t.rows if r["sample_index"] == 0}
    same, compared, max_diff = 0, 0, 0.0
    mismatches: list[dict[str, Any]] = []
    for rec in check["rows"]:
        r = main.get((rec["model"], rec["item_id"], rec["condition"]))
        if r is None:
            continue
        compared += 1
        equal = rec["output"] == r["output"] and rec["parsed"] == r["parsed"]
        if rec.get("option_logprobs") and r["option_logprobs"]:
            diff = max(
                abs(x - y)
                for x, y in zip(rec["option_logprobs"], r["option_logprobs"], strict=True)
            )
            max_diff = max(max_diff, diff)
        if equal:
            same += 1
        elif len(mismatches) < 10:
            mismatches.append({**rec, "main_output": r["output"]})
    return {
        "questions": check["questions"],
        "compared": compared,
        "identical": same,
        "max_logprob_diff": max_diff,
        "model_calls": check["model_calls"],
        "mismatches": mismatches,
    }


def _examples(t: _Table, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    k = int(info.get("examples", 5))
    names = t.base_names()
    out = []
    for model in t.models:
        by_item: dict[str, dict[str, Row]] = defaultdict(dict)
        for name in names:
            for r in t.select(model, name):
                by_item[r["item_id"]][name] = r
        flipping = sorted(
            (i for i, rs in by_item.items() if len({r["refused"] for r in rs.values()}) > 1),
            key=t.item_order.__getitem__,
        )
        if not flipping or k == 0:
            continue
        rng = stable_rng(int(info.get("seed", 0)), "examples", model)
        picks = sorted(
            int(i) for i in rng.choice(len(flipping), size=min(k, len(flipping)), replace=False)
        )
        for i in picks:
            rs = by_item[flipping[i]]
            meta = next(iter(rs.values()))["meta"]
            first = next(iter(rs.values()))
            out.append(
                {
                    "model": model,
                    "item_id": flipping[i],
                    "title": meta.get("title"),
                    "question": meta.get("question"),
                    "answerable": first["answerable"],
                    "decoy": meta.get("decoy"),
                    "n_flipping": len(flipping),
                    "outputs": {
                        n: {"output": r["output"], "refused": r["refused"]} for n, r in rs.items()
                    },
                }
            )
    return out


def _iter_outcomes(t: _Table) -> Iterator[dict[str, Any]]:
    for model in t.models:
        for subset in SUBSETS:
            for name in t.base_names():
                rec = _outcomes(t, model, subset, name)
                if rec is not None:
                    yield rec


def analyze_formats(table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the study reports, computed from the results table and the design facts.

    Returns a JSON-ready mapping with ``outcomes`` (per model × subset × format: counts of
    each outcome, each rate with a 95% Wilson interval and a standard error clustered by
    paragraph, truncated inputs), ``pairs`` (per model × subset × outcome × pair of formats:
    agreement table, McNemar exact and mid-p, flips, Holm-adjusted p within the family of
    pairs, the noise floors), ``noise_floor``, ``orders``, ``no_decoy``, ``sampling``,
    ``determinism`` and ``examples``.
    """
    t = _Table(table, info)
    pairs, floors = _pairs(t, info)
    return {
        "models": t.models,
        "conditions": list(info["conditions"]),
        "outcomes": list(_iter_outcomes(t)),
        "pairs": pairs,
        "noise_floor": floors,
        "orders": _orders(t),
        "no_decoy": _no_decoy(t),
        "sampling": _sampling(t),
        "determinism": _determinism(t, info),
        "examples": _examples(t, info),
    }
