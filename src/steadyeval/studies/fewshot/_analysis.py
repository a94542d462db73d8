"""FewNLU's criteria, computed from the results table alone.

Per experiment (task × method), for each strategy and K: the task's score (accuracy; CB and
MultiRC their FewNLU metric, see :mod:`._metrics`) of every (setting, split, part); per
setting the mean dev and mean test score over the K splits; the chosen setting (highest mean dev, the
grid's first on ties); its K test accuracies (mean ± sample std); the oracle (best mean test)
and the regret; the Spearman correlation of mean dev and mean test across the grid. Across
K: how the chosen setting's test accuracy and the correlation move.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..._errors import DataError
from ...stats import StatsInputError, spearman
from ._compare import compare_methods
from ._metrics import task_metric, task_scores
from ._sensitivity import sensitivity
from ._types import (
    ByK,
    FewShotAnalysis,
    FewShotDesign,
    FewShotExperiment,
    FinalRun,
    GridPoint,
    GridSetting,
    Stability,
    StrategyResult,
    StrategyRow,
    TaskStrategyRow,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ...results import ResultsFrame

__all__ = ["analyze", "select"]

Ints = npt.NDArray[np.int64]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _std(values: Sequence[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


def select(dev_means: Sequence[float]) -> int:
    """Index of the highest mean dev score; the first one on ties; NaN never wins."""
    best, best_i = -math.inf, -1
    for i, v in enumerate(dev_means):
        if not math.isnan(v) and v > best:
            best, best_i = v, i
    if best_i < 0:
        raise ValueError("no setting has a dev score")
    return best_i


def _correlation(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, str | None]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = spearman(x, y)
        except StatsInputError as exc:
            return math.nan, math.nan, str(exc)
    note = str(caught[0].message) if caught else None
    return r.statistic, r.pvalue, note


Key = tuple[str, int, int, str, str]  # strategy, K, split index, setting id, part

#: The columns every few-shot results table has (``task``, ``method``, ``parsed_option``,
#: ``gold_options`` and ``metadata`` are read when present).
_COLUMNS = ("strategy", "n_splits", "split_index", "hparams_id", "part", "correct")
_NULL = np.iinfo(np.int64).min  # a null K or split index (an error)


def _labels(results: ResultsFrame, name: str, default: str) -> tuple[Ints, list[Any]]:
    """Codes and values of a string column; a column the table lacks is ``default`` on
    every row."""
    if results.has(name):
        return results.codes(name)
    return np.zeros(len(results), dtype=np.int64), [default]


def _value(values: list[Any], code: int) -> Any:
    return values[code] if code >= 0 else None


def _scores(results: ResultsFrame, design: FewShotDesign) -> dict[str, dict[Key, float]]:
    """Per experiment (``TASK/METHOD``): the task's score of every (strategy, K, split,
    setting, part) (accuracy, or CB's / MultiRC's mean of parts)."""
    results.require(_COLUMNS, reader="the few-shot analysis")
    task, tasks = _labels(results, "task", design.task)
    method, methods = _labels(results, "method", design.method)
    strategy, strategies = results.codes("strategy")
    setting, settings = results.codes("hparams_id")
    part, parts = results.codes("part")
    k = results.ints("n_splits", null=_NULL)
    split = results.ints("split_index", null=_NULL)
    for name, column in (("n_splits", k), ("split_index", split)):
        if (column == _NULL).any():
            row = int(np.flatnonzero(column == _NULL)[0])
            raise DataError(f"{results.source}, row {row}: column {name!r} is null")
    correct = results.bools("correct")
    # One unit per distinct (task, method, strategy, K, split, setting, part), rows in order.
    keys = np.stack([task, method, strategy, k, split, setting, part], axis=1)
    if not len(keys):
        return {}
    _, first, unit = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    unit = unit.reshape(-1)
    n = np.bincount(unit)
    hits = np.bincount(unit, weights=correct == 1)  # null counts as wrong
    rows = np.split(np.argsort(unit, kind="stable"), np.cumsum(n)[:-1])
    out: dict[str, dict[Key, float]] = {}
    for u, r in enumerate(first):
        name = f"{_value(tasks, int(task[r]))}/{_value(methods, int(method[r]))}"
        key = (
            _value(strategies, int(strategy[r])),
            int(k[r]),
            int(split[r]),
            _value(settings, int(setting[r])),
            _value(parts, int(part[r])),
        )
        t = name.split("/", 1)[0]
        if task_metric(t).parts == ("accuracy",):
            score = int(hits[u]) / int(n[u])
        else:
            score = _task_score(results, t, rows[u], correct)
        out.setdefault(name, {})[key] = score
    return out


def _task_score(
    results: ResultsFrame, task: str, rows: Ints, correct: npt.NDArray[np.int8]
) -> float:
    """The task's metric (CB, MultiRC) over ``rows``: a row without a verdict is an
    unmatched answer; a row's group (MultiRC's question) is its metadata's ``group``."""
    preds = results.ints("parsed_option", null=-1) if results.has("parsed_option") else None
    golds = results.values("gold_options", rows) if results.has("gold_options") else None
    meta, parsed = results.metadata() if results.has("metadata") else (None, [])
    p = [
        int(preds[r]) if preds is not None and preds[r] >= 0 and correct[r] >= 0 else None
        for r in rows
    ]
    g = [gs[0] if gs else -1 for gs in golds] if golds is not None else [-1] * len(rows)
    groups = [str((parsed[meta[r]] if meta is not None else {}).get("group", int(r))) for r in rows]
    return task_scores(task, p, g, groups)["score"]


