"""The study's analysis: reads only the results table (and the design facts).

Outcomes per format, paired refusal tables with McNemar and Holm, the noise floor, option
order stability, decoy removal, sampling, the determinism check and seeded examples.

The work is done on numpy columns (:class:`~._frame.FormatsFrame`): selections are index
arrays, pairs are joins on integer keys, per-item checks are group reductions, and text is
normalised once per distinct string, so a million-row table takes seconds. The row-wise rule
for one row is :func:`classify`; the columns give the same category for every row.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ... import stats
from ...scoring import UNMATCHED_F1_THRESHOLD, normalize_answer, token_f1
from ._design import stable_rng
from ._frame import FormatsFrame, Ints, constant_within, last_per_key, pair_rows

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

#: Every category, in the order of the codes :func:`_labels` gives.
_LABELS = ("refused", "decoy", "other", "answered", "unmatched", "control", "correct", "wrong")
_CODE = {c: np.int8(i) for i, c in enumerate(_LABELS)}

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


def _rate(k: int, n: int, indicator: npt.NDArray[np.bool_], clusters: Ints) -> dict[str, Any]:
    ci = stats.wilson_interval(k, n)
    se = _quiet(stats.clustered_se, indicator.astype(float), clusters)
    return {
        "count": k,
        "rate": k / n,
        "low": ci.low,
        "high": ci.high,
        "se_clustered": se.se,
        "n_clusters": se.n_clusters,
    }


class _Table:
    """The frame plus the design facts, indexed by (model, condition, variant, subset)."""

    def __init__(self, table: pa.Table, info: Mapping[str, Any]) -> None:
        self.f = FormatsFrame(table)
        self.conditions: dict[str, dict[str, Any]] = {c["name"]: c for c in info["conditions"]}
        self.models: list[str] = list(self.f.models)

    def base_names(self) -> list[str]:
        return [n for n, c in self.conditions.items() if c["variant"] == "base"]

    def select(
        self, model: str, condition: str, subset: str | None = None, variant: str = "base"
    ) -> Ints:
        """Rows of one (model, condition), first sample, items of one variant and subset."""
        return self.f.select(model, condition, subset, variant)

    def samples(self, model: str, condition: str) -> Ints:
        """Rows of one (model, condition), every sample, items of the base variant."""
        return self.f.select(model, condition, None, "base", first_sample=False)


def _labels(f: FormatsFrame, rows: Ints, role: str, escape: str | None) -> npt.NDArray[np.int8]:
    """Codes (into ``_LABELS``) of :func:`classify` for every row of ``rows``."""
    out = np.full(rows.size, _CODE["answered"], dtype=np.int8)
    option = f.kind[rows] == f.kind_code.get("option", -2)
    out[option] = _CODE["other"]
    out[option & (f.parsed_option[rows] == f.decoy_option[rows])] = _CODE["decoy"]
    answerable = f.answerable[rows] == 1
    out[answerable] = np.where(f.correct[rows][answerable] == 1, _CODE["correct"], _CODE["wrong"])
    out[f.kind[rows] == f.kind_code.get("unmatched", -2)] = _CODE["unmatched"]
    refused = f.refused[rows] == 1
    out[refused] = _CODE["refused"]
    if role == "control" and escape is not None and refused.any():
        picked = f.normalized("parsed", rows[refused]) == f.norm_code(escape)
        where = np.flatnonzero(refused)[picked]
        out[where] = _CODE["control"]
    return out


# -- outcomes ------------------------------------------------------------------------------------


def _near_decoy(f: FormatsFrame, rows: Ints) -> int:
    """Rows whose output is within the unmatched-F1 threshold of the item's decoy text."""
    decoys = [f.metas[int(m)].get("decoy") for m in f.meta_code[rows]]
    keep = np.asarray([bool(d) for d in decoys], dtype=bool)
    outputs = f.strings("output", rows[keep])
    cache: dict[tuple[str, Any], bool] = {}
    near = 0
    for out, decoy in zip(outputs, [d for d in decoys if d], strict=True):
        key = (out or "", decoy)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = token_f1(key[0], decoy) >= UNMATCHED_F1_THRESHOLD
        near += hit
    return near


def _mean_finite(values: npt.NDArray[np.float64]) -> float | None:
    """Sum / count of the non-NaN values, summed left to right (as a Python loop would)."""
    finite = values[~np.isnan(values)].tolist()
    return sum(finite) / len(finite) if finite else None


