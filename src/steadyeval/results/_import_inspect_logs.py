"""Which Inspect logs an import takes, and what it says about them.

A log's ``status`` says whether the eval finished (``success``) or not (``error``,
``cancelled``; ``started`` for a log whose eval never ended, e.g. killed). ``eval-retry``
writes a new log of the same task (the same ``eval.task_id``) that holds the samples the
first attempt finished plus the rest; an eval set retries the same way in its folder. Of
several logs of one task the newest is taken and the others are named in a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import DataError
from ..items import shorten
from ._import_inspect_read import read_inspect_log
from ._import_limits import ImportLimits
from ._import_memory import KeptBudget

__all__ = [
    "InspectLog",
    "check_finished",
    "load_logs",
    "log_record",
    "reducer_note",
    "take_retries",
]

FINISHED = "success"
_WHY = {
    "error": "the eval failed",
    "cancelled": "the eval was cancelled, e.g. by Ctrl-C",
    "started": "the eval never ended: still running, or killed",
}
#: Why a log whose status is none of Inspect's is taken as unfinished (the message names
#: the status itself once, before this).
_UNKNOWN = "not a status Inspect writes: success, error, cancelled or started"


@dataclass(frozen=True)
class InspectLog:
    """One log, read: its header (without samples), its samples and what identifies it."""

    path: Path
    header: dict[str, Any]
    samples: list[dict[str, Any]]

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.header["eval"]
        assert isinstance(spec, Mapping)
        return spec

    @property
    def task(self) -> str:
        return str(self.spec.get("task", self.stem))

    @property
    def stem(self) -> str:
        return self.path.name.removesuffix(self.path.suffix)

    @property
    def exported(self) -> bool:
        """Whether ``steadyeval export`` wrote this log (``eval.metadata.steadyeval``): its
        sample ids are item ids as they were and its inputs the prompts as sent."""
        meta = self.spec.get("metadata")
        return isinstance(meta, Mapping) and isinstance(meta.get("steadyeval"), Mapping)

    @property
    def exported_condition(self) -> Mapping[str, Any]:
        """The condition's settings a log steadyeval exported records (template, format,
        scoring, option order, shots, chat, verbalizer); empty for any other log."""
        meta = self.spec.get("metadata")
        facts = meta.get("steadyeval") if isinstance(meta, Mapping) else None
        return facts if self.exported and isinstance(facts, Mapping) else {}

    @property
    def status(self) -> str:
        return str(self.header.get("status", "started"))

    @property
    def error(self) -> str | None:
        err = self.header.get("error")
        msg = err.get("message") if isinstance(err, Mapping) else None
        return str(msg) if msg else None

    @property
    def config(self) -> Mapping[str, Any]:
        cfg = self.spec.get("config")
        return cfg if isinstance(cfg, Mapping) else {}

    @property
    def reducer(self) -> list[str] | None:
        red = self.config.get("epochs_reducer")
        if isinstance(red, str):
            return [red]
        return [str(r) for r in red] if isinstance(red, list) else None

    @property
    def epochs(self) -> int:
        ep = self.config.get("epochs")
        return ep if isinstance(ep, int) and not isinstance(ep, bool) else 1

    def metrics(self) -> dict[str, Any]:
        """Inspect's own results: ``scorer/metric`` → value (empty when it recorded none)."""
        res = self.header.get("results")
        scores = res.get("scores") if isinstance(res, Mapping) else None
        out: dict[str, Any] = {}
        for sc in scores if isinstance(scores, list) else []:
            if not isinstance(sc, Mapping) or not isinstance(sc.get("metrics"), Mapping):
                continue
            for name, m in sc["metrics"].items():
                if isinstance(m, Mapping):
                    out[f"{sc.get('name', '?')}/{name}"] = m.get("value")
        return out


def load_logs(files: Sequence[Path]) -> list[InspectLog]:
    """Each file read (see :func:`read_inspect_log`), under one budget for what they keep
    together (``STEADYEVAL_MAX_KEPT_MB``)."""
    limits = ImportLimits.from_env()
    kept = KeptBudget(limits)
    return [InspectLog(p, *read_inspect_log(p, limits, kept=kept)) for p in files]


