"""FewGLUE / SuperGLUE tasks: fields, items, patterns (with a ``[Y]`` slot) and verbalizers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from ..._errors import ConfigError, DataError
from ...items import Item

__all__ = [
    "TASKS",
    "FewShotTask",
    "get_task",
    "item_groups",
    "load_task_items",
    "split_off_test",
]

_BOOL = ("false", "true")


@dataclass(frozen=True)
class FewShotTask:
    """A SuperGLUE task as few-shot items.

    Attributes
    ----------
    name : str
        FewGLUE's folder name (``RTE``, ``BoolQ``, ...).
    hub_config : str
        The ``super_glue`` configuration on the Hugging Face hub.
    kind : {"classify", "choice"}
        ``classify``: the options are the label names (``labels``) and a verbalizer maps
        them to words. ``choice``: the options are the item's own answers (COPA's two
        alternatives) and fill the slot as text, without a verbalizer.
    labels : tuple of str
        Label names, in the hub's integer order.
    patterns : mapping
        Pattern name -> Jinja2 source with one ``[Y]`` answer slot; variables are the
        item's fields (``metadata.premise`` ...).
    verbalizers : mapping
        Verbalizer name -> {label: word}; empty for choice tasks.
    fields : mapping
        The record's required fields -> their JSON type (``str``, ``int``, ``bool``, ...).
    grouped : bool
        Items share a unit that splits must keep together (``metadata["group"]``).
    """

    name: str
    hub_config: str
    kind: Literal["classify", "choice"]
    labels: tuple[str, ...]
    patterns: Mapping[str, str]
    verbalizers: Mapping[str, Mapping[str, str]]
    fields: Mapping[str, str]
    grouped: bool
    to_items: Callable[[Mapping[str, Any], str, str, int], list[Item]] = field(repr=False)
    cls_inputs: Callable[[Item], tuple[tuple[str, str | None], ...]] = field(repr=False)

    @property
    def key(self) -> str:
        return self.name.lower()


# -- record checking ------------------------------------------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
    "label": (str, bool, int),
}


def _check(rec: Mapping[str, Any], fields: Mapping[str, str], file: str, line: int) -> None:
    if not isinstance(rec, Mapping):
        raise DataError(
            f"a row must be a JSON object, got {type(rec).__name__}", file=file, line=line
        )
    for name, kind in fields.items():
        if name not in rec or rec[name] is None:
            extra = " (unlabelled rows cannot be used here)" if name == "label" else ""
            raise DataError(
                f"missing field{extra}",
                file=file,
                line=line,
                field=name,
                expected=f"a {kind} value; fields: {', '.join(fields)}",
            )
        value = rec[name]
        ok = isinstance(value, _TYPES[kind]) and not (kind == "int" and isinstance(value, bool))
        if not ok:
            raise DataError(
                f"got {type(value).__name__} {value!r:.60}",
                file=file,
                line=line,
                field=name,
                expected=f"a {kind}",
            )


def _label(value: Any, labels: tuple[str, ...], file: str, line: int, name: str = "label") -> int:
    """Index of a label given as its name, a bool (for false/true tasks) or an int."""
    if isinstance(value, bool) and labels == _BOOL:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(labels):
        return value
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    raise DataError(
        f"unknown label {value!r}",
        file=file,
        line=line,
        field=name,
        expected=f"one of {', '.join(labels)} (or its index)",
    )


def _item(task: str, prefix: str, idx: Any, **kw: Any) -> Item:
    return Item(id=f"{task}-{prefix}-{idx}", **kw)


# -- the tasks --------------------------------------------------------------------------------
def _boolq(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], _BOOL, file, line)
    meta = {
        "task": "BoolQ",
        "idx": rec["idx"],
        "question": rec["question"],
        "passage": rec["passage"],
    }
    return [
        _item(
            "boolq",
            prefix,
            rec["idx"],
            question=rec["question"],
            context=rec["passage"],
            options=_BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def _nli(name: str, labels: tuple[str, ...]) -> Callable[..., list[Item]]:
    def parse(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
        gold = _label(rec["label"], labels, file, line)
        meta = {
            "task": name,
            "idx": rec["idx"],
            "premise": rec["premise"],
            "hypothesis": rec["hypothesis"],
        }
        return [
            _item(
                name.lower(),
                prefix,
                rec["idx"],
                question=rec["hypothesis"],
                context=rec["premise"],
                options=labels,
                gold_options=(gold,),
                metadata=meta,
            )
        ]

    return parse


def _copa_option(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:]


def _copa(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    if rec["question"] not in ("cause", "effect"):
        raise DataError(
            f"got {rec['question']!r}",
            file=file,
            line=line,
            field="question",
            expected="cause or effect",
        )
    gold = _label(rec["label"], ("0", "1"), file, line)
    premise = rec["premise"].strip()
    meta = {
        "task": "COPA",
        "idx": rec["idx"],
        "premise": premise,
        "question": rec["question"],
        "choice1": rec["choice1"],
        "choice2": rec["choice2"],
        "premise_stem": premise.rstrip("."),
        "connective": "because" if rec["question"] == "cause" else "so",
        "group": premise,
    }
    options = (_copa_option(rec["choice1"]), _copa_option(rec["choice2"]))
    return [
        _item(
            "copa",
            prefix,
            rec["idx"],
            question=f"{premise} What was the {rec['question']}?",
            options=options,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def _wic(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], _BOOL, file, line)
    meta = {
        "task": "WiC",
        "idx": rec["idx"],
        "word": rec["word"],
        "sentence1": rec["sentence1"],
        "sentence2": rec["sentence2"],
    }
    return [
        _item(
            "wic",
            prefix,
            rec["idx"],
            question=rec["word"],
            context=f"{rec['sentence1']} {rec['sentence2']}",
            options=_BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def _wsc(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], _BOOL, file, line)
    target = rec["target"]
    for key in ("span1_text", "span2_text"):
        if not isinstance(target.get(key), str):
            raise DataError(
                "missing or not a string",
                file=file,
                line=line,
                field=f"target.{key}",
                expected="a string",
            )
    meta = {
        "task": "WSC",
        "idx": rec["idx"],
        "text": rec["text"],
        "span1": target["span1_text"],
        "span2": target["span2_text"],
    }
    return [
        _item(
            "wsc",
            prefix,
            rec["idx"],
            question=f"{target['span2_text']} -> {target['span1_text']}",
            context=rec["text"],
            options=_BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def _multirc(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    passage = rec["passage"]
    if not isinstance(passage.get("text"), str) or not isinstance(passage.get("questions"), list):
        raise DataError(
            "malformed passage",
            file=file,
            line=line,
            field="passage",
            expected='{"text": str, "questions": [...]}',
        )
    items = []
    for q in passage["questions"]:
        if (
            not isinstance(q, Mapping)
            or not isinstance(q.get("question"), str)
            or not isinstance(q.get("answers"), list)
        ):
            raise DataError(
                "malformed question",
                file=file,
                line=line,
                field="passage.questions",
                expected='{"question": str, "answers": [...], "idx": int}',
            )
        for a in q["answers"]:
            if not isinstance(a, Mapping) or not isinstance(a.get("text"), str):
                raise DataError(
                    "malformed answer",
                    file=file,
                    line=line,
                    field="passage.questions.answers",
                    expected='{"text": str, "label": 0|1, "idx": int}',
                )
            if a.get("label") is None:
                raise DataError(
                    "missing field (unlabelled rows cannot be used here)",
                    file=file,
                    line=line,
                    field="passage.questions.answers.label",
                    expected="0 or 1",
                )
            gold = _label(a["label"], _BOOL, file, line, "passage.questions.answers.label")
            group = f"{rec['idx']}-{q.get('idx')}"
            meta = {
                "task": "MultiRC",
                "idx": rec["idx"],
                "question_idx": q.get("idx"),
                "answer_idx": a.get("idx"),
                "passage": passage["text"],
                "question": q["question"],
                "answer": a["text"],
                "group": group,
            }
            items.append(
                _item(
                    "multirc",
                    prefix,
                    f"{group}-{a.get('idx')}",
                    question=q["question"],
                    context=passage["text"],
                    options=_BOOL,
                    gold_options=(gold,),
                    metadata=meta,
                )
            )
    return items


def _pair(a: str, b: str) -> Callable[[Item], tuple[tuple[str, str | None], ...]]:
    def inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
        return ((str(item.metadata[a]), str(item.metadata[b])),)

    return inputs


def _wic_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((f"{m['word']}: {m['sentence1']}", str(m["sentence2"])),)


def _wsc_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((str(m["text"]), f"{m['span2']} refers to {m['span1']}"),)


def _multirc_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    return ((str(m["passage"]), f"{m['question']} {m['answer']}"),)


def _copa_inputs(item: Item) -> tuple[tuple[str, str | None], ...]:
    m = item.metadata
    assert item.options is not None
    return tuple((f"{m['premise_stem']} {m['connective']}", o) for o in item.options)


_YES_NO = MappingProxyType({"false": "no", "true": "yes"})
_TRUE_FALSE = MappingProxyType({"false": "false", "true": "true"})
_NLI2 = ("entailment", "not_entailment")
_NLI3 = ("entailment", "contradiction", "neutral")
_P, _H = "metadata.premise", "metadata.hypothesis"

TASKS: Mapping[str, FewShotTask] = MappingProxyType(
    {
        t.key: t
        for t in (
            FewShotTask(
                name="BoolQ",
                hub_config="boolq",
                kind="classify",
                labels=_BOOL,
                patterns=MappingProxyType(
                    {
                        "passage-question": "{{ metadata.passage }}\nQuestion: {{ metadata.question }}?"
                        "\nAnswer: [Y].",
                        "based-on": "{{ metadata.passage }} Based on the previous passage, "
                        "{{ metadata.question }}? [Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                fields=MappingProxyType(
                    {"question": "str", "passage": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=_boolq,
                cls_inputs=_pair("passage", "question"),
            ),
            FewShotTask(
                name="CB",
                hub_config="cb",
                kind="classify",
                labels=_NLI3,
                patterns=MappingProxyType(
                    {
                        "question": f"{{{{ {_P} }}}}\nQuestion: {{{{ {_H} }}}} Yes, no, or maybe?"
                        "\nAnswer: [Y].",
                        "based-on": f"{{{{ {_P} }}}} Based on the previous passage, is it true that "
                        f'"{{{{ {_H} }}}}"? [Y].',
                        "pet-quote": f'"{{{{ {_H} }}}}"? | [Y], "{{{{ {_P} }}}}"',
                    }
                ),
                verbalizers=MappingProxyType(
                    {
                        "yes-no-maybe": MappingProxyType(
                            {"entailment": "yes", "contradiction": "no", "neutral": "maybe"}
                        ),
                        "true-false-neither": MappingProxyType(
                            {"entailment": "true", "contradiction": "false", "neutral": "neither"}
                        ),
                    }
                ),
                fields=MappingProxyType(
                    {"premise": "str", "hypothesis": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=_nli("CB", _NLI3),
                cls_inputs=_pair("premise", "hypothesis"),
            ),
            FewShotTask(
                name="COPA",
                hub_config="copa",
                kind="choice",
                labels=("choice1", "choice2"),
                patterns=MappingProxyType(
                    {
                        "connective": "{{ metadata.premise_stem }} {{ metadata.connective }} [Y].",
                        "pet-choices": '"{{ metadata.choice1 | trim }}" or "{{ metadata.choice2 | trim }}'
                        '"? {{ metadata.premise_stem }} {{ metadata.connective }} [Y].',
                    }
                ),
                verbalizers=MappingProxyType({}),
                fields=MappingProxyType(
                    {
                        "premise": "str",
                        "choice1": "str",
                        "choice2": "str",
                        "question": "str",
                        "idx": "int",
                        "label": "label",
                    }
                ),
                grouped=True,
                to_items=_copa,
                cls_inputs=_copa_inputs,
            ),
            FewShotTask(
                name="MultiRC",
                hub_config="multirc",
                kind="classify",
                labels=_BOOL,
                patterns=MappingProxyType(
                    {
                        "correct-answer": "{{ metadata.passage }}\nQuestion: {{ metadata.question }}\n"
                        'Is the correct answer "{{ metadata.answer }}"? [Y].',
                        "based-on": "{{ metadata.passage }} Based on the previous passage, "
                        '{{ metadata.question }} Is "{{ metadata.answer }}" a correct answer? '
                        "[Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                fields=MappingProxyType({"passage": "dict", "idx": "int"}),
                grouped=True,
                to_items=_multirc,
                cls_inputs=_multirc_inputs,
            ),
            FewShotTask(
                name="RTE",
                hub_config="rte",
                kind="classify",
                labels=_NLI2,
                patterns=MappingProxyType(
                    {
                        "question": f"{{{{ {_P} }}}}\nQuestion: {{{{ {_H} }}}} Yes or no?\nAnswer: [Y].",
                        "based-on": f"{{{{ {_P} }}}} Based on the previous passage, is it true that "
                        f'"{{{{ {_H} }}}}"? [Y].',
                        "pet-quote": f'"{{{{ {_H} }}}}"? | [Y], "{{{{ {_P} }}}}"',
                    }
                ),
                verbalizers=MappingProxyType(
                    {
                        "yes-no": MappingProxyType({"entailment": "yes", "not_entailment": "no"}),
                        "true-false": MappingProxyType(
                            {"entailment": "true", "not_entailment": "false"}
                        ),
                    }
                ),
                fields=MappingProxyType(
                    {"premise": "str", "hypothesis": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=_nli("RTE", _NLI2),
                cls_inputs=_pair("premise", "hypothesis"),
            ),
            FewShotTask(
                name="WiC",
                hub_config="wic",
                kind="classify",
                labels=_BOOL,
                patterns=MappingProxyType(
                    {
                        "same-meaning": "{{ metadata.sentence1 }} {{ metadata.sentence2 }} Does the word "
                        '"{{ metadata.word }}" have the same meaning in both sentences? '
                        "[Y].",
                        "similar-sense": '"{{ metadata.sentence1 }}" / "{{ metadata.sentence2 }}". '
                        'Similar sense of "{{ metadata.word }}"? [Y].',
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                fields=MappingProxyType(
                    {
                        "word": "str",
                        "sentence1": "str",
                        "sentence2": "str",
                        "idx": "int",
                        "label": "label",
                    }
                ),
                grouped=False,
                to_items=_wic,
                cls_inputs=_wic_inputs,
            ),
            FewShotTask(
                name="WSC",
                hub_config="wsc.fixed",
                kind="classify",
                labels=_BOOL,
                patterns=MappingProxyType(
                    {
                        "refer": "{{ metadata.text }} In the previous sentence, does the pronoun "
                        '"{{ metadata.span2 }}" refer to {{ metadata.span1 }}? [Y].',
                        "question": "{{ metadata.text }}\nQuestion: In the passage above, does "
                        '"{{ metadata.span2 }}" refer to "{{ metadata.span1 }}"?\n'
                        "Answer: [Y].",
                    }
                ),
                verbalizers=MappingProxyType({"yes-no": _YES_NO, "true-false": _TRUE_FALSE}),
                fields=MappingProxyType(
                    {"text": "str", "target": "dict", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=_wsc,
                cls_inputs=_wsc_inputs,
            ),
        )
    }
)


def get_task(name: str) -> FewShotTask:
    """The task called ``name`` (case-insensitive)."""
    task = TASKS.get(name.lower())
    if task is None:
        raise ConfigError(
            f"unknown task {name!r}; choose one of {', '.join(t.name for t in TASKS.values())} "
            "(ReCoRD is not supported)"
        )
    return task


# -- loading ---------------------------------------------------------------------------------
def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        with path.open("r", encoding="utf-8") as fh:
            for line, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    yield line, json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(
                        f"invalid JSON: {exc.msg} at column {exc.colno}",
                        file=str(path),
                        line=line,
                        expected="one JSON object per line",
                    ) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text ({exc.reason})", file=str(path), expected="UTF-8"
        ) from None


def _items(
    task: FewShotTask, records: Iterator[tuple[int, Any]], file: str, prefix: str
) -> list[Item]:
    items: list[Item] = []
    seen: dict[str, int] = {}
    for line, rec in records:
        _check(rec, task.fields, file, line)
        for item in task.to_items(rec, file, prefix, line):
            if item.id in seen:
                raise DataError(
                    f"item id {item.id!r} repeats line {seen[item.id]}",
                    file=file,
                    line=line,
                    field="idx",
                    expected="unique idx values",
                )
            seen[item.id] = line
            items.append(item)
    if not items:
        raise DataError("no items", file=file, expected=f"{task.name} rows in FewGLUE form")
    return items


def _hub_record(task: FewShotTask, row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``super_glue`` hub row in FewGLUE's JSONL form."""
    rec = dict(row)
    label = rec.get("label")
    if isinstance(label, int) and label < 0:
        rec["label"] = None  # SuperGLUE's test split has no labels
    if task.key == "wsc":
        rec["target"] = {
            k: rec.pop(k) for k in ("span1_index", "span2_index", "span1_text", "span2_text")
        }
    if task.key == "multirc":
        idx = rec["idx"]
        return {
            "idx": idx["paragraph"],
            "passage": {
                "text": rec["paragraph"],
                "questions": [
                    {
                        "question": rec["question"],
                        "idx": idx["question"],
                        "answers": [
                            {"text": rec["answer"], "idx": idx["answer"], "label": rec["label"]}
                        ],
                    }
                ],
            },
        }
    return rec


