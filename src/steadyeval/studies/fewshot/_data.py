"""Where each task's data comes from: its labelled file, its test set and its unlabelled
examples (FewGLUE's ``unlabeled.jsonl``, or with ``transductive`` the test set's inputs)."""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._errors import ConfigError, DataError
from ..._files import input_file
from ...items import Item, read_jsonl
from ._config import FewShotConfig
from ._tasks import FewShotTask, load_task_items, split_off_test

__all__ = ["TaskData", "load_task_data", "load_unlabelled_items"]

#: How FewGLUE (and SuperGLUE) name a task's files inside a task folder.
TRAIN_FILE, TEST_FILE, UNLABELLED_FILE = "train.jsonl", "val.jsonl", "unlabeled.jsonl"
#: The source of unlabelled examples under ``transductive`` (recorded in the design).
TRANSDUCTIVE = "test-inputs"


@dataclass(frozen=True)
class TaskData:
    """One task's items: the labelled pool, the test set and unlabelled examples (their
    gold fields are placeholders, never read), with where the unlabelled ones came from."""

    task: FewShotTask
    labelled: tuple[Item, ...]
    test: tuple[Item, ...]
    unlabelled: tuple[Item, ...]
    unlabelled_source: str


def _in_folder(folder: Path, task: FewShotTask, name: str) -> Path:
    return folder / task.name / name


def _source(value: str, task: FewShotTask, name: str, several: bool, what: str) -> str:
    if value.startswith(("superglue:", "super_glue:")):
        return value
    path = Path(value)
    if os.path.isdir(path):  # never raises (a name too long is not a folder)
        return str(_in_folder(path, task, name))
    if several:
        raise ConfigError(
            f"{what}: {value} is not a folder; with several tasks give a FewGLUE folder "
            f"holding TASK/{name}"
        )
    return value


def _placeholder_labels(task: FewShotTask, rec: Any) -> Any:
    """An unlabelled row with a placeholder label where the task's loader needs one (a row
    of the wrong shape is left as it is, for the record check to name what is wrong)."""
    rec = copy.deepcopy(rec)
    if isinstance(rec, dict) and task.key == "multirc":
        passage = rec.get("passage")
        questions = passage.get("questions") if isinstance(passage, dict) else None
        for q in questions if isinstance(questions, list) else []:
            answers = q.get("answers") if isinstance(q, dict) else None
            for a in answers if isinstance(answers, list) else []:
                if isinstance(a, dict):
                    a.setdefault("label", 0)
    elif isinstance(rec, dict):
        rec.setdefault("label", 0 if task.kind == "choice" else task.labels[0])
    return rec


def load_unlabelled_items(task: FewShotTask, path: str | Path) -> list[Item]:
    """Unlabelled FewGLUE rows (``unlabeled.jsonl``) as items marked
    ``metadata["unlabelled"]``, ids ``<task>-unlabelled-<idx>@<line>``; their gold label is a
    placeholder and is never used."""
    p = input_file(path, "a FewGLUE unlabeled.jsonl")
    items: list[Item] = []
    for line, rec in read_jsonl(p):
        rec = _placeholder_labels(task, rec)
        for item in task.data.record_items(rec, str(p), "unlabelled", line):
            # FewGLUE's unlabelled files repeat some idx values (WiC): the line keeps ids unique.
            meta = {**item.metadata, "unlabelled": True}
            items.append(dataclasses.replace(item, id=f"{item.id}@{line}", metadata=meta))
    if not items:
        raise DataError("no rows", file=str(p), expected="unlabelled rows in FewGLUE form")
    return items


#: Where FewGLUE's unlabelled sets come from (named when a task has none).
FEWGLUE_REPO = "https://github.com/timoschick/fewglue"


def no_unlabelled(task: FewShotTask, looked: Path) -> ConfigError:
    """The one-line refusal of a task without unlabelled examples (and without
    ``transductive``)."""
    return ConfigError(
        f"{task.name}: no unlabelled examples for the methods that read them (no {looked}); "
        f"FewGLUE ships one for every task ({FEWGLUE_REPO}: FewGLUE/{task.name}/"
        f"{UNLABELLED_FILE}): pass it with --unlabelled FILE|DIR (config key unlabelled), or "
        "use the test set's inputs without their labels with --transductive (transductive: "
        "true)"
    )


def _unlabelled(
    config: FewShotConfig, task: FewShotTask, test: Sequence[Item], several: bool
) -> tuple[list[Item], str]:
    """The task's unlabelled examples and where they came from. A file or folder given as
    ``unlabelled`` must hold them (an error otherwise, never a silent fallback); without
    it, the ``unlabeled.jsonl`` next to the labelled file, else (only with
    ``transductive``) the test set's inputs; else an error that says where FewGLUE's are."""
    if config.unlabelled is not None:
        path = Path(config.unlabelled)
        if os.path.isdir(path):
            path = _in_folder(path, task, UNLABELLED_FILE)
        elif several:
            raise ConfigError(
                "unlabelled: with several tasks give a folder holding TASK/" + UNLABELLED_FILE
            )
        return load_unlabelled_items(task, path), str(path)
    labelled = Path(config.labelled)
    folder = _in_folder(labelled, task, "") if os.path.isdir(labelled) else labelled.parent
    path = folder / UNLABELLED_FILE
    if os.path.lexists(path):  # there: it must be a readable regular file
        return load_unlabelled_items(task, path), str(path)
    if not config.transductive:
        raise no_unlabelled(task, path)
    return [
        dataclasses.replace(i, metadata={**i.metadata, "unlabelled": True}) for i in test
    ], TRANSDUCTIVE


def load_task_data(config: FewShotConfig, task: FewShotTask, *, unlabelled: bool) -> TaskData:
    """The task's labelled pool and test set (from ``config``) and, if ``unlabelled``, its
    unlabelled examples in a seeded order (``config.seed``)."""
    several = len(config.tasks) > 1
    items = load_task_items(task, _source(config.labelled, task, TRAIN_FILE, several, "labelled"))
    if config.test_from_labelled is not None:
        labelled, test = split_off_test(items, config.test_from_labelled, seed=config.seed)
    else:
        assert config.test is not None
        labelled = items
        test = load_task_items(task, _source(config.test, task, TEST_FILE, several, "test"))
    pool: list[Item] = []
    source = "unused"
    if unlabelled:
        pool, source = _unlabelled(config, task, test, several)
        order = np.random.default_rng(config.seed).permutation(len(pool))
        pool = [pool[int(i)] for i in order]
    return TaskData(task, tuple(labelled), tuple(test), tuple(pool), source)


def unlabelled_info(data: Mapping[str, TaskData]) -> dict[str, Any]:
    """What the design records about each task's unlabelled examples."""
    return {
        name: {"source": d.unlabelled_source, "available": len(d.unlabelled)}
        for name, d in data.items()
    }
