"""lm-evaluation-harness tasks as items, built from lm-eval's own task objects.

Each document of a task becomes an :class:`~steadyeval.items.Item`: its question
(``doc_to_text``), options (``doc_to_choice``) and gold (``doc_to_target``), with the exact
requests lm-eval itself would send under ``metadata["lm_eval"]`` (the prompt with its
few-shot examples, drawn by lm-eval's own sampler from its one per-task random stream, and
the continuations or generation settings). The ``lm-eval`` template asks an item with that
prompt, byte for byte; every other condition asks the same item its own way.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError
from .._extras import require
from ._item import Item
from ._text import shorten

__all__ = [
    "LMEVAL_FEWSHOT_SEED",
    "LMEVAL_METRICS",
    "load_lmeval_items",
]

#: lm-eval's default ``--fewshot_random_seed``: the seed of each task's shot stream.
LMEVAL_FEWSHOT_SEED = 1234
#: The metrics steadyeval reproduces per document, by lm-eval output type (a task that
#: reports any other is refused, naming it).
LMEVAL_METRICS: Mapping[str, frozenset[str]] = {
    "multiple_choice": frozenset({"acc", "acc_norm"}),
    "loglikelihood": frozenset({"acc", "perplexity"}),
    "generate_until": frozenset({"exact_match"}),
}
#: Filter steps the scoring reproduces (lm-eval's ``filter_list`` entries).
_FILTER_STEPS = frozenset({"regex", "take_first", "remove_whitespace", "lowercase", "uppercase"})
#: File endings of local data files, and the ``datasets`` builder that reads each.
_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def load_lmeval_items(
    source: str | None = None,
    *,
    task: str | list[str] | None = None,
    task_data: dict[str, str] | None = None,
    include_path: str | list[str] | None = None,
    num_fewshot: int | None = None,
    fewshot_seed: int = LMEVAL_FEWSHOT_SEED,
    question_field: str | None = None,
) -> list[Item]:
    """Items from lm-evaluation-harness tasks (``lm-eval`` 0.4.13), through its task objects.

    Parameters
    ----------
    source : str, optional
        One task name, when ``task`` is not given.
    task : str or list of str
        Task, group or tag names as ``lm_eval --tasks`` takes them (``arc_easy``,
        ``mmlu_anatomy``, a group's name for all its tasks).
    task_data : dict, optional
        ``{task name: folder}``: read that task's documents from local files instead of its
        hub data set, one file per split named by the split (``test.jsonl``,
        ``validation.parquet``, ``train.csv``, ...).
    include_path : str or list of str, optional
        Folders of the user's own task YAML files (lm-eval's ``--include_path``).
    num_fewshot : int, optional
        lm-eval's ``--num_fewshot``: unset, each task's own default (0 unless its YAML sets
        one); a task whose YAML sets 0 keeps 0, as in lm-eval.
    fewshot_seed : int
        lm-eval's ``--fewshot_random_seed`` (its default, 1234).
    question_field : str, optional
        A document field to use as the item's question instead of ``doc_to_text`` (for tasks
        whose ``doc_to_text`` already lists the options, such as MMLU's, when the items are
        also asked under steadyeval's own multiple-choice templates).

    Notes
    -----
    lm-eval draws every task's shots from one ``random.Random(fewshot_seed)``, document after
    document in its iteration order, so a document's shots depend on the documents before
    it; the prompts here are built by lm-eval's own ``build_all_requests`` over the whole
    split, so they are lm-eval's, whatever part of the items a run then evaluates.
    """
    require("lm-eval tasks", "lm_eval", extra="lm-eval")
    quiet = logging.getLogger("lm_eval")  # its notes on every task's defaults, at WARNING
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return _load_items(
            source, task, task_data, include_path, num_fewshot, fewshot_seed, question_field
        )
    finally:
        quiet.setLevel(level)


def _load_items(
    source: str | None,
    task: str | list[str] | None,
    task_data: dict[str, str] | None,
    include_path: str | list[str] | None,
    num_fewshot: int | None,
    fewshot_seed: int,
    question_field: str | None,
) -> list[Item]:
    names = _task_names(source, task)
    manager = _manager(names, include_path)
    specs = [_spec(name, (task_data or {}).get(name)) for name in names]
    unknown = sorted(set(task_data or {}) - set(names))
    if unknown:
        raise ConfigError(
            f"task_data names {unknown[0]!r}, which is not among the tasks asked for "
            f"({', '.join(names)}); give local data for the tasks you run"
        )
    loaded = _load(manager, specs, names)
    groups = {child: group for group, kids in loaded.get("group_map", {}).items() for child in kids}
    tasks = loaded["tasks"]
    several = len(tasks) > 1
    items: list[Item] = []
    for name, task_obj in tasks.items():
        _check_task(name, task_obj)
        _configure(task_obj, num_fewshot, fewshot_seed)
        items += _task_items(
            name,
            task_obj,
            prefix=f"{name}/" if several else "",
            group=groups.get(name),
            question_field=question_field,
        )
    if not items:
        raise DataError("no documents", file=", ".join(names), expected="tasks with documents")
    return items


def _task_names(source: str | None, task: str | list[str] | None) -> list[str]:
    if task is None and source is None:
        raise ConfigError("lm-eval tasks: name at least one task (task: arc_easy)")
    if task is not None and source is not None:
        raise ConfigError(
            f"lm-eval tasks: give the task as task: (got both path {source!r} and task {task!r})"
        )
    raw: list[Any] = [task] if isinstance(task, str) else list(task or [])
    if task is None:
        raw = [source]
    names = [str(n).strip() for n in raw]
    if not names or any(not n for n in names):
        raise ConfigError("lm-eval tasks: a task name is empty")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"lm-eval tasks: {repeated[0]!r} is named twice")
    return names


def _manager(names: Sequence[str], include_path: str | list[str] | None) -> Any:
    """lm-eval's TaskManager. When the user's own folders define every name, lm-eval's
    thousands of built-in YAML files are not indexed (about 15 s)."""
    from lm_eval.tasks import TaskManager

    paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
    for p in paths:
        if not Path(p).is_dir():
            raise DataError(
                "not a folder",
                file=str(p),
                field="include_path",
                expected="a folder of lm-eval task YAML files",
            )
    if paths:
        own = TaskManager(include_path=paths, include_defaults=False)
        if all(n in own.all_tasks for n in names):
            return own
    return TaskManager(include_path=paths or None)


def _spec(name: str, folder: str | None) -> str | dict[str, Any]:
    """``name``, or an override that reads its splits from ``folder``'s files."""
    if folder is None:
        return name
    root = Path(folder)
    if not root.is_dir():
        raise DataError(
            "not a folder",
            file=str(folder),
            field=f"task_data[{name}]",
            expected="a folder with one file per split (test.jsonl, validation.parquet, ...)",
        )
    files = sorted(p for p in root.iterdir() if p.suffix in _BUILDERS and p.is_file())
    kinds = {_BUILDERS[p.suffix] for p in files}
    if not files or len(kinds) > 1:
        found = ", ".join(p.name for p in files) or "none"
        raise DataError(
            f"found {found}",
            file=str(folder),
            field=f"task_data[{name}]",
            expected="files named by split, all of one kind (.jsonl/.json, .parquet or .csv)",
        )
    return {
        "task": name,
        "dataset_path": kinds.pop(),
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}},
    }


