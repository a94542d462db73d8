"""Repeated samples per item (``generation.n_samples``): the reducers, where the variation
comes from (item, condition, their interaction, sampling), and paired comparisons between
models on per-item sample means (the items are the units, never the samples)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from .. import stats
from ..document import Block, Column, Note, Paragraph, Section, Table
from ._context import ReportContext

__all__ = ["item_sample_means", "rerun_agreement", "samples_for_sign", "samples_section"]

#: The standard error of a model's accuracy from sampling alone that the report asks how
#: many samples per item would reach (1 percentage point).
TARGET_RERUN_SE = 0.01


def item_sample_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, condition, item): the mean of ``correct`` over its samples, the number
    of scored samples and their variance (ddof 1; NaN for one sample)."""
    scored = frame.loc[frame["correct"].notna()]
    grouped = scored.groupby(["model", "condition", "item_id"], sort=False)["correct"]
    out = grouped.agg(["mean", "count", "var"]).reset_index()
    out.columns = ["model", "condition", "item_id", "mean", "n", "var"]
    return out


def rerun_agreement(difference: float, se_sampling: float) -> float:
    """The chance that a rerun of the sampling (same items and conditions, new samples)
    gives a difference of the same sign: ``Φ(|d| / (√2 · se))``, the observed difference
    ``d`` and its sampling-only standard error ``se`` (the rerun's difference has the
    observed one's spread twice over). 1 when sampling adds no noise and ``d ≠ 0``."""
    if math.isnan(difference) or math.isnan(se_sampling) or difference == 0:
        return math.nan
    if se_sampling == 0:
        return 1.0
    return float(sps.norm.cdf(abs(difference) / (math.sqrt(2) * se_sampling)))


def samples_for_sign(difference: float, within: float, n_items: int) -> Any:
    """Samples per item (and model) that bring the sampling SE of a paired difference to
    half the difference (a rerun then keeps its sign 92% of the time): ``within`` is the
    sum over items of both models' within-item variances, so the SE with K samples is
    ``sqrt(within / K) / n_items``. A remark where the difference is 0 or unknown."""
    if math.isnan(difference) or difference == 0:
        return "no difference"
    target = abs(difference) / 2
    return max(1, math.ceil(within / (n_items * target) ** 2))


def _reducers(ctx: ReportContext, means: pd.DataFrame) -> list[tuple[Any, ...]]:
    scored = ctx.frame.loc[ctx.frame["correct"].notna()]
    # each (model, condition)'s rows found once, not by a mask over the table per group
    where = scored.groupby(["model", "condition"], sort=False).indices
    parsed = np.asarray(ctx.table.column("parsed").to_pylist(), dtype=object)
    rows = []
    conf = ctx.options.confidence
    for (model, cond), g in means.groupby(["model", "condition"], sort=False):
        k = int(g["n"].max())
        if k < 2:
            continue
        sub = scored.iloc[where[(model, cond)]]
        mean = stats.quietly(stats.clt_se, g["mean"].to_numpy(float))
        half = float(sps.norm.ppf(0.5 + conf / 2)) * mean.se if len(g) > 1 else math.nan
        vote: Any = "–"
        try:
            mv = stats.quietly(
                stats.majority_vote,
                sub["item_id"].to_numpy(object),
                parsed[sub.index.to_numpy()],
                sub["correct"].to_numpy(float),
            )
            vote = float(np.mean(mv.correct))
        except stats.StatsInputError:
            vote = "answers disagree on correctness"
        full = g.loc[g["n"] == k]
        passk = stats.pass_at_k(full["n"].to_numpy(int), np.rint(full["mean"] * full["n"]), k)
        rows.append(
            (
                model,
                ctx.label(str(cond)),
                len(g),
                k,
                (mean.mean, max(0.0, mean.mean - half), min(1.0, mean.mean + half)),
                vote,
                float(np.mean(passk)),
                len(full),
            )
        )
    return rows


