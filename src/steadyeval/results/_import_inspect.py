"""Import Inspect AI evaluation logs (``.json`` and ``.eval``) into the results table.

A ``.json`` log is one ``EvalLog`` object (``version``, ``status``, ``eval``, ``plan``,
``results``, ``stats``, ``samples``). A ``.eval`` log is a zip archive: ``header.json``
(the log without samples; older files have ``_journal/start.json`` or ``start.json``
instead) and one ``samples/<id>_epoch_<n>.json`` per sample and epoch. Inspect is not
needed to read them.
"""

from __future__ import annotations

import json
import string
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from ._row import ResultRow
from ._schema import rows_to_table

__all__ = ["InspectImportOptions", "find_inspect_logs", "import_inspect", "read_inspect_log"]

_LETTERS = string.ascii_uppercase
_HEADERS = ("header.json", "_journal/start.json", "start.json")


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
    """

    condition_map: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    scorer: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "condition_map": dict(self.condition_map),
            "model": self.model,
            "scorer": self.scorer,
        }


def find_inspect_logs(paths: Sequence[str | Path]) -> list[Path]:
    """The ``.eval`` and ``.json`` logs named by ``paths`` (folders are searched
    recursively; Inspect's ``logs.json`` listing is skipped)."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            hits = sorted(
                q for q in p.rglob("*") if q.suffix in (".eval", ".json") and q.name != "logs.json"
            )
            if not hits:
                raise DataError(f"{p}: no .eval or .json Inspect logs in this folder")
            found += hits
        elif p.is_file():
            found.append(p)
        else:
            raise DataError(f"{p}: no such file or folder")
    return sorted(dict.fromkeys(q.resolve() for q in found))


def _load_json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc


def _sample_order(sample: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Inspect's order: by epoch, then id (integer ids before string ids)."""
    sid = sample.get("id")
    epoch = int(sample.get("epoch", 1))
    return (epoch, 0, sid, "") if isinstance(sid, int) else (epoch, 1, 0, str(sid))


def read_inspect_log(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, samples)`` of one Inspect log; ``header`` has at least ``eval``.

    Raises
    ------
    ValueError
        If the file is not an Inspect log (no ``eval`` spec, no samples) or is malformed.
    """
    p = Path(path)
    if p.suffix == ".eval":
        try:
            zf = zipfile.ZipFile(p)
        except zipfile.BadZipFile as exc:
            raise DataError(f"{p}: not a zip archive; an Inspect .eval log is one") from exc
        with zf:
            names = zf.namelist()
            head_name = next((h for h in _HEADERS if h in names), None)
            if head_name is None:
                raise DataError(
                    f"{p}: no header.json (or _journal/start.json) in the archive; not an "
                    "Inspect .eval log"
                )
            header = _load_json(zf.read(head_name), f"{p}!{head_name}")
            members: dict[str, zipfile.ZipInfo] = {}
            for info in zf.infolist():  # a re-written sample appears twice; the last wins
                if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                    members[info.filename] = info
            samples = [_load_json(zf.read(info), f"{p}!{name}") for name, info in members.items()]
    else:
        header = _load_json(p.read_bytes(), str(p))
        if not isinstance(header, dict):
            raise DataError(f"{p}: expected a JSON object (an Inspect EvalLog)")
        samples = header.pop("samples", None) or []
        if not isinstance(samples, list):
            raise DataError(f"{p}: 'samples' is {type(samples).__name__}; expected a list")
    if not isinstance(header, dict) or not isinstance(header.get("eval"), Mapping):
        raise DataError(f"{p}: no 'eval' object; not an Inspect evaluation log")
    if not samples:
        raise DataError(
            f"{p}: the log holds no samples (status {header.get('status', '?')!r}); run Inspect "
            "with sample logging on (the default) to import per-sample results"
        )
    for i, s in enumerate(samples):
        if not isinstance(s, Mapping) or "id" not in s:
            raise DataError(f"{p}: sample {i} has no 'id'; expected an Inspect EvalSample")
        epoch = s.get("epoch", 1)
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise DataError(f"{p}: sample {i}: epoch {shorten(repr(epoch))}; expected an integer")
    samples.sort(key=_sample_order)
    return header, samples


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


def _prompt(sample: Mapping[str, Any]) -> str:
    """What the model was sent: the conversation before its last answer, else the input."""
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


def _correct(value: Any) -> bool | None:
    """Inspect's score value as correct/incorrect: C/I, booleans and 1/0; else unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"C": True, "I": False, "N": False}.get(value.strip().upper())
    if isinstance(value, int | float) and float(value) in (0.0, 1.0):
        return float(value) == 1.0
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
            f"{where}: no score named {chosen!r} (--scorer); scores: {', '.join(scores)}"
        )
    scorer = chosen if chosen is not None else next(iter(scores), None)
    score = scores.get(scorer) if scorer is not None else None
    score = score if isinstance(score, Mapping) else {}
    return scorer, score.get("value"), score.get("answer")


