"""Export a run as Inspect AI logs (``.eval``), one per (model, condition).

Why one log per (model, condition): an Inspect log is one task run by one model, and Inspect
View lists logs by task and model with the task's headline score. With the condition as the
task (its name and display name; ``task_args`` records it as the task's variant), the log
list shows every condition's accuracy side by side, a sample keeps its item id in every
log (so the same item can be found under each condition), and a run with several samples per
item (``n_samples``) is Inspect's epochs. One log per model would have to rename samples
(``condition/item``) and would show one score for all conditions.

The archive is what Inspect writes: ``header.json`` (the log without samples), one
``samples/<id>_epoch_<n>.json`` per row, ``summaries.json`` (what View lists) and
``reductions.json``, deflate-compressed (every Inspect version reads it; no Inspect needed).
What Inspect has no field for (the parsed kind, option log-probabilities, the condition's
id) is kept in each sample's ``metadata.steadyeval`` and the score's ``metadata``; the
eval's ``metadata.steadyeval`` marks the log as steadyeval's, so that ``steadyeval import
inspect`` reads the item ids and prompts back as they were.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError
from .._json import json_safe, replace_atomically
from .._version import __version__
from ._export_run import (
    ExportedRun,
    ExportOptions,
    Group,
    RunToExport,
    check_target,
    default_out,
    generated_text,
)

__all__ = ["EXPORT_KEY", "SCORER", "write_inspect"]

#: The key of steadyeval's own facts in an exported log's ``eval.metadata`` and in each
#: sample's ``metadata``.
EXPORT_KEY = "steadyeval"
#: The name of the one score each exported sample carries.
SCORER = "steadyeval"
#: The score value of a row with no verdict (``correct`` null): Inspect's own values
#: (C, I, P, N) would each claim one.
UNSCORED = "unscored"
_LETTERS = string.ascii_uppercase
#: Row columns kept in a sample's ``metadata.steadyeval`` (Inspect has no field for them).
_FACTS = (
    "condition_id",
    "template",
    "format",
    "scoring",
    "option_order",
    "n_shots",
    "n_shots_used",
    "chat",
    "verbalizer",
    "alias",
    "item_hash",
    "prompt_hash",
    "request_key",
    "option_source",
    "parsed_kind",
    "parsed_option",
    "gold_options",
    "refused",
    "em",
    "f1",
    "option_logprobs",
    "confidence",
    "sequence_logprob",
    "approximate",
    "truncated",
    "answerable",
    "extractor",
    "reasoning",
)


def _letter_of(options: Sequence[str], text: str, index: int | None, source: Any) -> str | None:
    """The shown letter of an option: by original index through ``option_source``, else by
    text; ``None`` when it is not shown or there are more options than letters."""
    if len(options) > len(_LETTERS):
        return None
    if index is not None and isinstance(source, list) and index in source:
        k = source.index(index)
        return _LETTERS[k] if options[k] == text else None
    return _LETTERS[options.index(text)] if text in options else None


def _target(row: Mapping[str, Any]) -> str | list[str]:
    """The gold answers as Inspect's ``target``: the shown letters when every gold answer is
    a shown option (in order), else the gold texts."""
    gold = list(row.get("gold") or [])
    options = row.get("options")
    if options and gold and len(options) <= len(_LETTERS):
        letters = [_LETTERS[options.index(g)] for g in gold if g in options]
        if len(letters) == len(gold) and letters == sorted(set(letters)):
            gold = letters
    return gold[0] if len(gold) == 1 else gold


def _answer(row: Mapping[str, Any]) -> str | None:
    """The parsed answer as Inspect scorers record it: an option's letter, else the text."""
    parsed = row.get("parsed")
    options = row.get("options")
    if parsed is None or not options:
        return parsed  # type: ignore[no-any-return]
    letter = _letter_of(options, parsed, row.get("parsed_option"), row.get("option_source"))
    return letter or parsed


def _score(row: Mapping[str, Any]) -> dict[str, Any]:
    correct = row.get("correct")
    value = UNSCORED if correct is None else ("C" if correct else "I")
    return {
        "value": value,
        "answer": _answer(row),
        "explanation": f"{row.get('parsed_kind')} (steadyeval scoring {row.get('scoring')})",
        "metadata": {"parsed": row.get("parsed"), "parsed_kind": row.get("parsed_kind")},
        "history": [],
    }


