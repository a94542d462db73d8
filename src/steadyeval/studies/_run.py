"""Run any registered study: config → design → runner → (follow-up) → analysis → summary."""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from .._errors import ConfigError, DataError, SteadyevalError, StorageError
from .._json import json_safe, json_text, write_text_atomic
from .._log import no_progress
from ..models import Backend, load_backend
from ..results import (
    Analysis,
    Design,
    ResultsFrame,
    check_rewritable,
    check_run_dir,
    read_summary,
    rewrite_summaries,
    run_in_parts,
    summary_markdown,
    writing_run,
)
from ..run import (
    PlanCounts,
    RunOptions,
    RunResult,
    locked_run_dir,
    rewriting_run,
    run_blocks,
    validate_config,
)
from ._protocol import Study, StudyConfig, StudyDesign, StudyResult, get_study

__all__ = ["read_analysis", "reanalyze", "run_design", "run_study"]

ConfigLike = StudyConfig | Mapping[str, Any] | str | Path


def _config(study: Study[Any], config: ConfigLike) -> StudyConfig:
    if isinstance(config, StudyConfig):
        if not isinstance(config, study.config):
            raise ConfigError(
                f"study {study.name!r} takes a {study.config.__name__}, not a "
                f"{type(config).__name__}"
            )
        return config
    if isinstance(config, str | Path):
        return study.load_config(config)
    if not isinstance(config, Mapping):
        raise ConfigError(
            f"study {study.name!r}: config is {type(config).__name__}; expected a "
            f"{study.config.__name__}, a mapping of its keys, or the path of a YAML file"
        )
    return validate_config(study.config, config, what=f"{study.name}-study config")


class _Models(Sequence[Backend]):
    """The config's models, each opened on first use: a study whose design reads only its
    data (spread, sensitivity, knowledge, ...) finds a wrong data file before any model is
    opened (a hub model's tokenizer and config take seconds, a download minutes)."""

    def __init__(self, specs: Sequence[Any]) -> None:
        self._specs = list(specs)
        self._opened: dict[int, Backend] = {}

    def __len__(self) -> int:
        return len(self._specs)

    @overload
    def __getitem__(self, index: int) -> Backend: ...
    @overload
    def __getitem__(self, index: slice) -> list[Backend]: ...
    def __getitem__(self, index: int | slice) -> Backend | list[Backend]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        i = range(len(self))[index]
        if i not in self._opened:
            self._opened[i] = load_backend(self._specs[i])
        return self._opened[i]


def _with_models(design: StudyDesign, backends: Sequence[str | Backend]) -> StudyDesign:
    """Blocks that name no models run on the study's models."""
    blocks = [
        b if b.models else dataclasses.replace(b, models=list(backends)) for b in design.blocks
    ]
    return dataclasses.replace(design, blocks=tuple(blocks))


def _write(
    run_dir: Path,
    study: Study[Any],
    summary: dict[str, Any],
    analysis: Analysis,
    design: Design,
    *,
    again: bool = False,
) -> None:
    """Write the summaries of a run's analysis (``again``: of a finished run, in place,
    keeping its manifest's record of the other files: :func:`rewrite_summaries`)."""
    base = {k: v for k, v in summary.items() if k not in {"analysis", "design", "study"}}
    # The study's lead sections (e.g. a warning that changes what the numbers mean) come right
    # after the title, before the per-condition table, as in the HTML report.
    title, _, rest = summary_markdown(base).partition("\n")
    lead = study.markdown(analysis, design, lead=True)
    # (then a heading of their own for the run's facts, which would sit under the last one)
    head = f"{title}\n\n{lead.strip()}\n\n## Run" if lead else title
    text = f"{head}\n{rest}\n" + study.markdown(analysis, design, lead=False)
    texts = {"summary.json": json_text(summary), "summary.md": text}
    if again:
        rewrite_summaries(run_dir, str(summary["run_id"]), texts)
        return
    with writing_run(run_dir, str(summary["run_id"])):
        for name, content in texts.items():
            write_text_atomic(run_dir / name, content)


@overload
def run_study(
    study: str | Study[Any],
    config: ConfigLike,
    *,
    options: RunOptions | None = ...,
    dry_run: Literal[False] = ...,
) -> StudyResult: ...
@overload
def run_study(
    study: str | Study[Any],
    config: ConfigLike,
    *,
    options: RunOptions | None = ...,
    dry_run: Literal[True],
) -> PlanCounts: ...


