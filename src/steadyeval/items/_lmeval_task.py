"""lm-evaluation-harness tasks as items, built from lm-eval's own task objects.

Each document of a task becomes an :class:`~steadyeval.items.Item`: its question
(``doc_to_text``), options (``doc_to_choice``) and gold (``doc_to_target``), with the exact
requests lm-eval itself would send under ``metadata["lm_eval"]`` (the prompt with its
few-shot examples, drawn by lm-eval's own sampler from its one per-task random stream, and
the continuations or generation settings). The ``lm-eval`` template asks an item with that
prompt, byte for byte; every other condition asks the same item its own way.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigError, DataError
from .._extras import require
from ._item import Item
from ._jsonl import read_jsonl
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
    options_field: str | None = None,
    docs: Literal["eval", "fewshot"] = "eval",
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
        The document field that is the item's question for steadyeval's own templates
        (default: the document's ``question`` text where it has one, else ``doc_to_text``,
        which may already hold the options and an ``Answer:`` cue). The ``lm-eval`` template
        shows lm-eval's prompt whatever this says.
    options_field : str, optional
        The document field that holds the option texts for steadyeval's own templates
        (default: lm-eval's choices, unless they are only labels such as MMLU's ``A``-``D``
        and the document has a ``choices`` or ``options`` list of as many texts). The
        ``lm-eval`` template and scoring keep lm-eval's choices.
    docs : {"eval", "fewshot"}
        ``eval``: the documents lm-eval evaluates (its test split, else validation), each
        with lm-eval's request; ``fewshot``: the documents it draws shots from (its
        ``fewshot_split``, else its training split), for a shot pool of steadyeval's own
        shot conditions.

    Notes
    -----
    lm-eval draws every task's shots from one ``random.Random(fewshot_seed)``, document after
    document in its iteration order, so a document's shots depend on the documents before
    it; the prompts here are built by lm-eval's own ``build_all_requests`` over the whole
    split, so they are lm-eval's, whatever part of the items a run then evaluates.
    """
    require("lm-eval tasks", "lm_eval", extra="lm-eval")
    if docs not in ("eval", "fewshot"):
        raise ConfigError(f"lm-eval tasks: docs is 'eval' or 'fewshot', not {docs!r}")
    if num_fewshot is not None and num_fewshot < 0:
        raise ConfigError(f"lm-eval tasks: num_fewshot is a count, 0 or more (got {num_fewshot})")
    names = _task_names(source, task)
    with _quiet_lm_eval():
        manager = _manager(names, include_path)
        _check_known(manager, names)
        unknown = sorted(set(task_data or {}) - set(names))
        if unknown:
            raise ConfigError(
                f"task_data names {unknown[0]!r}, which is not among the tasks asked for "
                f"({', '.join(names)}); give local data for the tasks you run"
            )
        specs = [_spec(manager, name, (task_data or {}).get(name)) for name in names]
        loaded = _load(manager, specs, names)
        group_map = loaded.get("group_map", {})
        groups = {child: group for group, kids in group_map.items() for child in kids}
        tasks = loaded["tasks"]
        items: list[Item] = []
        for name, task_obj in tasks.items():
            _check_task(name, task_obj)
            _configure(task_obj, num_fewshot, fewshot_seed)
            prefix = f"{name}/" if len(tasks) > 1 else ""
            src = _Source(name, task_obj, prefix, groups.get(name), question_field, options_field)
            items += _task_items(src, docs)
    if not items:
        raise DataError("no documents", file=", ".join(names), expected="tasks with documents")
    return items


@contextmanager
def _quiet_lm_eval() -> Iterator[None]:
    """lm-eval notes every task's defaults at WARNING, and it and ``datasets`` draw progress
    bars on standard error while a task loads (a batch job's log would fill with them): only
    lm-eval's errors are shown (raised errors still reach the caller; log handlers keep their
    own streams). At DEBUG everything is shown."""
    logger = logging.getLogger("lm_eval")
    level = logger.level
    if logging.getLogger("steadyeval").isEnabledFor(logging.DEBUG):
        yield
        return
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


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
    if not names:
        raise ConfigError("lm-eval tasks: name at least one task (task: arc_easy)")
    if any(not n for n in names):
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