def _hub_items(task: FewShotTask, dataset: str, split: str) -> list[Item]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a dependency
        raise DataError("the 'datasets' package is not installed", file=dataset) from exc
    label = f"{dataset}/{task.hub_config}[{split}]"
    try:
        ds = datasets.load_dataset(dataset, task.hub_config, split=split)
    except Exception as exc:  # datasets raises many types; all mean "could not load"
        raise DataError(
            f"could not load the SuperGLUE {task.name} {split} set "
            f"({type(exc).__name__}: {str(exc)[:200]})",
            file=label,
            expected="a reachable Hugging Face hub (or its local cache), or a local "
            "FewGLUE/SuperGLUE JSONL file; offline, split a labelled file with "
            "--test-from-labelled N",
        ) from None
    if task.key == "multirc":
        # One hub row per answer: regroup the answers of each passage and question.
        merged: dict[Any, dict[str, Any]] = {}
        for row in ds:
            rec = _hub_record(task, row)
            key = (rec["idx"], rec["passage"]["questions"][0]["idx"])
            if key in merged:
                merged[key]["passage"]["questions"][0]["answers"].extend(
                    rec["passage"]["questions"][0]["answers"]
                )
            else:
                merged[key] = rec
        records: Iterator[tuple[int, Any]] = iter(enumerate(merged.values(), start=1))
    else:
        records = ((n, _hub_record(task, row)) for n, row in enumerate(ds, start=1))
    return _items(task, records, label, split)


