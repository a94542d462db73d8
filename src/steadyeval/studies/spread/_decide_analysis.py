"""The decide study's analysis, from the results table and the design facts alone: the
sequence of cells replayed through every pair's anytime-valid test, and the crossed
model's comparison over formats."""

from __future__ import annotations

import logging
import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import stats
from ..._errors import ConfigError
from ..._log import timed_steps
from ._analysis import SWEEPS, model_cells
from ._decide_cells import (
    closure,
    decide_pairs,
    implied_order,
    pair_level,
    pairs_of,
    winners,
)
from ._decide_types import (
    DecideAnalysis,
    DecideDesign,
    FormatDifference,
    ModelAccuracy,
    PairDecision,
    PairOverFormats,
    RankingProbability,
)
from ._types import SpreadEstimate

if TYPE_CHECKING:
    from ...results import ResultsFrame

__all__ = ["analyze_decide", "label"]

log = logging.getLogger(__name__)

#: Rankings listed in the analysis (the most probable first).
SHOWN_RANKINGS = 10
Cells = tuple[np.ndarray, np.ndarray, np.ndarray]


def label(k: int) -> str:
    """The label of the ``k``-th model: A, B, C, ..."""
    return chr(ord("A") + k)


def _estimate(value: Any) -> SpreadEstimate:
    return SpreadEstimate(estimate=float(value[0]), low=float(value[1]), high=float(value[2]))


def _answers(design: DecideDesign, answers: list[dict[tuple[int, int], float]]) -> np.ndarray:
    """(cells drawn, models) of 0/1, in the order the run drew them."""
    cells = [(int(f), int(i)) for f, i, _, _ in design.sequence]
    for c in cells:
        if any(c not in a for a in answers):
            raise ConfigError(
                f"the results table has no answer of every model for format "
                f"{design.formats[c[0]].name!r}, item {design.items[c[1]]!r} (a cell of the "
                "design's sequence); the run is incomplete: run the study again"
            )
    return np.array([[a[c] for a in answers] for c in cells])


def _no_cell_left_out(design: DecideDesign, answers: list[dict[tuple[int, int], float]]) -> None:
    """Every cell of the table is in the sequence: a run answers only the cells it drew, so a
    sequence that lacks one (a truncated or hand-edited summary.json) is not the run's."""
    listed = {(int(f), int(i)) for f, i, _, _ in design.sequence}
    for model, a in zip(design.models, answers, strict=True):
        extra = sorted(set(a) - listed)
        if extra:
            f, i = extra[0]
            raise ConfigError(
                f"the results table holds {len(extra):,} cell(s) of model {model!r} that the "
                f"design's sequence does not list (format {design.formats[f].name!r}, item "
                f"{design.items[i]!r}, ...): the sequence is not the run's (summary.json "
                "truncated or edited); run the study again"
            )


def fixed_cells(values: np.ndarray, confidence: float) -> int | None:
    """Cells a fixed-size test at ``confidence`` needs for its interval, centred on the
    observed mean of ``values``, to exclude 0: (z s / mean)², s their s.d. (None when the
    mean is 0)."""
    from scipy.stats import norm

    mean, sd = float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else math.nan
    if mean == 0 or not math.isfinite(sd):
        return None
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    return max(1, math.ceil((z * sd / abs(mean)) ** 2))


def _pairs(
    design: DecideDesign,
    y: np.ndarray,
    decisions: list[stats.SignDecision],
    order: list[int] | None,
) -> list[PairDecision]:
    """Each pair's test as the report shows it; ``order``: the ranking the decided pairs
    imply (None: none yet), which settles the pairs their own tests left open."""
    seq = np.asarray(design.sequence, dtype=float)
    w, bound = seq[:, 2], seq[:, 3]
    level = pair_level(design.confidence, y.shape[1])
    rank = {m: r for r, m in enumerate(order)} if order is not None else {}
    out = []
    for (a, b), decision in zip(pairs_of(y.shape[1]), decisions, strict=True):
        x = (y[:, a] - y[:, b]) * w
        cs = stats.confidence_sequence(x, -bound, bound, level)
        # the test's own bound: the side of 0 it decided, by how much at least
        own = stats.sign_interval(y[:, a] - y[:, b], w, weight_bound=bound, confidence=level)
        margin = {1: own.low[-1], -1: -own.high[-1]}.get(decision.decision)
        winner = {1: label(a), -1: label(b)}.get(decision.decision)
        implied = winner is None and bool(rank)
        if implied:  # the decided pairs imply it (A > B and B > C: A > C)
            winner = label(a) if rank[a] < rank[b] else label(b)
        out.append(
            PairDecision(
                a=label(a),
                b=label(b),
                winner=winner,
                implied=implied,
                decided_at=None if decision.stop is None else decision.stop + 1,
                difference=SpreadEstimate(
                    estimate=float(x.mean()), low=float(cs.low[-1]), high=float(cs.high[-1])
                ),
                margin=None if margin is None else max(float(margin), 0.0),
                level=level,
                fixed_cells=fixed_cells(x, level),
            )
        )
    return out


