"""FewGLUE / SuperGLUE records → items: field checks with located errors and one parser per
task (used by :mod:`steadyeval.items._fewglue`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._errors import DataError
from ._item import Item
from ._text import shorten

__all__ = ["BOOL", "NLI2", "NLI3", "boolq", "check_record", "copa", "multirc", "nli", "wic", "wsc"]

BOOL = ("false", "true")
NLI2 = ("entailment", "not_entailment")
NLI3 = ("entailment", "contradiction", "neutral")


# -- record checking ------------------------------------------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
    "label": (str, bool, int),
}


def check_record(rec: Mapping[str, Any], fields: Mapping[str, str], file: str, line: int) -> None:
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
        if ok and kind == "int" and not -(2**63) <= value < 2**63:
            raise DataError(
                f"an integer of {len(str(value)):,} digits",
                file=file,
                line=line,
                field=name,
                expected="an integer of at most 64 bits",
            )
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
    if isinstance(value, bool) and labels == BOOL:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(labels):
        return value
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    raise DataError(
        f"unknown label {shorten(repr(value))}",
        file=file,
        line=line,
        field=name,
        expected=f"one of {', '.join(labels)} (or its index)",
    )


def _item(task: str, prefix: str, idx: Any, **kw: Any) -> Item:
    return Item(id=f"{task}-{prefix}-{idx}", **kw)


# -- the tasks' records --------------------------------------------------------------------
def boolq(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], BOOL, file, line)
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
            options=BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def nli(name: str, labels: tuple[str, ...]) -> Callable[..., list[Item]]:
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


def copa(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    if rec["question"] not in ("cause", "effect"):
        raise DataError(
            f"got {shorten(repr(rec['question']))}",
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


def wic(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], BOOL, file, line)
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
            options=BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def wsc(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
    gold = _label(rec["label"], BOOL, file, line)
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
            options=BOOL,
            gold_options=(gold,),
            metadata=meta,
        )
    ]


def multirc(rec: Mapping[str, Any], file: str, prefix: str, line: int) -> list[Item]:
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
            gold = _label(a["label"], BOOL, file, line, "passage.questions.answers.label")
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
                    options=BOOL,
                    gold_options=(gold,),
                    metadata=meta,
                )
            )
    return items
