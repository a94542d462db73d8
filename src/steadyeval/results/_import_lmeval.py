"""Import lm-evaluation-harness ``--log_samples`` files into the results table.

lm-eval writes one ``samples_<task>_<date>.jsonl`` per task (one JSON object per document
and filter: ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``,
``filter``, ``metrics`` and one key per metric, ``doc_hash``, ``prompt_hash``,
``target_hash``) next to ``results_<date>.json`` (task configs, model, shots). Each
document becomes one row; every column the files determine is filled, the rest is null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import DataError
from ._import_common import (
    ImportedRun,
    RowKeys,
    build_summary,
    check_condition_map,
    files_digest,
    lifted_columns,
)
from ._row import ResultRow
from ._schema import rows_to_table

__all__ = ["LmEvalImportOptions", "find_lmeval_samples", "import_lmeval"]

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)$")
_MC = "multiple_choice"
_GEN = "generate_until"
_LL = "loglikelihood"
_ROLLING = "loglikelihood_rolling"
_DEFAULT_METRIC = {_MC: ("acc",), _GEN: ("exact_match", "acc"), _LL: ("acc",), _ROLLING: ()}


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
    recursively), sorted and deduplicated."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            hits = sorted(p.rglob("samples_*.jsonl"))
            if not hits:
                raise DataError(
                    f"{p}: no samples_*.jsonl files; run lm_eval with --log_samples "
                    "--output_path and pass that folder or the files"
                )
            found += hits
        elif p.is_file():
            found.append(p)
        else:
            raise DataError(f"{p}: no such file or folder")
    return sorted(dict.fromkeys(q.resolve() for q in found))


def _task_and_date(path: Path) -> tuple[str, str | None]:
    m = _SAMPLES.match(path.stem)
    if m:
        return m.group("task"), m.group("date")
    return path.stem.removeprefix("samples_"), None


def _results_for(path: Path, date: str | None) -> dict[str, Any]:
    if date is None:
        return {}
    res = path.parent / f"results_{date}.json"
    if not res.exists():
        return {}
    try:
        data = json.loads(res.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{res}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    return data if isinstance(data, dict) else {}


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


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(rec, dict):
                raise DataError(f"{path}, line {lineno}: expected a JSON object per line")
            for key in ("doc_id", "doc", "arguments", "filtered_resps"):
                if key not in rec:
                    raise DataError(
                        f"{path}, line {lineno}: missing field {key!r}; expected an lm-eval "
                        "--log_samples record (doc_id, doc, arguments, resps, filtered_resps, ...)"
                    )
            yield lineno, rec


def _arguments(rec: Mapping[str, Any], where: str) -> list[list[Any]]:
    """``arguments`` as a list of argument lists (the CLI's dict form or the API's list)."""
    args = rec["arguments"]
    if isinstance(args, Mapping):

        def index(key: str) -> int:
            return int(key.rsplit("_", 1)[-1])

        out = []
        for k in sorted(args, key=index):
            inner = args[k]
            if not isinstance(inner, Mapping):
                raise DataError(f"{where}: arguments.{k} must be an object of arg_0, arg_1, ...")
            out.append([inner[a] for a in sorted(inner, key=index)])
        return out
    if isinstance(args, list):
        return [list(a) if isinstance(a, list | tuple) else [a] for a in args]
    raise DataError(f"{where}: arguments must be an object or a list; got {type(args).__name__}")


def _output_type(config: Mapping[str, Any], args: list[list[Any]], where: str) -> str:
    declared = config.get("output_type")
    if isinstance(declared, str) and declared in _DEFAULT_METRIC:
        return declared
    if not args:
        raise DataError(f"{where}: arguments are empty; cannot tell the request type")
    if len(args[0]) >= 2 and isinstance(args[0][1], Mapping):
        return _GEN
    if len(args[0]) == 1:
        return _ROLLING
    return _MC if len(args) > 1 else _LL


def _ll_pair(value: Any, where: str) -> tuple[float, bool | None]:
    """``[loglikelihood, is_greedy]`` as lm-eval writes it (strings after sanitising)."""
    if isinstance(value, list | tuple) and value:
        ll = float(value[0])
        greedy = None
        if len(value) > 1:
            greedy = str(value[1]) == "True" if not isinstance(value[1], bool) else value[1]
        return ll, greedy
    try:
        return float(value), None
    except (TypeError, ValueError):
        raise DataError(
            f"{where}: expected a [loglikelihood, is_greedy] response; got {value!r}"
        ) from None


def _binary(rec: Mapping[str, Any], metric: str | None, where: str) -> bool | None:
    if metric is None or metric not in rec:
        return None
    v = rec[metric]
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float) and float(v) in (0.0, 1.0):
        return float(v) == 1.0
    raise DataError(
        f"{where}: metric {metric!r} is {v!r}, not 0/1, so it cannot fill 'correct'; pass a 0/1 "
        f"metric with --metric (this record has: {', '.join(rec.get('metrics', []))})"
    )


def _pick_metric(rec: Mapping[str, Any], kind: str, chosen: str | None, where: str) -> str | None:
    names = list(rec.get("metrics") or [])
    if chosen is not None:
        if chosen not in rec:
            raise DataError(
                f"{where}: metric {chosen!r} is not in this record; it has: {', '.join(names)}"
            )
        return chosen
    for m in _DEFAULT_METRIC[kind]:
        if m in rec:
            return m
    return None


def _gold_index(target: Any, options: Sequence[str]) -> list[int]:
    values: list[Any] = target if isinstance(target, list) else [target]
    if isinstance(target, str):
        text = target.strip()
        if text.startswith("["):
            try:
                loaded = json.loads(text)
                values = loaded if isinstance(loaded, list) else [target]
            except json.JSONDecodeError:
                values = [target]
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and 0 <= v < len(options):
            out.append(v)
        elif isinstance(v, str) and v.strip().lstrip("-").isdigit() and 0 <= int(v) < len(options):
            out.append(int(v))
        elif isinstance(v, str) and v in options:
            out.append(options.index(v))
        elif isinstance(v, str) and v.strip() in [o.strip() for o in options]:
            out.append([o.strip() for o in options].index(v.strip()))
    return out


def _softmax_at(lls: Sequence[float], k: int) -> float:
    top = max(lls)
    exps = [math.exp(x - top) for x in lls]
    return exps[k] / sum(exps)


def _row(
    rec: dict[str, Any],
    *,
    where: str,
    kind: str,
    args: list[list[Any]],
    config: Mapping[str, Any],
    metric: str | None,
) -> dict[str, Any]:
    doc = rec["doc"] if isinstance(rec["doc"], Mapping) else {"doc": rec["doc"]}
    prompt = str(args[0][0]) if args and args[0] else ""
    target = rec.get("target")
    metrics = {m: rec.get(m) for m in rec.get("metrics") or [] if m in rec}
    row: dict[str, Any] = {
        "prompt": prompt,
        "gold": None,
        "correct": _binary(rec, metric, where),
    }
    fr = rec["filtered_resps"]
    if kind == _MC:
        delim = config.get("target_delimiter", " ")
        conts = [str(a[1]) for a in args]
        if isinstance(delim, str) and delim and all(c.startswith(delim) for c in conts):
            options = [c[len(delim) :] for c in conts]
        else:
            options = conts
        if not isinstance(fr, list) or len(fr) != len(options):
            raise DataError(
                f"{where}: {len(options)} choices but {len(fr) if isinstance(fr, list) else '?'} "
                "filtered responses; expected one [loglikelihood, is_greedy] per choice"
            )
        lls = [_ll_pair(x, where)[0] for x in fr]
        pick = max(range(len(lls)), key=lambda i: (lls[i], -i))
        gold = _gold_index(target, options)
        row.update(
            options=tuple(options),
            option_source=tuple(range(len(options))),
            parsed=options[pick],
            output=options[pick],
            parsed_kind="option",
            parsed_option=pick,
            option_logprobs=tuple(lls),
            option_logprobs_per_char=tuple(
                ll / len(o) if len(o) else math.nan for ll, o in zip(lls, options, strict=True)
            ),
            confidence=_softmax_at(lls, pick),
            gold=tuple(options[i] for i in gold),
            gold_options=tuple(gold),
            scoring="option-logprob",
            format="mc",
        )
        if row["correct"] is None and gold:
            row["correct"] = pick in gold
    elif kind == _GEN:
        resps = rec.get("resps") or []
        raw = resps[0][0] if resps and isinstance(resps[0], list) and resps[0] else None
        parsed = fr[0] if isinstance(fr, list) and fr else fr
        if isinstance(parsed, list):
            parsed = parsed[0] if parsed else None
        row.update(
            output=None if raw is None else str(raw),
            parsed=None if parsed is None else str(parsed),
            parsed_kind="free",
            gold=(str(target),) if target is not None else None,
            scoring="generate",
            format="free",
            em=_float(metrics.get("exact_match")),
            f1=_float(metrics.get("f1")),
        )
    else:
        ll, greedy = _ll_pair(fr[0] if isinstance(fr, list) and fr else fr, where)
        row.update(
            sequence_logprob=ll,
            output=str(args[0][1]) if kind == _LL and len(args[0]) > 1 else None,
            scoring=kind,
            format="free",
            gold=(str(target),) if kind == _LL and target is not None else None,
        )
        if kind == _LL and row["correct"] is None and greedy is not None:
            row["correct"] = greedy
    row["_metrics"] = metrics
    row["_doc"] = doc
    return row


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def import_lmeval(
    paths: Sequence[str | Path], options: LmEvalImportOptions | None = None
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
    loaded = []
    filters: dict[str, set[str]] = {}
    for path in files:
        task, date = _task_and_date(path)
        results = _results_for(path, date)
        recs = list(_records(path))
        for _, rec in recs:
            filters.setdefault(task, set()).add(str(rec.get("filter", "none")))
        loaded.append((path, task, results, recs))
    used: set[str] = set()
    keys = RowKeys()
    rows: list[ResultRow] = []
    for path, task, results, recs in loaded:
        configs = results.get("configs") if isinstance(results.get("configs"), Mapping) else {}
        assert isinstance(configs, Mapping)
        config = configs.get(task) if isinstance(configs.get(task), Mapping) else {}
        assert isinstance(config, Mapping)
        n_shot = (results.get("n-shot") or {}).get(task, config.get("num_fewshot"))
        model = opts.model or _model_name(results, path)
        chat = bool(results.get("chat_template")) if results else None
        for lineno, rec in recs:
            where = f"{path}, line {lineno}"
            flt = str(rec.get("filter", "none"))
            source = task if len(filters[task]) == 1 else f"{task}/{flt}"
            used.update({task, source})
            cmap = opts.condition_map
            if source in cmap:
                condition = cmap[source]
            elif task in cmap:
                condition = cmap[task] if source == task else f"{cmap[task]}/{flt}"
            else:
                condition = source
            args = _arguments(rec, where)
            kind = _output_type(config, args, where)
            metric = _pick_metric(rec, kind, opts.metric, where)
            if opts.item_id_field is not None:
                doc = rec["doc"]
                if not isinstance(doc, Mapping) or opts.item_id_field not in doc:
                    raise DataError(
                        f"{where}: doc has no field {opts.item_id_field!r} (--item-id); its "
                        f"fields: {', '.join(doc) if isinstance(doc, Mapping) else 'none'}"
                    )
                item_id = str(doc[opts.item_id_field])
            else:
                item_id = str(rec["doc_id"])
            keys.add(
                (model, condition, item_id, 0),
                where,
                "was the file appended twice, or is --item-id not unique?",
            )
            body = _row(rec, where=where, kind=kind, args=args, config=config, metric=metric)
            doc = body.pop("_doc")
            metrics = body.pop("_metrics")
            if "lm_eval" in doc:
                raise DataError(
                    f"{where}: doc has a field named 'lm_eval', which steadyeval "
                    "uses for lm-eval's own facts; rename it before importing"
                )
            meta = {
                **doc,
                "lm_eval": {
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
                },
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
                    metadata=meta,
                    **body,
                )
            )
    check_condition_map(opts.condition_map, used, "tasks (and task/filter)")
    table = rows_to_table(rows, lifted_columns(rows))
    summary = build_summary(table, run_id, "lm-eval", files, opts.as_dict())
    return ImportedRun(table=table, summary=summary)