def _decision(won: list[tuple[int, int]], order: list[int] | None, k: int, notes: list[str]) -> str:
    """The ranking the pairs decided (``"B > A"``, ``"A > B > C"``: every pair decided or
    implied by the decided ones), else the pairs decided (``"A > B, A > C"``), or
    "undecided"; a cycle among the decided pairs (an error of the tests) gets a note."""
    if not won:
        return "undecided"
    if order is not None:
        return " > ".join(label(m) for m in order)
    listed = ", ".join(f"{label(w)} > {label(loser)}" for w, loser in won)
    if np.any(np.diag(closure(k, won))):
        notes.append(
            f"the decided pairs ({listed}) form a cycle: one of the tests is wrong (each "
            "errs with probability at most its level's complement); draw more cells"
        )
    return listed


def _format_differences(
    design: DecideDesign, pair: stats.PairOverFormats
) -> list[FormatDifference]:
    return [
        FormatDifference(
            format=f.name,
            estimate=float(pair.per_format[k, 0]),
            low=float(pair.per_format[k, 1]),
            high=float(pair.per_format[k, 2]),
            cells=int(pair.shared[k]),
            observed=float(pair.observed[k]) if pair.shared[k] else None,
        )
        for k, f in enumerate(design.formats)
    ]


def _over_formats(
    design: DecideDesign, cells: list[Cells], notes: list[str]
) -> tuple[list[ModelAccuracy], list[PairOverFormats], list[RankingProbability]]:
    """The crossed model's comparison; what the cells cannot tell goes to ``notes``."""
    k = len(cells)
    models = np.concatenate([np.full(len(c[2]), m) for m, c in enumerate(cells)])
    rows, cols, y = (np.concatenate([c[j] for c in cells]) for j in range(3))
    x = np.asarray(design.covariates) if design.covariates else None
    what = f"comparison of {k} models over formats"
    doing = (
        f"{len(design.formats)} formats × {len(design.items)} items from {len(y)} cells "
        f"({design.draws} draws)"
    )
    with (
        timed_steps(log, what, doing, unit=SWEEPS) as steps,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", stats.StatsWarning)
        result = stats.compare_formats(
            models,
            rows,
            cols,
            y,
            (k, len(design.formats), len(design.items)),
            x,
            seed=design.seed,
            draws=design.draws,
            confidence=design.confidence,
            labels=[label(m) for m in range(k)],
            progress=steps,
        )
    notes += list(dict.fromkeys(str(w.message) for w in caught))
    accuracy = [
        ModelAccuracy(
            label=label(m), model=design.models[m], **_estimate(result.accuracy[m]).model_dump()
        )
        for m in range(k)
    ]
    pairs = []
    for a, b in pairs_of(k):
        pair = result.pair(a, b)
        pairs.append(
            PairOverFormats(
                a=label(a),
                b=label(b),
                difference=_estimate(pair.difference),
                p_better=_estimate(pair.p_better),
                flip_share=_estimate(pair.flip_share),
                prob_positive=pair.prob_positive,
                formats=_format_differences(design, pair),
            )
        )
    rankings = [
        RankingProbability(ranking=" > ".join(label(m) for m in order), probability=p)
        for order, p in result.rankings()[:SHOWN_RANKINGS]
    ]
    return accuracy, pairs, rankings


def analyze_decide(results: ResultsFrame, design: DecideDesign | Any) -> DecideAnalysis:
    """Every pair's test replayed from the table (the cells in the order the run drew
    them) and the comparison of the models over the formats."""
    facts = DecideDesign.from_json(design, source="design")
    spread = facts.spread_design()
    cells: list[Cells] = []
    answers = []
    for model in facts.models:
        rows, cols, y, _ = model_cells(results, spread, model)
        if len(y) == 0:
            raise ConfigError(f"model {model!r} has no scored cells in the results table")
        cells.append((rows, cols, y))
        answers.append(
            dict(zip(zip(rows.tolist(), cols.tolist(), strict=True), y.tolist(), strict=True))
        )
    _no_cell_left_out(facts, answers)
    drawn = _answers(facts, answers)
    k = len(facts.models)
    seq = np.asarray(facts.sequence, dtype=float)
    decisions = decide_pairs(drawn, seq[:, 2], seq[:, 3], facts.confidence)
    won = winners(k, decisions)
    order = implied_order(k, won)
    pairs = _pairs(facts, drawn, decisions, order)
    notes: list[str] = []
    decision = _decision(won, order, k, notes)
    accuracy, over, rankings = _over_formats(facts, cells, notes)
    return DecideAnalysis(
        models=facts.models,
        decision=decision,
        cells=len(drawn),
        distinct_cells=len({(int(f), int(i)) for f, i, _, _ in facts.sequence}),
        budget=facts.budget,
        confidence=facts.confidence,
        pairs=pairs,
        accuracy=accuracy,
        over_formats=over,
        rankings=rankings,
        notes=notes,
    )