def _part(c: stats.VarianceComponent) -> str:
    """A component as the table shows it: its share of the total variance, then the
    variance with its interval."""
    if math.isnan(c.estimate):
        return "not identified (one sample per cell)"
    if math.isnan(c.share):  # every answer the same: nothing to split
        return "no variation"
    share = f"{100 * c.share:.0f}%"
    return f"{share}: {c.estimate:.4f} [{c.low:.4f}, {c.high:.4f}]"


def _sampled(means: pd.DataFrame, model: str) -> set[str]:
    """The conditions under which ``model`` answered some item more than once (greedy or
    single-sample conditions would count their one answer as a sample, and the gap between
    greedy and sampled decoding as condition variance)."""
    mine = means.loc[means["model"] == model]
    return set(mine.loc[mine.groupby("condition")["n"].transform("max") >= 2, "condition"])


def _decomposition(
    ctx: ReportContext, means: pd.DataFrame
) -> tuple[list[tuple[Any, ...]], list[str], list[str]]:
    frame = ctx.frame.loc[ctx.frame["correct"].notna()]
    rows, skipped, notes = [], [], []
    for model in ctx.models:
        sampled = _sampled(means, model)
        sub = frame.loc[(frame["model"] == model) & frame["condition"].isin(sampled)]
        if sub["item_id"].nunique() < 2 or sub["condition"].nunique() < 2:
            skipped.append(model)
            continue
        vc = stats.quietly(
            stats.variance_components,
            sub["correct"].to_numpy(float),
            sub["item_id"].to_numpy(object),
            sub["condition"].to_numpy(object),
            confidence=ctx.options.confidence,
            n_resamples=ctx.options.n_resamples,
            seed=ctx.options.seed,
        )
        dropped = vc.n_resamples - vc.n_valid_resamples
        if dropped:
            notes.append(
                f"{model}: {dropped} of {vc.n_resamples} bootstrap resamples drew a single "
                "item or condition and were left out of the intervals (few conditions make "
                "the condition interval wide)."
            )
        k = max(1, round(vc.samples_per_cell))
        se = stats.projected_se(vc, vc.n_items, vc.n_conditions, k)
        need = stats.samples_needed(vc, vc.n_items, vc.n_conditions, TARGET_RERUN_SE, scope="rerun")

        rows.append(
            (
                model,
                vc.n_items,
                vc.n_conditions,
                round(vc.samples_per_cell, 2),
                *(_part(c) for c in vc.components),
                se.se_sampling,
                se.se,
                need.n_samples if need.n_samples is not None else need.message,
            )
        )
    return rows, skipped, notes


def _pairs(ctx: ReportContext, means: pd.DataFrame) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    if len(ctx.models) < 2:
        return rows
    ref = ctx.models[0]
    for other in ctx.models[1:]:
        for cond in ctx.conditions:
            a = means.loc[(means["model"] == ref) & (means["condition"] == cond)]
            b = means.loc[(means["model"] == other) & (means["condition"] == cond)]
            both = a.merge(b, on="item_id", suffixes=("_a", "_b"))
            if len(both) < 2 or max(both["n_a"].max(), both["n_b"].max()) < 2:
                continue
            diff = stats.quietly(
                stats.paired_difference,
                both["mean_b"].to_numpy(float),
                both["mean_a"].to_numpy(float),
                confidence=ctx.options.confidence,
            )
            var = both["var_a"].fillna(0) / both["n_a"] + both["var_b"].fillna(0) / both["n_b"]
            se_sampling = math.sqrt(float(var.sum())) / len(both)
            within = float((both["var_a"].fillna(0) + both["var_b"].fillna(0)).sum())
            rows.append(
                (
                    f"{other} − {ref}",
                    ctx.label(cond),
                    len(both),
                    (diff.estimate, diff.low, diff.high),
                    diff.pvalue,
                    se_sampling,
                    rerun_agreement(float(diff.estimate), se_sampling),
                    samples_for_sign(float(diff.estimate), within, len(both)),
                )
            )
    return rows