def _load(manager: Any, specs: list[str | dict[str, Any]], names: list[str]) -> dict[str, Any]:
    known = set(manager.all_tasks)
    for name in names:
        if name not in known and Path(name).suffix != ".yaml":
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown lm-eval task {name!r}{hint} (`lm_eval ls tasks` lists them; a "
                "task of your own needs include_path: its folder)"
            )
    try:
        out: dict[str, Any] = manager.load(specs)
    except (ConnectionError, OSError, ValueError, FileNotFoundError) as exc:
        raise DataError(
            f"could not load its documents: {shorten(str(exc), 300)}",
            file=", ".join(names),
            expected="a reachable hub data set, the Hugging Face cache with HF_HUB_OFFLINE=1, "
            "or local files (task_data: {TASK: FOLDER}, --task-data TASK=FOLDER)",
        ) from None
    return out


def _metric_names(task_obj: Any) -> list[str]:
    return [str(m["metric"]) for m in task_obj.config.metric_list or []] or list(
        LMEVAL_METRICS.get(task_obj.OUTPUT_TYPE, ())
    )


def _check_task(name: str, task_obj: Any) -> None:
    """Refuse a task whose output type, metrics or filters steadyeval does not reproduce."""
    kind = task_obj.OUTPUT_TYPE
    if kind not in LMEVAL_METRICS:
        raise ConfigError(
            f"lm-eval task {name!r}: output type {kind!r} is not supported (supported: "
            f"{', '.join(LMEVAL_METRICS)})"
        )
    if kind == "multiple_choice" and task_obj.multiple_input:
        raise ConfigError(
            f"lm-eval task {name!r}: its options are contexts (multiple_input, as in "
            "winogrande); steadyeval asks one context with several options"
        )
    for metric in _metric_names(task_obj):
        if metric not in LMEVAL_METRICS[kind]:
            raise ConfigError(
                f"lm-eval task {name!r}: metric {metric!r} is not one steadyeval reproduces "
                f"for {kind} tasks ({', '.join(sorted(LMEVAL_METRICS[kind]))})"
            )
    for ensemble in task_obj.config.filter_list or []:
        for step in ensemble.get("filter", []):
            if step.get("function") not in _FILTER_STEPS:
                raise ConfigError(
                    f"lm-eval task {name!r}: filter {ensemble.get('name')!r} uses "
                    f"{step.get('function')!r}; steadyeval reproduces "
                    f"{', '.join(sorted(_FILTER_STEPS))}"
                )


