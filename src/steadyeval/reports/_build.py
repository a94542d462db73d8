"""Build a :class:`Report` for any run directory: generic sections plus a study's own."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import ConfigError, DataError
from .._files import MAX_TEXT_BYTES, limit_from_env, read_text_file
from ..document import Note, Preformatted, Report, Section
from ..results import ResultsFrame, check_run_dir, read_results, study_columns, summary_markdown
from ._agreement import agreement_section
from ._context import ReportContext, ReportOptions, read_summary
from ._items import item_section
from ._samples import samples_section
from ._sections import (
    calibration_section,
    headline_section,
    rank_consistency_section,
    shots_section,
    spread_section,
)

if TYPE_CHECKING:
    from ..studies import Study

__all__ = [
    "build_report",
    "condition_labels",
    "context_from_table",
    "load_context",
    "study_sections",
]


def load_context(run_dir: str | Path, options: ReportOptions | None = None) -> ReportContext:
    """Read a run directory (``results.parquet`` and, when present, ``summary.json``)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise DataError("not a run directory (expected a folder)", file=str(path))
    if not (path / "results.parquet").exists():
        check_run_dir(path)  # a run that did not finish: say so, and how to resume it
        raise DataError(
            f"{path}: no results.parquet; pass a directory written by `steadyeval run`, "
            "a study, or `steadyeval import`"
        )
    return ReportContext(
        table=read_results(path),
        summary=read_summary(path),
        options=options or ReportOptions(),
        run_dir=path,
    )


def _facts(ctx: ReportContext) -> tuple[tuple[str, str], ...]:
    s = ctx.summary
    t = ctx.table
    n_items = pc.count_distinct(t["item_id"]).as_py() if t.num_rows else 0
    facts: list[tuple[str, str]] = []
    if s.get("run_id"):
        facts.append(("run", str(s["run_id"])))
    if ctx.study:
        facts.append(("study", ctx.study))
    imported = s.get("imported")
    if isinstance(imported, Mapping):
        facts.append(
            ("imported from", f"{imported.get('tool', '?')} ({imported.get('files', 0)} file(s))")
        )
        # what the import says of the logs: unfinished evals, epoch reducers, retries
        facts += [("import note", str(note)) for note in imported.get("notes") or []]
    facts += [
        ("rows", f"{t.num_rows:,}"),
        ("items", f"{n_items:,}"),
        ("models", ", ".join(ctx.models) or "–"),
        ("conditions", f"{len(ctx.conditions)}"),
    ]
    if s.get("n_skipped"):
        facts.append(("skipped (item, condition) pairs", str(s["n_skipped"])))
    meta = t.schema.metadata or {}
    version = meta.get(b"steadyeval.schema_version")
    if version is not None:
        facts.append(("schema version", version.decode()))
    return tuple(facts)


def _study_summary_fallback(ctx: ReportContext) -> list[Section]:
    """The study's own part of ``summary.md``, as text, for a study with no builder."""
    if ctx.run_dir is None or not os.path.lexists(ctx.run_dir / "summary.md"):
        return []
    # a regular file, its size checked, UTF-8 located (a FIFO here would hang the report)
    limit = limit_from_env("STEADYEVAL_MAX_FILE_MB", MAX_TEXT_BYTES)
    text = read_text_file(ctx.run_dir / "summary.md", "a run's summary.md", max_bytes=limit)
    base = {k: v for k, v in ctx.summary.items() if k not in {"analysis", "design", "study"}}
    try:
        head = summary_markdown(base)
    except (KeyError, TypeError):
        head = ""
    if head and text.startswith(head):
        text = text[len(head) :]
    text = text.strip("\n")
    if not text:
        return []
    return [
        Section.of(
            "study",
            f"{ctx.study} study: analysis",
            [
                Note(
                    f"No study called {ctx.study!r} is registered here, so its own summary "
                    "(summary.md) is shown as text."
                ),
                Preformatted(text),
            ],
            source=f"{ctx.study} study",
        )
    ]


def study_sections(ctx: ReportContext) -> list[Section]:
    """The sections of the run's study (found in the study registry, built from the run's
    analysis); a study the registry does not know gets its ``summary.md`` shown as text."""
    return _study_part(ctx)[0]


