"""The decide study's analysis, from the results table and the design facts alone: the
sequence of paired differences replayed through the anytime-valid test, and the crossed
model's comparison over formats."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import stats
from ..._errors import ConfigError
from ._analysis import model_cells
from ._decide_types import (
    DecideAnalysis,
    DecideDesign,
    FormatDifference,
    OverFormatsResult,
    SequentialResult,
)
from ._types import SpreadDesign, SpreadEstimate

if TYPE_CHECKING:
    from ...results import ResultsFrame

__all__ = ["analyze_decide"]


def _estimate(value: Any) -> SpreadEstimate:
    return SpreadEstimate(estimate=float(value[0]), low=float(value[1]), high=float(value[2]))


def _sequential(
    design: DecideDesign, answers: list[dict[tuple[int, int], float]]
) -> SequentialResult:
    from ._decide import fixed_cells

    seq = np.asarray(design.sequence, dtype=float).reshape(-1, 4)
    cells = [(int(f), int(i)) for f, i in seq[:, :2]]
    missing = [c for c in cells if c not in answers[0] or c not in answers[1]]
    if missing:
        f, i = missing[0]
        raise ConfigError(
            f"the results table has no answer of both models for format "
            f"{design.formats[f].name!r}, item {design.items[i]!r} (a cell of the design's "
            "sequence); the run is incomplete: run the study again"
        )
    d = np.array([answers[0][c] - answers[1][c] for c in cells])
    w, bound = seq[:, 2], seq[:, 3]
    decision = stats.sequential_sign(d, w, weight_bound=bound, confidence=design.confidence)
    x = d * w
    cs = stats.confidence_sequence(x, -bound, bound, design.confidence)
    return SequentialResult(
        decision={1: "A", -1: "B"}.get(decision.decision, "undecided"),  # type: ignore[arg-type]
        cells=len(d),
        decided_at=None if decision.stop is None else decision.stop + 1,
        distinct_cells=len(set(cells)),
        budget=design.budget,
        difference=SpreadEstimate(
            estimate=float(x.mean()), low=float(cs.low[-1]), high=float(cs.high[-1])
        ),
        fixed_cells=fixed_cells(x, design.confidence),
        confidence=design.confidence,
    )


def _over_formats(
    design: DecideDesign, cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]], notes: list[str]
) -> OverFormatsResult:
    """The crossed model's comparison; what the cells cannot tell goes to ``notes``."""
    models = np.concatenate([np.full(len(c[2]), k) for k, c in enumerate(cells)])
    rows, cols, y = (np.concatenate([c[j] for c in cells]) for j in range(3))
    x = np.asarray(design.covariates) if design.covariates else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", stats.StatsWarning)
        result = stats.compare_formats(
            models,
            rows,
            cols,
            y,
            (2, len(design.formats), len(design.items)),
            x,
            seed=design.seed,
            draws=design.draws,
            confidence=design.confidence,
        )
    notes += list(dict.fromkeys(str(w.message) for w in caught))
    pair = result.pair(0, 1)
    n_items = len(design.items)
    a = dict(zip((cells[0][0] * n_items + cells[0][1]).tolist(), cells[0][2].tolist(), strict=True))
    shared, total = np.zeros(len(design.formats)), np.zeros(len(design.formats))
    for key, value in zip(
        (cells[1][0] * n_items + cells[1][1]).tolist(), cells[1][2].tolist(), strict=True
    ):
        if key in a:
            shared[key // n_items] += 1
            total[key // n_items] += a[key] - value
    formats = [
        FormatDifference(
            format=f.name,
            estimate=float(pair.per_format[k, 0]),
            low=float(pair.per_format[k, 1]),
            high=float(pair.per_format[k, 2]),
            cells=int(shared[k]),
            observed=float(total[k] / shared[k]) if shared[k] else None,
        )
        for k, f in enumerate(design.formats)
    ]
    return OverFormatsResult(
        accuracy_a=_estimate(result.accuracy[0]),
        accuracy_b=_estimate(result.accuracy[1]),
        difference=_estimate(pair.difference),
        p_better=_estimate(pair.p_better),
        flip_share=_estimate(pair.flip_share),
        prob_positive=pair.prob_positive,
        formats=formats,
    )


def analyze_decide(results: ResultsFrame, design: DecideDesign | Any) -> DecideAnalysis:
    """The decision replayed from the table (the same cells in the same order as the run
    drew them) and the comparison of the two models over the formats."""
    facts = DecideDesign.from_json(design, source="design")
    spread = SpreadDesign(
        method="estimate",
        seed=facts.seed,
        draws=facts.draws,
        formats=facts.formats,
        items=facts.items,
        covariates=facts.covariates,
    )
    cells, answers = [], []
    for model in facts.models:
        rows, cols, y, _ = model_cells(results, spread, model)
        if len(y) == 0:
            raise ConfigError(f"model {model!r} has no scored cells in the results table")
        cells.append((rows, cols, y))
        answers.append(
            dict(zip(zip(rows.tolist(), cols.tolist(), strict=True), y.tolist(), strict=True))
        )
    notes: list[str] = []
    over = _over_formats(facts, cells, notes)
    return DecideAnalysis(
        model_a=facts.models[0],
        model_b=facts.models[1],
        sequential=_sequential(facts, answers),
        over_formats=over,
        notes=notes,
    )
