"""The few-shot study's report sections (and so its part of ``summary.md``): strategies side by
side, stability as K changes, every setting of the grid, notes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...reports import Bar, BarChart, Column, Note, Paragraph, Section, Table

__all__ = ["fewshot_report_sections", "hparams_label"]

SOURCE = "fewshot study"


def hparams_label(hparams: Mapping[str, Any], grid: Sequence[Mapping[str, Any]]) -> str:
    """``name=value`` for the settings that vary across the grid (all of them if none do)."""
    varying = [k for k in hparams if len({repr(g["hparams"].get(k)) for g in grid}) > 1]
    keys = varying or list(hparams)
    return ", ".join(f"{k}={hparams[k]}" for k in keys)


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def _side_by_side(
    analysis: Mapping[str, Any], info: Mapping[str, Any], labels: Mapping[str, str]
) -> Table:
    rows = tuple(
        (
            r["strategy"],
            labels.get(r["selected"], r["selected"]),
            _num(r["dev_mean"]),
            _num(r["test_mean"]),
            _num(r["test_std"]),
            _num(r["oracle_test_mean"]),
            _num(r["spearman"]),
            _num(r["test_range_over_k"]),
            _num(r["spearman_range_over_k"]),
            _num(r["final_test_mean"]),
            _num(r["final_test_std"]),
        )
        for r in analysis["side_by_side"]
    )
    columns = (
        Column("strategy"),
        Column("chosen setting"),
        Column("dev", "pct", "mean dev accuracy of the chosen setting"),
        Column("(1) test", "pct", "mean test accuracy of the chosen setting over the K splits"),
        Column("test std", "pct", "sample std of its K test accuracies"),
        Column("oracle test", "pct", "the best mean test accuracy any setting reached"),
        Column("(2) rho(dev, test)", "float", "Spearman of mean dev and mean test across settings"),
        Column("(3) test range over K", "pct"),
        Column("(3) rho range over K", "float"),
        Column("retrained test", "pct", "the chosen setting retrained on all labelled data"),
        Column("retrained std", "pct"),
    )
    return Table(f"Strategies side by side (K = {analysis['k']})", columns, rows)


def _stability(analysis: Mapping[str, Any], labels: Mapping[str, str]) -> Table:
    rows = tuple(
        (
            name,
            int(k),
            labels.get(res["selected"], res["selected"]),
            _num(res["test_mean"]),
            _num(res["test_std"]),
            _num(res["spearman"]),
        )
        for name, s in analysis["strategies"].items()
        for k, res in s["by_k"].items()
    )
    columns = (
        Column("strategy"),
        Column("K", "int"),
        Column("chosen setting"),
        Column("test", "pct"),
        Column("test std", "pct"),
        Column("rho(dev, test)", "float"),
    )
    return Table("Stability as K changes", columns, rows)


def _grid(analysis: Mapping[str, Any], info: Mapping[str, Any], labels: Mapping[str, str]) -> Table:
    k = str(analysis["k"])
    names = [n for n, s in analysis["strategies"].items() if k in s["by_k"]]
    rows = []
    for g in info["grid"]:
        cells: list[Any] = [labels[g["id"]]]
        chosen = []
        for n in names:
            res = analysis["strategies"][n]["by_k"][k]
            row = next(r for r in res["grid"] if r["id"] == g["id"])
            cells += [_num(row["dev_mean"]), _num(row["test_mean"])]
            if res["selected"] == g["id"]:
                chosen.append(n)
        rows.append((*cells, ", ".join(chosen)))
    columns = (
        Column("setting"),
        *(Column(f"{n} {part}", "pct") for n in names for part in ("dev", "test")),
        Column("chosen by"),
    )
    return Table(f"Every setting (K = {k}): mean dev and mean test accuracy", columns, tuple(rows))


def _notes(analysis: Mapping[str, Any], info: Mapping[str, Any]) -> list[Note]:
    notes = [
        Note(f"{name}, K={k}: {res['spearman_note']}")
        for name, s in analysis["strategies"].items()
        for k, res in s["by_k"].items()
        if res.get("spearman_note")
    ]
    notes += [
        Note(f"{s['strategy']}, K={s['k']} skipped: {s['reason']}", "warning")
        for s in info.get("skipped_k", [])
    ]
    return notes


def fewshot_report_sections(
    analysis: Mapping[str, Any], info: Mapping[str, Any], *, figures: bool = True
) -> list[Section]:
    """The study's sections from :func:`analyze`' result and the design facts."""
    grid = list(info["grid"])
    labels = {g["id"]: hparams_label(g["hparams"], grid) for g in grid}
    intro = Paragraph(
        f"Few-shot evaluation protocols: {info['task']} × {info['method']} on {info['model']}; "
        f"{info['n_labelled']} labelled items "
        f"({'grouped' if info.get('groups') else 'ungrouped'}), {info['n_test']} test items; "
        f"{len(grid)} hyperparameter settings; seed {info['seed']}; Multi-Splits ratio "
        f"{info['ratio']}. The setting is chosen by mean dev accuracy over the K splits. "
        "(1) test accuracy of the chosen setting, mean and std over its K test scores, with the "
        "best any setting reached (oracle); (2) Spearman's rho between mean dev and mean test "
        "accuracy across the settings; (3) how far the chosen setting's test accuracy and rho "
        f"move over K = {', '.join(map(str, info['k_values']))}."
    )
    main: list[Any] = [intro, _side_by_side(analysis, info, labels)]
    if figures and analysis["side_by_side"]:
        bars = tuple(
            Bar(r["strategy"], _num(r["test_mean"]), n=int(analysis["k"]))
            for r in analysis["side_by_side"]
        )
        main.append(BarChart("Test accuracy of the chosen setting", bars))
    # A setting's condition (seed 0) is METHOD-ID for every built-in method: the report then
    # shows that condition by the setting's label everywhere (a label of a condition the run
    # does not have is not used).
    shown = {f"{info['method']}-{sid}": label for sid, label in labels.items()}
    stability = _stability(analysis, labels)
    sections = [
        Section.of("fewshot-strategies", "Split strategies side by side", main, SOURCE, shown),
        Section.of("fewshot-stability", "Stability as K changes", [stability], SOURCE, shown),
        Section.of("fewshot-grid", "Every setting", [_grid(analysis, info, labels)], SOURCE, shown),
    ]
    notes = _notes(analysis, info)
    if notes:
        sections.append(Section.of("fewshot-notes", "Notes", notes, SOURCE))
    return sections