def _outcomes(t: _Table, model: str, subset: str, name: str) -> dict[str, Any] | None:
    f = t.f
    rows = t.select(model, name, subset)
    if not rows.size:
        return None
    cond = t.conditions[name]
    cats = UNANSWERABLE_OUTCOMES if subset == "unanswerable" else ANSWERABLE_OUTCOMES
    labels = _labels(f, rows, cond["role"], cond["escape"])
    clusters = f.label_codes("paragraph_id")[rows]
    n = int(rows.size)
    counts = {c: int(np.sum(labels == _CODE[c])) for c in cats}
    out: dict[str, Any] = {
        "model": model,
        "subset": subset,
        "condition": name,
        "format": cond["format"],
        "role": cond["role"],
        "escape": cond["escape"],
        "n": n,
        "counts": counts,
        "rates": {c: _rate(counts[c], n, labels == _CODE[c], clusters) for c in cats},
        "truncated": int(np.sum(f.truncated[rows] == 1)),
        "refused_without_escape": counts["refused"] if cond["role"] in ("list",) else None,
    }
    if subset == "unanswerable" and cond["role"] == "free":
        out["near_decoy"] = _near_decoy(f, rows[labels == _CODE["answered"]])
    if subset == "answerable" and cond["role"] == "free":
        out["em"] = _mean_finite(f.em[rows])
        out["f1"] = _mean_finite(f.f1[rows])
    return out


# -- paired comparisons --------------------------------------------------------------------------


def _field(f: FormatsFrame, field: str) -> npt.NDArray[np.int8]:
    return {"refused": f.refused, "correct": f.correct}[field]


def _paired(
    f: FormatsFrame, a_rows: Ints, b_rows: Ints, key: str, field: str = "refused"
) -> dict[str, Any] | None:
    """Agreement table and McNemar on ``field`` over the items both sides have (by ``key``;
    an ``a`` row pairs with the last ``b`` row of its key)."""
    keys = f.key_codes(key)
    ia, ib = pair_rows(keys[a_rows], keys[b_rows])
    if not ia.size:
        return None
    values = _field(f, field)
    table = stats.agreement_table(values[a_rows[ia]] == 1, values[b_rows[ib]] == 1)
    exact = _quiet(stats.mcnemar, table.only_a, table.only_b, method="exact")
    midp = _quiet(stats.mcnemar, table.only_a, table.only_b, method="midp")
    return {
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
    }


def _with_holm(records: list[dict[str, Any]]) -> None:
    """Holm-adjust ``p_exact`` across ``records`` (one family); NaN p-values stay out."""
    finite = [i for i, r in enumerate(records) if not math.isnan(r["p_exact"])]
    for r in records:
        r["p_holm"] = math.nan
    if finite:
        adj = stats.holm([records[i]["p_exact"] for i in finite]).pvalues
        for i, p in zip(finite, adj, strict=True):
            records[i]["p_holm"] = float(p)


def _order_variants(t: _Table, name: str) -> list[str]:
    return [v for v, c in t.conditions.items() if c["variant"] == "order" and c["base"] == name]


def _order_floor(t: _Table, model: str, subset: str, name: str, field: str) -> list[int]:
    """Flips on ``field`` between a list condition and itself under each seeded option order."""
    base = t.select(model, name, subset)
    out = []
    for v in _order_variants(t, name):
        res = _paired(t.f, base, t.select(model, v, subset), "item_id", field)
        if res is not None:
            out.append(res["flips"])
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
                    t.f,
                    t.select(model, floor_a, subset),
                    t.select(model, floor_b, subset),
                    "item_id",
                    field,
                )
                phrase = res["flips"] if res else None
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
                    t.f, t.select(model, a, subset), t.select(model, b, subset), "item_id", field
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
                        **res,
                        "noise_floor": phrase,
                        "order_floor": float(np.mean(own)) if own else None,
                    }
                )
            _with_holm(family)
            pairs.extend(family)
    return pairs, floors


# -- beyond the seed -------------------------------------------------------------------------


def _answer_codes(f: FormatsFrame, rows: Ints) -> tuple[npt.NDArray[Any], ...]:
    """What a question's answer is, comparable across option orders (original indices):
    ``(refused, parsed_kind, parsed_option, normalised output if unmatched)`` of ``rows``
    as integer columns; two rows give the same answer when all four codes are equal."""
    unmatched = f.kind[rows] == f.kind_code.get("unmatched", -2)
    text = np.full(rows.size, -1, dtype=np.int64)
    if unmatched.any():
        text[unmatched] = f.normalized("output", rows[unmatched])
    return f.refused[rows], f.kind[rows], f.parsed_option[rows], text


def _orders(t: _Table) -> list[dict[str, Any]]:
    f = t.f
    out = []
    for model in t.models:
        for name in t.base_names():
            variants = _order_variants(t, name)
            if not variants:
                continue
            for subset in SUBSETS:
                per = [t.select(model, n, subset) for n in (name, *variants)]
                if not per[0].size:
                    continue
                rows = np.concatenate(per)
                items = f.item[rows]
                uniq, count = np.unique(items, return_counts=True)
                full_items = uniq[count == len(per)]
                in_full = np.isin(items, full_items)
                _, stable_items = constant_within(items[in_full], f.refused[rows[in_full]])
                _, same_items = constant_within(items[in_full], *_answer_codes(f, rows[in_full]))
                stable = int(stable_items.sum())
                same = int(same_items.sum())
                n = int(full_items.size)
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
                        "refusals_per_order": [int(np.sum(f.refused[r] == 1)) for r in per],
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
            if not without.size:
                continue
            res = _paired(t.f, t.select(model, name, "unanswerable"), without, "base_id")
            if res is None:
                continue
            rec = {"model": model, "condition": name, **res}
            rec["refused_with_decoy"] = rec.pop("total_a")
            rec["refused_without_decoy"] = rec.pop("total_b")
            out.append(rec)
    return out