def load_task_items(task: FewShotTask | str, source: str | Path) -> list[Item]:
    """Load labelled items of ``task`` from a FewGLUE/SuperGLUE JSONL file or the hub.

    Parameters
    ----------
    task
        A :class:`FewShotTask` or its name.
    source
        A ``.jsonl`` path in FewGLUE / SuperGLUE form (``FewGLUE/RTE/train.jsonl``,
        SuperGLUE's ``val.jsonl``), or ``superglue:SPLIT`` (e.g. ``superglue:validation``)
        to load ``datasets.load_dataset("super_glue", CONFIG, split=SPLIT)``.

    Returns
    -------
    list of Item
        Ids are ``<task>-<file stem or split>-<idx>``; MultiRC gives one item per answer
        (grouped by question), COPA one per premise (grouped by premise).

    Raises
    ------
    DataError
        Naming the file, line and field of a malformed or unlabelled row, or saying why the
        hub could not be reached.
    """
    t = get_task(task) if isinstance(task, str) else task
    text = str(source)
    if text.startswith(("superglue:", "super_glue:")):
        split = text.split(":", 1)[1] or "validation"
        return _hub_items(t, "super_glue", split)
    path = Path(source)
    if not path.is_file():
        raise DataError(
            "file not found",
            file=str(path),
            expected="a FewGLUE/SuperGLUE .jsonl file or superglue:SPLIT",
        )
    return _items(t, _jsonl(path), str(path), path.stem.lower())


