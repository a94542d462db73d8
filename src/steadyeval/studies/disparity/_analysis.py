"""The disparity study's analysis, from the results table alone: P@1 per model and γ, the gap
between models per γ (paired on the same facts, McNemar's exact test), and each model's change
from its lowest γ (paired, McNemar)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ... import stats
from ._types import DisparityAnalysis, DisparityDesign, GammaCell, GammaChange, ModelGap, PairedGap

if TYPE_CHECKING:
    import pyarrow as pa

    from ...results import ResultsFrame

__all__ = ["BASE", "analyze_disparity", "paired_gap"]

#: The γ label of a model probed as given (no further pre-training).
BASE = "none"


def _label(gamma: Any) -> str:
    return BASE if gamma is None else str(int(gamma))


def _outcomes(results: ResultsFrame) -> tuple[dict[tuple[str, str], dict[str, bool]], int]:
    """``{(base_model, γ label): {item_id: correct}}`` and the count of rows without a
    verdict (counted as wrong)."""
    cols = {c: results.values(c) for c in ("base_model", "gamma", "item_id", "correct")}
    out: dict[tuple[str, str], dict[str, bool]] = {}
    missing = 0
    for model, gamma, item, ok in zip(*cols.values(), strict=True):
        if ok is None:
            missing += 1
        out.setdefault((str(model), _label(gamma)), {})[str(item)] = bool(ok)
    return out, missing


def _cell(model: str, gamma: str, outcome: Mapping[str, bool]) -> GammaCell:
    n, k = len(outcome), sum(outcome.values())
    iv = stats.wilson_interval(k, n)
    return GammaCell(
        model=model, gamma=gamma, n=n, correct=k, p_at_1=k / n, low=iv.low, high=iv.high
    )


def _gap_values(a: Mapping[str, bool], b: Mapping[str, bool]) -> dict[str, Any]:
    common = sorted(set(a) & set(b))
    if not common:
        return {"n": 0, "p_a": None, "p_b": None, "diff": None, "low": None, "high": None,
                "only_a": 0, "only_b": 0, "pvalue": None}  # fmt: skip
    xa = [int(a[i]) for i in common]
    xb = [int(b[i]) for i in common]
    table = stats.agreement_table(xa, xb)
    with warnings.catch_warnings():  # no discordant facts: NaN, reported as such
        warnings.simplefilter("ignore", stats.StatsWarning)
        test = stats.mcnemar(table.only_a, table.only_b, method="exact")
        diff = stats.paired_difference(xa, xb)
    return {
        "n": len(common),
        "p_a": sum(xa) / len(common),
        "p_b": sum(xb) / len(common),
        "diff": diff.estimate,
        "low": diff.low,
        "high": diff.high,
        "only_a": table.only_a,
        "only_b": table.only_b,
        "pvalue": test.pvalue,
    }


def paired_gap(a: Mapping[str, bool], b: Mapping[str, bool]) -> PairedGap:
    """P@1 of A minus B on the facts both answered, McNemar's exact test and a paired
    interval (see :class:`PairedGap`; None where a value is not defined)."""
    return PairedGap(**_gap_values(a, b))


def _gaps(
    outcomes: Mapping[tuple[str, str], Mapping[str, bool]],
    models: Sequence[str],
    gammas: Sequence[str],
) -> list[ModelGap]:
    out = []
    for g in gammas:
        for a, b in itertools.combinations(models, 2):
            if (a, g) in outcomes and (b, g) in outcomes:
                gap = _gap_values(outcomes[(a, g)], outcomes[(b, g)])
                out.append(ModelGap(gamma=g, a=a, b=b, **gap))
    return out


def _changes(
    outcomes: Mapping[tuple[str, str], Mapping[str, bool]],
    models: Sequence[str],
    gammas: Sequence[str],
) -> list[GammaChange]:
    """Each model at each γ against the same model at its lowest γ."""
    numeric = [g for g in gammas if g != BASE]
    if len(numeric) < 2:
        return []
    ref = min(numeric, key=int)
    out = []
    for m in models:
        for g in numeric:
            if g != ref and (m, g) in outcomes and (m, ref) in outcomes:
                gap = _gap_values(outcomes[(m, g)], outcomes[(m, ref)])
                out.append(GammaChange(model=m, gamma=g, reference=ref, **gap))
    return out


def analyze_disparity(
    results: ResultsFrame | pa.Table, design: DisparityDesign | Mapping[str, Any]
) -> DisparityAnalysis:
    """P@1 per model × γ, gaps between models per γ and changes across γ (see module).

    ``design``: the design facts (a :class:`DisparityDesign`, or ``summary.json["design"]``;
    its ``models``: the base models in order, ``gammas``). Scores are shares in [0, 1]; γ
    labels are strings (``"none"`` for a model as given).
    """
    from ...results import ResultsFrame as Frame

    results = Frame.of(results)  # a pyarrow Table is read as a frame
    facts = DisparityDesign.from_json(design, source="design")
    notes: list[str] = []
    if len(results) == 0:
        notes.append("the results table is empty: nothing was probed")
        return DisparityAnalysis(models=[], gammas=[], cells=[], gaps=[], changes=[], notes=notes)
    outcomes, missing = _outcomes(results)
    if missing:
        notes.append(f"{missing} rows have no verdict (an error or no answer); counted as wrong")
    declared = [m.model for m in facts.models]
    present = {m for m, _ in outcomes}
    models = [m for m in declared if m in present] + sorted(present - set(declared))
    order = [BASE] + [str(g) for g in facts.gammas]
    seen = {g for _, g in outcomes}
    gammas = [g for g in order if g in seen] + sorted(seen - set(order), key=int)
    cells = [_cell(m, g, outcomes[(m, g)]) for m in models for g in gammas if (m, g) in outcomes]
    if len(models) < 2:
        notes.append("one model: the gap between models is not applicable")
    return DisparityAnalysis(
        models=models,
        gammas=gammas,
        cells=cells,
        gaps=_gaps(outcomes, models, gammas),
        changes=_changes(outcomes, models, gammas),
        notes=notes,
    )
