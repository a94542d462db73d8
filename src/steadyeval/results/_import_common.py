"""What the importers share: the imported-run record, duplicate checks and the run directory."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._errors import ConfigError, DataError
from .._json import json_safe, write_json, write_text_atomic
from ..items import lone_surrogate, shorten
from ._manifest import writing_run
from ._row import ResultRow, prompt_hash
from ._schema import SCHEMA_VERSION, StudyColumn, write_results
from ._summary import _cell, summarize, summary_markdown

__all__ = [
    "ImportedRun",
    "RowKeys",
    "canonical",
    "check_condition_map",
    "files_digest",
    "lifted_columns",
    "parse_condition_map",
    "short_hash",
    "utf8_name",
    "write_imported_run",
]


def utf8_name(path: Path) -> Path:
    """``path`` when its name is UTF-8 text; a file name of other bytes would reach the
    table as text that cannot be written (a task, a log file's name), so it is refused."""
    if lone_surrogate(str(path)) is not None:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise DataError(f"{shorten(shown, 200)}: the file name is not UTF-8 text; rename it")
    return path


def canonical(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces, UTF-8 kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def short_hash(text: str) -> str:
    """First 16 hex digits of SHA-256 (the formula of every ``prompt_hash``)."""
    return prompt_hash(text)


def files_digest(paths: Sequence[Path], options: Mapping[str, Any]) -> str:
    """A run id for an import: hash of the files' names and bytes and the import options."""
    h = hashlib.sha256()
    for p in sorted(paths, key=lambda q: q.name):
        h.update(p.name.encode("utf-8", "surrogateescape"))
        file_hash = hashlib.sha256()
        with p.open("rb") as fh:  # in blocks: a log may be larger than memory allows
            for block in iter(lambda: fh.read(1 << 20), b""):
                file_hash.update(block)
        h.update(file_hash.digest())
    text = canonical(dict(options))
    at = lone_surrogate(text)
    if at is not None:  # e.g. --model given bytes that are not UTF-8
        shown = text[max(at - 40, 0) : at + 40].encode("utf-8", "backslashreplace").decode()
        raise ConfigError(
            f"the import's options hold text that is not UTF-8 (near {shown!r}); give "
            "names (--model, --condition-map, ...) as UTF-8 text"
        )
    h.update(text.encode())
    return h.hexdigest()[:16]


#: Metadata keys an importer lifts into study columns when the imported samples have them.
LIFTED = {
    "subject": "the sample's subject (from the source's document or metadata)",
    "relation": "the sample's relation (from the source's document or metadata)",
    "split": "the sample's split (from the source's document or metadata)",
}


def lifted_columns(rows: Sequence[ResultRow]) -> list[StudyColumn]:
    """Study columns for the :data:`LIFTED` keys some row's metadata holds as text."""
    return [
        StudyColumn(name, "string", doc)
        for name, doc in LIFTED.items()
        if any(isinstance(r.metadata.get(name), str) for r in rows)
    ]


def parse_condition_map(
    pairs: Iterable[str], expected: str = "SOURCE=CONDITION, e.g. mmlu=zero-shot"
) -> dict[str, str]:
    """``["task=name", ...]`` → ``{"task": "name"}``; a malformed entry is an error."""
    out: dict[str, str] = {}
    for raw in pairs:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"map entry {raw!r}: expected {expected}")
        if key.strip() in out:
            raise ConfigError(f"map entry {raw!r}: {key.strip()!r} is mapped twice")
        out[key.strip()] = value.strip()
    return out


def check_condition_map(
    mapping: Mapping[str, str], used: set[str], what: str, flag: str = "--condition-map"
) -> None:
    """Every key of the user's map (given with ``flag``) must name something the files hold."""
    unknown = sorted(set(mapping) - used)
    if unknown:
        raise ConfigError(
            f"{flag} names {', '.join(map(repr, unknown))}, which no imported file "
            f"holds; {what} found: {', '.join(sorted(used)) or 'none'}"
        )


@dataclass
class RowKeys:
    """Detects two rows with the same (model, condition, item_id, sample_index)."""

    seen: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def add(self, key: tuple[Any, ...], where: str, hint: str) -> None:
        if key in self.seen:
            model, condition, item_id, sample_index = (shorten(repr(k), 40) for k in key)
            raise DataError(
                f"{where}: duplicate row for model={model}, condition={condition}, "
                f"item_id={item_id}, sample_index={sample_index} (first at "
                f"{self.seen[key]}); {hint}"
            )
        self.seen[key] = where


@dataclass(frozen=True)
class ImportedRun:
    """A results table made from another tool's logs, with its summary.

    Attributes
    ----------
    table : pyarrow.Table
        Rows in the steadyeval results schema; columns the source has no value for are null.
    summary : dict
        ``summary.json`` content (the same keys as a steadyeval run, plus ``imported``).
    """

    table: pa.Table
    summary: dict[str, Any]


def build_summary(
    table: pa.Table, run_id: str, tool: str, files: Sequence[Path], options: Mapping[str, Any]
) -> dict[str, Any]:
    """``summary.json`` for an imported run (no requests were planned or sent by steadyeval)."""
    models = list(dict.fromkeys(table.column("model").to_pylist()))
    conditions = list(dict.fromkeys(table.column("condition").to_pylist()))
    n_items = len(set(table.column("item_id").to_pylist()))
    return {
        "run_id": run_id,
        "schema_version": SCHEMA_VERSION,
        "n_rows": table.num_rows,
        "n_items": n_items,
        "models": models,
        "conditions": conditions,
        "n_skipped": 0,
        "skipped": [],
        "plan": {
            "trials": table.num_rows,
            "requests": 0,
            "unique": 0,
            "cache_hits": 0,
            "model_calls": 0,
        },
        "by_condition": summarize(table),
        "imported": {
            "tool": tool,
            "files": len(files),
            "paths": [str(p) for p in files],
            "options": dict(options),
        },
    }


def write_imported_run(run: ImportedRun, out: str | Path) -> Path:
    """Write ``results.parquet``, ``summary.json``, ``summary.md`` and ``config.json``."""
    run_dir = Path(out)
    summary = json_safe(run.summary)
    with writing_run(run_dir, summary["run_id"]):
        _write_imported(run_dir, run.table, summary)
    return run_dir


def _write_imported(run_dir: Path, table: Any, summary: dict[str, Any]) -> None:
    write_results(table, run_dir / "results.parquet")
    imported = summary["imported"]
    for name, data in (
        ("summary.json", summary),
        ("config.json", {"run_id": summary["run_id"], "imported": imported}),
    ):
        write_json(run_dir / name, data)
    lines = [
        summary_markdown(summary).rstrip("\n"),
        "",
        "## Imported",
        "",
        f"Imported from {imported['tool']} ({imported['files']} file(s)); steadyeval sent no "
        "requests. Files:",
        "",
        *(f"- `{p}`" for p in imported["paths"]),
        "",
        *_logs_markdown(imported),
    ]
    write_text_atomic(run_dir / "summary.md", "\n".join(lines))


def _logs_markdown(imported: Mapping[str, Any]) -> list[str]:
    """Each imported log's status, epochs and the tool's own metrics, then the notes."""
    lines: list[str] = []
    logs = imported.get("logs") or []
    if logs:
        lines += [
            "| log | task | condition | status | epochs (reducer) | rows | errored "
            "| the tool's metrics |",
            "|---|---|---|---|---:|---:|---:|---|",
        ]
        for g in logs:
            metrics = ", ".join(
                f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                for k, v in g["inspect_metrics"].items()
            )
            reducer = f" ({', '.join(g['epochs_reducer'])})" if g["epochs_reducer"] else ""
            lines.append(
                f"| {_cell(g['file'])} | {_cell(g['task'])} | {_cell(g['condition'])} "
                f"| {_cell(g['status'])} | {g['epochs']}{reducer} | {g['rows']} | {g['errored']} "
                f"| {_cell(metrics) or 'none'} |"
            )
        lines.append("")
    for note in imported.get("notes") or []:
        lines.append(f"- Note: {_cell(note)}")
    return [*lines, ""] if imported.get("notes") else lines
