"""FewNLU's criteria, computed from the results table alone.

Per experiment (task × method), for each strategy and K: the task's score (accuracy; CB and
MultiRC their FewNLU metric, see :mod:`._metrics`) of every (setting, split, part); per
setting the mean dev and mean test score over the K splits; the chosen setting (highest mean dev, the
grid's first on ties); its K test accuracies (mean ± sample std); the oracle (best mean test)
and the regret; the Spearman correlation of mean dev and mean test across the grid. Across
K: how the chosen setting's test accuracy and the correlation move.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..._errors import ConfigError
from ...stats import StatsInputError, spearman
from ._compare import compare_methods
from ._metrics import task_metric, task_scores

__all__ = ["analyze", "select"]

_COLUMNS = ("strategy", "n_splits", "split_index", "hparams_id", "part", "correct")


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


def _scores(table: pa.Table, info: Mapping[str, Any]) -> dict[str, dict[Key, float]]:
    """Per experiment (``TASK/METHOD``): the task's score of every (strategy, K, split,
    setting, part) (accuracy, or CB's / MultiRC's mean of parts)."""
    n = table.num_rows
    cols = {c: table.column(c).to_pylist() for c in _COLUMNS}
    tasks = (
        table.column("task").to_pylist()
        if "task" in table.column_names
        else [info.get("task", "")] * n
    )
    methods = (
        table.column("method").to_pylist()
        if "method" in table.column_names
        else [info.get("method", "")] * n
    )
    preds = (
        table.column("parsed_option").to_pylist()
        if "parsed_option" in table.column_names
        else [None] * n
    )
    golds = (
        [g[0] if g else -1 for g in table.column("gold_options").to_pylist()]
        if "gold_options" in table.column_names
        else [-1] * n
    )
    meta = table.column("metadata").to_pylist() if "metadata" in table.column_names else [None] * n
    rows: dict[tuple[str, Key], list[int]] = defaultdict(list)
    for r in range(n):
        key = (
            cols["strategy"][r],
            int(cols["n_splits"][r]),
            int(cols["split_index"][r]),
            cols["hparams_id"][r],
            cols["part"][r],
        )
        rows[(f"{tasks[r]}/{methods[r]}", key)].append(r)
    out: dict[str, dict[Key, float]] = defaultdict(dict)
    for (exp, key), idx in rows.items():
        task = exp.split("/", 1)[0]
        if task_metric(task).parts == ("accuracy",):
            # null counts as wrong
            out[exp][key] = sum(1 for r in idx if cols["correct"][r]) / len(idx)
            continue
        p = [preds[r] if cols["correct"][r] is not None else None for r in idx]
        groups = [str(json.loads(meta[r] or "{}").get("group", r)) for r in idx]
        out[exp][key] = task_scores(task, p, [golds[r] for r in idx], groups)["score"]
    return dict(out)


def _by_k(
    acc: Mapping[Key, float],
    strategy: str,
    k: int,
    grid: Sequence[Mapping[str, Any]],
) -> dict[str, Any] | None:
    splits = sorted({i for (s, kk, i, _, _) in acc if s == strategy and kk == k})
    if not splits:
        return None
    rows = []
    for g in grid:
        dev = [acc[key] for i in splits if (key := (strategy, k, i, g["id"], "dev")) in acc]
        test = [acc[key] for i in splits if (key := (strategy, k, i, g["id"], "test")) in acc]
        rows.append(
            {
                "id": g["id"],
                "hparams": g["hparams"],
                "dev_scores": dev,
                "test_scores": test,
                "dev_mean": _mean(dev),
                "dev_std": _std(dev),
                "test_mean": _mean(test),
                "test_std": _std(test),
            }
        )
    chosen = rows[select([r["dev_mean"] for r in rows])]
    oracle = max(r["test_mean"] for r in rows)
    rho, p, note = _correlation([r["dev_mean"] for r in rows], [r["test_mean"] for r in rows])
    return {
        "k": k,
        "n_splits": len(splits),
        "grid": rows,
        "selected": chosen["id"],
        "selected_hparams": chosen["hparams"],
        "dev_mean": chosen["dev_mean"],
        "test_mean": chosen["test_mean"],
        "test_std": chosen["test_std"],
        "test_scores": chosen["test_scores"],
        "oracle_test_mean": oracle,
        "regret": oracle - chosen["test_mean"],
        "spearman": rho,
        "spearman_p": p,
        "spearman_note": note,
    }


def _spread(values: Sequence[float]) -> tuple[float, float]:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return math.nan, math.nan
    return max(vals) - min(vals), float(np.std(vals))


def analyze(table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
    """FewNLU's three criteria per experiment and strategy, and the methods side by side.

    Parameters
    ----------
    table : pyarrow.Table
        Rows with ``strategy``, ``n_splits``, ``split_index``, ``hparams_id``, ``part``,
        ``correct`` (and ``task``, ``method``, ``parsed_option``, ``gold_options``) columns,
        as the study writes them.
    info : mapping
        The design: ``experiments`` (``[{"key", "task", "method", "grid"}]``, each grid
        ``[{"id", "hparams"}]`` in grid order), ``strategies``, ``k`` (the main K) and
        ``k_values``.

    Returns
    -------
    dict
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
    sample std (ddof=1) over the K splits. Spearman's rho is NaN (with a note) when the grid
    has fewer than 3 settings or the dev or test means are constant across the grid.
    """
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ConfigError(
            f"the results table lacks the column(s) {', '.join(missing)}; "
            "it was not written by the few-shot study"
        )
    scores = _scores(table, info)
    main = int(info["k"])
    experiments = info.get("experiments") or [
        {
            "key": f"{info.get('task', '')}/{info.get('method', '')}",
            "task": info.get("task", ""),
            "method": info.get("method", ""),
            "grid": info["grid"],
        }
    ]
    out: dict[str, Any] = {}
    side: list[dict[str, Any]] = []
    for e in experiments:
        res = _experiment(scores.get(e["key"], {}), e["grid"], info)
        res["metric"] = task_metric(e["task"]).name
        out[e["key"]] = res
        side += [{"task": e["task"], "method": e["method"], **r} for r in res["side_by_side"]]
    first = out[experiments[0]["key"]]
    result: dict[str, Any] = {
        "metric": first["metric"],
        "k": main,
        # The first experiment's criteria at the top, as one-task one-method runs always had.
        "strategies": first["strategies"],
        "experiments": out,
        "side_by_side": side,
    }
    result["methods"] = compare_methods(out, experiments, info)
    return result


def _experiment(
    acc: Mapping[Key, float], grid: Sequence[Mapping[str, Any]], info: Mapping[str, Any]
) -> dict[str, Any]:
    """One experiment's criteria per strategy (see :func:`analyze`)."""
    main = int(info["k"])
    strategies: dict[str, Any] = {}
    side = []
    for strategy in info["strategies"]:
        by_k = {}
        for k in sorted({int(k) for k in info["k_values"]} | {main}):
            res = _by_k(acc, strategy, k, grid)
            if res is not None:
                by_k[str(k)] = res
        stability, t_range, r_range = _stability(by_k)
        head = by_k.get(str(main))
        final = _final(acc, head, info) if head is not None else None
        strategies[strategy] = {"by_k": by_k, "stability": stability, "final": final}
        if head is not None:
            side.append(
                {
                    "strategy": strategy,
                    "k": main,
                    "selected": head["selected"],
                    "selected_hparams": head["selected_hparams"],
                    "dev_mean": head["dev_mean"],
                    "test_mean": head["test_mean"],
                    "test_std": head["test_std"],
                    "test_scores": head["test_scores"],
                    "oracle_test_mean": head["oracle_test_mean"],
                    "regret": head["regret"],
                    "spearman": head["spearman"],
                    "test_range_over_k": t_range,
                    "spearman_range_over_k": r_range,
                    "final_test_mean": final["test_mean"] if final else None,
                    "final_test_std": final["test_std"] if final else None,
                }
            )
    return {"strategies": strategies, "side_by_side": side}


