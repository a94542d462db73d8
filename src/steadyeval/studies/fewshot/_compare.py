"""The re-evaluation's side-by-side table: methods × tasks under one split strategy (Multi-
Splits when run), mean ± std of the chosen setting's K test scores, the task average, the
criteria per method, and paired comparisons of methods on the same splits."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...stats import StatsInputError, holm, paired_difference
from ._types import (
    FewShotDesign,
    FewShotDesignExperiment,
    FewShotExperiment,
    MethodCell,
    MethodPair,
    MethodRow,
    MethodsTable,
    StrategyRow,
)

__all__ = ["compare_methods"]


def _nanmean(values: Sequence[float | None]) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(vals)) if vals else math.nan


def _cell(row: StrategyRow) -> MethodCell:
    return MethodCell(
        mean=row.test_mean,
        std=row.test_std,
        scores=list(row.test_scores),
        selected=row.selected,
        selected_hparams=row.selected_hparams,
        spearman=row.spearman,
        regret=row.regret,
        test_range_over_k=row.test_range_over_k,
    )


def _paired(
    a: str, b: str, cells: Mapping[str, Mapping[str, MethodCell]], tasks: Sequence[str]
) -> dict[str, Any]:
    """Method ``a`` minus ``b`` on the same (task, split) pairs."""
    xs: list[float] = []
    ys: list[float] = []
    per_task = {}
    for t in tasks:
        ca, cb = cells[a].get(t), cells[b].get(t)
        if ca is None or cb is None or len(ca.scores) != len(cb.scores):
            continue
        xs += ca.scores
        ys += cb.scores
        per_task[t] = _nanmean([x - y for x, y in zip(ca.scores, cb.scores, strict=True)])
    out: dict[str, Any] = {"a": a, "b": b, "n_pairs": len(xs), "per_task": per_task}
    d = [x - y for x, y in zip(xs, ys, strict=True)]
    out.update(
        wins=sum(v > 0 for v in d), losses=sum(v < 0 for v in d), ties=sum(v == 0 for v in d)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = paired_difference(xs, ys)
            out.update(estimate=r.estimate, se=r.se, low=r.low, high=r.high, pvalue=r.pvalue)
        except StatsInputError as exc:
            out.update(estimate=_nanmean(d), se=math.nan, low=math.nan, high=math.nan)
            out.update(pvalue=math.nan, note=str(exc))
    if caught and "note" not in out:
        out["note"] = str(caught[0].message)
    return out


def compare_methods(
    experiments: Mapping[str, FewShotExperiment],
    designs: Sequence[FewShotDesignExperiment],
    design: FewShotDesign,
) -> MethodsTable:
    """Methods × tasks at the main K under Multi-Splits (or the first strategy run).

    Returns the table (``strategy``, ``k``, ``tasks``, ``rows``, ``paired``): per method its
    cell per task (the chosen setting's test mean, sample std and K scores, with the
    criteria), its task average (the mean of its task means; None when a task is missing)
    and its criteria averaged over tasks (Spearman's rho, regret, test range over K);
    ``paired`` compares
    every two methods on the same (task, split) pairs: the mean difference of their test
    scores with :func:`steadyeval.stats.paired_difference` (a z-test on the split-level
    differences; with few splits its p-value is a rough guide), and wins / losses / ties.
    """
    strategies = list(design.strategies)
    strategy = "multisplit" if "multisplit" in strategies else strategies[0]
    tasks = list(dict.fromkeys(d.task for d in designs))
    methods = list(dict.fromkeys(d.method for d in designs))
    cells: dict[str, dict[str, MethodCell]] = {m: {} for m in methods}
    for d in designs:
        rows = experiments[d.key].side_by_side
        row = next((r for r in rows if r.strategy == strategy), None)
        if row is not None:
            cells[d.method][d.task] = _cell(row)
    rows_out = []
    for m in methods:
        got = [cells[m][t] for t in tasks if t in cells[m]]
        means = [math.nan if c.mean is None else c.mean for c in got]
        rows_out.append(
            MethodRow(
                method=m,
                tasks={t: cells[m].get(t) for t in tasks},
                average=float(np.mean(means)) if len(got) == len(tasks) else math.nan,
                spearman=_nanmean([c.spearman for c in got]),
                regret=_nanmean([c.regret for c in got]),
                test_range_over_k=_nanmean([c.test_range_over_k for c in got]),
            )
        )
    paired = [_paired(a, b, cells, tasks) for a, b in itertools.combinations(methods, 2)]
    # Every pair of methods is a test: Holm's adjustment over the pairs with a p-value.
    tested = [p for p in paired if math.isfinite(p["pvalue"])]
    adjusted: Any = holm([p["pvalue"] for p in tested]).pvalues if tested else []
    for p in paired:
        p["pvalue_holm"] = math.nan
    for p, q in zip(tested, adjusted, strict=True):
        p["pvalue_holm"] = float(q)
    return MethodsTable(
        strategy=strategy,
        k=design.k,
        tasks=tasks,
        rows=rows_out,
        paired=[MethodPair(**p) for p in paired],
    )