def _configure(task_obj: Any, num_fewshot: int | None, seed: int) -> None:
    """Shots and seed as ``lm_eval.simple_evaluate`` sets them."""
    default = task_obj.get_config("num_fewshot")
    if num_fewshot is not None and default != 0:
        task_obj.set_config(key="num_fewshot", value=num_fewshot)
    elif default is None:
        task_obj.set_config(key="num_fewshot", value=0)
    task_obj.set_fewshot_seed(seed=seed)


def _task_items(
    name: str, task_obj: Any, *, prefix: str, group: str | None, question_field: str | None
) -> list[Item]:
    task_obj.build_all_requests()
    by_doc: dict[int, list[Any]] = {}
    for inst in task_obj.instances:
        by_doc.setdefault(int(inst.doc_id), []).append(inst)
    rules = _rules(task_obj)
    return [
        _item(
            name,
            task_obj,
            doc_id,
            sorted(insts, key=lambda i: i.idx),
            rules,
            prefix,
            group,
            question_field,
        )
        for doc_id, insts in sorted(by_doc.items())
    ]


def _rules(task_obj: Any) -> dict[str, Any]:
    """What every document of the task shares: how it is asked and scored."""
    cfg = task_obj.config
    rules: dict[str, Any] = {
        "output_type": task_obj.OUTPUT_TYPE,
        "num_fewshot": int(cfg.num_fewshot or 0),
        "target_delimiter": str(cfg.target_delimiter),
    }
    if task_obj.OUTPUT_TYPE == "generate_until":
        gen = dict(cfg.generation_kwargs or {})
        until = gen.get("until", [])
        rules["until"] = [until] if isinstance(until, str) else [str(u) for u in until]
        rules["max_gen_toks"] = int(gen.get("max_gen_toks", 256))
        rules["filters"] = [
            {"name": str(f.get("name", "none")), "steps": [dict(s) for s in f.get("filter", [])]}
            for f in cfg.filter_list or []
        ] or [{"name": "none", "steps": [{"function": "take_first"}]}]
        em: dict[str, Any] = next(
            (m for m in cfg.metric_list or [] if m.get("metric") == "exact_match"), {}
        )
        rules["exact_match"] = {
            "ignore_case": bool(em.get("ignore_case", False)),
            "ignore_punctuation": bool(em.get("ignore_punctuation", False)),
            "regexes_to_ignore": [str(r) for r in em.get("regexes_to_ignore", []) or []],
        }
    return rules