def _parse(
    options: list[str] | None, targets: list[str], answer: Any, value: Any
) -> tuple[list[int] | None, int | None, str | None, str]:
    """``(gold_options, parsed_option, parsed, parsed_kind)``: with options, target letters
    give the gold options and the answer letter the parsed one; a score of ``N`` (no
    answer) is unmatched."""
    gold_options: list[int] | None = None
    parsed_option = None
    parsed = answer if isinstance(answer, str) else None
    kind = "free"
    if options:
        letters = [_letter(t, len(options)) for t in targets]
        gold_options = [g for g in letters if g is not None] or None
        parsed_option = _letter(answer, len(options))
        if parsed_option is not None:
            parsed = options[parsed_option]
            kind = "option"
        else:
            kind = "unmatched"
    if isinstance(value, str) and value.strip().upper() == "N":
        kind = "unmatched"
    return gold_options, parsed_option, parsed, kind


def _metadata(
    sample: Mapping[str, Any],
    where: str,
    *,
    spec: Mapping[str, Any],
    task: str,
    log: str,
    scorer: str | None,
    value: Any,
    stop: str | None,
) -> dict[str, Any]:
    """The sample's metadata with Inspect's own facts under ``inspect``."""
    meta_item = sample.get("metadata") if isinstance(sample.get("metadata"), Mapping) else {}
    assert isinstance(meta_item, Mapping)
    if "inspect" in meta_item:
        raise DataError(
            f"{where}: sample metadata has a key 'inspect', which steadyeval "
            "uses for Inspect's own facts; rename it before importing"
        )
    error = sample.get("error")
    return {
        **meta_item,
        "inspect": {
            "task": task,
            "task_id": spec.get("task_id"),
            "eval_id": spec.get("eval_id"),
            "run_id": spec.get("run_id"),
            "log": log,
            "epoch": sample.get("epoch", 1),
            "scorer": scorer,
            "score_value": value,
            "stop_reason": stop,
            "target": sample.get("target"),
            "error": error.get("message") if isinstance(error, Mapping) else None,
        },
    }


