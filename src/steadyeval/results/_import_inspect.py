"""Import Inspect AI evaluation logs (``.json`` and ``.eval``) into the results table.

Reading the files is :mod:`._import_inspect_read`; which logs are taken (retries, status)
is :mod:`._import_inspect_logs`; this module turns samples into rows. Inspect is not
needed.
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import DataError
from ..items import shorten
from ..scoring import GENERATE
from ._import_common import (
    ImportedRun,
    RowKeys,
    build_summary,
    canonical,
    check_condition_map,
    files_digest,
    lifted_columns,
    short_hash,
)
from ._import_inspect_logs import (
    InspectLog,
    check_finished,
    load_logs,
    log_record,
    reducer_note,
    take_retries,
)
from ._import_inspect_read import find_inspect_logs, read_inspect_log
from ._row import ResultRow
from ._schema import StudyColumn, rows_to_table

__all__ = ["InspectImportOptions", "find_inspect_logs", "import_inspect", "read_inspect_log"]

_LETTERS = string.ascii_uppercase
_PARSED_OPTIONS = StudyColumn(
    "parsed_options",
    "json",
    "the options a several-answer response chose (indices, as JSON), e.g. [0, 2] for "
    "'A, C'; null for other rows",
)


@dataclass(frozen=True)
class InspectImportOptions:
    """How Inspect samples become rows.

    Attributes
    ----------
    condition_map : mapping of str to str
        Task name, or a log file's name without extension, → condition name (the file name
        wins; use it when two logs hold the same task). Unmapped logs keep the task name.
    model : str, optional
        Model name for every row (default: the log's ``eval.model``).
    scorer : str, optional
        Which of a sample's ``scores`` fills ``correct`` (default: the first one).
    item_scope : mapping of str to str
        Task name (or log file name) → item scope. Inspect numbers each data set's samples
        from 1, so ``item_id`` is ``<scope>/<sample id>`` with the task as the scope:
        different tasks never pair. Give two tasks that ask the same samples one scope
        (e.g. ``{"arc": "arc", "arc_cot": "arc"}``) to pair them; a warning names ids
        whose input, choices or target differ between them.
    allow_unfinished : bool
        Import the samples of logs whose eval did not finish (status ``error``,
        ``cancelled``, ``started``); without it such a log is an error. Either way the
        status of every log is in the summary.
    """

    condition_map: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    scorer: str | None = None
    item_scope: Mapping[str, str] = field(default_factory=dict)
    allow_unfinished: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "condition_map": dict(self.condition_map),
            "model": self.model,
            "scorer": self.scorer,
            "item_scope": dict(self.item_scope),
            "allow_unfinished": self.allow_unfinished,
        }


def _text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, Mapping):
                if c.get("type") == "text" or "text" in c:
                    parts.append(str(c.get("text", "")))
                elif c.get("type") == "reasoning":
                    continue
                else:
                    parts.append(f"[{c.get('type', 'content')}]")
            else:
                parts.append(str(c))
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def _messages_text(messages: Sequence[Any]) -> str:
    return "\n\n".join(
        f"{m.get('role', '?')}: {_text(m.get('content'))}"
        for m in messages
        if isinstance(m, Mapping)
    )


def _prompt(sample: Mapping[str, Any], exported: bool) -> str:
    """What the model was sent: the conversation before its last answer, else the input (a
    log steadyeval exported: the input, the prompt as it was sent)."""
    if exported and isinstance(sample.get("input"), str):
        return str(sample["input"])
    messages = sample.get("messages")
    if isinstance(messages, list) and messages:
        last = max(
            (
                i
                for i, m in enumerate(messages)
                if isinstance(m, Mapping) and m.get("role") == "assistant"
            ),
            default=len(messages),
        )
        return _messages_text(messages[:last])
    inp = sample.get("input")
    if isinstance(inp, list):
        return _messages_text(inp)
    return "" if inp is None else str(inp)


def _output(sample: Mapping[str, Any]) -> tuple[str | None, str | None]:
    out = sample.get("output")
    if not isinstance(out, Mapping):
        return None, None
    choices = out.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], Mapping) else {}
    text = out.get("completion")
    if not text and isinstance(first.get("message"), Mapping):
        text = _text(first["message"].get("content"))
    stop = first.get("stop_reason")
    return (text if isinstance(text, str) else None), (stop if isinstance(stop, str) else None)


def _letter(value: Any, n: int) -> int | None:
    if isinstance(value, str):
        v = value.strip().strip("()").rstrip(".").upper()
        if len(v) == 1 and v in _LETTERS[:n]:
            return _LETTERS.index(v)
    return None


def _letters(value: Any, n: int) -> list[int] | None:
    """Option indices of an answer: ``"B"`` → ``[1]``; ``"A, C"`` (a several-answer
    scorer) → ``[0, 2]``; ``None`` unless every part is one of the ``n`` letters."""
    if not isinstance(value, str):
        return None
    parts = [p for p in re.split(r"[,\s]+", value.strip()) if p]
    found = [_letter(p, n) for p in parts]
    if not found or any(f is None for f in found):
        return None
    return sorted({f for f in found if f is not None})


def _correct(value: Any) -> bool | None:
    """Inspect's score value as correct/incorrect: C/I, booleans and 1/0; else unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"C": True, "I": False, "N": False}.get(value.strip().upper())
    if isinstance(value, int | float) and value in (0, 1):  # no float(): ints may be huge
        return bool(value == 1)
    return None


def _targets(target: Any) -> list[str]:
    """The sample's target as a list of strings (a list, one value, or none)."""
    if isinstance(target, list):
        return [str(t) for t in target]
    return [str(target)] if target is not None else []


def _pick_score(
    sample: Mapping[str, Any], chosen: str | None, where: str
) -> tuple[str | None, Any, Any]:
    """``(scorer, value, answer)`` of the sample's chosen score (default: its first one)."""
    scores = sample.get("scores") if isinstance(sample.get("scores"), Mapping) else {}
    assert isinstance(scores, Mapping)
    if chosen is not None and scores and chosen not in scores:
        raise DataError(
            f"{where}: no score named {shorten(repr(chosen))} (--scorer); scores: "
            f"{shorten(', '.join(map(str, scores)), 200)}"
        )
    scorer = chosen if chosen is not None else next(iter(scores), None)
    score = scores.get(scorer) if scorer is not None else None
    score = score if isinstance(score, Mapping) else {}
    return scorer, score.get("value"), score.get("answer")


class _Parsed(NamedTuple):
    gold_options: list[int] | None
    parsed_option: int | None
    parsed: str | None
    kind: str
    chosen: list[int] | None  # the options a several-answer response chose


def _parse(
    options: list[str] | None, targets: list[str], answer: Any, value: Any, errored: bool
) -> _Parsed:
    """With options, target letters give the gold options and the answer's letters the
    parsed option (kind ``option``; several letters: kind ``options``, ``parsed`` their
    texts as a JSON list); no letter, or a score of ``N`` (no answer), is ``unmatched``.
    A sample that raised an error is kind ``error`` (no answer to parse)."""
    gold_options: list[int] | None = None
    parsed_option = None
    chosen = None
    parsed = answer if isinstance(answer, str) else None
    kind = "free"
    if options:
        letters = [g for t in targets for g in (_letters(t, len(options)) or [])]
        gold_options = sorted(set(letters)) or None
        chosen = _letters(answer, len(options))
        if chosen and len(chosen) == 1:
            parsed_option, parsed, kind = chosen[0], options[chosen[0]], "option"
        elif chosen:
            parsed, kind = canonical([options[c] for c in chosen]), "options"
        else:
            kind = "unmatched"
    if isinstance(value, str) and value.strip().upper() == "N":
        kind = "unmatched"
    if errored:
        parsed, parsed_option, chosen, kind = None, None, None, "error"
    return _Parsed(gold_options, parsed_option, parsed, kind, chosen if kind == "options" else None)


def _metadata(
    sample: Mapping[str, Any],
    where: str,
    log: InspectLog,
    score: tuple[str | None, Any, Any],
    stop: str | None,
) -> dict[str, Any]:
    """The sample's metadata with Inspect's own facts under ``inspect``."""
    meta_item = dict(sample["metadata"]) if isinstance(sample.get("metadata"), Mapping) else {}
    # a log steadyeval exported keeps its own facts there: they join Inspect's
    ours = meta_item.pop("steadyeval", None) if log.exported else None
    if "inspect" in meta_item:
        raise DataError(
            f"{where}: sample metadata has a key 'inspect', which steadyeval "
            "uses for Inspect's own facts; rename it before importing"
        )
    error = sample.get("error")
    spec = log.spec
    scorer, value, answer = score
    return {
        **meta_item,
        "inspect": {
            "task": log.task,
            "task_id": spec.get("task_id"),
            "eval_id": spec.get("eval_id"),
            "run_id": spec.get("run_id"),
            "log": log.path.name,
            "status": log.status,
            "epoch": sample["epoch"],
            "id": sample["id"],
            "scorer": scorer,
            "score_value": value,
            "score_answer": answer,
            "stop_reason": stop,
            "target": sample.get("target"),
            "error": error.get("message") if isinstance(error, Mapping) else None,
            **({"steadyeval": ours} if ours is not None else {}),
        },
    }


def _exported_facts(sample: Mapping[str, Any], log: InspectLog) -> Mapping[str, Any]:
    """steadyeval's facts of a sample of a log it exported (``metadata.steadyeval``; the
    item's hash is taken from there, so the same item pairs across conditions)."""
    meta = sample.get("metadata")
    facts = meta.get("steadyeval") if log.exported and isinstance(meta, Mapping) else None
    if not isinstance(facts, Mapping):
        return {}
    return {k: v for k, v in facts.items() if k != "item_hash" or isinstance(v, str)}


def _condition_and_scope(log: InspectLog, opts: InspectImportOptions) -> tuple[str, str | None]:
    """The log's condition and item scope (by file name, else task; default the task, and
    none for a log steadyeval exported: its sample ids are the item ids)."""
    cmap, smap = opts.condition_map, opts.item_scope
    condition = cmap.get(log.stem, cmap.get(log.task, log.task))
    default = None if log.exported else log.task
    return condition, smap.get(log.stem, smap.get(log.task, default))


def _iter_rows(
    log: InspectLog, opts: InspectImportOptions, run_id: str, keys: RowKeys
) -> Iterator[ResultRow]:
    condition, scope = _condition_and_scope(log, opts)
    model = opts.model or str(log.spec.get("model", "unknown"))
    ours = log.exported_condition
    for sample in log.samples:
        where = f"{log.path}, sample {shorten(repr(sample['id']), 40)} epoch {sample['epoch']}"
        item_id = f"{scope}/{sample['id']}" if scope is not None else str(sample["id"])
        sample_index = sample["epoch"] - 1  # epoch >= 1, checked on reading
        keys.add(
            (model, condition, item_id, sample_index),
            where,
            "two logs give the same model, condition and sample (the same task, or tasks "
            "mapped to one condition): name each log's condition with --condition-map "
            "FILE_NAME=condition",
        )
        choices = sample.get("choices") if isinstance(sample.get("choices"), list) else None
        options = [str(c) for c in choices] if choices else None
        target = sample.get("target")
        targets = _targets(target)
        score = _pick_score(sample, opts.scorer, where)
        output, stop = _output(sample)
        errored = isinstance(sample.get("error"), Mapping)
        got = _parse(options, targets, score[2], score[1], errored)
        yield ResultRow(
            run_id=run_id,
            model=model,
            item_id=item_id,
            item_hash=_exported_facts(sample, log).get("item_hash")
            or short_hash(
                canonical({"input": sample.get("input"), "choices": choices, "target": target})
            ),
            condition=condition,
            template=_text_or(ours.get("template"), log.task),
            format=_text_or(ours.get("format"), "mc" if options else "free"),
            scoring=_text_or(ours.get("scoring"), GENERATE),
            option_order=_text_or(ours.get("option_order"), None),
            n_shots=ours.get("n_shots") if isinstance(ours.get("n_shots"), int) else None,
            chat=ours.get("chat") if isinstance(ours.get("chat"), bool) else None,
            verbalizer=_text_or(ours.get("verbalizer"), None),
            sample_index=sample_index,
            prompt=_prompt(sample, log.exported),
            options=tuple(options) if options else None,
            option_source=tuple(range(len(options))) if options else None,
            output=None if errored and not output else output,
            parsed=got.parsed,
            parsed_kind=got.kind,
            parsed_option=got.parsed_option,
            correct=_correct(score[1]),
            gold=tuple(options[g] for g in got.gold_options)
            if options and got.gold_options
            else tuple(targets),
            gold_options=tuple(got.gold_options) if got.gold_options is not None else None,
            metadata=_metadata(sample, where, log, score, stop),
            tags={"parsed_options": got.chosen} if got.chosen else {},
        )


def _text_or(value: Any, default: str | None) -> str | None:
    """``value`` where it is text (a fact of a log steadyeval exported), else ``default``."""
    return value if isinstance(value, str) else default


def _shared_items_note(rows: Sequence[ResultRow]) -> str | None:
    """A warning when tasks given one item scope hold different samples under one id."""
    seen: dict[str, dict[str, set[str | None]]] = {}
    for r in rows:
        seen.setdefault(r.item_id, {}).setdefault(str(r.template), set()).add(r.item_hash)
    shared = {i: t for i, t in seen.items() if len(t) > 1}
    differ = [i for i, t in shared.items() if len(set().union(*t.values())) > 1]
    if not differ:
        return None
    tasks = sorted({task for i in differ for task in shared[i]})
    return (
        f"tasks {', '.join(tasks)} share item ids (--item-scope) but hold different "
        f"samples (input, choices or target) under {len(differ)} of {len(shared)} of them "
        f"(first: {differ[0]!r}); their pairs compare different questions"
    )


def import_inspect(
    paths: Sequence[str | Path], options: InspectImportOptions | None = None
) -> ImportedRun:
    """Read Inspect AI logs (``.json`` or ``.eval``) into a results table.

    Parameters
    ----------
    paths : sequence of path
        Log files, or folders searched recursively for them (an ``eval-set`` folder
        too).
    options : InspectImportOptions, optional
        Condition names, model name, which scorer fills ``correct``, item scopes, and
        whether unfinished logs are imported.

    Returns
    -------
    ImportedRun
        One row per sample and epoch (``sample_index`` = epoch − 1), and the summary;
        ``summary["imported"]`` adds ``logs`` (per log: file, task, condition, status,
        epochs, reducer, rows, errored samples, Inspect's own metrics) and ``notes``.

    Raises
    ------
    ValueError
        On a file that is not an Inspect log, a log without samples, a log whose eval did
        not finish (unless ``allow_unfinished``), an unknown ``--scorer``, duplicate
        rows (the same task and model in two logs without a ``--condition-map`` entry
        per file) or a map key that names no task or file. Messages name the file.

    Notes
    -----
    ``condition`` is the task name (or the mapped name); ``item_id`` is
    ``<task>/<sample id>`` unless ``item_scope`` gives tasks one scope. ``prompt`` is
    the conversation sent before the model's last answer (else the sample's input);
    ``output`` is the model's completion. The chosen score (``C``/``I``, booleans or
    1/0) fills ``correct``; ``N`` (no answer) is incorrect and ``unmatched``; other
    values (``P``, numbers between 0 and 1, dicts) leave ``correct`` null and are kept
    in ``metadata.inspect.score_value``. With ``choices``, the score's answer letter
    gives ``parsed_option`` and ``parsed`` (that option's text); several letters
    (``"A, C"``) are kind ``options`` with the indices in the ``parsed_options`` column.
    A sample that raised an error (``--no-fail-on-error``) is kind ``error`` with
    ``correct`` null, as Inspect leaves it out of its metrics. Of an attempt and its
    ``eval-retry`` (one ``task_id``) the newest log is taken; the summary says which.
    Epochs are rows of their own; the summary names the reducer Inspect applied.
    """
    opts = options or InspectImportOptions()
    files = find_inspect_logs(paths)
    if not files:
        raise DataError("no Inspect logs given")
    run_id = files_digest(files, {"tool": "inspect", **opts.as_dict()})
    logs, notes = take_retries(load_logs(files))
    keys = RowKeys()
    rows: list[ResultRow] = []
    used: set[str] = set()
    records: list[dict[str, Any]] = []
    for log in logs:
        unfinished = check_finished(log, opts.allow_unfinished)
        used.update({log.task, log.stem})
        mine = list(_iter_rows(log, opts, run_id, keys))
        cond = mine[0].condition
        records.append(
            log_record(log, cond, len(mine), sum(r.parsed_kind == "error" for r in mine))
        )
        notes += [n for n in (unfinished, reducer_note(log, cond)) if n]
        rows += mine
    check_condition_map(opts.condition_map, used, "tasks and log file names")
    check_condition_map(opts.item_scope, used, "tasks and log file names", flag="--item-scope")
    shared = _shared_items_note(rows)
    if shared:
        warnings.warn(shared, UserWarning, stacklevel=2)
        notes.append(shared)
    columns = lifted_columns(rows)
    if any(r.tags for r in rows):
        columns.append(_PARSED_OPTIONS)
    table = rows_to_table(rows, columns)
    summary = build_summary(table, run_id, "inspect", files, opts.as_dict())
    summary["imported"].update(logs=records, notes=notes)
    return ImportedRun(table=table, summary=summary)
