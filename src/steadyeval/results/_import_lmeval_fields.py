"""The fields of lm-evaluation-harness output that an import reads, type-checked as read.

``results_<date>.json`` (the model, each task's config and shots) and each
``--log_samples`` record (``doc_id``, ``doc``, ``arguments``, ``resps``,
``filtered_resps``, ``filter``, ``metrics``, hashes). A field of the wrong type is a
:class:`~steadyeval.DataError` naming the file (and line), the field and what was
expected; the samples file's size and JSON values are bounded before it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .._errors import DataError
from .._files import human_bytes, input_file, read_text_file
from ..items import read_jsonl
from ._import_fields import INT, LIST, OBJECT, TEXT, Place, describe, get, int_in, list_of
from ._import_limits import ImportLimits, json_document
from ._import_memory import KeptBudget, file_parse_cost

__all__ = ["MAX_SHOTS", "check_results", "read_records", "read_results_json"]

#: The largest number of shots: ``n_shots`` is a 32-bit column.
MAX_SHOTS = 2**31 - 1
#: The largest ``doc_id``: lm-eval numbers a task's documents from 0.
MAX_DOC_ID = 2**63 - 1
_REQUIRED = ("doc_id", "doc", "arguments", "filtered_resps")
_RECORD = "an lm-eval --log_samples record (doc_id, doc, arguments, resps, filtered_resps, ...)"


def check_results(data: Any, place: Place) -> dict[str, Any]:
    """``results_*.json``'s content with the fields an import reads checked."""
    if not isinstance(data, dict):
        raise place.error(f"is {describe(data)}", "an object (lm-eval's results JSON)")
    get(data, "model_name", place, TEXT)
    config = get(data, "config", place, OBJECT)
    if config is not None:
        at = place.at("config")
        get(config, "model", at, TEXT)
        if isinstance(get(config, "model_args", at, TEXT, OBJECT), Mapping):
            get(config["model_args"], "pretrained", at.at("model_args"), TEXT)
    at = place.at("configs")
    for task, cfg in (get(data, "configs", place, OBJECT) or {}).items():
        if not isinstance(cfg, Mapping):
            raise at.at(str(task)).error(f"is {describe(cfg)}", "an object (a task's config)")
        get(cfg, "output_type", at.at(str(task)), TEXT)
        get(cfg, "target_delimiter", at.at(str(task)), TEXT)
        if get(cfg, "num_fewshot", at.at(str(task)), INT) is not None:
            int_in(cfg["num_fewshot"], at.at(str(task)).at("num_fewshot"), 0, MAX_SHOTS)
    at = place.at("n-shot")
    for task, shots in (get(data, "n-shot", place, OBJECT) or {}).items():
        if shots is not None:
            int_in(shots, at.at(str(task)), 0, MAX_SHOTS)
    return data


def read_results_json(path: Path, kept: KeptBudget) -> dict[str, Any]:
    """``results_*.json`` read under the limits (the memory parsing it takes within what
    the import may hold) and checked (:func:`check_results`)."""
    limits = kept.limits
    p = input_file(path, "lm-eval's results JSON")
    if p.stat().st_size <= limits.file_bytes:  # else refused by its size, unread
        kept.parse(file_parse_cost(p), str(p))
    text = read_text_file(path, "lm-eval's results JSON", max_bytes=limits.file_bytes)
    return check_results(json_document(text, str(path), limits), Place(str(path)))


def _check_record(rec: Any, place: Place) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise place.error(f"is {describe(rec)}", "one JSON object per line")
    for key in _REQUIRED:
        if key not in rec:
            raise place.at(key).error("missing field", _RECORD)
    int_in(get(rec, "doc_id", place, INT, required=True), place.at("doc_id"), 0, MAX_DOC_ID)
    get(rec, "doc", place, OBJECT, required=True)
    _share_contexts(get(rec, "arguments", place, OBJECT, LIST, required=True))
    get(rec, "resps", place, LIST)
    for key in ("filter", "doc_hash", "prompt_hash"):
        get(rec, key, place, TEXT)
    list_of(get(rec, "metrics", place, LIST), place.at("metrics"), TEXT)
    return rec


def _share_contexts(args: Any) -> None:
    """Make the requests of a record that repeat its first request's context (every choice
    of a multiple-choice document does) hold that one string, not a copy each."""
    slots: list[tuple[Any, Any]] = []  # (container, key) of each request's context
    for request in args.values() if isinstance(args, Mapping) else args:
        if isinstance(request, Mapping) and "arg_0" in request:
            slots.append((request, "arg_0"))
        elif isinstance(request, list) and request:
            slots.append((request, 0))
    first = None
    for container, key in slots:
        text = container[key]
        if not isinstance(text, str):
            continue
        if first is None:
            first = text
        elif text == first:
            container[key] = first


def _check_size(path: Path, limits: ImportLimits) -> None:
    """Refuse a samples file larger than the file limit or holding more JSON values than
    the value limit, before its records are read (they are all held at once)."""
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise DataError(
            f"{path}: {human_bytes(size)}, over the limit of "
            f"{human_bytes(limits.file_bytes)} for one samples file; set "
            "STEADYEVAL_MAX_FILE_MB to raise it"
        )
    bound = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            bound += block.count(b",") + block.count(b"[") + block.count(b"{")
    if bound > limits.json_values:
        raise DataError(
            f"{path}: may hold up to {bound:,} JSON values, more than the limit of "
            f"{limits.json_values:,} for one file (it would take gigabytes to read); set "
            "STEADYEVAL_MAX_JSON_VALUES to raise it"
        )


def read_records(path: Path, limits: ImportLimits) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a ``--log_samples`` file (a regular file, within the limits), each
    checked for lm-eval's fields."""
    input_file(path, "an lm-eval samples file (samples_*.jsonl)")
    _check_size(path, limits)
    empty = True
    for lineno, rec in read_jsonl(path):  # NaN, 4,300-digit integers: located DataErrors
        empty = False
        yield lineno, _check_record(rec, Place(str(path), lineno))
    if empty:
        raise DataError(
            f"{path}: holds no records (no line that is not blank); expected one lm-eval "
            "--log_samples record per line (a run cut short before it wrote any? import the "
            "other files without it)"
        )
