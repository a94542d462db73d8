"""What every export reads of a run folder, and where it may write.

An export reads a finished run (:func:`~steadyeval.results.check_run_dir`: a run that did
not finish, or a folder caught mid-write, is refused) and only these parts of it: the rows of
``results.parquet``, when the run finished (``provenance.json``'s ``finished_at``, else the
time ``results.parquet`` was written), and each condition's decoding settings from
``config.json``. The rest of ``provenance.json`` (host, packages) and of ``config.json``
(data paths, model options) is never read, so nothing of the machine or its secrets can
reach an exported file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigError, DataError, show_path
from .._files import load_json_file
from ..scoring import get_scoring

__all__ = [
    "ExportOptions",
    "ExportedRun",
    "Group",
    "RunToExport",
    "check_target",
    "generated_text",
    "load_run",
]

ExportFormat = Literal["inspect", "eee"]
FORMATS: tuple[ExportFormat, ...] = ("inspect", "eee")
#: The decoding settings of a condition an export records (``config.json``'s
#: ``conditions[].generation``); other keys of the config are never read.
_GENERATION_KEYS = ("temperature", "top_p", "max_new_tokens", "n_samples", "seed")
#: What a credential in a model's name looks like: a URL's ``user:password@``, or an option
#: named like a key (steadyeval's own specs refuse both; an imported table may hold anything).
_CREDENTIAL = re.compile(
    r"(://[^/@\s]*:[^/@\s]*@)|([?&](api[_-]?key|apikey|key|token|access_token|authorization|"
    r"password|secret|bearer)=[^&#]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ExportOptions:
    """How a run is exported.

    Attributes
    ----------
    format : {"inspect", "eee"}
        ``inspect``: one Inspect AI ``.eval`` log per (model, condition); ``eee``: Every Eval
        Ever records (an aggregate JSON and its instance-level JSONL per model).
    overwrite : bool
        Replace files the export would write that exist already (without it they are an
        error, and nothing is written).
    benchmark : str, optional
        ``eee``: the collection (benchmark) name, the first folder under ``data/``
        (default: the run folder's name).
    """

    format: ExportFormat = "inspect"
    overwrite: bool = False
    benchmark: str | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(
                f"export format {self.format!r}: expected one of {', '.join(FORMATS)}"
            )
        if self.benchmark is not None and not self.benchmark.strip():
            raise ConfigError("--benchmark: expected a non-empty name")


@dataclass(frozen=True)
class ExportedRun:
    """What an export wrote.

    Attributes
    ----------
    format : str
        ``inspect`` or ``eee``.
    files : tuple of Path
        Every file written, in order.
    rows : int
        Results rows written (each a sample of an Inspect log or an EEE instance record).
    notes : tuple of str
        What the format could not hold, said once (e.g. rows without a verdict left out of
        EEE, whose records require one).
    """

    format: str
    files: tuple[Path, ...]
    rows: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    """The rows of one (model, condition), in table order."""

    model: str
    condition: str
    rows: list[dict[str, Any]]

    @property
    def first(self) -> dict[str, Any]:
        return self.rows[0]


@dataclass(frozen=True)
class RunToExport:
    """A finished run, read for export."""

    path: Path
    run_id: str
    created: datetime  # when results.parquet was written (UTC, whole seconds)
    rows: list[dict[str, Any]]
    generation: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.resolve().name or "run"

    def groups(self) -> Iterator[Group]:
        """Each (model, condition) in the order the table first holds it."""
        by: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self.rows:
            by.setdefault((row["model"], row["condition"]), []).append(row)
        for (model, condition), rows in by.items():
            yield Group(model, condition, rows)

    def models(self) -> list[str]:
        return list(dict.fromkeys(r["model"] for r in self.rows))


def _generation(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each condition's decoding settings from ``config.json`` (``{}`` where the folder has
    none, e.g. an import, or a config of another shape)."""
    path = run_dir / "config.json"
    if not path.is_file():
        return {}
    config = load_json_file(path, "a run's config.json")
    conditions = config.get("conditions") if isinstance(config, Mapping) else None
    out: dict[str, dict[str, Any]] = {}
    for c in conditions if isinstance(conditions, list) else []:
        gen = c.get("generation") if isinstance(c, Mapping) else None
        if isinstance(gen, Mapping) and isinstance(c.get("name"), str):
            out[c["name"]] = {
                k: gen[k]
                for k in _GENERATION_KEYS
                if isinstance(gen.get(k), int | float) and not isinstance(gen.get(k), bool)
            }
    return out


def generated_text(row: Mapping[str, Any]) -> bool:
    """Whether the row's output is text the model generated: not a row of log-probabilities
    (a log-probability mode's output is the option it scored best, not a completion; so is
    the ``lm-eval`` mode's on a multiple-choice task). An unknown mode (a plugin not loaded
    now) counts as generating: its output is kept."""
    if row.get("option_logprobs") is not None or row.get("sequence_logprob") is not None:
        return False
    try:
        return get_scoring(str(row.get("scoring"))).extracts
    except (KeyError, ConfigError):
        return True


def _finished_at(path: Path) -> datetime:
    """When the run finished: ``provenance.json``'s ``finished_at`` (UTC), which a copy of
    the folder keeps; a run without one (an import, an earlier release) falls back to
    ``results.parquet``'s modification time."""
    try:
        stamp = json.loads((path / "provenance.json").read_text(encoding="utf-8"))["finished_at"]
        when = datetime.fromisoformat(str(stamp))
        if when.tzinfo is not None:
            return when.astimezone(timezone.utc).replace(microsecond=0)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return datetime.fromtimestamp(int((path / "results.parquet").stat().st_mtime), tz=timezone.utc)


def load_run(run_dir: str | os.PathLike[str]) -> RunToExport:
    """The run in ``run_dir``, checked: a folder holding a finished run with at least one
    row; otherwise a :class:`DataError` naming the folder and what was expected."""
    from ._manifest import check_run_dir
    from ._read import read_results

    path = Path(run_dir)
    expected = (
        "expected a run folder (written by `steadyeval run`, a study or `steadyeval import`) "
        "holding results.parquet"
    )
    if not path.is_dir():
        what = "no such folder" if not os.path.lexists(path) else "not a folder"
        raise DataError(f"{show_path(path)}: {what}; {expected}")
    check_run_dir(path)  # an unfinished run, or one caught mid-write, is refused
    if not (path / "results.parquet").is_file():
        raise DataError(f"{show_path(path)}: no results.parquet in this folder; {expected}")
    table = read_results(path)
    if table.num_rows == 0:
        raise DataError(f"{show_path(path)}: the results table holds no rows; nothing to export")
    created = _finished_at(path)
    for model in set(table.column("model").to_pylist()):
        if _CREDENTIAL.search(str(model)):
            shown = _CREDENTIAL.sub("<credential>", str(model))
            raise DataError(
                f"{show_path(path)}: model {shown!r} holds what looks like a credential (a "
                "URL's user:password@ or a key option); the export never writes one: re-import "
                "the run with --model NAME, or rename the model in the results"
            )
    rows = table.to_pylist()
    for row in rows:
        row["metadata"] = json.loads(row["metadata"]) if row.get("metadata") else {}
    return RunToExport(path, str(rows[0]["run_id"]), created, rows, _generation(path))


def default_out(run: RunToExport, fmt: str) -> Path:
    """Beside the run folder, never inside it: ``runs/NAME`` → ``runs/NAME-inspect``."""
    resolved = run.path.resolve()
    return resolved.parent / f"{resolved.name}-{fmt}"


def check_target(paths: Sequence[Path], overwrite: bool) -> None:
    """Refuse, before anything is written, a path that exists (unless ``overwrite``) or is
    not a regular file (a folder, FIFO or device is never replaced)."""
    for p in paths:
        if not os.path.lexists(p):
            continue
        if p.is_dir() or not (p.is_file() or p.is_symlink()):
            raise ConfigError(
                f"--out: {show_path(p)} exists and is not a regular file; the export writes a "
                "file there: choose another --out"
            )
        if not overwrite:
            raise ConfigError(
                f"--out: {show_path(p)} exists; pass --overwrite to replace it (nothing was "
                "written)"
            )