def _stability(by_k: Mapping[str, Any]) -> tuple[dict[str, Any], float, float]:
    ks = sorted(int(k) for k in by_k)
    tests = [by_k[str(k)]["test_mean"] for k in ks]
    rhos = [by_k[str(k)]["spearman"] for k in ks]
    t_range, t_sd = _spread(tests)
    r_range, r_sd = _spread(rhos)
    stability = {
        "k_values": ks,
        "selected": [by_k[str(k)]["selected"] for k in ks],
        "test_means": tests,
        "spearmans": rhos,
        "test_range": t_range,
        "test_sd": t_sd,
        "spearman_range": r_range,
        "spearman_sd": r_sd,
        "same_selection": len({by_k[str(k)]["selected"] for k in ks}) <= 1,
    }
    return stability, t_range, r_range


def _final(
    acc: Mapping[Key, float], head: Mapping[str, Any], info: Mapping[str, Any]
) -> dict[str, Any] | None:
    scores = sorted(
        (i, v)
        for (s, _, i, h, p), v in acc.items()
        if s == "final" and h == head["selected"] and p == "test"
    )
    if not scores:
        return None
    vals = [v for _, v in scores]
    seed0 = int(info.get("seed", 0))
    return {
        "hparams_id": head["selected"],
        "seeds": [seed0 + i for i, _ in scores],
        "test_scores": vals,
        "test_mean": _mean(vals),
        "test_std": _std(vals),
    }