def _metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """The item's metadata, with steadyeval's facts under :data:`EXPORT_KEY` (an item
    metadata key of that name is an error: it would be lost on import)."""
    meta = dict(row.get("metadata") or {})
    if EXPORT_KEY in meta:
        raise DataError(
            f"item {row['item_id']!r} (condition {row['condition']!r}): its metadata has a key "
            f"{EXPORT_KEY!r}, which the export uses for steadyeval's own facts; rename it"
        )
    facts = {k: row.get(k) for k in _FACTS if row.get(k) is not None}
    if "inspect" in meta:  # an imported row's own facts: the importer would refuse the key
        facts["inspect"] = meta.pop("inspect")
    return {**meta, EXPORT_KEY: facts}


def _sample(row: Mapping[str, Any], model: str) -> dict[str, Any]:
    prompt = row.get("prompt") or ""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt, "source": "input"}]
    sample: dict[str, Any] = {
        "id": row["item_id"],
        "epoch": row["sample_index"] + 1,
        "input": prompt,
        "target": _target(row),
        "uuid": _digest(
            "sample",
            row["run_id"],
            model,
            row["condition"],
            row["item_id"],
            str(row["sample_index"]),
        ),
    }
    if row.get("options"):
        sample["choices"] = list(row["options"])
    output = row.get("output")
    if output is not None and generated_text(row):
        reply = {"role": "assistant", "content": output, "source": "generate", "model": model}
        messages.append(reply)
        sample["output"] = {  # why generation stopped is not recorded: Inspect's "unknown"
            "model": model,
            "choices": [{"message": reply, "stop_reason": "unknown"}],
            "completion": output,
        }
    usage = _usage(row)
    if usage and "output" in sample:
        sample["output"]["usage"] = usage
    sample.update(messages=messages, scores={SCORER: _score(row)}, metadata=_metadata(row))
    sample.update(store={}, model_usage={model: usage} if usage else {})
    if row.get("parsed_kind") == "error":
        message = "the sample raised an error (as imported)"
        sample["error"] = {"message": message, "traceback": "", "traceback_ansi": ""}
    return sample


def _usage(row: Mapping[str, Any]) -> dict[str, int] | None:
    n_in, n_out = row.get("n_input_tokens"), row.get("n_output_tokens")
    if n_in is None:
        return None
    n_out = n_out or 0
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


def _summary(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A sample as ``summaries.json`` lists it (what Inspect View shows in its list)."""
    keys = ("id", "epoch", "input", "choices", "target", "metadata", "scores", "error", "uuid")
    out = {k: sample[k] for k in keys if k in sample}
    if "error" in out:
        out["error"] = out["error"]["message"]
    return {**out, "completed": True, "message_count": len(sample["messages"])}


def _metrics(group: Group) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Inspect's accuracy and stderr over items (each item's samples reduced by their mean,
    as Inspect reduces epochs), and the reduced value of each item."""
    per_item: dict[str, list[float]] = {}
    for r in group.rows:
        if r.get("correct") is not None:
            per_item.setdefault(r["item_id"], []).append(1.0 if r["correct"] else 0.0)
    values = [sum(v) / len(v) for v in per_item.values()]
    n = len(values)
    mean = sum(values) / n if n else math.nan
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else math.nan
    metrics = {
        "accuracy": {"name": "accuracy", "value": mean, "params": {}},
        "stderr": {"name": "stderr", "value": math.sqrt(var / n) if n > 1 else 0.0, "params": {}},
    }
    reduced = [{"value": v, "sample_id": i} for i, v in zip(per_item, values, strict=True)]
    return metrics, reduced


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:22]


