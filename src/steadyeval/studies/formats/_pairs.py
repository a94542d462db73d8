"""Paired comparisons of the formats study: agreement tables with McNemar (exact and mid-p)
between every pair of base formats, Holm-adjusted within each family of pairs, and the noise
floors (flips between two formats that differ in one phrase, and between a list format and
itself under other option orders).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ... import stats
from ._frame import FormatsFrame, Ints, pair_rows
from ._table import SUBSETS, _Table
from ._types import FormatPair, FormatsDesign, NoiseFloorEntry, PhraseFloor


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
    exact = stats.quietly(stats.mcnemar, table.only_a, table.only_b, method="exact")
    midp = stats.quietly(stats.mcnemar, table.only_a, table.only_b, method="midp")
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
    return [v for v, c in t.conditions.items() if c.variant == "order" and c.base == name]


def _order_floor(t: _Table, model: str, subset: str, name: str, field: str) -> list[int]:
    """Flips on ``field`` between a list condition and itself under each seeded option order."""
    base = t.select(model, name, subset)
    out = []
    for v in _order_variants(t, name):
        res = _paired(t.f, base, t.select(model, v, subset), "item_id", field)
        if res is not None:
            out.append(res["flips"])
    return out


def _pairs(t: _Table, design: FormatsDesign) -> tuple[list[FormatPair], list[NoiseFloorEntry]]:
    """Every pair of base formats, per model × subset × outcome (one Holm family each), and
    the noise floors."""
    names = t.base_names()
    floor_a, floor_b = design.noise_floor or (None, None)
    pairs: list[FormatPair] = []
    floors: list[NoiseFloorEntry] = []
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
                    NoiseFloorEntry(
                        model=model,
                        subset=subset,
                        outcome=field,
                        phrase=PhraseFloor(a=floor_a, b=floor_b, flips=phrase),
                        order=order,
                        order_mean=order_mean,
                    )
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
            pairs.extend(FormatPair(**p) for p in family)
    return pairs, floors