def item_groups(items: Sequence[Item]) -> list[str] | None:
    """Group labels for splitting (``metadata["group"]``), or None if no item has one."""
    if not any("group" in i.metadata for i in items):
        return None
    return [str(i.metadata.get("group", i.id)) for i in items]


def split_off_test(
    items: Sequence[Item], n_test: int, *, seed: int
) -> tuple[list[Item], list[Item]]:
    """Hold out ``n_test`` units (items, or groups for grouped tasks) as a labelled test set.

    The held-out units are a seeded random choice; both parts keep the input order. Useful
    offline, where the only labelled data are FewGLUE's 32 training examples per task.
    """
    groups = item_groups(items)
    units = list(dict.fromkeys(groups)) if groups is not None else [i.id for i in items]
    if not 1 <= n_test < len(units):
        what = "groups" if groups is not None else "items"
        raise ConfigError(
            f"cannot hold out {n_test} of {len(units)} {what} as a test set; "
            f"choose 1..{len(units) - 1}"
        )
    rng = np.random.default_rng(seed)
    held = {units[int(i)] for i in rng.choice(len(units), size=n_test, replace=False)}
    keys = groups if groups is not None else [i.id for i in items]
    test = [it for it, k in zip(items, keys, strict=True) if k in held]
    rest = [it for it, k in zip(items, keys, strict=True) if k not in held]
    return rest, test