def take_retries(logs: Sequence[InspectLog]) -> tuple[list[InspectLog], list[str]]:
    """The logs to import: of logs sharing a ``task_id`` (an attempt and its
    ``eval-retry``), the newest (by ``eval.created``, then file name); and a note for
    each one left out."""
    groups: dict[str, list[InspectLog]] = {}
    for log in logs:
        key = str(log.spec.get("task_id") or log.spec.get("eval_id") or log.path)
        groups.setdefault(key, []).append(log)
    kept: list[InspectLog] = []
    notes: list[str] = []
    for group in groups.values():
        group.sort(key=lambda g: (str(g.spec.get("created", "")), g.path.name))
        newest = group[-1]
        kept.append(newest)
        for old in group[:-1]:
            notes.append(
                f"{old.path.name} (task {shorten(old.task)}, status {shorten(old.status)}, "
                f"{len(old.samples)} samples) left out: {newest.path.name} is a later "
                f"attempt of the same task (task_id {shorten(str(newest.spec.get('task_id')))}, "
                f"status {shorten(newest.status)}, {len(newest.samples)} samples), e.g. eval-retry"
            )
    kept.sort(key=lambda g: g.path)
    return kept, notes


def check_finished(log: InspectLog, allow_unfinished: bool) -> str | None:
    """A note for an unfinished log imported with ``allow_unfinished``; an error without
    it (and for a log that holds no samples)."""
    n = len(log.samples)
    if log.status == FINISHED:
        if not n:
            raise DataError(
                f"{log.path}: the log holds no samples (status 'success'); run Inspect "
                "with sample logging on (the default, not --no-log-samples) to import "
                "per-sample results"
            )
        return None
    why = _WHY.get(log.status, _UNKNOWN)
    if log.error:
        why += f": {shorten(log.error.splitlines()[0], 120)}"
    total = (
        log.spec.get("dataset", {}).get("samples")
        if isinstance(log.spec.get("dataset"), Mapping)
        else None
    )
    have = f"{n} of {total * log.epochs} samples" if isinstance(total, int) else f"{n} samples"
    if not allow_unfinished or not n:
        advice = (
            "or pass --allow-unfinished to import the samples it holds"
            if n
            else ("there is nothing else to import")
        )
        raise DataError(
            f"{log.path}: Inspect status {shorten(repr(log.status))} ({why}; the log holds "
            f"{have}); "
            f"expected a finished eval (status 'success'): import its `inspect eval-retry` "
            f"log, {advice}"
        )
    return (
        f"{log.path.name} (task {shorten(log.task)}): status {shorten(log.status)} ({why}); "
        "imported the "
        f"{have} it holds; Inspect recorded "
        + ("no results" if not log.metrics() else "results for them alone")
    )


def log_record(log: InspectLog, condition: str, rows: int, errored: int) -> dict[str, Any]:
    """What ``summary.json`` records of one imported log."""
    return {
        "file": log.path.name,
        "task": log.task,
        "condition": condition,
        "status": log.status,
        "error": log.error,
        "epochs": log.epochs,
        "epochs_reducer": log.reducer,
        "rows": rows,
        "errored": errored,
        "inspect_metrics": log.metrics(),
    }


def reducer_note(log: InspectLog, condition: str) -> str | None:
    """For a log of several epochs: the rows are per epoch, Inspect's numbers reduced."""
    if log.epochs <= 1:
        return None
    reducer = ", ".join(log.reducer or ["mean"])
    shown = ", ".join(
        f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in log.metrics().items()
    )
    return (
        f"condition {condition}: {log.epochs} epochs, one row per epoch (sample_index = "
        f"epoch - 1), so its accuracy counts each epoch; Inspect reduced the epochs of "
        f"each sample with {shorten(reducer)} before its metrics"
        + (f" ({shorten(shown, 300)})" if shown else "")
    )