def run_study(
    study: str | Study[Any],
    config: ConfigLike,
    *,
    options: RunOptions | None = None,
    dry_run: bool = False,
) -> StudyResult | PlanCounts:
    """Run a study end to end.

    Parameters
    ----------
    study : str or Study[Any]
        A registered study's name (``formats``, ``sensitivity``, ``knowledge``, ``fewshot``)
        or a :class:`Study`.
    config : StudyConfig, mapping, or path
        The study's config: an instance of its config class, a mapping of its keys, or a
        YAML file holding them.
    options : RunOptions, optional
        Run directory, response cache, batch size, progress, executor.
    dry_run : bool
        Return the plan's counts (of the first design; follow-ups depend on results); send
        nothing, train nothing.

    Returns
    -------
    StudyResult or PlanCounts
        The table, ``summary.json``'s content (``study``, ``design``, ``analysis`` added to
        the run's summary), the analysis and the run directory.
    """
    study = get_study(study) if isinstance(study, str) else study
    cfg = _config(study, config)
    opts = options or RunOptions()
    if dry_run or opts.out is None:
        return _run_study(study, cfg, opts, dry_run=dry_run)
    # the lock for both passes and the analysis; the folder reads as complete only when the
    # last analysis is written (failed or interrupted before: the state says so)
    with locked_run_dir(Path(opts.out)), run_in_parts(Path(opts.out)):
        return _run_study(study, cfg, opts, dry_run=False)


def _run_study(
    study: Study[Any], cfg: StudyConfig, opts: RunOptions, *, dry_run: bool
) -> StudyResult | PlanCounts:
    backends = _Models(cfg.models)
    design = _with_models(study.design(cfg, backends, opts), backends)
    if dry_run:
        return run_blocks(design.blocks, options=opts, dry_run=True, columns=design.columns)
    design = study.before_run(cfg, design, backends, opts)
    resolved = {"study": study.name, **cfg.model_dump(mode="json")}
    # the first pass is analysed only when it is the whole run: with a follow-up, the final
    # analysis covers it (an estimate at MMLU's size takes minutes)
    first = run_blocks(design.blocks, options=opts, config=resolved, columns=design.columns)
    with no_progress(opts.progress is False):
        more = study.follow_up(
            cfg, design, ResultsFrame(first.table, design.columns), backends, opts
        )
    if more is None:
        return _analysed(study, design, first, opts, 0)
    more = _with_models(more, backends)
    design = StudyDesign(
        blocks=(*design.blocks, *more.blocks),
        info=_merged(study, design.info, more.info),
        columns=design.columns,
    )
    sent = int(first.summary["plan"]["model_calls"]) + more.sent
    return run_design(study, design, backends, options=opts, config=resolved, sent_before=sent)


def _merged(
    study: Study[Any], first: Design | Mapping[str, Any], more: Design | Mapping[str, Any]
) -> Design | Mapping[str, Any]:
    """The first pass's design facts with those a follow-up adds (a follow-up's fact wins)."""
    if isinstance(more, Mapping) and not more:
        return first
    facts = [study.read_design(i, source=f"the {study.name} study's design") for i in (first, more)]
    return {**facts[0].to_json(), **facts[1].to_json()}


def run_design(
    study: str | Study[Any],
    design: StudyDesign,
    models: Sequence[str | Backend] = (),
    *,
    options: RunOptions | None = None,
    config: Mapping[str, Any] | None = None,
    sent_before: int = 0,
) -> StudyResult:
    """Run a design built by hand (e.g. with the study's design functions) and analyse it as
    ``study`` does. Blocks that name no models run on ``models``. ``sent_before``: requests a
    first pass of the same run sent (a study's follow-up), counted in the summary's plan."""
    study = get_study(study) if isinstance(study, str) else study
    opts = options or RunOptions()
    if opts.out is None:
        return _run_design(study, design, models, opts, config, sent_before)
    with locked_run_dir(Path(opts.out)), run_in_parts(Path(opts.out)):  # the analysis too
        return _run_design(study, design, models, opts, config, sent_before)


def _run_design(
    study: Study[Any],
    design: StudyDesign,
    models: Sequence[str | Backend],
    options: RunOptions,
    config: Mapping[str, Any] | None,
    sent_before: int,
) -> StudyResult:
    design = _with_models(design, models)
    resolved = json_safe(dict(config or {"study": study.name, "models": list(map(str, models))}))
    result = run_blocks(design.blocks, options=options, config=resolved, columns=design.columns)
    return _analysed(study, design, result, options, sent_before)


def _analysed(
    study: Study[Any],
    design: StudyDesign,
    result: RunResult,
    options: RunOptions,
    sent_before: int,
) -> StudyResult:
    """The study's analysis of a run's table, added to its summary and written to its
    folder (``sent_before``: requests sent before this run's blocks, counted in its plan)."""
    facts = study.read_design(design.info, source=f"the {study.name} study's design")
    frame = ResultsFrame(result.table, design.columns)
    with no_progress(options.progress is False):
        analysis = study.analyze(frame, facts)
    summary = {
        **result.summary,
        "study": study.name,
        "design": facts.to_json(),
        "analysis": analysis.to_json(),
    }
    if sent_before:
        plan = summary["plan"]
        plan["model_calls"] += sent_before
        plan["cache_hits"] = max(plan["unique"] - plan["model_calls"], 0)
    if result.run_dir is not None:
        _write(result.run_dir, study, summary, analysis, facts)
    return StudyResult(result.table, summary, analysis, result.run_dir)


