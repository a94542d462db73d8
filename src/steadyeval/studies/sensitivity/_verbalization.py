"""Verbalization stability: does the prediction survive another name for the subject?

As the causal-probing paper measures it (Cao et al., ACL 2022, and the authors'
``cal_mention_consis.py``): per relation, the share of facts whose subject has at least two
names and whose prediction is the same under every name, then the mean over relations.
Predictions that are stop words are skipped (see :mod:`._stopwords`).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
from numpy.typing import NDArray

from ._tensor import Correctness
from ._types import ModelStability, NotApplicable, PooledStability, UnitStability, Verbalization

__all__ = ["verbalization"]

BoolArray = NDArray[np.bool_]


def _stop_mask(c: Correctness, stop_words: Collection[str]) -> BoolArray:
    """``mask[code]`` is True when prediction ``code`` is a stop word; one extra False
    entry at the end, so the "not asked" code -1 indexes a False. Without prediction
    texts (a tensor built by hand) no prediction is a stop word."""
    assert c.predictions is not None
    if c.prediction_texts is None:
        top = max((int(p.max()) for p in c.predictions if p.size), default=-1)
        return np.zeros(top + 2, dtype=bool)
    words = set(stop_words)
    return np.asarray([t.strip() in words for t in c.prediction_texts] + [False], dtype=bool)


def _unit_counts(pred: NDArray[np.int64], stop: BoolArray, multi: BoolArray) -> dict[str, int]:
    """Counts for one model on one unit; ``pred`` is (templates, names, facts)."""
    kept = (pred >= 0) & ~stop[pred]  # asked, and not a stop word
    n_kept = kept.sum(axis=1)  # (T, F)
    first = np.argmax(kept, axis=1)  # the first kept name of each (template, fact)
    ref = np.take_along_axis(pred, first[:, None, :], axis=1)
    same = np.all((pred == ref) | ~kept, axis=1)  # (T, F)
    counted = multi[None, :] & (n_kept >= 2)
    stable = same & counted
    return {
        "stable0": int(stable[0].sum()),
        "n0": int(counted[0].sum()),
        "stable": int(stable.sum()),
        "n": int(counted.sum()),
        "skipped": int((multi[None, :] & (n_kept < 2)).sum()),
    }


def _share(stable: int, n: int) -> float | None:
    return stable / n if n else None


def _macro(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _model(
    c: Correctness, m: int, stop: BoolArray
) -> tuple[ModelStability, dict[str, UnitStability]]:
    assert c.predictions is not None
    per_unit: dict[str, UnitStability] = {}
    totals = {"stable0": 0, "n0": 0, "stable": 0, "n": 0, "skipped": 0}
    by_name = np.zeros(c.n_names)
    by_name_n = np.zeros(c.n_names)
    for u, unit in enumerate(c.units):
        k = _unit_counts(c.predictions[u][m], stop, c.names_available(u) >= 2)
        for key in totals:
            totals[key] += k[key]
        per_unit[unit] = UnitStability(
            stability=_share(k["stable0"], k["n0"]),
            n=k["n0"],
            stability_all_templates=_share(k["stable"], k["n"]),
            n_all_templates=k["n"],
            skipped_stop_words=k["skipped"],
        )
        cell = c.cells[u][m]
        by_name += np.nansum(cell, axis=(0, 2))
        by_name_n += (~np.isnan(cell)).sum(axis=(0, 2))
    rows = list(per_unit.values())
    summary = ModelStability(
        stability=_macro([r.stability for r in rows]),
        n_units=sum(1 for r in rows if r.stability is not None),
        stability_all_templates=_macro([r.stability_all_templates for r in rows]),
        pooled=PooledStability(
            stability=_share(totals["stable"], totals["n"]),
            n=totals["n"],
            stability_original_template=_share(totals["stable0"], totals["n0"]),
            n_original_template=totals["n0"],
        ),
        skipped_stop_words=totals["skipped"],
        score_by_name=[
            float(s / n) if n else None for s, n in zip(by_name, by_name_n, strict=True)
        ],
    )
    return summary, per_unit


def verbalization(
    c: Correctness, stop_words: Collection[str], notes: list[str]
) -> Verbalization | NotApplicable:
    """Verbalization stability per model, per unit and pooled.

    A fact counts under a template when its subject has at least two names and at least
    two of its predictions under those names are not stop words; it is *stable* when those
    predictions are all the same. Per unit: the share of stable facts under the original
    template (``stability``, as the paper) and of stable (fact, template) pairs under every
    template (``stability_all_templates``). Per model: ``stability``, the mean of the units'
    shares (the headline), the same mean over all templates, and ``pooled``: stable pairs
    over all pairs of all units (secondary).
    """
    if c.n_names < 2 or c.predictions is None:
        notes.append(
            "no subject has more than one name: verbalization stability is not applicable (K_x = 1)"
        )
        return NotApplicable(reason="no aliases in the data (K_x = 1)")
    stop = _stop_mask(c, stop_words)
    per_model: dict[str, ModelStability] = {}
    per_unit: dict[str, dict[str, UnitStability]] = {}
    for m, model in enumerate(c.models):
        per_model[model], per_unit[model] = _model(c, m, stop)
    skipped = sum(v.skipped_stop_words for v in per_model.values())
    if skipped:
        notes.append(
            f"verbalization: {skipped} (model, fact, template) cases left out because fewer "
            "than two of their predictions are not stop words"
        )
    n_multi = sum(int((c.names_available(u) >= 2).sum()) for u in range(len(c.units)))
    return Verbalization(
        facts_with_aliases=n_multi,
        n_stop_words=len(set(stop_words)),
        per_model=per_model,
        per_unit=per_unit,
    )
