"""FewGLUE / SuperGLUE tasks as items: each task's record fields, how a record becomes items,
and loading from FewGLUE's JSONL files or the ``super_glue`` hub data set."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from .._errors import ConfigError, DataError
from .._extras import require
from .._files import input_file
from ._fewglue_records import (
    BOOL,
    NLI2,
    NLI3,
    boolq,
    check_record,
    copa,
    multirc,
    nli,
    wic,
    wsc,
)
from ._item import Item
from ._jsonl import read_jsonl
from ._loaders import unique_items
from ._text import shorten

__all__ = ["FEWGLUE", "FewGlueTask", "fewglue_task", "load_fewglue_items"]


@dataclass(frozen=True)
class FewGlueTask:
    """A SuperGLUE task's data.

    Attributes
    ----------
    name : str
        FewGLUE's folder name (``RTE``, ``BoolQ``, ...).
    hub_config : str
        The ``super_glue`` configuration on the Hugging Face hub.
    kind : {"classify", "choice"}
        ``classify``: the options are the label names (``labels``). ``choice``: the options
        are the item's own answers (COPA's two alternatives).
    labels : tuple of str
        Label names, in the hub's integer order.
    fields : mapping
        The record's required fields -> their JSON type (``str``, ``int``, ``bool``, ...).
    grouped : bool
        Items share a unit that splits must keep together (``metadata["group"]``).
    """

    name: str
    hub_config: str
    kind: Literal["classify", "choice"]
    labels: tuple[str, ...]
    fields: Mapping[str, str]
    grouped: bool
    to_items: Callable[[Mapping[str, Any], str, str, int], list[Item]] = field(repr=False)

    @property
    def key(self) -> str:
        return self.name.lower()

    def record_items(self, rec: Any, file: str, prefix: str, line: int) -> list[Item]:
        """The items of one JSONL record, its required fields and their types checked first
        (a :class:`DataError` naming ``file``, ``line`` and the field)."""
        check_record(rec, self.fields, file, line)
        return self.to_items(rec, file, prefix, line)


#: The tasks by lower-case name (ReCoRD is not supported).
FEWGLUE: Mapping[str, FewGlueTask] = MappingProxyType(
    {
        t.key: t
        for t in (
            FewGlueTask(
                name="BoolQ",
                hub_config="boolq",
                kind="classify",
                labels=BOOL,
                fields=MappingProxyType(
                    {"question": "str", "passage": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=boolq,
            ),
            FewGlueTask(
                name="CB",
                hub_config="cb",
                kind="classify",
                labels=NLI3,
                fields=MappingProxyType(
                    {"premise": "str", "hypothesis": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=nli("CB", NLI3),
            ),
            FewGlueTask(
                name="COPA",
                hub_config="copa",
                kind="choice",
                labels=("choice1", "choice2"),
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
                to_items=copa,
            ),
            FewGlueTask(
                name="MultiRC",
                hub_config="multirc",
                kind="classify",
                labels=BOOL,
                fields=MappingProxyType({"passage": "dict", "idx": "int"}),
                grouped=True,
                to_items=multirc,
            ),
            FewGlueTask(
                name="RTE",
                hub_config="rte",
                kind="classify",
                labels=NLI2,
                fields=MappingProxyType(
                    {"premise": "str", "hypothesis": "str", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=nli("RTE", NLI2),
            ),
            FewGlueTask(
                name="WiC",
                hub_config="wic",
                kind="classify",
                labels=BOOL,
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
                to_items=wic,
            ),
            FewGlueTask(
                name="WSC",
                hub_config="wsc.fixed",
                kind="classify",
                labels=BOOL,
                fields=MappingProxyType(
                    {"text": "str", "target": "dict", "idx": "int", "label": "label"}
                ),
                grouped=False,
                to_items=wsc,
            ),
        )
    }
)


def fewglue_task(name: str) -> FewGlueTask:
    """The task called ``name`` (case-insensitive)."""
    task = FEWGLUE.get(name.lower())
    if task is None:
        raise ConfigError(
            f"unknown task {shorten(repr(name))}; choose one of {', '.join(t.name for t in FEWGLUE.values())} "
            "(ReCoRD is not supported)"
        )
    return task


# -- loading ---------------------------------------------------------------------------------
def _items(
    task: FewGlueTask, records: Iterator[tuple[int, Any]], file: str, prefix: str
) -> list[Item]:
    return unique_items(
        records,
        lambda rec, line: task.record_items(rec, file, prefix, line),
        file=file,
        field="idx",
        unique="unique idx values",
        nonempty=f"{task.name} rows in FewGLUE form",
    )


def _hub_record(task: FewGlueTask, row: Mapping[str, Any]) -> dict[str, Any]:
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


def _hub_items(task: FewGlueTask, dataset: str, split: str) -> list[Item]:
    require(f"{dataset}: Hugging Face data sets", "datasets")
    import datasets

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


#: A SuperGLUE split, optionally sliced as ``datasets`` reads it (``validation[:100]``).
_HUB_SPLIT = re.compile(r"(train|validation|test)(\[[0-9:%+-]{1,20}\])?")


def load_fewglue_items(source: str | Path, *, task: FewGlueTask | str) -> list[Item]:
    """Load labelled items of ``task`` from a FewGLUE/SuperGLUE JSONL file or the hub.

    Parameters
    ----------
    task
        A :class:`FewGlueTask` or its name.
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
    t = fewglue_task(task) if isinstance(task, str) else task
    text = str(source)
    if text.startswith(("superglue:", "super_glue:")):
        split = text.split(":", 1)[1] or "validation"
        if not _HUB_SPLIT.fullmatch(split):
            raise ConfigError(
                f"{shorten(text, 80)}: unknown SuperGLUE split; expected superglue:train, "
                "superglue:validation or superglue:test (a slice such as validation[:100] too)"
            )
        return _hub_items(t, "super_glue", split)
    path = input_file(source, "a FewGLUE/SuperGLUE .jsonl file or superglue:SPLIT")
    return _items(t, read_jsonl(path), str(path), path.stem.lower())