def _by_k(
    acc: Mapping[Key, float],
    strategy: str,
    k: int,
    grid: Sequence[GridPoint],
) -> ByK | None:
    splits = sorted({i for (s, kk, i, _, _) in acc if s == strategy and kk == k})
    if not splits:
        return None
    rows = []
    dev_means, test_means = [], []
    for g in grid:
        dev = [acc[key] for i in splits if (key := (strategy, k, i, g.id, "dev")) in acc]
        test = [acc[key] for i in splits if (key := (strategy, k, i, g.id, "test")) in acc]
        dev_means.append(_mean(dev))
        test_means.append(_mean(test))
        rows.append(
            GridSetting(
                id=g.id,
                hparams=g.hparams,
                dev_scores=dev,
                test_scores=test,
                dev_mean=dev_means[-1],
                dev_std=_std(dev),
                test_mean=test_means[-1],
                test_std=_std(test),
            )
        )
    best = select(dev_means)
    chosen = rows[best]
    oracle = max(test_means)
    rho, p, note = _correlation(dev_means, test_means)
    return ByK(
        k=k,
        n_splits=len(splits),
        grid=rows,
        selected=chosen.id,
        selected_hparams=chosen.hparams,
        dev_mean=dev_means[best],
        test_mean=test_means[best],
        test_std=chosen.test_std,
        test_scores=chosen.test_scores,
        oracle_test_mean=oracle,
        regret=oracle - test_means[best],
        spearman=rho,
        spearman_p=p,
        spearman_note=note,
    )


def _by_k_fixed(
    acc: Mapping[Key, float], k: int, grid: Sequence[GridPoint], fixed: str | None
) -> ByK | None:
    """The fixed strategy at K: its setting's test score per seed (no dev part, so no
    choice, no oracle, no regret and no correlation); the grid's other settings are listed
    without scores."""
    seeds = sorted({i for (s, kk, i, _, _) in acc if s == "fixed" and kk == k})
    if not seeds:
        return None
    if fixed is None:
        raise DataError(
            "the results have fixed-strategy rows but the design names no fixed setting"
        )
    rows = []
    for g in grid:
        test = [acc[key] for i in seeds if (key := ("fixed", k, i, g.id, "test")) in acc]
        rows.append(
            GridSetting(
                id=g.id, hparams=g.hparams, dev_scores=[], test_scores=test, dev_mean=None,
                dev_std=None, test_mean=_mean(test), test_std=_std(test),
            )
        )  # fmt: skip
    chosen = next(r for r in rows if r.id == fixed)
    return ByK(
        k=k,
        n_splits=len(seeds),
        grid=rows,
        selected=chosen.id,
        selected_hparams=chosen.hparams,
        dev_mean=None,
        test_mean=chosen.test_mean,
        test_std=chosen.test_std,
        test_scores=chosen.test_scores,
        oracle_test_mean=None,
        regret=None,
        spearman=None,
        spearman_p=None,
        spearman_note="fixed hyper-parameters: one setting, no dev part, nothing to correlate",
    )


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _spread(values: Sequence[float | None]) -> tuple[float, float]:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return math.nan, math.nan
    return max(vals) - min(vals), float(np.std(vals))