def _spec(manager: Any, name: str, folder: str | None) -> str | dict[str, Any]:
    """``name``, or its whole config (its YAML with its ``include``s, as lm-eval's task
    factory reads it) with the data set replaced by ``folder``'s files."""
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
    for p in files:  # a malformed JSONL line is named here, with its number
        if p.suffix == ".jsonl" and not sum(1 for _ in read_jsonl(p)):
            raise DataError("no rows", file=str(p), expected="one JSON document per line")
    entry = manager.task_index.get(name)
    if entry is None or entry.yaml_path is None or getattr(entry.kind, "name", "") != "TASK":
        raise ConfigError(
            f"task_data[{name}]: local files replace the data set of one lm-eval task defined "
            "in YAML; for a group, give each of its tasks (or make your own task folder, "
            "include_path)"
        )
    from lm_eval.tasks._yaml_loader import load_yaml  # what lm-eval's TaskFactory reads

    config = load_yaml(entry.yaml_path, resolve_func=True)
    have = {p.stem for p in files}
    for key in ("test_split", "validation_split", "training_split", "fewshot_split"):
        split = config.get(key)
        if split is not None and str(split) not in have:
            raise DataError(
                f"no file for split {split!r} (the task's {key}; lm-eval reads it even at 0 shots)",
                file=str(folder),
                field=f"task_data[{name}]",
                expected=f"{split}.jsonl (or .json, .parquet, .csv) beside "
                f"{', '.join(sorted(p.name for p in files))}",
            )
    return {
        **config,
        "task": name,
        "dataset_path": kinds.pop(),
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}},
    }


def _check_known(manager: Any, names: list[str]) -> None:
    known = set(manager.all_tasks)
    for name in names:
        if name not in known and Path(name).suffix != ".yaml":
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown lm-eval task {name!r}{hint} (`lm_eval ls tasks` lists them; a "
                "task of your own needs include_path: its folder)"
            )


def _load(manager: Any, specs: list[str | dict[str, Any]], names: list[str]) -> dict[str, Any]:
    try:
        out: dict[str, Any] = manager.load(specs)
    except (ConnectionError, OSError) as exc:
        raise DataError(
            f"could not load its documents: {shorten(str(exc), 300)}",
            file=", ".join(names),
            expected="a reachable hub data set, the Hugging Face cache with HF_HUB_OFFLINE=1, "
            "or local files (task_data: {TASK: FOLDER}, --task-data TASK=FOLDER)",
        ) from None
    except Exception as exc:  # a task's YAML, code or data that lm-eval cannot build on
        raise ConfigError(
            f"lm-eval could not build {', '.join(names)}: {type(exc).__name__}: "
            f"{shorten(str(exc), 300)}"
        ) from exc
    return out