def _item(
    name: str,
    task_obj: Any,
    doc_id: int,
    insts: list[Any],
    rules: dict[str, Any],
    prefix: str,
    group: str | None,
    question_field: str | None,
) -> Item:
    doc = insts[0].doc
    where = f"lm-eval task {name}"
    kind = rules["output_type"]
    prompt = insts[0].arguments[0]
    question = _question(task_obj, doc, question_field, where, doc_id)
    lm: dict[str, Any] = {"task": name, "doc_id": doc_id, **rules, "prompt": prompt}
    options: tuple[str, ...] | None = None
    gold: tuple[int, ...] = ()
    answers: tuple[str, ...] = ()
    if kind == "multiple_choice":
        options = tuple(str(c) for c in task_obj.doc_to_choice(doc))
        conts = [i.arguments[1] for i in insts]
        if [i.arguments[0] for i in insts] != [prompt] * len(insts) or conts != [
            rules["target_delimiter"] + o for o in options
        ]:
            raise DataError(
                "its requests are not one context with the options as continuations",
                file=where,
                line=doc_id + 1,
                expected="a multiple-choice task as lm-eval's ConfigurableTask builds one",
            )
        gold = _gold_index(task_obj.doc_to_target(doc), options, where, doc_id)
    elif kind == "loglikelihood":
        answers = (str(insts[0].arguments[1]),)
    else:
        target = task_obj.doc_to_target(doc)
        answers = tuple(str(t) for t in target) if isinstance(target, list) else (str(target),)
    meta: dict[str, Any] = {
        k: v
        for k, v in (doc.items() if isinstance(doc, Mapping) else ())
        if isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool))
    }
    meta.update({"subtask": name, "lm_eval": lm})
    if group is not None:
        meta["group"] = group
    return Item(
        id=f"{prefix}{doc_id}",
        question=question,
        options=options,
        answers=answers,
        gold_options=gold,
        metadata=meta,
    )


def _question(task_obj: Any, doc: Any, field: str | None, where: str, doc_id: int) -> str:
    if field is not None:
        value = doc.get(field) if isinstance(doc, Mapping) else None
        if not isinstance(value, str):
            raise DataError(
                f"has no text field {field!r}",
                file=where,
                line=doc_id + 1,
                field=field,
                expected=f"a string field (the document's fields: {', '.join(map(str, doc))})"
                if isinstance(doc, Mapping)
                else "a document with fields",
            )
        return value
    text = task_obj.doc_to_text(doc)
    return text if isinstance(text, str) else str(text)


def _gold_index(target: Any, options: Sequence[str], where: str, doc_id: int) -> tuple[int, ...]:
    """lm-eval's gold for a multiple-choice document as option indices (an index, an option
    text, or a list of them)."""
    values: Iterable[Any] = target if isinstance(target, list) else [target]
    out: list[int] = []
    for v in values:
        if isinstance(v, str) and v in options:
            out.append(options.index(v))
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(options):
            out.append(v)
        else:
            raise DataError(
                f"gold {shorten(repr(v))} is not one of its {len(options)} options",
                file=where,
                line=doc_id + 1,
                field="doc_to_target",
                expected="an option index or an option's text",
            )
    return tuple(out)
