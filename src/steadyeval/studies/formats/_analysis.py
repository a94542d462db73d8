"""The study's analysis: reads only the results table (and the design facts).

Outcomes per format (here), paired refusal tables with McNemar and Holm and the noise floor
(:mod:`._pairs`), option order stability, decoy removal, sampling, the determinism check and
seeded examples (:mod:`._extras`).

The work is done on numpy columns (:class:`~._frame.FormatsFrame`, the study's view of the
:class:`~steadyeval.results.ResultsFrame` it is given): selections are index
arrays, pairs are joins on integer keys, per-item checks are group reductions, and text is
normalised once per distinct string, so a million-row table takes seconds. The row-wise rule
for one row is :func:`classify`; the columns give the same category for every row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ... import stats
from ...scoring import UNMATCHED_F1_THRESHOLD, normalize_answer, token_f1
from ._extras import _determinism, _examples, _no_decoy, _orders, _sampling
from ._frame import FormatsFrame, Ints
from ._pairs import _pairs
from ._table import SUBSETS, Row, _Table
from ._types import (
    AnswerableCounts,
    AnswerableOutcome,
    AnswerableRates,
    FormatsAnalysis,
    FormatsDesign,
    Outcome,
    OutcomeRate,
    UnanswerableCounts,
    UnanswerableOutcome,
    UnanswerableRates,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ...results import ResultsFrame

__all__ = [
    "ANSWERABLE_OUTCOMES",
    "UNANSWERABLE_OUTCOMES",
    "analyze_formats",
    "classify",
]

#: Outcome categories; each row falls in exactly one, so the counts of a format add up to n.
UNANSWERABLE_OUTCOMES = ("refused", "decoy", "other", "answered", "unmatched", "control")
ANSWERABLE_OUTCOMES = ("correct", "refused", "wrong", "unmatched", "control")

#: Every category, in the order of the codes :func:`_labels` gives.
_LABELS = ("refused", "decoy", "other", "answered", "unmatched", "control", "correct", "wrong")
_CODE = {c: np.int8(i) for i, c in enumerate(_LABELS)}


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


def _rate(k: int, n: int, indicator: npt.NDArray[np.bool_], clusters: Ints) -> OutcomeRate:
    ci = stats.wilson_interval(k, n)
    se = stats.quietly(stats.clustered_se, indicator.astype(float), clusters)
    return OutcomeRate(
        count=k, rate=k / n, low=ci.low, high=ci.high, se_clustered=se.se, n_clusters=se.n_clusters
    )


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


def _outcomes(t: _Table, model: str, subset: str, name: str) -> Outcome | None:
    f = t.f
    rows = t.select(model, name, subset)
    if not rows.size:
        return None
    cond = t.conditions[name]
    role = cond.role
    cats = UNANSWERABLE_OUTCOMES if subset == "unanswerable" else ANSWERABLE_OUTCOMES
    labels = _labels(f, rows, role, cond.escape)
    clusters = f.label_codes("paragraph_id")[rows]
    n = int(rows.size)
    counts = {c: int(np.sum(labels == _CODE[c])) for c in cats}
    rates = {c: _rate(counts[c], n, labels == _CODE[c], clusters) for c in cats}
    common: dict[str, Any] = {
        "model": model,
        "condition": name,
        "format": cond.format,
        "role": role,
        "escape": cond.escape,
        "n": n,
        "truncated": int(np.sum(f.truncated[rows] == 1)),
        "refused_without_escape": counts["refused"] if role == "list" else None,
    }
    if subset == "unanswerable":
        near = _near_decoy(f, rows[labels == _CODE["answered"]]) if role == "free" else None
        return UnanswerableOutcome(
            **common,
            subset="unanswerable",
            counts=UnanswerableCounts(**counts),
            rates=UnanswerableRates(**rates),
            near_decoy=near,
        )
    free = role == "free"
    return AnswerableOutcome(
        **common,
        subset="answerable",
        counts=AnswerableCounts(**counts),
        rates=AnswerableRates(**rates),
        em=_mean_finite(f.em[rows]) if free else None,
        f1=_mean_finite(f.f1[rows]) if free else None,
    )


def _iter_outcomes(t: _Table) -> Iterator[Outcome]:
    for model in t.models:
        for subset in SUBSETS:
            for name in t.base_names():
                rec = _outcomes(t, model, subset, name)
                if rec is not None:
                    yield rec


def analyze_formats(
    results: ResultsFrame | pa.Table, design: FormatsDesign | Mapping[str, Any]
) -> FormatsAnalysis:
    """Everything the study reports, computed from the results and the design facts.

    Parameters
    ----------
    results : ResultsFrame
        The results (``results.parquet``'s rows; other columns are ignored).
    design : FormatsDesign or mapping
        The design facts (a :class:`FormatsDesign`, or ``summary.json["design"]``).

    Returns
    -------
    FormatsAnalysis
        ``outcomes`` (per model × subset × format: counts of each outcome, each rate with a
        95% Wilson interval and a standard error clustered by paragraph, truncated inputs),
        ``pairs`` (per model × subset × outcome × pair of formats: agreement table, McNemar
        exact and mid-p, flips, Holm-adjusted p within the family of pairs, the noise
        floors), ``noise_floor``, ``orders``, ``no_decoy``, ``sampling``, ``determinism``
        and ``examples``.

    Raises
    ------
    DataError
        If a column the analysis reads is missing, or a key column is null, or ``design``
        is not a formats study's design.
    """
    from ...results import ResultsFrame as Frame

    results = Frame.of(results)  # a pyarrow Table is read as a frame
    facts = FormatsDesign.from_json(design, source="design")
    t = _Table(results, facts)
    pairs, floors = _pairs(t, facts)
    return FormatsAnalysis(
        models=t.models,
        conditions=facts.conditions,
        outcomes=list(_iter_outcomes(t)),
        pairs=pairs,
        noise_floor=floors,
        orders=_orders(t),
        no_decoy=_no_decoy(t),
        sampling=_sampling(t),
        determinism=_determinism(t, facts),
        examples=_examples(t, facts),
    )