def _build_requests(src: _Source) -> None:
    """lm-eval's own requests for every evaluated document; what it cannot build (more
    shots than its few-shot documents, a template a document's fields do not fill) is one
    :class:`ConfigError` naming the task."""
    try:
        src.task.build_all_requests()
    except Exception as exc:
        n = src.task.get_config("num_fewshot") or 0
        pool = len(src.task.fewshot_docs() or []) if n else 0
        if n and n >= pool and isinstance(exc, ValueError | AssertionError):
            raise ConfigError(
                f"{src.where}: num_fewshot {n} needs more shots than its {pool} few-shot "
                "documents give (lower --num-fewshot / num_fewshot)"
            ) from None
        raise ConfigError(
            f"{src.where}: lm-eval could not build its requests: {type(exc).__name__}: "
            f"{shorten(str(exc), 300)}"
        ) from exc


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
    if task_obj.config.process_results is not None:
        raise ConfigError(
            f"lm-eval task {name!r}: its metrics come from its own process_results function "
            "(as truthfulqa_mc2's), which steadyeval does not reproduce"
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


@dataclass(frozen=True)
class _Source:
    """One task's documents and how its items are named."""

    name: str
    task: Any
    prefix: str
    group: str | None
    question_field: str | None
    options_field: str | None

    @property
    def where(self) -> str:
        return f"lm-eval task {self.name}"


def _task_items(src: _Source, docs: Literal["eval", "fewshot"]) -> list[Item]:
    """The evaluated documents, with the requests lm-eval builds for each; or the task's
    few-shot documents (``fewshot_split``, else its training split), for a shot pool."""
    if docs == "fewshot":
        pool = list(src.task.fewshot_docs() or [])
        return [_item(src, i, doc, f"{src.prefix}fewshot-{i}", None) for i, doc in enumerate(pool)]
    _build_requests(src)
    by_doc: dict[int, list[Any]] = {}
    for inst in src.task.instances:
        by_doc.setdefault(int(inst.doc_id), []).append(inst)
    rules = _rules(src.task)
    items = []
    for doc_id, insts in sorted(by_doc.items()):
        insts.sort(key=lambda inst: inst.idx)
        asked = _asked(src, doc_id, insts, rules)
        items.append(_item(src, doc_id, insts[0].doc, f"{src.prefix}{doc_id}", asked))
    return items


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


def _asked(src: _Source, doc_id: int, insts: list[Any], rules: dict[str, Any]) -> dict[str, Any]:
    """How lm-eval asks one document: its prompt (shots included) and the task's rules;
    a multiple-choice document's requests must be that prompt with each option after the
    ``target_delimiter`` (what the ``lm-eval`` template sends)."""
    prompt = insts[0].arguments[0]
    asked: dict[str, Any] = {"task": src.name, "doc_id": doc_id, **rules, "prompt": prompt}
    if rules["output_type"] == "multiple_choice":
        options = [str(c) for c in src.task.doc_to_choice(insts[0].doc)]
        sent = [tuple(i.arguments[:2]) for i in insts]
        if sent != [(prompt, rules["target_delimiter"] + o) for o in options]:
            raise DataError(
                "its requests are not one context with the options as continuations",
                file=src.where,
                line=doc_id + 1,
                expected="a multiple-choice task as lm-eval's ConfigurableTask builds one",
            )
    elif rules["output_type"] == "loglikelihood":
        asked["continuation"] = str(insts[0].arguments[1])
    return asked


def _item(src: _Source, doc_id: int, doc: Any, item_id: str, asked: dict[str, Any] | None) -> Item:
    """One document as an item (``asked``: how lm-eval asks it, for an evaluated one)."""
    kind = src.task.OUTPUT_TYPE
    options: tuple[str, ...] | None = None
    gold: tuple[int, ...] = ()
    answers: tuple[str, ...] = ()
    target = src.task.doc_to_target(doc)
    if kind == "multiple_choice":
        choices = tuple(str(c) for c in src.task.doc_to_choice(doc))
        gold = _gold_index(target, choices, src.where, doc_id)
        options = _option_texts(src, doc, choices, doc_id)
        if asked is not None:
            asked["choices"] = list(choices)
    elif kind == "loglikelihood":
        answers = (str(target),)
    else:
        answers = tuple(str(t) for t in target) if isinstance(target, list) else (str(target),)
    meta: dict[str, Any] = {
        k: v
        for k, v in (doc.items() if isinstance(doc, Mapping) else ())
        if isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool))
    }
    meta["subtask"] = src.name
    if asked is not None:
        meta["lm_eval"] = asked
    if src.group is not None:
        meta["group"] = src.group
    return Item(
        id=item_id,
        question=_question(src, doc, doc_id),
        options=options,
        answers=answers,
        gold_options=gold,
        metadata=meta,
    )


def _is_label(choice: str) -> bool:
    """A choice that is a label rather than an answer: ``A``, ``b``, ``(C)``, ``1``."""
    return len(choice.strip("() .")) <= 2


def _option_texts(src: _Source, doc: Any, choices: tuple[str, ...], doc_id: int) -> tuple[str, ...]:
    """The item's options for steadyeval's own templates: the named document field; by
    default, when lm-eval's choices are only labels (MMLU's ``A``-``D``, the texts being in
    its prompt), the document's ``choices`` or ``options`` list of as many texts; else the
    choices themselves. The ``lm-eval`` template keeps lm-eval's choices."""
    fields = doc if isinstance(doc, Mapping) else {}

    def texts(name: str) -> tuple[str, ...] | None:
        value = fields.get(name)
        if not isinstance(value, list | tuple) or len(value) != len(choices):
            return None
        return tuple(str(t) for t in value)

    if src.options_field:
        named = texts(src.options_field)
        if named is None:
            raise DataError(
                f"has no list of {len(choices)} option texts in {src.options_field!r}",
                file=src.where,
                line=doc_id + 1,
                field=src.options_field,
                expected=f"a list as long as the task's choices ({', '.join(choices)})",
            )
        return named
    if all(_is_label(c) for c in choices):
        for name in ("choices", "options"):
            found = texts(name)
            if found is not None:
                return found
    return choices


def _question(src: _Source, doc: Any, doc_id: int) -> str:
    """The item's question: the named document field; by default the document's
    ``question`` text where it has one (so steadyeval's own templates do not show lm-eval's
    whole prompt as the question), else ``doc_to_text``."""
    field = src.question_field
    fields = doc if isinstance(doc, Mapping) else {}
    if field is not None and not isinstance(fields.get(field), str):
        raise DataError(
            f"has no text field {field!r}",
            file=src.where,
            line=doc_id + 1,
            field=field,
            expected=f"a text field (the document's: {', '.join(map(str, fields)) or 'none'})",
        )
    if isinstance(fields.get(field or "question"), str):
        return str(fields[field or "question"])
    text = src.task.doc_to_text(doc)
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