def _study_part(ctx: ReportContext) -> tuple[list[Section], Any]:
    """:func:`study_sections` and the typed analysis they show (None: no registered study)."""
    if ctx.study is None:
        return [], None
    from ..studies import find_study

    study = find_study(ctx.study)
    if study is None:
        return _study_summary_fallback(ctx), None
    design = ctx.summary.get("design")
    info = design if isinstance(design, dict) else {}
    analysis, note = _analysis_of(ctx, study, info)
    where = f"{ctx.run_dir / 'summary.json'}" if ctx.run_dir is not None else "summary.json"
    facts = study.read_design(info, source=where)  # the study's typed design facts
    try:
        made = _sections_of(ctx, study, analysis, facts)
    except _Unshowable as exc:  # the stored analysis does not fit the study's sections
        if note is not None:
            raise
        why = f"could not be shown ({exc.reason})"
        analysis, note = _recomputed(ctx, study, info, why, exc)
        made = _sections_of(ctx, study, analysis, facts)
    if note is not None and made:
        made = [dataclasses.replace(made[0], blocks=(note, *made[0].blocks)), *made[1:]]
    elif note is not None:
        made = [Section.of("study", f"{ctx.study} study: analysis", [note])]
    return made, analysis


class _Unshowable(DataError):
    """The study's sections failed on an analysis (``reason``: the error, in short)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _sections_of(ctx: ReportContext, study: Study[Any], analysis: Any, facts: Any) -> list[Section]:
    """``study``'s sections of ``analysis``, checked; an analysis they cannot show is a
    :class:`DataError` naming ``summary.json``."""
    try:
        made = study.sections(analysis, facts)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        # summary.json's analysis is not the shape this study writes: a hand-edited or
        # foreign run folder, or one written by another version of the study
        reason = f"{type(exc).__name__}: {str(exc)[:80]}"
        raise _Unshowable(
            f"{ctx.run_dir or 'the run'}: summary.json's analysis is not what study "
            f"{ctx.study!r} writes ({reason}); recompute it with `steadyeval reanalyze RUN_DIR`",
            reason,
        ) from None
    except Exception as exc:
        raise RuntimeError(f"the report sections of study {ctx.study!r} failed: {exc}") from exc
    for sec in made:
        if not isinstance(sec, Section):
            raise TypeError(
                f"study {ctx.study!r} returned {type(sec).__name__} as a report section; "
                "expected steadyeval.reports.Section"
            )
    return list(made)


def _analysis_of(
    ctx: ReportContext, study: Study[Any], info: Mapping[str, Any]
) -> tuple[Any, Note | None]:
    """The run's analysis as the study's type; when ``summary.json``'s cannot be read as
    that type (written by another version of steadyeval, or edited) or disagrees with the
    results table (:meth:`~steadyeval.studies.Study.check_analysis`: e.g. a model the table
    lacks), the analysis recomputed from the results table, with a note saying so; the
    reading error when that fails too."""
    source = f"{ctx.run_dir / 'summary.json'}" if ctx.run_dir is not None else "summary.json"
    try:
        stored = study.read_analysis(ctx.summary.get("analysis"), source=source)
    except DataError as exc:
        return _recomputed(ctx, study, info, f"could not be read ({str(exc)[:200]})", exc)
    off = study.check_analysis(stored, _frame(ctx))
    if off is None:
        return stored, None
    error = DataError(
        f"{source}: the analysis does not match the results table ({off}); recompute it "
        "with `steadyeval reanalyze RUN_DIR`"
    )
    return _recomputed(ctx, study, info, f"does not match the results table ({off})", error)


def _frame(ctx: ReportContext) -> ResultsFrame:
    return ResultsFrame(ctx.table, study_columns(ctx.table))


def _recomputed(
    ctx: ReportContext, study: Study[Any], info: Mapping[str, Any], why: str, error: Exception
) -> tuple[Any, Note]:
    """The analysis recomputed from the results table and the note saying ``why``
    (``summary.json``'s was not used); ``error`` when it cannot be recomputed."""
    source = f"{ctx.run_dir / 'summary.json'}" if ctx.run_dir is not None else "summary.json"
    try:
        facts = study.read_design(info, source=source)
        fresh = study.analyze(_frame(ctx), facts)
    except Exception:
        raise error from None
    return fresh, Note(
        f"The analysis in summary.json {why[:240]}; this report recomputed it from the "
        "results table. Running steadyeval reanalyze on the run folder rewrites summary.json "
        "with it."
    )


def build_report(
    run: str | Path | ReportContext,
    options: ReportOptions | None = None,
    *,
    title: str | None = None,
) -> Report:
    """The report of a run: headline, the study's own sections, agreement between
    conditions, spread, calibration, accuracy vs shots, rank consistency and per-item rows.
    A study section marked ``lead`` comes before the headline.

    A study section whose id is that of a generic section (``agreement``, ``spread``,
    ``calibration``, ``shots``, ``rank-consistency``) takes that section's place.

    Parameters
    ----------
    run : path or ReportContext
        A run directory, or a context built from a table and summary in memory.
    options : ReportOptions, optional
        Bounds and seeds (ignored when ``run`` is a context, which carries its own).
    title : str, optional
        Report title (default: the study or run id).

    Returns
    -------
    Report
        Render it with :func:`render_html`, :func:`render_markdown` or :func:`render_json`.
    """
    ctx = run if isinstance(run, ReportContext) else load_context(run, options)
    if ctx.table.num_rows == 0:
        raise DataError(
            f"{ctx.run_dir or 'table'}: the results table has no rows; nothing to report"
        )
    own, analysis = _study_part(ctx)
    labels = condition_labels(own, ctx.conditions)
    ctx = dataclasses.replace(ctx, labels=labels or ctx.labels, study_analysis=analysis)
    lead = [s for s in own if s.lead]  # the study's own answer first
    sections: list[Section] = [*lead, headline_section(ctx), *(s for s in own if not s.lead)]
    replaced = {s.id for s in own}  # a study section may take a generic section's place
    for fn in (
        agreement_section,
        spread_section,
        samples_section,
        calibration_section,
        shots_section,
        rank_consistency_section,
    ):
        sec = fn(ctx)
        if sec is not None and sec.id not in replaced:
            sections.append(sec)
    sections.append(item_section(ctx))
    _check_ids(sections)
    if title is None:
        run_id = ctx.summary.get("run_id")
        head = f"steadyeval {ctx.study} study" if ctx.study else "steadyeval run"
        title = f"{head} {run_id}" if run_id else head
    return Report(title=title, sections=tuple(sections), facts=_facts(ctx))


def condition_labels(sections: Sequence[Section], conditions: Sequence[str]) -> dict[str, str]:
    """The labels ``sections`` show the run's ``conditions`` by (only those that differ
    from the name; labels of conditions the run lacks are left out), checked: a condition
    has one label, and no two conditions look the same."""
    labels: dict[str, str] = {}
    where: dict[str, str] = {}
    for s in sections:
        for cond, lab in s.labels:
            if labels.get(cond, lab) != lab:
                raise ConfigError(
                    f"condition {cond!r} is labelled {labels[cond]!r} in section "
                    f"{where[cond]!r} and {lab!r} in section {s.id!r}; give it one label"
                )
            labels[cond], where[cond] = lab, s.id
    present = set(conditions)
    labels = {c: lab for c, lab in labels.items() if lab != c and c in present}
    shown: dict[str, str] = {}
    for cond in conditions:
        lab = labels.get(cond, cond)
        if shown.setdefault(lab, cond) != cond:
            raise ConfigError(
                f"conditions {shown[lab]!r} and {cond!r} would both be shown as {lab!r}; "
                "give each condition its own label"
            )
    return labels


def _check_ids(sections: Sequence[Section]) -> None:
    seen: dict[str, str] = {}
    for s in sections:
        if s.id in seen:
            raise ConfigError(
                f"two report sections share the id {s.id!r} ({seen[s.id]!r} and {s.title!r}); "
                "give each section a unique id"
            )
        seen[s.id] = s.title


def context_from_table(
    table: pa.Table, summary: Mapping[str, Any] | None = None, options: ReportOptions | None = None
) -> ReportContext:
    """A context for a table held in memory (e.g. ``run(...).table``)."""
    return ReportContext(
        table=table, summary=dict(summary or {}), options=options or ReportOptions()
    )