def _reducer_blocks(ctx: ReportContext, means: pd.DataFrame, pct: str) -> list[Block]:
    return [
        Paragraph(
            "Each item was answered several times (generation.n_samples). Accuracy is the "
            "mean over items of each item's mean over its samples, with an interval over "
            "items; majority vote scores each item's most frequent answer (unmatched "
            "answers do not vote); pass@k is the unbiased estimator of Chen et al. (2021) "
            "with k = the samples per item, over the items that have them all."
        ),
        Table(
            title="Accuracy over samples, per model and condition",
            columns=(
                Column("model"),
                Column("condition"),
                Column("items", "int"),
                Column("samples per item", "int"),
                Column(f"mean accuracy [{pct}]", "pct_ci"),
                Column("majority vote", "pct"),
                Column("pass@k (k = samples)", "pct"),
                Column("items with all samples", "int"),
            ),
            rows=tuple(_reducers(ctx, means)),
        ),
    ]


def _decomposition_blocks(ctx: ReportContext, means: pd.DataFrame, pct: str) -> list[Block]:
    rows, skipped, notes = _decomposition(ctx, means)
    blocks: list[Block] = []
    if rows:
        blocks += [
            Paragraph(
                "Where the variation in correctness comes from, per model, over its items and "
                "the conditions it answered several times: each part's share of the total "
                "variance, then the variance "
                f"itself with its {pct} interval (moment estimates, truncated at 0; "
                "pigeonhole bootstrap over items and conditions: "
                "steadyeval.stats.variance_components). The SE on a rerun is the standard "
                "error of the model's accuracy from sampling alone (same items and "
                "conditions, new samples): it answers whether a ranking would survive "
                "another sampling run; the SE over fresh items and conditions adds what "
                "another draw of them would change. The last column is the samples per "
                f"item a rerun SE of {100 * TARGET_RERUN_SE:g} point needs."
            ),
            Table(
                title="Variance decomposition",
                columns=(
                    Column("model"),
                    Column("items", "int"),
                    Column("conditions", "int"),
                    Column("samples per cell"),
                    Column(f"item: share, variance [{pct}]"),
                    Column(f"condition [{pct}]"),
                    Column(f"item × condition [{pct}]"),
                    Column(f"sampling [{pct}]"),
                    Column("SE on a rerun", "float"),
                    Column("SE over fresh items and conditions", "float"),
                    Column(f"samples for a rerun SE of {TARGET_RERUN_SE:g}", "int"),
                ),
                rows=tuple(rows),
            ),
        ]
    if skipped:
        blocks.append(
            Note(
                f"No decomposition for {', '.join(skipped)}: it needs two items and two "
                "conditions with several samples per item."
            )
        )
    blocks += [Note(n) for n in notes]
    return blocks


def _pair_blocks(ctx: ReportContext, means: pd.DataFrame, pct: str) -> list[Block]:
    pairs = _pairs(ctx, means)
    if not pairs:
        return []
    return [
        Paragraph(
            "Paired differences between models on the per-item sample means (one value "
            "per item and model, so the samples of an item are not counted as separate "
            "units). 'Same sign on a rerun' is the chance that new samples of the same "
            "items give a difference of the same sign; the last column is the samples per "
            "item the comparison needs for sampling noise of half the difference."
        ),
        Table(
            title="Paired comparisons over per-item sample means",
            columns=(
                Column("difference"),
                Column("condition"),
                Column("items", "int"),
                Column(f"difference [{pct}]", "diff_ci"),
                Column("p", "pvalue"),
                Column("sampling SE", "float"),
                Column("same sign on a rerun", "pct"),
                Column("samples for a sampling SE of |difference| / 2", "int"),
            ),
            rows=tuple(pairs),
        ),
    ]


def samples_section(ctx: ReportContext) -> Section | None:
    """Shown when some model answered some condition's items more than once."""
    means = item_sample_means(ctx.frame)
    if means.empty or means["n"].max() < 2:
        return None
    pct = f"{100 * ctx.options.confidence:g}%"
    blocks = [
        *_reducer_blocks(ctx, means, pct),
        *_decomposition_blocks(ctx, means, pct),
        *_pair_blocks(ctx, means, pct),
    ]
    return Section.of("samples", "Repeated samples", blocks)