def _sampling(t: _Table) -> list[dict[str, Any]]:
    f = t.f
    out = []
    for model in t.models:
        for name, cond in t.conditions.items():
            if cond["variant"] != "sampled":
                continue
            for subset in SUBSETS:
                rows = t.samples(model, name)
                rows = rows[f.answerable[rows] == (1 if subset == "answerable" else 0)]
                if not rows.size:
                    continue
                items = f.item[rows]
                # Items in the order they first appear; per item: samples, refusals, and the
                # paragraph of its last row.
                uniq, first = np.unique(items, return_index=True)
                order = np.argsort(first, kind="stable")
                ids = uniq[order]
                pos = np.searchsorted(uniq, items)
                n_per = np.bincount(pos, minlength=uniq.size)[order]
                k_per = np.bincount(pos, weights=f.refused[rows] == 1, minlength=uniq.size)
                k_per = k_per[order].astype(np.int64)
                _, last = last_per_key(items)
                para = f.label_codes("paragraph_id")[rows[last]][order]
                frac = k_per / n_per
                se = _quiet(stats.clustered_se, frac, para)
                greedy_rows = t.select(model, cond["base"], subset)
                g_items, g_last = last_per_key(f.item[greedy_rows])
                greedy_of = f.refused[greedy_rows[g_last]] == 1
                in_greedy = np.isin(ids, g_items)
                greedy = greedy_of[np.searchsorted(g_items, ids[in_greedy])]
                majority = (frac > 0.5)[in_greedy]
                out.append(
                    {
                        "model": model,
                        "subset": subset,
                        "condition": name,
                        "base": cond["base"],
                        "n_items": int(ids.size),
                        "n_samples": int(n_per.max()),
                        "refusal_rate": float(frac.mean()),
                        "se_clustered": se.se,
                        "unanimous": int(np.sum((k_per == 0) | (k_per == n_per))),
                        "greedy_refused": int(greedy.sum()),
                        "majority_refused": int(majority.sum()),
                        "greedy_vs_majority_flips": int(np.sum(greedy != majority)),
                    }
                )
    return out


def _determinism(t: _Table, info: Mapping[str, Any]) -> dict[str, Any] | None:
    check = info.get("determinism")
    if not check:
        return None
    f = t.f
    wanted = {rec["item_id"] for rec in check["rows"]}
    codes = [i for i, item in enumerate(f.item_ids) if item in wanted]
    rows = np.flatnonzero(np.isin(f.item, codes) & (f.sample_index == 0))
    cols = ("model", "item_id", "condition", "output", "parsed", "option_logprobs")
    values = {c: f.strings(c, rows) for c in cols}
    main: dict[tuple[str, str, str], Row] = {}
    for i in range(rows.size):
        r = {c: values[c][i] for c in cols}
        main[(r["model"], r["item_id"], r["condition"])] = r
    same, compared, max_diff = 0, 0, 0.0
    mismatches: list[dict[str, Any]] = []
    for rec in check["rows"]:
        hit = main.get((rec["model"], rec["item_id"], rec["condition"]))
        if hit is None:
            continue
        r = hit
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
    f = t.f
    k = int(info.get("examples", 5))
    names = t.base_names()
    out = []
    for model in t.models:
        parts = [t.select(model, name) for name in names]
        rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        which = np.repeat(np.arange(len(names), dtype=np.int64), [p.size for p in parts])
        # One row per (item, format): the last, as a mapping filled row by row keeps.
        _, last = last_per_key(f.item[rows] * max(len(names), 1) + which)
        rows, which = rows[last], which[last]
        items, constant = constant_within(f.item[rows], f.refused[rows])
        flipping = items[~constant]  # item codes are the table's first-seen order
        if not flipping.size or k == 0:
            continue
        rng = stable_rng(int(info.get("seed", 0)), "examples", model)
        picks = sorted(
            int(i) for i in rng.choice(flipping.size, size=min(k, flipping.size), replace=False)
        )
        for i in picks:
            mine = np.flatnonzero(f.item[rows] == flipping[i])
            mine = mine[np.argsort(which[mine], kind="stable")]
            rs = rows[mine]
            outputs, refused = f.strings("output", rs), f.strings("refused", rs)
            meta = f.metas[int(f.meta_code[rs[0]])]
            out.append(
                {
                    "model": model,
                    "item_id": f.item_ids[int(flipping[i])],
                    "title": meta.get("title"),
                    "question": meta.get("question"),
                    "answerable": f.strings("answerable", rs[:1])[0],
                    "decoy": meta.get("decoy"),
                    "n_flipping": int(flipping.size),
                    "outputs": {
                        names[int(w)]: {"output": o, "refused": r}
                        for w, o, r in zip(which[mine], outputs, refused, strict=True)
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
