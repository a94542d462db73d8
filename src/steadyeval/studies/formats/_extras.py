"""The formats study's analyses beyond the seed's: option order stability, decoy removal,
sampling (greedy vs majority of samples), the determinism check and seeded examples of
questions whose refusal flips between formats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ... import stats
from ._design import stable_rng
from ._frame import FormatsFrame, Ints, constant_within, last_per_key
from ._pairs import _order_variants, _paired
from ._table import SUBSETS, Row, _Table
from ._types import (
    DecoyRemoval,
    DeterminismCheck,
    Example,
    ExampleOutput,
    FormatsDesign,
    Mismatch,
    OrderStability,
    SampledCondition,
)


def _answer_codes(f: FormatsFrame, rows: Ints) -> tuple[npt.NDArray[Any], ...]:
    """What a question's answer is, comparable across option orders (original indices):
    ``(refused, parsed_kind, parsed_option, normalised output if unmatched)`` of ``rows``
    as integer columns; two rows give the same answer when all four codes are equal."""
    unmatched = f.kind[rows] == f.kind_code.get("unmatched", -2)
    text = np.full(rows.size, -1, dtype=np.int64)
    if unmatched.any():
        text[unmatched] = f.normalized("output", rows[unmatched])
    return f.refused[rows], f.kind[rows], f.parsed_option[rows], text


def _orders(t: _Table) -> list[OrderStability]:
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
                    OrderStability(
                        model=model,
                        subset=subset,
                        condition=name,
                        orders=len(variants),
                        n=n,
                        refusal_stable=stable,
                        refusal_stable_rate=stable / n,
                        low=ci.low,
                        high=ci.high,
                        same_answer=same,
                        refusals_per_order=[int(np.sum(f.refused[r] == 1)) for r in per],
                    )
                )
    return out


def _no_decoy(t: _Table) -> list[DecoyRemoval]:
    out = []
    for model in t.models:
        for name in t.base_names():
            if t.conditions[name].role == "free":
                continue
            without = t.select(model, name, "unanswerable", variant="no-decoy")
            if not without.size:
                continue
            res = _paired(t.f, t.select(model, name, "unanswerable"), without, "base_id")
            if res is None:
                continue
            with_decoy, without_decoy = res.pop("total_a"), res.pop("total_b")
            out.append(
                DecoyRemoval(
                    model=model,
                    condition=name,
                    **res,
                    refused_with_decoy=with_decoy,
                    refused_without_decoy=without_decoy,
                )
            )
    return out


def _sampling(t: _Table) -> list[SampledCondition]:
    f = t.f
    out = []
    for model in t.models:
        for name, cond in t.conditions.items():
            if cond.variant != "sampled":
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
                se = stats.quietly(stats.clustered_se, frac, para)
                greedy_rows = t.select(model, cond.base, subset)
                g_items, g_last = last_per_key(f.item[greedy_rows])
                greedy_of = f.refused[greedy_rows[g_last]] == 1
                in_greedy = np.isin(ids, g_items)
                greedy = greedy_of[np.searchsorted(g_items, ids[in_greedy])]
                majority = (frac > 0.5)[in_greedy]
                out.append(
                    SampledCondition(
                        model=model,
                        subset=subset,
                        condition=name,
                        base=cond.base,
                        n_items=int(ids.size),
                        n_samples=int(n_per.max()),
                        refusal_rate=float(frac.mean()),
                        se_clustered=se.se,
                        unanimous=int(np.sum((k_per == 0) | (k_per == n_per))),
                        greedy_refused=int(greedy.sum()),
                        majority_refused=int(majority.sum()),
                        greedy_vs_majority_flips=int(np.sum(greedy != majority)),
                    )
                )
    return out


def _gap(x: float | None, y: float | None) -> float:
    """How far apart two log-probabilities of a rerun are: 0 for the same value (also two
    NaN or two equal infinities), infinity when only one is a number (``max`` would drop a
    NaN difference and call the rerun identical). None (what JSON writes for a value that is
    not a number) matches any value that is not a finite number."""
    if x is None or y is None:
        return 0.0 if all(v is None or not math.isfinite(v) for v in (x, y)) else math.inf
    if x == y or (math.isnan(x) and math.isnan(y)):
        return 0.0
    gap = abs(x - y)
    return math.inf if math.isnan(gap) else gap


def _determinism(t: _Table, design: FormatsDesign) -> DeterminismCheck | None:
    check = design.determinism
    if not check:
        return None
    f = t.f
    wanted = {rec.item_id for rec in check.rows}
    codes = [i for i, item in enumerate(f.item_ids) if item in wanted]
    rows = np.flatnonzero(np.isin(f.item, codes) & (f.sample_index == 0))
    cols = ("model", "item_id", "condition", "output", "parsed", "option_logprobs")
    values = {c: f.strings(c, rows) for c in cols}
    main: dict[tuple[str, str, str], Row] = {}
    for i in range(rows.size):
        r = {c: values[c][i] for c in cols}
        main[(r["model"], r["item_id"], r["condition"])] = r
    same, compared, max_diff = 0, 0, 0.0
    mismatches: list[Mismatch] = []
    for rec in check.rows:
        hit = main.get((rec.model, rec.item_id, rec.condition))
        if hit is None:
            continue
        r = hit
        compared += 1
        equal = rec.output == r["output"] and rec.parsed == r["parsed"]
        if rec.option_logprobs and r["option_logprobs"]:
            diff = max(
                _gap(x, y) for x, y in zip(rec.option_logprobs, r["option_logprobs"], strict=True)
            )
            max_diff = max(max_diff, diff)
        if equal:
            same += 1
        elif len(mismatches) < 10:
            mismatches.append(
                Mismatch(
                    model=rec.model,
                    item_id=rec.item_id,
                    condition=rec.condition,
                    output=rec.output,
                    parsed=rec.parsed,
                    option_logprobs=rec.option_logprobs,
                    main_output=r["output"],
                )
            )
    return DeterminismCheck(
        questions=check.questions,
        compared=compared,
        identical=same,
        max_logprob_diff=max_diff,
        model_calls=check.model_calls,
        mismatches=mismatches,
    )


def _examples(t: _Table, design: FormatsDesign) -> list[Example]:
    f = t.f
    k = design.examples
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
        rng = stable_rng(design.seed, "examples", model)
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
                Example(
                    model=model,
                    item_id=f.item_ids[int(flipping[i])],
                    title=meta.get("title"),
                    question=meta.get("question"),
                    answerable=f.strings("answerable", rs[:1])[0],
                    decoy=meta.get("decoy"),
                    n_flipping=int(flipping.size),
                    outputs={
                        names[int(w)]: ExampleOutput(output=o, refused=r)
                        for w, o, r in zip(which[mine], outputs, refused, strict=True)
                    },
                )
            )
    return out
