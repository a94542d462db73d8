"""Import lm-evaluation-harness ``--log_samples`` files into the results table.

lm-eval writes one ``samples_<task>_<date>.jsonl`` per task (one JSON object per document
and filter: ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``,
``filter``, ``metrics`` and one key per metric, ``doc_hash``, ``prompt_hash``,
``target_hash``) next to ``results_<date>.json`` (task configs, model, shots). Each
document becomes one row; every column the files determine is filled, the rest is null.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import DataError
from .._files import input_file
from ..items import shorten
from ._import_common import (
    ImportedRun,
    RowKeys,
    build_summary,
    check_condition_map,
    files_digest,
    lifted_columns,
    utf8_name,
)
from ._import_limits import ImportLimits
from ._import_lmeval_fields import read_records, read_results_json
from ._import_lmeval_records import output_type, pick_metric, record_arguments, row_fields
from ._import_memory import KeptBudget
from ._row import ResultRow
from ._schema import rows_to_table

__all__ = ["LmEvalImportOptions", "find_lmeval_samples", "import_lmeval"]

_WHAT = "an lm-eval samples file (samples_*.jsonl)"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)$")


@dataclass(frozen=True)
class LmEvalImportOptions:
    """How lm-eval samples become rows.

    Attributes
    ----------
    condition_map : mapping of str to str
        Task name (or ``task/filter``) → condition name; unmapped tasks keep their name.
    model : str, optional
        Model name for every row (default: ``<lm-eval model type>:<model_name>`` from
        ``results_*.json``, else the samples file's folder name).
    item_id_field : str, optional
        Field of ``doc`` holding the item id (default: lm-eval's ``doc_id``, the document's
        position in the task's split).
    metric : str, optional
        0/1 metric that fills ``correct`` (default ``acc`` for multiple choice and
        log-likelihood tasks, ``exact_match`` else ``acc`` for generation tasks).
    """

    condition_map: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    item_id_field: str | None = None
    metric: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "condition_map": dict(self.condition_map),
            "model": self.model,
            "item_id_field": self.item_id_field,
            "metric": self.metric,
        }


def find_lmeval_samples(paths: Sequence[str | Path]) -> list[Path]:
    """The ``samples_*.jsonl`` files named by ``paths`` (files, or folders searched
    recursively), sorted and deduplicated. Each must be a regular file: a FIFO or device is
    refused unopened."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            hits = sorted(q for q in p.rglob("samples_*.jsonl") if not q.is_dir())
            if not hits:
                raise DataError(
                    f"{p}: no samples_*.jsonl files; run lm_eval with --log_samples "
                    "--output_path and pass that folder or the files"
                )
            found += [input_file(utf8_name(q), _WHAT) for q in hits]
        elif not os.path.lexists(p):
            raise DataError(f"{p}: no such file or folder")
        else:
            found.append(input_file(utf8_name(p), _WHAT))
    return sorted(dict.fromkeys(q.resolve() for q in found))


def _task_and_date(path: Path) -> tuple[str, str | None]:
    m = _SAMPLES.match(path.stem)
    if m:
        return m.group("task"), m.group("date")
    return path.stem.removeprefix("samples_"), None


def _results_for(
    path: Path, date: str | None, kept: KeptBudget, read: dict[Path, dict[str, Any]]
) -> dict[str, Any]:
    """The ``results_<date>.json`` beside a samples file (``{}`` when there is none); each
    is read once (``read``: those read so far), and shared by the tasks of its run."""
    if date is None:
        return {}
    res = path.parent / f"results_{date}.json"
    if res not in read:
        read[res] = read_results_json(res, kept) if os.path.lexists(res) else {}
        kept.keep(read[res], str(res))
    return read[res]


def _model_name(results: Mapping[str, Any], path: Path) -> str:
    cfg = results.get("config") if isinstance(results.get("config"), Mapping) else {}
    assert isinstance(cfg, Mapping)
    kind = cfg.get("model")
    name = results.get("model_name")
    if not name and isinstance(cfg.get("model_args"), Mapping):
        name = cfg["model_args"].get("pretrained")
    if not name and isinstance(cfg.get("model_args"), str):
        name = cfg["model_args"]
    if not name:
        name = path.parent.name
    return f"{kind}:{name}" if kind else str(name)


class _SamplesFile(NamedTuple):
    """One samples file, read: its task, ``results_*.json`` (``{}`` if none) and records."""

    path: Path
    task: str
    results: dict[str, Any]
    records: list[tuple[int, dict[str, Any]]]


def _load(
    files: Sequence[Path], limits: ImportLimits
) -> tuple[list[_SamplesFile], dict[str, set[str]]]:
    """Each file read, and the filters each task's records use (a task with more than one
    filter gets one condition per filter)."""
    loaded: list[_SamplesFile] = []
    filters: dict[str, set[str]] = {}
    kept = KeptBudget(limits)  # every file's records are held until the table is made
    read: dict[Path, dict[str, Any]] = {}
    for path in files:
        task, date = _task_and_date(path)
        results = _results_for(path, date, kept, read)
        recs = []
        for lineno, rec in read_records(path, limits):
            kept.keep(rec, f"{path}, line {lineno}")
            filters.setdefault(task, set()).add(str(rec.get("filter", "none")))
            recs.append((lineno, rec))
        loaded.append(_SamplesFile(path, task, results, recs))
    return loaded, filters


def _task_config(results: Mapping[str, Any], task: str) -> tuple[Mapping[str, Any], Any]:
    """The task's config in ``results_*.json`` (empty without one) and its number of shots."""
    configs = results.get("configs") if isinstance(results.get("configs"), Mapping) else {}
    assert isinstance(configs, Mapping)
    config = configs.get(task) if isinstance(configs.get(task), Mapping) else {}
    assert isinstance(config, Mapping)
    n_shot = (results.get("n-shot") or {}).get(task, config.get("num_fewshot"))
    return config, n_shot  # both checked on reading: an integer in range, or None


def _condition(cmap: Mapping[str, str], task: str, source: str, flt: str) -> str:
    """The condition of a record of ``task`` under filter ``flt`` (``source`` is the task, or
    ``task/filter`` when the task has several filters)."""
    if source in cmap:
        return cmap[source]
    if task in cmap:
        return cmap[task] if source == task else f"{cmap[task]}/{flt}"
    return source


def _item_id(rec: Mapping[str, Any], item_id_field: str | None, where: str) -> str:
    """The record's item id: lm-eval's ``doc_id``, or the doc field named by ``--item-id``."""
    if item_id_field is None:
        return str(rec["doc_id"])
    doc = rec["doc"]  # an object: checked on reading
    if item_id_field not in doc:
        fields = ", ".join(map(str, doc)) or "none"
        raise DataError(
            f"{where}: doc has no field {shorten(repr(item_id_field))} (--item-id); its "
            f"fields: {shorten(fields, 200)}"
        )
    return str(doc[item_id_field])


def _metadata(doc: Mapping[str, Any], where: str, facts: dict[str, Any]) -> dict[str, Any]:
    """The document's fields with lm-eval's own ``facts`` under ``lm_eval``."""
    if "lm_eval" in doc:
        raise DataError(
            f"{where}: doc has a field named 'lm_eval', which steadyeval "
            "uses for lm-eval's own facts; rename it before importing"
        )
    return {**doc, "lm_eval": facts}


def _file_rows(
    samples: _SamplesFile,
    filters: set[str],
    opts: LmEvalImportOptions,
    *,
    run_id: str,
    keys: RowKeys,
    used: set[str],
) -> list[ResultRow]:
    """The rows of one samples file (``filters``: those its task uses); adds the condition
    map keys its records can match to ``used``."""
    path, task, results, recs = samples
    config, n_shot = _task_config(results, task)
    model = opts.model or _model_name(results, path)
    chat = bool(results.get("chat_template")) if results else None
    rows: list[ResultRow] = []
    for lineno, rec in recs:
        where = f"{path}, line {lineno}"
        flt = str(rec.get("filter", "none"))
        source = task if len(filters) == 1 else f"{task}/{flt}"
        used.update({task, source})
        condition = _condition(opts.condition_map, task, source, flt)
        args = record_arguments(rec, where)
        kind = output_type(config, args, where)
        metric = pick_metric(rec, kind, opts.metric, where)
        item_id = _item_id(rec, opts.item_id_field, where)
        keys.add(
            (model, condition, item_id, 0),
            where,
            "was the file appended twice, or is --item-id not unique?",
        )
        body = row_fields(rec, where=where, kind=kind, args=args, config=config, metric=metric)
        doc = body.pop("_doc")
        metrics = body.pop("_metrics")
        facts = {
            "task": task,
            "filter": flt,
            "doc_id": rec["doc_id"],
            "output_type": kind,
            "metric": metric,
            "metrics": metrics,
            "target": rec.get("target"),
            "prompt_hash": rec.get("prompt_hash"),
            "file": path.name,
            "line": lineno,
        }
        rows.append(
            ResultRow(
                run_id=run_id,
                model=model,
                item_id=item_id,
                item_hash=rec.get("doc_hash") or None,
                condition=condition,
                template=task,
                n_shots=int(n_shot) if isinstance(n_shot, int) else None,
                chat=chat,
                metadata=_metadata(doc, where, facts),
                **body,
            )
        )
    return rows


def import_lmeval(
    paths: Sequence[str | Path],
    options: LmEvalImportOptions | None = None,
    *,
    limits: ImportLimits | None = None,
) -> ImportedRun:
    """Read lm-eval ``--log_samples`` files into a results table.

    Parameters
    ----------
    paths : sequence of path
        ``samples_*.jsonl`` files or folders holding them (searched recursively). The
        ``results_<date>.json`` next to a samples file supplies the task's output type,
        target delimiter, shots and the model; without it they are inferred.
    options : LmEvalImportOptions, optional
        Condition names, model name, item id field and the metric that fills ``correct``.
    limits : ImportLimits, optional
        How large a file may be, in bytes and in JSON values (default: from the
        environment; see docs/import.md).

    Returns
    -------
    ImportedRun
        The table (one row per document, task and filter) and its summary.

    Raises
    ------
    ValueError
        On a malformed record, a non-0/1 ``--metric``, a duplicate row (e.g. a file
        appended twice, or ``--item-id`` naming a field that is not unique), or a
        ``--condition-map`` key that names no task. Messages name the file and line.

    Notes
    -----
    Multiple choice: ``options`` are the continuations without lm-eval's target delimiter,
    ``option_logprobs`` the filtered log-likelihoods, ``parsed`` the arg-max option and
    ``confidence`` its softmax share; ``correct`` is ``acc``. Generation: ``output`` is the
    raw generation, ``parsed`` the filtered answer, ``correct`` is ``exact_match`` (``em``
    too). ``item_hash`` is lm-eval's ``doc_hash``; ``prompt_hash`` hashes the prompt as on
    every steadyeval row (lm-eval's own is ``metadata.lm_eval.prompt_hash``), so two imports
    of the same documents and prompts compare equal. The document's fields go into
    ``metadata``; ``subject``, ``relation`` and ``split``, where documents have them, also
    become study columns. lm-eval's own facts go under ``metadata.lm_eval``.
    """
    opts = options or LmEvalImportOptions()
    files = find_lmeval_samples(paths)
    if not files:
        raise DataError("no lm-eval samples files given")
    run_id = files_digest(files, {"tool": "lm-eval", **opts.as_dict()})
    loaded, filters = _load(files, limits or ImportLimits.from_env())
    used: set[str] = set()
    keys = RowKeys()
    rows: list[ResultRow] = []
    for samples in loaded:
        rows += _file_rows(
            samples, filters[samples.task], opts, run_id=run_id, keys=keys, used=used
        )
    check_condition_map(opts.condition_map, used, "tasks (and task/filter)")
    table = rows_to_table(rows, lifted_columns(rows))
    summary = build_summary(table, run_id, "lm-eval", files, opts.as_dict())
    return ImportedRun(table=table, summary=summary)