def _header(
    run: RunToExport,
    group: Group,
    samples: list[dict[str, Any]],
    metrics: Mapping[str, Any],
    scored: int,
) -> dict[str, Any]:
    """The log without its samples: the eval (the condition as the task), the plan, and
    Inspect's results over the ``scored`` items that have a verdict."""
    first = group.first
    created = run.created.isoformat()
    epochs = max(s["epoch"] for s in samples)
    gen = run.generation.get(group.condition, {})
    generate_config = {
        k: gen[v]
        for k, v in (
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("max_tokens", "max_new_tokens"),
            ("seed", "seed"),
        )
        if v in gen
    }
    condition = {k: first.get(k) for k in ("condition_id", "template", "format", "scoring")}
    condition.update({k: first.get(k) for k in ("option_order", "n_shots", "chat", "verbalizer")})
    item_ids = list(dict.fromkeys(r["item_id"] for r in group.rows))
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": _digest("eval", run.run_id, group.model, group.condition),
            "run_id": run.run_id,
            "created": created,
            "task": group.condition,
            "task_id": _digest("task", run.run_id, group.model, group.condition),
            "task_version": 0,
            "task_display_name": group.condition,
            "task_attribs": {},
            "task_args": {"condition": group.condition},
            "task_args_passed": {"condition": group.condition},
            "dataset": {"name": run.name, "samples": len(item_ids), "sample_ids": item_ids},
            "model": group.model,
            "model_generate_config": generate_config,
            "model_args": {},
            "config": {"epochs": epochs, "epochs_reducer": ["mean"]},
            "packages": {"steadyeval": __version__},
            "scorers": [
                {
                    "name": SCORER,
                    "options": {},
                    "metadata": {},
                    "metrics": [
                        {"name": "inspect_ai/accuracy", "options": {}},
                        {"name": "inspect_ai/stderr", "options": {}},
                    ],
                }
            ],
            "metadata": {EXPORT_KEY: {"run_id": run.run_id, "version": __version__, **condition}},
        },
        "plan": {
            "name": "plan",
            "steps": [{"solver": f"steadyeval/{first.get('scoring')}", "params": condition}],
            "config": {},
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": [
                {
                    "name": SCORER,
                    "scorer": SCORER,
                    "reducer": "mean",
                    "params": {},
                    "scored_samples": scored,
                    "unscored_samples": len(item_ids) - scored,
                    "metrics": metrics,
                }
            ]
            if scored
            else [],
        },
        "stats": {"started_at": created, "completed_at": created, "model_usage": {}},
        "invalidated": False,
        "tags": [],
        "metadata": {},
    }


def _file_name(run: RunToExport, group: Group) -> str:
    """Inspect's own pattern, ``<time>_<task>_<id>.eval`` (the task in the name made safe for
    any file system; the id tells apart two models' logs of one condition)."""
    stamp = run.created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
    task = re.sub(r"[^A-Za-z0-9.-]+", "-", group.condition).strip("-.")[:80] or "condition"
    return f"{stamp}_{task}_{_digest('file', run.run_id, group.model, group.condition)}.eval"


def _dump(value: Any) -> bytes:
    text = json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False, sort_keys=False)
    return text.encode("utf-8", "surrogatepass")


def _write_log(path: Path, members: Sequence[tuple[str, Any]], created: datetime) -> None:
    """The archive, deflate-compressed, with fixed member times (the same run exports to the
    same bytes), written to a temporary file renamed into place."""
    stamp = created.timetuple()[:6]

    def write(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w") as zf:
            for name, value in members:
                info = zipfile.ZipInfo(name, date_time=stamp)
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, _dump(value))

    replace_atomically(path, write)


def _log_members(run: RunToExport, group: Group) -> list[tuple[str, Any]]:
    samples = [_sample(r, group.model) for r in group.rows]
    metrics, reduced = _metrics(group)
    header = _header(run, group, samples, metrics, len(reduced))
    members: list[tuple[str, Any]] = [("_journal/start.json", _start(header))]
    members += [(f"samples/{s['id']}_epoch_{s['epoch']}.json", s) for s in samples]
    members += [
        ("summaries.json", [_summary(s) for s in samples]),
        ("reductions.json", [{"scorer": SCORER, "reducer": "mean", "samples": reduced}]),
        ("header.json", header),
    ]
    return members


def _start(header: Mapping[str, Any]) -> dict[str, Any]:
    """The journal's start record: what Inspect writes when an eval starts."""
    return {"version": header["version"], "eval": header["eval"], "plan": header["plan"]}


def write_inspect(run: RunToExport, out: Path | None, options: ExportOptions) -> ExportedRun:
    """Write one ``.eval`` log per (model, condition) of ``run`` into the folder ``out``
    (default: beside the run folder, ``<run>-inspect``), or, when ``out`` ends in
    ``.eval``, the one log of a run of one model and condition to that file."""
    groups = list(run.groups())
    if out is not None and out.suffix == ".eval":
        if len(groups) != 1:
            raise ConfigError(
                f"--out {out}: one .eval file holds one (model, condition); this run has "
                f"{len(groups)}: give a folder instead"
            )
        paths = [out]
    else:
        folder = out if out is not None else default_out(run, "inspect")
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"--out {folder}: is a file; expected a folder or a .eval path")
        paths = [folder / _file_name(run, g) for g in groups]
    check_target(paths, options.overwrite)
    rows = 0
    for path, group in zip(paths, groups, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        members = _log_members(run, group)
        _write_log(path, members, run.created)
        rows += len(group.rows)
    return ExportedRun("inspect", tuple(paths), rows)