def _iter_rows(
    path: Path,
    header: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    opts: InspectImportOptions,
    run_id: str,
    keys: RowKeys,
) -> Iterator[ResultRow]:
    spec = header["eval"]
    task = str(spec.get("task", path.stem))
    stem = path.name.removesuffix(path.suffix)
    cmap = opts.condition_map
    condition = cmap.get(stem, cmap.get(task, task))
    model = opts.model or str(spec.get("model", "unknown"))
    for sample in samples:
        where = f"{path}, sample {sample['id']!r} epoch {sample.get('epoch', 1)}"
        item_id = str(sample["id"])
        sample_index = int(sample.get("epoch", 1)) - 1
        keys.add(
            (model, condition, item_id, sample_index),
            where,
            "two logs hold the same task and model: name each with --condition-map "
            "FILE_NAME=condition",
        )
        choices = sample.get("choices") if isinstance(sample.get("choices"), list) else None
        options = [str(c) for c in choices] if choices else None
        target = sample.get("target")
        targets = _targets(target)
        scorer, value, answer = _pick_score(sample, opts.scorer, where)
        output, stop = _output(sample)
        gold_options, parsed_option, parsed, kind = _parse(options, targets, answer, value)
        meta = _metadata(
            sample,
            where,
            spec=spec,
            task=task,
            log=path.name,
            scorer=scorer,
            value=value,
            stop=stop,
        )
        yield ResultRow(
            run_id=run_id,
            model=model,
            item_id=item_id,
            item_hash=short_hash(
                canonical({"input": sample.get("input"), "choices": choices, "target": target})
            ),
            condition=condition,
            template=task,
            format="mc" if options else "free",
            scoring=GENERATE,
            sample_index=sample_index,
            prompt=_prompt(sample),
            options=tuple(options) if options else None,
            option_source=tuple(range(len(options))) if options else None,
            output=output,
            parsed=parsed,
            parsed_kind=kind,
            parsed_option=parsed_option,
            correct=_correct(value),
            gold=tuple(options[g] for g in gold_options)
            if options and gold_options
            else tuple(targets),
            gold_options=tuple(gold_options) if gold_options is not None else None,
            metadata=meta,
        )


def import_inspect(
    paths: Sequence[str | Path], options: InspectImportOptions | None = None
) -> ImportedRun:
    """Read Inspect AI logs (``.json`` or ``.eval``) into a results table.

    Parameters
    ----------
    paths : sequence of path
        Log files, or folders searched recursively for them.
    options : InspectImportOptions, optional
        Condition names, model name and which scorer fills ``correct``.

    Returns
    -------
    ImportedRun
        One row per sample and epoch (``sample_index`` = epoch − 1), and the summary.

    Raises
    ------
    ValueError
        On a file that is not an Inspect log, a log without samples, an unknown
        ``--scorer``, duplicate rows (the same task and model in two logs without a
        ``--condition-map`` entry per file) or a map key that names no task or file.

    Notes
    -----
    ``condition`` is the task name (or the mapped name); ``prompt`` is the conversation
    sent before the model's last answer (else the sample's input); ``output`` is the
    model's completion. The chosen score (``C``/``I``, booleans or 1/0) fills ``correct``;
    ``N`` (no answer) is incorrect and ``unmatched``; other values (``P``, numbers
    between 0 and 1, dicts) leave ``correct`` null and are kept in
    ``metadata.inspect.score_value``. With ``choices``, the score's answer letter gives
    ``parsed_option`` and ``parsed`` (that option's text) and target letters give
    ``gold_options``. ``item_hash`` hashes input, choices and target, so the same sample
    in two logs compares equal. Sample metadata goes into ``metadata`` (with Inspect's
    facts under ``metadata.inspect``); ``subject``, ``relation`` and ``split``, where samples
    have them, also become study columns.
    """
    opts = options or InspectImportOptions()
    files = find_inspect_logs(paths)
    if not files:
        raise DataError("no Inspect logs given")
    run_id = files_digest(files, {"tool": "inspect", **opts.as_dict()})
    keys = RowKeys()
    rows: list[ResultRow] = []
    used: set[str] = set()
    for path in files:
        header, samples = read_inspect_log(path)
        used.add(str(header["eval"].get("task", path.stem)))
        used.add(path.name.removesuffix(path.suffix))
        rows += _iter_rows(path, header, samples, opts, run_id, keys)
    check_condition_map(opts.condition_map, used, "tasks and log file names")
    table = rows_to_table(rows, lifted_columns(rows))
    summary = build_summary(table, run_id, "inspect", files, opts.as_dict())
    return ImportedRun(table=table, summary=summary)
