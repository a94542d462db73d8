"""The few-shot study's report sections (and so its part of ``summary.md``): strategies side by
side, stability as K changes, every setting of the grid, notes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...document import Bar, BarChart, Column, Note, Paragraph, Section, Table
from ...items import shorten
from ._report_methods import methods_section
from ._types import (
    FewShotAnalysis,
    FewShotDesign,
    FewShotDesignExperiment,
    FewShotExperiment,
    GridPoint,
    StrategyRow,
)

__all__ = ["fewshot_report_sections", "hparams_label"]

SOURCE = "fewshot study"


def hparams_label(hparams: Mapping[str, Any], grid: Sequence[GridPoint]) -> str:
    """``name=value`` for the settings that vary across the grid (all of them if none do)."""
    varying = [k for k in hparams if len({repr(g.hparams.get(k)) for g in grid}) > 1]
    keys = varying or list(hparams)
    return ", ".join(f"{k}={hparams[k]}" for k in keys)


def _num(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _side_by_side(rows_in: Sequence[StrategyRow], k: int, labels: Mapping[str, str]) -> Table:
    rows = tuple(
        (
            r.strategy,
            labels.get(r.selected, r.selected),
            _num(r.dev_mean),
            _num(r.test_mean),
            _num(r.test_std),
            _num(r.oracle_test_mean),
            _num(r.spearman),
            _num(r.test_range_over_k),
            _num(r.spearman_range_over_k),
            _num(r.final_test_mean),
            _num(r.final_test_std),
        )
        for r in rows_in
    )
    columns = (
        Column("strategy"),
        Column("chosen setting"),
        Column("dev", "pct", "mean dev score of the chosen setting"),
        Column("(1) test", "pct", "mean test score of the chosen setting over the K splits"),
        Column("test std", "pct", "sample std of its K test accuracies"),
        Column("oracle test", "pct", "the best mean test score any setting reached"),
        Column("(2) rho(dev, test)", "float", "Spearman of mean dev and mean test across settings"),
        Column("(3) test range over K", "pct"),
        Column("(3) rho range over K", "float"),
        Column("retrained test", "pct", "the chosen setting retrained on all labelled data"),
        Column("retrained std", "pct"),
    )
    return Table(f"Strategies side by side (K = {k})", columns, rows)


def _stability(exp: FewShotExperiment, labels: Mapping[str, str]) -> Table:
    rows = tuple(
        (
            name,
            res.k,
            labels.get(res.selected, res.selected),
            _num(res.test_mean),
            _num(res.test_std),
            _num(res.spearman),
        )
        for name, s in exp.strategies.items()
        for res in s.by_k.values()
    )
    columns = (
        Column("strategy"),
        Column("K", "int"),
        Column("chosen setting"),
        Column("test", "pct"),
        Column("test std", "pct"),
        Column("rho(dev, test)", "float"),
    )
    return Table("Chosen setting and its test score at each K", columns, rows)


def _grid(
    exp: FewShotExperiment, k: int, design: FewShotDesignExperiment, labels: Mapping[str, str]
) -> Table:
    at_k = {n: s.by_k[str(k)] for n, s in exp.strategies.items() if str(k) in s.by_k}
    names = list(at_k)
    rows = []
    for g in design.grid:
        cells: list[Any] = [labels[g.id]]
        chosen = []
        for n, res in at_k.items():
            row = next(r for r in res.grid if r.id == g.id)
            cells += [_num(row.dev_mean), _num(row.test_mean)]
            if res.selected == g.id:
                chosen.append(n)
        rows.append((*cells, ", ".join(chosen)))
    columns = (
        Column("setting"),
        *(Column(f"{n} {part}", "pct") for n in names for part in ("dev", "test")),
        Column("chosen by"),
    )
    return Table(f"Every setting (K = {k}): mean dev and mean test score", columns, tuple(rows))


def _sensitivity(exp: FewShotExperiment, k: int, labels: Mapping[str, str]) -> Table:
    rows = []
    for name, s in exp.strategies.items():
        if str(k) not in s.by_k:
            continue
        chosen = s.by_k[str(k)].selected
        for i, f in enumerate(s.sensitivity):
            rows.append(
                (
                    name if i == 0 else "",  # a strategy's name and setting once, on its first row
                    labels.get(chosen, chosen) if i == 0 else "",
                    f.factor,
                    shorten(", ".join(str(v) for v in f.values), 60),
                    _num(f.dev_std),
                    _num(f.test_std),
                    f.note or "",
                )
            )
    columns = (
        Column("strategy"),
        Column("chosen setting"),
        Column("factor"),
        Column("values", help="the factor's values, the others at the chosen setting's"),
        Column("dev std", "pct", "sample std over the factor's values of the mean dev score"),
        Column("test std", "pct", "the same on the test set"),
        Column("note"),
    )
    return Table(f"Per-factor sensitivity (K = {k}; FewNLU's Table 4)", columns, tuple(rows))


def _notes(analysis: FewShotAnalysis, info: FewShotDesign) -> list[Note]:
    notes = [
        Note(f"{key}: {name}, K={k}: {res.spearman_note}")
        for key, exp in analysis.experiments.items()
        for name, s in exp.strategies.items()
        if name != "fixed"  # the intro says why the fixed strategy has no rho
        for k, res in s.by_k.items()
        if res.spearman_note
    ]
    notes += [
        Note(f"{s.task or info.task}: {s.strategy}, K={s.k} skipped: {s.reason}", "warning")
        for s in info.skipped_k
    ]
    notes += [Note(f"{p.a} vs {p.b}: {p.note}") for p in analysis.methods.paired if p.note]
    return notes


def _experiment_sections(
    exp: FewShotExperiment,
    design: FewShotDesignExperiment,
    info: FewShotDesign,
    k: int,
    *,
    figures: bool,
    suffix: str,
) -> list[Section]:
    grid = list(design.grid)
    labels = {g.id: hparams_label(g.hparams, grid) for g in grid}
    intro = Paragraph(
        f"Few-shot evaluation protocols: {design.task} × {design.method} on "
        f"{info.model}; {_count(design.n_labelled)} labelled items "
        f"({'grouped' if design.groups else 'ungrouped'}), {_count(design.n_test)} test "
        f"items; {len(grid)} hyperparameter settings; seed {info.seed}; Multi-Splits ratio "
        f"{info.ratio}. Metric: {exp.metric}. The setting is chosen by "
        "mean dev score over the K splits. (1) test score of the chosen setting, mean and std "
        "over its K test scores, with the best any setting reached (oracle); (2) Spearman's "
        "rho between mean dev and mean test score across the settings; (3) how far the chosen "
        f"setting's test score and rho move over K = {', '.join(map(str, info.k_values))}."
        + _fixed_note(info, design, labels)
        + _unlabelled_note(design)
    )
    main: list[Any] = [intro, _side_by_side(exp.side_by_side, k, labels)]
    if figures and exp.side_by_side:
        bars = tuple(Bar(r.strategy, _num(r.test_mean), n=k) for r in exp.side_by_side)
        main.append(BarChart("Test score of the chosen setting", bars))
    # A setting's condition (seed 0) is METHOD-TASK-ID for every method: the report then shows
    # that condition by the setting's label everywhere (a label of a condition the run does
    # not have is not used).
    task = design.task.lower()
    head = f"{design.task} {design.method}: " if suffix else ""
    shown = {f"{design.method}-{task}-{sid}": head + label for sid, label in labels.items()}
    title = f" ({design.task}, {design.method})" if suffix else ""
    stability = _stability(exp, labels)
    factors = Paragraph(
        "FewNLU's Table 4: the standard deviation of the score over the values of one factor, "
        "every other hyperparameter at the strategy's chosen setting; a hyperparameter's "
        "value scores the mean over the K splits; split: the chosen setting's K splits; "
        "seed (the training-sample order): the chosen setting retrained on all labelled "
        "data with --final-seeds seeds, or the fixed strategy's K seeds."
    )
    return [
        Section.of(
            f"fewshot-strategies{suffix}",
            f"Split strategies side by side{title}",
            main,
            SOURCE,
            shown,
        ),
        Section.of(
            f"fewshot-stability{suffix}",
            f"Stability as K changes{title}",
            [stability],
            SOURCE,
            shown,
        ),
        Section.of(
            f"fewshot-sensitivity{suffix}",
            f"Per-factor sensitivity{title}",
            [factors, _sensitivity(exp, k, labels)],
            SOURCE,
            shown,
        ),
        Section.of(
            f"fewshot-grid{suffix}",
            f"Every setting{title}",
            [_grid(exp, k, design, labels)],
            SOURCE,
            shown,
        ),
    ]


def _fixed_note(
    info: FewShotDesign, design: FewShotDesignExperiment, labels: Mapping[str, str]
) -> str:
    if "fixed" not in info.strategies or design.fixed is None:
        return ""
    return (
        f" Fixed hyper-parameters (FewNLU's fix_setting): {labels.get(design.fixed, design.fixed)}"
        " chosen a priori, trained on all labelled data with K seeds, last step's weights (no "
        "dev part: no dev score, oracle, regret or rho)."
    )


def _count(n: int | None) -> str:
    return "" if n is None else str(n)


#: The unlabelled source of a transductive experiment (``_data.TRANSDUCTIVE``).
TEST_INPUTS = "test-inputs"


def _unlabelled_note(design: FewShotDesignExperiment) -> str:
    u = design.unlabelled
    if not u:
        return ""
    where = (
        "the test set's inputs without labels (--transductive)"
        if u.source == TEST_INPUTS
        else u.source
    )
    return f" Unlabelled examples: {u.available} from {where}."


def _transductive(info: FewShotDesign) -> list[Section]:
    """The report's first section when an experiment took its unlabelled examples from the
    test set's inputs (``--transductive``): it changes what the numbers mean."""
    used = [
        d.key
        for d in info.experiment_list
        if d.unlabelled is not None and d.unlabelled.source == TEST_INPUTS
    ]
    if not used:
        return []
    text = (
        f"Transductive run (--transductive): {', '.join(used)} used the test set's inputs "
        "(without their labels) as unlabelled examples, so their models saw the test inputs "
        "before being scored on them; their scores are not comparable with those of a run on "
        "separate unlabelled data (FewGLUE's unlabeled.jsonl)."
    )
    return [
        Section.of(
            "fewshot-transductive", "Transductive run", [Note(text, "warning")], SOURCE, lead=True
        )
    ]


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower())


def fewshot_report_sections(
    analysis: FewShotAnalysis, design: FewShotDesign | Mapping[str, Any], *, figures: bool = True
) -> list[Section]:
    """The study's sections from :func:`analyze`' result and the design facts (a
    :class:`FewShotDesign`, or the ``design`` of ``summary.json``): with several methods or
    tasks the methods side by side first, then each experiment's sections."""
    info = FewShotDesign.from_json(design, source="design")
    designs = info.experiment_list
    several = len(designs) > 1
    sections = _transductive(info)
    sections += [methods_section(analysis.methods, SOURCE)] if several else []
    for d in designs:
        exp = analysis.experiments[d.key]
        suffix = f"-{_slug(d.key)}" if several else ""
        sections += _experiment_sections(exp, d, info, analysis.k, figures=figures, suffix=suffix)
    notes = _notes(analysis, info)
    if notes:
        sections.append(Section.of("fewshot-notes", "Notes", notes, SOURCE))
    return sections
