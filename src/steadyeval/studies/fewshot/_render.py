"""The few-shot study's ``summary.md``: strategies side by side, stability over K, the grid."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["hparams_label", "render"]


def _pct(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _pm(mean: Any, sd: Any) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    if sd is None or (isinstance(sd, float) and math.isnan(sd)):
        return _pct(mean)
    return f"{_pct(mean)} ± {_pct(sd)}"


def _rho(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.3f}"


def _num(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def hparams_label(hparams: Mapping[str, Any], grid: Sequence[Mapping[str, Any]]) -> str:
    """``name=value`` for the settings that vary across the grid (all of them if none do)."""
    varying = [k for k in hparams if len({repr(g["hparams"].get(k)) for g in grid}) > 1]
    keys = varying or list(hparams)
    return ", ".join(f"{k}={hparams[k]}" for k in keys)


def render(analysis: Mapping[str, Any], info: Mapping[str, Any]) -> str:
    """Markdown for ``summary.md``."""
    grid = list(info["grid"])
    labels = {g["id"]: hparams_label(g["hparams"], grid) for g in grid}
    k = analysis["k"]
    lines = [
        f"# Few-shot evaluation protocols: {info['task']} × {info['method']}",
        "",
        f"Model `{info['model']}`; {info['n_labelled']} labelled items "
        f"({'grouped' if info.get('groups') else 'ungrouped'}), {info['n_test']} test items; "
        f"{len(grid)} hyperparameter settings; seed {info['seed']}; Multi-Splits ratio "
        f"{info['ratio']}. Scores are accuracy in %.",
        "",
        f"## Strategies side by side (K = {k})",
        "",
        "The setting is chosen by mean dev accuracy over the K splits. (1) test accuracy of "
        "the chosen setting, mean ± std over its K test scores, with the best any setting "
        "reached (oracle); (2) Spearman's rho between mean dev and mean test accuracy across "
        "the settings; (3) how far the chosen setting's test accuracy and rho move over K = "
        f"{', '.join(map(str, info['k_values']))}.",
        "",
        "| strategy | chosen setting | dev | (1) test | oracle test | (2) rho(dev, test) "
        "| (3) test range over K | (3) rho range over K | retrained on all |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in analysis["side_by_side"]:
        lines.append(
            f"| {row['strategy']} | {labels.get(row['selected'], row['selected'])} "
            f"| {_pct(row['dev_mean'])} | {_pm(row['test_mean'], row['test_std'])} "
            f"| {_pct(row['oracle_test_mean'])} | {_rho(row['spearman'])} "
            f"| {_pct(row['test_range_over_k'])} | {_num(row['spearman_range_over_k'])} "
            f"| {_pm(row['final_test_mean'], row['final_test_std'])} |"
        )
    lines += [
        "",
        "## Stability as K changes",
        "",
        "| strategy | K | chosen setting | test | rho(dev, test) |",
        "|---|---:|---|---:|---:|",
    ]
    notes = []
    for name, s in analysis["strategies"].items():
        for kk, res in s["by_k"].items():
            lines.append(
                f"| {name} | {kk} | {labels.get(res['selected'], res['selected'])} "
                f"| {_pm(res['test_mean'], res['test_std'])} | {_rho(res['spearman'])} |"
            )
            if res.get("spearman_note"):
                notes.append(f"{name}, K={kk}: {res['spearman_note']}")
    lines += ["", f"## Every setting (K = {k}): mean dev / mean test", ""]
    names = [n for n, s in analysis["strategies"].items() if str(k) in s["by_k"]]
    lines.append("| setting | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for g in grid:
        cells = []
        for n in names:
            res = analysis["strategies"][n]["by_k"][str(k)]
            row = next(r for r in res["grid"] if r["id"] == g["id"])
            mark = " *" if res["selected"] == g["id"] else ""
            cells.append(f"{_pct(row['dev_mean'])} / {_pct(row['test_mean'])}{mark}")
        lines.append(f"| {labels[g['id']]} | " + " | ".join(cells) + " |")
    lines += ["", "`*` marks the chosen setting."]
    for s in info.get("skipped_k", []):
        notes.append(f"{s['strategy']}, K={s['k']} skipped: {s['reason']}")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"