def analyze(
    results: ResultsFrame | pa.Table, design: FewShotDesign | Mapping[str, Any]
) -> FewShotAnalysis:
    """FewNLU's three criteria per experiment and strategy, and the methods side by side.

    Parameters
    ----------
    results : ResultsFrame
        Rows with ``strategy``, ``n_splits``, ``split_index``, ``hparams_id``, ``part``,
        ``correct`` (and ``task``, ``method``, ``parsed_option``, ``gold_options``,
        ``metadata``) columns, as the study writes them.
    design : FewShotDesign or mapping
        The design facts (a :class:`FewShotDesign`, or ``summary.json``'s ``design``): its
        experiments (key, task, method and grid, in grid order), ``strategies``, ``k`` (the
        main K) and ``k_values``.

    Returns
    -------
    FewShotAnalysis
        ``experiments`` -> per ``TASK/METHOD`` key: ``strategies`` -> {``by_k`` (per K: the
        grid's mean dev/test, the choice, its test mean ± std, oracle, regret, Spearman),
        ``stability`` (across K), ``final`` (the chosen setting retrained on all labelled
        data, if run)} and ``side_by_side`` (one row per strategy at the main K);
        ``side_by_side`` (those rows of every experiment, with ``task`` and ``method``);
        ``strategies`` and ``metric`` (the first experiment's, as in one-experiment runs);
        ``methods`` (methods × tasks, see :func:`compare_methods`).

    Notes
    -----
    A unit's score is the task's metric over its rows: accuracy is the share of ``correct``
    rows (null counts as wrong); CB's and MultiRC's metrics read ``parsed_option`` (null:
    unmatched, a wrong answer) and ``gold_options``. The test std is the
    sample std (ddof=1) over the K splits. Spearman's rho is None (with a note) when the grid
    has fewer than 3 settings or the dev or test means are constant across the grid.
    """
    from ...results import ResultsFrame as Frame

    results = Frame.of(results)  # a pyarrow Table is read as a frame
    facts = FewShotDesign.from_json(design, source="design")
    scores = _scores(results, facts)
    main = facts.k
    experiments = facts.experiment_list
    out: dict[str, FewShotExperiment] = {}
    side: list[TaskStrategyRow] = []
    for e in experiments:
        res = _experiment(
            scores.get(e.key, {}), e.grid, facts, task_metric(e.task).name, fixed=e.fixed
        )
        out[e.key] = res
        side += [TaskStrategyRow(task=e.task, method=e.method, **dict(r)) for r in res.side_by_side]
    first = out[experiments[0].key]
    return FewShotAnalysis(
        metric=first.metric,
        k=main,
        # The first experiment's criteria at the top, as one-task one-method runs always had.
        strategies=first.strategies,
        experiments=out,
        side_by_side=side,
        methods=compare_methods(out, experiments, facts),
    )


def _experiment(
    acc: Mapping[Key, float],
    grid: Sequence[GridPoint],
    design: FewShotDesign,
    metric: str,
    *,
    fixed: str | None = None,
) -> FewShotExperiment:
    """One experiment's criteria per strategy (see :func:`analyze`)."""
    main = design.k
    strategies: dict[str, StrategyResult] = {}
    side = []
    for strategy in design.strategies:
        is_fixed = strategy == "fixed"
        by_k = {}
        for k in sorted(set(design.k_values) | {main}):
            res = _by_k_fixed(acc, k, grid, fixed) if is_fixed else _by_k(acc, strategy, k, grid)
            if res is not None:
                by_k[str(k)] = res
        stability, t_range, r_range = _stability(by_k)
        head = by_k.get(str(main))
        final = _final(acc, head, design) if head is not None and not is_fixed else None
        factors = (
            sensitivity(head, final, fixed=is_fixed, first_seed=design.seed)
            if head is not None
            else []
        )
        strategies[strategy] = StrategyResult(
            by_k=by_k, stability=stability, final=final, sensitivity=factors
        )
        if head is not None:
            side.append(
                StrategyRow(
                    strategy=strategy,
                    k=main,
                    selected=head.selected,
                    selected_hparams=head.selected_hparams,
                    dev_mean=head.dev_mean,
                    test_mean=head.test_mean,
                    test_std=head.test_std,
                    test_scores=head.test_scores,
                    oracle_test_mean=head.oracle_test_mean,
                    regret=head.regret,
                    spearman=head.spearman,
                    test_range_over_k=t_range,
                    spearman_range_over_k=r_range,
                    final_test_mean=final.test_mean if final else None,
                    final_test_std=final.test_std if final else None,
                )
            )
    return FewShotExperiment(strategies=strategies, side_by_side=side, metric=metric)


def _stability(by_k: Mapping[str, ByK]) -> tuple[Stability, float, float]:
    ks = sorted(int(k) for k in by_k)
    tests = [by_k[str(k)].test_mean for k in ks]
    rhos = [by_k[str(k)].spearman for k in ks]
    t_range, t_sd = _spread(tests)
    r_range, r_sd = _spread(rhos)
    stability = Stability(
        k_values=ks,
        selected=[by_k[str(k)].selected for k in ks],
        test_means=tests,
        spearmans=rhos,
        test_range=t_range,
        test_sd=t_sd,
        spearman_range=r_range,
        spearman_sd=r_sd,
        same_selection=len({by_k[str(k)].selected for k in ks}) <= 1,
    )
    return stability, t_range, r_range


def _final(acc: Mapping[Key, float], head: ByK, design: FewShotDesign) -> FinalRun | None:
    scores = sorted(
        (i, v)
        for (s, _, i, h, p), v in acc.items()
        if s == "final" and h == head.selected and p == "test"
    )
    if not scores:
        return None
    vals = [v for _, v in scores]
    seed0 = design.seed
    return FinalRun(
        hparams_id=head.selected,
        seeds=[seed0 + i for i, _ in scores],
        test_scores=vals,
        test_mean=_mean(vals),
        test_std=_std(vals),
    )