def _study_run(
    run_dir: Path, *, rewritten: Sequence[str] = (), new_analysis: bool = False
) -> tuple[dict[str, Any], Study[Any]]:
    """A study run folder's summary and study, checked as every reader checks a run
    (``rewritten``, ``new_analysis``: what the caller writes again, see
    :func:`~steadyeval.results.check_run_dir`)."""
    if not run_dir.is_dir():
        what = "no such folder" if not run_dir.exists() else "not a folder"
        raise DataError(
            f"not a run folder ({what}; expected a study's run folder)", file=str(run_dir)
        )
    check_run_dir(run_dir, rewritten=rewritten, new_analysis=new_analysis)
    if not (run_dir / "summary.json").exists():
        raise DataError(
            "no summary.json here (not a run folder, or a run that did not finish)",
            file=str(run_dir),
        )
    summary = read_summary(run_dir)  # checked: a regular file, bounded, typed fields
    name = summary.get("study")
    if not isinstance(name, str):
        raise DataError(
            f"{run_dir}: not a study run (its summary.json names no study); expected the run "
            "folder of a `steadyeval study` command (a plain run has no study analysis)"
        )
    return summary, get_study(name)


def read_analysis(run_dir: str | Path) -> Analysis:
    """A study run's analysis, read from its ``summary.json`` as the study's own type (e.g.
    :class:`~steadyeval.studies.formats.FormatsAnalysis`); checked field by field."""
    run_dir = Path(run_dir)
    summary, study = _study_run(run_dir)
    if "analysis" not in summary:
        raise DataError(f"{run_dir / 'summary.json'}: no analysis (the study's run wrote none)")
    analysis: Analysis = study.read_analysis(
        summary["analysis"], source=str(run_dir / "summary.json")
    )
    return analysis


def read_design(run_dir: str | Path) -> tuple[str, Any]:
    """A study run's study name and design facts (``summary.json`` → ``design``, read back
    as the study's own type, e.g. :class:`~steadyeval.studies.spread.SpreadDesign`)."""
    run_dir = Path(run_dir)
    summary, study = _study_run(run_dir)
    return study.name, _summary_design(run_dir, summary, study)


def _summary_design(run_dir: Path, summary: dict[str, Any], study: Study[Any]) -> Any:
    """``summary``'s design facts read back as ``study``'s own type (a DataError naming
    the run folder when they are not what the study writes)."""
    try:
        return study.read_design(summary.get("design"), source=str(run_dir / "summary.json"))
    except DataError as exc:
        raise DataError(
            f"{run_dir}: summary.json's design is not what study {summary['study']!r} writes "
            f"({str(exc).removeprefix(str(run_dir / 'summary.json') + ': ')})"
        ) from None


def reanalyze(run_dir: str | Path) -> Analysis:
    """Recompute a study run's analysis from its ``results.parquet`` (no model is called),
    rewrite ``summary.json`` and ``summary.md``, and return it (the study's own type). The
    folder's lock is held throughout: a run writing the folder is an error. An edited
    analysis or summary.md is repaired; an edit of the rest of summary.json (the design,
    the run's counts) is a :class:`DataError` (see ``docs/cli.md``)."""
    run_dir = Path(run_dir)
    with rewriting_run(run_dir):
        return _reanalyze(run_dir)


def _check_writable(run_dir: Path) -> None:
    """Refuse a run folder whose summaries cannot be written again (read-only)."""
    if os.access(run_dir, os.W_OK | os.X_OK):
        return
    read_only = bool(os.statvfs(run_dir).f_flag & os.ST_RDONLY)
    why = "a read-only file system" if read_only else "permission denied"
    error = StorageError(
        f"{run_dir}: cannot write in the folder ({why}); reanalyze rewrites its summaries in "
        "place: make it writable, or copy the folder and reanalyze the copy; nothing was "
        "written"
    )
    error.errno = errno.EROFS if read_only else errno.EACCES
    raise error


def _reanalyze(run_dir: Path) -> Analysis:
    # summary.md is written again (an edited, damaged or deleted one is repaired), and
    # summary.json's analysis; the rest of summary.json must be the run's: it holds the
    # study's design and the run's counts, which the results table cannot give back
    summary, study = _study_run(run_dir, rewritten=("summary.md",), new_analysis=True)
    _check_writable(run_dir)  # before the analysis, which can take minutes
    check_rewritable(run_dir, str(summary["run_id"]))
    frame = ResultsFrame.read(run_dir / "results.parquet")
    design = _summary_design(run_dir, summary, study)
    try:
        analysis: Analysis = study.analyze(frame, design)
    except SteadyevalError as exc:
        if not str(exc).startswith(str(run_dir)):  # say which run
            exc.args = (f"{run_dir}: {exc}", *exc.args[1:])
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        # the table or summary.json's design is not what this study writes
        raise DataError(
            f"{run_dir}: its results table or summary.json's design is not what study "
            f"{summary['study']!r} writes ({type(exc).__name__}: {str(exc)[:80]}); run the "
            "study again"
        ) from None
    summary["analysis"] = analysis.to_json()
    _write(run_dir, study, summary, analysis, design, again=True)
    return analysis
