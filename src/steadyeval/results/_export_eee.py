"""Export a run as Every Eval Ever (EEE) records, schema 0.3.0.

EEE stores an evaluation as an aggregate JSON (``{uuid}.json``: the source, the library, the
model and one result per metric) and its instance-level records (``{uuid}_samples.jsonl``:
one line per sample), in ``data/<benchmark>/<developer>/<model>/``. Here each model of the
run is one evaluation: one aggregate with one result per condition (its accuracy with the
Wilson interval), and one record per results row (``evaluation_name`` and
``evaluation_result_id`` name the condition; ``sample_index`` is in the record's metadata).

What the schema cannot hold is said, not guessed: a record needs ``is_correct``, so a row
without a verdict (``correct`` null) is left out and counted in a note; log-probability rows
carry no completion text (``output.raw`` is empty and the scored option is the extracted
value); the model's developer is the first part of its name (``hf:Qwen/Qwen2.5-0.5B``:
``Qwen``), else its backend (``openai:gpt-4o-mini``: ``openai``).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .._json import json_safe, write_text_atomic
from .._version import __version__
from ..stats import wilson_interval
from ._export_run import (
    ExportedRun,
    ExportOptions,
    Group,
    RunToExport,
    check_target,
    default_out,
    generated_text,
)

__all__ = ["EEE_SCHEMA_VERSION", "eee_model_id", "write_eee"]

EEE_SCHEMA_VERSION = "0.3.0"
_BAD_PATH = re.compile(r'[<>:"\\|?*\x00-\x1f/]')
#: Backends that run open weights on the evaluator's own hardware.
_SELF_DEPLOYED = frozenset({"hf", "hf-seq2seq", "hf-masked", "vllm"})
#: Row columns kept (as text) in an instance record's ``metadata``.
_META = (
    "condition_id",
    "template",
    "format",
    "scoring",
    "option_order",
    "n_shots",
    "chat",
    "verbalizer",
    "parsed_kind",
    "parsed_option",
    "refused",
    "confidence",
    "em",
    "f1",
    "sequence_logprob",
    "approximate",
    "truncated",
    "prompt_hash",
    "item_hash",
    "request_key",
)


def _split_model(model: str) -> tuple[str, str]:
    """``(backend, name)`` of a model identity ``backend:NAME[@rev][?options][#hash]``."""
    backend, sep, rest = model.partition(":")
    if not sep:
        return "unknown", model
    return backend, re.split(r"[@?#]", rest, maxsplit=1)[0] or rest


def eee_model_id(model: str) -> str:
    """The model in HuggingFace form, ``developer/name``: the name itself when it has a
    developer part (``hf:Qwen/Qwen2.5-0.5B@abc`` → ``Qwen/Qwen2.5-0.5B``), else the backend
    as developer (``openai:gpt-4o-mini`` → ``openai/gpt-4o-mini``)."""
    backend, name = _split_model(model)
    return name if "/" in name.strip("/") else f"{backend}/{name.strip('/')}"


def _component(text: str) -> str:
    """A portable folder name (EEE refuses ``<>:"\\|?*``, control characters, a trailing dot
    or space, and ``data``)."""
    out = _BAD_PATH.sub("_", text).rstrip(". ") or "_"
    return f"{out}_" if out == "data" else out


def _text_map(values: Mapping[str, Any]) -> dict[str, str]:
    """EEE's ``additional_details`` and ``metadata``: text values only (others as JSON)."""
    out = {}
    for k, v in values.items():
        if v is not None:
            out[k] = v if isinstance(v, str) else json.dumps(json_safe(v), ensure_ascii=False)
    return out


def _model_info(model: str) -> dict[str, Any]:
    backend, _ = _split_model(model)
    model_id = eee_model_id(model)
    local = backend in _SELF_DEPLOYED
    return {
        "name": model,
        "id": model_id,
        "developer": model_id.split("/", 1)[0],
        "inference_platform": backend,
        "additional_details": {
            "deployment_type": "self_deployed" if local else "unknown",
            "model_availability": "open_weights" if local else "unknown",
            "steadyeval_model": model,
        },
    }


def _result(
    run: RunToExport, group: Group, summary: Mapping[str, Any], benchmark: str
) -> dict[str, Any]:
    """One condition's accuracy as an EEE evaluation result."""
    first = group.first
    gen = run.generation.get(group.condition, {})
    args = {k: gen[v] for k, v in (("temperature", "temperature"), ("top_p", "top_p")) if v in gen}
    if isinstance(gen.get("max_new_tokens"), int) and gen["max_new_tokens"] >= 1:
        args["max_tokens"] = gen["max_new_tokens"]
    condition = {k: first.get(k) for k in ("condition_id", "template", "format", "scoring")}
    condition.update({k: first.get(k) for k in ("option_order", "n_shots", "chat", "verbalizer")})
    n = int(summary["scored"])
    counts = {k: summary.get(k) for k in ("n", "scored", "correct", "refused", "unmatched")}
    return {
        "evaluation_result_id": f"{group.condition}/accuracy",
        "evaluation_name": group.condition,
        "source_data": {
            "dataset_name": benchmark,
            "source_type": "other",
            "additional_details": {"items": str(len({r["item_id"] for r in group.rows}))},
        },
        "evaluation_timestamp": run.created.isoformat(),
        "metric_config": {
            "evaluation_description": f"accuracy under condition {group.condition!r}",
            "metric_id": "accuracy",
            "metric_name": "Accuracy",
            "metric_kind": "accuracy",
            "metric_unit": "proportion",
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": 0,
            "max_score": 1,
            "additional_details": _text_map(condition),
        },
        "score_details": {
            "score": float(summary["accuracy"]),
            "details": _text_map(counts),
            "uncertainty": {
                "confidence_interval": {
                    "lower": float(summary["accuracy_low"]),
                    "upper": float(summary["accuracy_high"]),
                    "confidence_level": 0.95,
                    "method": "wilson",
                },
                "num_samples": n,
            },
        },
        "generation_config": {
            "generation_args": args,
            "additional_details": _text_map({k: gen[k] for k in ("n_samples", "seed") if k in gen}),
        },
    }


def _record(
    row: Mapping[str, Any], evaluation_id: str, model_id: str, linked: bool
) -> dict[str, Any]:
    """One row as an instance-level record (a row with ``correct`` set)."""
    prompt = row.get("prompt") or ""
    reference = [str(g) for g in row.get("gold") or []]
    generated = generated_text(row) and row.get("output") is not None
    output: dict[str, Any] = {"raw": [row["output"]] if generated else []}
    if row.get("reasoning") is not None:
        output["reasoning_trace"] = [row["reasoning"]]
    record: dict[str, Any] = {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model_id,
        "evaluation_name": row["condition"],
        "sample_id": str(row["item_id"]),
        "sample_hash": hashlib.sha256(
            (prompt + "".join(reference)).encode("utf-8", "surrogatepass")
        ).hexdigest(),
        "interaction_type": "single_turn",
        "input": {"raw": prompt, "formatted": prompt, "reference": reference},
        "output": output,
        "answer_attribution": [],
        "evaluation": {"score": 1.0 if row["correct"] else 0.0, "is_correct": bool(row["correct"])},
    }
    if linked:
        record["evaluation_result_id"] = f"{row['condition']}/accuracy"
    if row.get("options"):
        record["input"]["choices"] = list(row["options"])
    if row.get("parsed") is not None:
        record["answer_attribution"] = [
            {
                "turn_idx": 0,
                "source": "output.raw" if generated else f"the {row.get('scoring')} scores",
                "extracted_value": row["parsed"],
                "extraction_method": row.get("extractor") or str(row.get("scoring")),
                "is_terminal": True,
            }
        ]
    n_in, n_out = row.get("n_input_tokens"), row.get("n_output_tokens")
    if n_in is not None and (n_out is not None or not generated):
        n_out = n_out or 0
        record["token_usage"] = {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
    if row.get("parsed_kind") == "error":
        record["error"] = "the sample raised an error (as imported)"
    meta = {k: row.get(k) for k in _META}
    meta.update(
        condition=row["condition"],
        sample_index=row["sample_index"],
        option_logprobs=row.get("option_logprobs"),
        gold_options=row.get("gold_options"),
        item_metadata=row.get("metadata") or None,
    )
    record["metadata"] = _text_map(meta)
    return record


def _counts(group: Group) -> dict[str, Any]:
    """A condition's counts and accuracy with its 95% Wilson interval (over rows with a
    verdict), as ``summary.json`` gives them."""
    rows = group.rows
    scored = [r for r in rows if r.get("correct") is not None]
    k = sum(bool(r["correct"]) for r in scored)
    ci = wilson_interval(k, len(scored)) if scored else None
    return {
        "n": len(rows),
        "scored": len(scored),
        "correct": k,
        "refused": sum(bool(r.get("refused")) for r in rows),
        "unmatched": sum(r.get("parsed_kind") == "unmatched" for r in rows),
        "accuracy": k / len(scored) if scored else None,
        "accuracy_low": ci.low if ci else None,
        "accuracy_high": ci.high if ci else None,
    }


def _uuid4(*parts: str) -> str:
    """A version-4-shaped UUID from a hash of ``parts``: the same run exports to the same
    file names (EEE names files by UUID4)."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _dump_line(record: Mapping[str, Any]) -> str:
    return json.dumps(json_safe(record), ensure_ascii=False, allow_nan=False) + "\n"


def _model_files(
    run: RunToExport,
    model: str,
    groups: list[Group],
    benchmark: str,
    summaries: Mapping[tuple[str, str], Mapping[str, Any]],
    shared_id: bool,
) -> tuple[str, dict[str, Any], str, int]:
    """``(folder, aggregate, samples text, rows left out)`` of one model (``shared_id``:
    another model of the run has the same EEE id, e.g. two revisions: the evaluation id
    then ends in the file's UUID, so the two stay apart)."""
    info = _model_info(model)
    developer, name = info["id"].split("/", 1)
    folder = "/".join(["data", _component(benchmark), _component(developer), _component(name)])
    key = _uuid4(run.run_id, model, benchmark)
    stamp = str(int(run.created.timestamp()))
    evaluation_id = f"{benchmark}/{info['id']}/{stamp}" + (f"/{key}" if shared_id else "")
    results = [
        _result(run, g, summaries[(g.model, g.condition)], benchmark)
        for g in groups
        if summaries[(g.model, g.condition)]["scored"]
    ]
    linked = {r["evaluation_name"] for r in results}
    lines = [
        _dump_line(_record(r, evaluation_id, info["id"], g.condition in linked))
        for g in groups
        for r in g.rows
        if r.get("correct") is not None
    ]
    text = "".join(lines)
    aggregate = {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "evaluation_timestamp": run.created.isoformat(),
        "retrieved_timestamp": stamp,
        "source_metadata": {
            "source_name": f"steadyeval run {run.name}",
            "source_type": "evaluation_run",
            "source_organization_name": "unknown",
            "evaluator_relationship": "other",
            "additional_details": {"steadyeval_run_id": run.run_id},
        },
        "eval_library": {"name": "steadyeval", "version": __version__},
        "model_info": info,
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": f"{folder}/{key}_samples.jsonl",
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "total_rows": len(lines),
        },
    }
    left_out = sum(len(g.rows) for g in groups) - len(lines)
    return f"{folder}/{key}", aggregate, text, left_out


def write_eee(run: RunToExport, out: Path | None, options: ExportOptions) -> ExportedRun:
    """Write the run's EEE records under the folder ``out`` (default: beside the run
    folder, ``<run>-eee``): ``data/<benchmark>/<developer>/<model>/{uuid}.json`` and
    ``{uuid}_samples.jsonl`` per model."""
    folder = out if out is not None else default_out(run, "eee")
    if folder.suffix in (".json", ".jsonl") or (folder.exists() and not folder.is_dir()):
        raise ConfigError(
            f"--out {folder}: the EEE export writes a folder (data/<benchmark>/<developer>/"
            "<model>/ with an aggregate .json and its _samples.jsonl per model); give a folder"
        )
    summaries = {(g.model, g.condition): _counts(g) for g in run.groups()}
    benchmark = options.benchmark or run.name
    groups = list(run.groups())
    planned = []
    ids = [eee_model_id(m) for m in run.models()]
    for model, model_id in zip(run.models(), ids, strict=True):
        mine = [g for g in groups if g.model == model]
        shared = ids.count(model_id) > 1
        stem, aggregate, text, left = _model_files(run, model, mine, benchmark, summaries, shared)
        planned.append(
            (folder / f"{stem}.json", aggregate, folder / f"{stem}_samples.jsonl", text, left)
        )
    check_target([p for entry in planned for p in (entry[0], entry[2])], options.overwrite)
    files: list[Path] = []
    rows = left_out = 0
    for agg_path, aggregate, samples_path, text, left in planned:
        agg_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(samples_path, text)
        write_text_atomic(
            agg_path, json.dumps(json_safe(aggregate), indent=2, ensure_ascii=False) + "\n"
        )
        files += [agg_path, samples_path]
        rows += aggregate["detailed_evaluation_results"]["total_rows"]
        left_out += left
    notes: tuple[str, ...] = ()
    if left_out:
        notes = (
            f"{left_out} row(s) without a verdict (correct null: errored samples, items "
            "without a gold answer) are left out of the EEE records, whose schema requires "
            "is_correct",
        )
    return ExportedRun("eee", tuple(files), rows, notes)
