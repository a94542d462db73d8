"""Load MMLU: the original CSV layout on disk, or the ``cais/mmlu`` data set on the hub."""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._errors import DataError, show_path
from .._extras import require
from .._hub import locate
from ._item import Item
from ._jsonl import read_lines
from ._mmlu_subjects import SUBJECTS, subject_info
from ._text import lone_surrogate, shorten

__all__ = ["LETTERS", "MMLUData", "Split", "load_mmlu", "load_mmlu_items"]

Split = Literal["dev", "val", "test"]
LETTERS = ("A", "B", "C", "D")
_HUB_SPLIT: dict[str, str] = {"dev": "dev", "val": "validation", "test": "test"}
_COLUMNS = ("question", "A", "B", "C", "D", "answer")


@dataclass(frozen=True)
class MMLUData:
    """MMLU items of the chosen subjects, by split, in file order.

    Attributes
    ----------
    source : str
        The directory or hub data set the items came from.
    subjects : tuple of str
        Subjects loaded, sorted.
    dev : tuple of Item
        The few-shot pool (5 per subject in the released data).
    evaluated : tuple of Item
        The items to evaluate (``split``), at most ``limit_per_subject`` per subject.
    split : str
        ``"test"`` or ``"val"``.
    available : mapping of str to int
        Items per subject in the evaluated split before ``limit_per_subject``.
    """

    source: str
    subjects: tuple[str, ...]
    dev: tuple[Item, ...]
    evaluated: tuple[Item, ...]
    split: Split = "test"
    available: Mapping[str, int] = field(default_factory=dict)

    @property
    def uncategorised(self) -> tuple[str, ...]:
        """Subjects that are not among MMLU's 57 (their category is ``"uncategorised"``)."""
        return tuple(s for s in self.subjects if subject_info(s) is None)


def _item(
    subject: str, split: str, row: int, question: str, options: Sequence[str], gold: int
) -> Item:
    info = subject_info(subject)
    return Item(
        id=f"{subject}/{split}/{row}",
        question=question,
        options=tuple(options),
        gold_options=(gold,),
        metadata={
            "subject": subject,
            "category": info.category if info else "uncategorised",
            "subcategory": info.subcategory if info else "uncategorised",
            "split": split,
        },
    )


# -- the original CSV layout --------------------------------------------------------------


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(first line of the row, cells)`` for each non-blank row; quoted newlines are kept.
    Read line by line (:func:`~steadyeval.items._jsonl.read_lines`: a regular file, one
    line at most 16 MiB, UTF-8 errors located)."""
    reader = csv.reader(text for _, text in read_lines(path, "an MMLU CSV file"))
    start = 1
    for cells in reader:
        line = start
        start = reader.line_num + 1
        if cells:
            yield line, cells


def _read_csv(path: Path, subject: str, split: str) -> list[Item]:
    items: list[Item] = []
    try:
        for line, cells in _csv_rows(path):
            if len(cells) != 6:
                raise DataError(
                    f"a row has {len(cells)} cells",
                    file=str(path),
                    line=line,
                    field=_COLUMNS[min(len(cells), 5)],
                    expected="6 cells without a header: question, A, B, C, D, answer letter",
                )
            answer = cells[5]
            if answer not in LETTERS:
                raise DataError(
                    f"got {answer!r:.40}",
                    file=str(path),
                    line=line,
                    field="answer",
                    expected="one of the letters A, B, C, D",
                )
            if not cells[0].strip():
                raise DataError(
                    "empty question",
                    file=str(path),
                    line=line,
                    field="question",
                    expected="the question text",
                )
            items.append(
                _item(subject, split, len(items), cells[0], cells[1:5], LETTERS.index(answer))
            )
    except csv.Error as exc:
        raise DataError(f"malformed CSV: {exc}", file=str(path), expected="RFC 4180 CSV") from None
    if not items:
        raise DataError("no rows", file=str(path), expected="at least one question")
    return items


def _dir_subjects(root: Path, split: str) -> list[str]:
    folder = root / split
    if not folder.is_dir():
        raise DataError(
            f"no {split}/ folder",
            file=str(root),
            expected=f"the original MMLU layout: {split}/<subject>_{split}.csv files",
        )
    suffix = f"_{split}.csv"
    names = sorted(p.name[: -len(suffix)] for p in folder.glob(f"*{suffix}") if p.is_file())
    if not names:
        raise DataError(
            f"no *{suffix} files", file=str(folder), expected=f"files named <subject>{suffix}"
        )
    return names


def _load_dir(
    root: Path, subjects: Sequence[str] | None, split: Split
) -> tuple[list[str], dict[str, list[Item]], dict[str, list[Item]]]:
    present = _dir_subjects(root, split)
    chosen = _choose(present, subjects, where=str(root / split))
    dev: dict[str, list[Item]] = {}
    evaluated: dict[str, list[Item]] = {}
    for subject in chosen:
        dev_file = root / "dev" / f"{subject}_dev.csv"
        if not dev_file.is_file():
            raise DataError(
                "missing few-shot file",
                file=str(dev_file),
                expected=f"dev/{subject}_dev.csv next to {split}/{subject}_{split}.csv",
            )
        dev[subject] = _read_csv(dev_file, subject, "dev")
        evaluated[subject] = _read_csv(root / split / f"{subject}_{split}.csv", subject, split)
    return chosen, dev, evaluated


# -- the hub -------------------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    """The first line of a library's error, cut (``datasets`` lists every configuration of
    the data set on the next lines: 57 subjects for MMLU)."""
    return shorten((str(exc).strip().splitlines() or [type(exc).__name__])[0], 200)


def _load_hub_subject(name: str, subject: str) -> Any:
    require(f"{name}: Hugging Face data sets", "datasets")
    import datasets

    what = (
        f"subject {shorten(repr(subject), 60)}"
        if subject in SUBJECTS
        else f"unknown subject {_unknown_subject(subject, sorted(SUBJECTS))}"
    )
    try:
        return datasets.load_dataset(name, subject)
    except (ConnectionError, OSError) as exc:
        raise DataError(
            f"could not load {what}: {_reason(exc)}",
            file=name,
            expected="a reachable hub data set, or one already in the local datasets cache "
            "when HF_HUB_OFFLINE=1 (load it once online), or a directory in the original "
            "MMLU layout (dev/, test/ with <subject>_<split>.csv)",
        ) from None
    except ValueError as exc:  # unknown config name (datasets lists every one), among others
        raise DataError(
            f"could not load {what}: {_reason(exc)}",
            file=name,
            expected="a configuration per subject, as cais/mmlu has",
        ) from None


def _hub_items(name: str, ds: Any, subject: str, split: str) -> list[Item]:
    hub_split = _HUB_SPLIT[split]
    if hub_split not in ds:
        raise DataError(
            f"subject {subject!r} has no {hub_split!r} split (it has {', '.join(ds)})",
            file=name,
            expected="dev and test splits (validation for --split val)",
        )
    label = f"{name}[{subject}/{hub_split}]"
    items: list[Item] = []
    for row_no, row in enumerate(ds[hub_split], start=1):
        for col in ("question", "choices", "answer"):
            if col not in row:
                raise DataError(
                    "missing column",
                    file=label,
                    line=row_no,
                    field=col,
                    expected="columns question, subject, choices, answer",
                )
        choices, answer, question = row["choices"], row["answer"], row["question"]
        if not isinstance(question, str) or not question.strip():
            raise DataError(
                f"got {question!r:.40}",
                file=label,
                line=row_no,
                field="question",
                expected="the question text",
            )
        if (
            not isinstance(choices, list)
            or len(choices) != 4
            or not all(isinstance(c, str) for c in choices)
        ):
            raise DataError(
                f"got {choices!r:.60}",
                file=label,
                line=row_no,
                field="choices",
                expected="a list of 4 strings",
            )
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < 4:
            raise DataError(
                f"got {answer!r:.40}",
                file=label,
                line=row_no,
                field="answer",
                expected="an option index 0-3",
            )
        items.append(_item(subject, split, len(items), question, choices, answer))
    return items


def _load_hub(
    name: str, subjects: Sequence[str] | None, split: Split
) -> tuple[list[str], dict[str, list[Item]], dict[str, list[Item]]]:
    # Listed subjects are asked of the hub as they are (it names the ones it lacks).
    chosen = _choose(sorted(SUBJECTS) if subjects is None else list(subjects), subjects, where=name)
    dev: dict[str, list[Item]] = {}
    evaluated: dict[str, list[Item]] = {}
    for subject in chosen:
        ds = _load_hub_subject(name, subject)
        dev[subject] = _hub_items(name, ds, subject, "dev")
        evaluated[subject] = _hub_items(name, ds, subject, split)
    return chosen, dev, evaluated


# -- entry point -------------------------------------------------------------------------


def _unknown_subject(name: str, known: Sequence[str]) -> str:
    """``'anatomyy'`` with the closest known subject, if one is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{shorten(repr(name), 60)}{hint}"


def _listed(names: Sequence[str], most: int = 8) -> str:
    """The first ``most`` names, and how many there are in all."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown}, ... ({len(names)} in all)"


def _choose(present: Sequence[str], wanted: Sequence[str] | None, *, where: str) -> list[str]:
    if wanted is None:
        return list(present)
    if not wanted:
        raise DataError("no subjects chosen", file=where, expected="at least one subject")
    missing = [s for s in wanted if s not in present]
    if missing:
        raise DataError(
            f"unknown subject {_unknown_subject(missing[0], present)}"
            + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""),
            file=where,
            field="subjects",
            expected=f"subjects among: {_listed(present)}",
        )
    return sorted(set(wanted))


def _check_subjects(subjects: Any) -> Sequence[str] | None:
    """``subjects`` as a sequence of names (a single string is not a list of subjects)."""
    if subjects is None:
        return None
    if isinstance(subjects, str) or not isinstance(subjects, Sequence):
        raise DataError(
            f"got {shorten(repr(subjects), 60)}",
            field="subjects",
            expected="a list of subject names, e.g. ['anatomy', 'virology']",
        )
    for s in subjects:
        if not isinstance(s, str) or lone_surrogate(s) is not None or not s.strip():
            raise DataError(
                f"got {shorten(repr(s), 60)}", field="subjects", expected="subject names (text)"
            )
    return subjects


def load_mmlu(
    source: str | Path,
    *,
    subjects: Sequence[str] | None = None,
    split: Split = "test",
    limit_per_subject: int | None = None,
) -> MMLUData:
    """Load MMLU's few-shot (dev) items and the items to evaluate.

    Parameters
    ----------
    source : str or Path
        A directory in the original layout (``dev/``, ``test/``, optional ``val/``, files
        ``<subject>_<split>.csv`` without a header: question, A, B, C, D, answer letter), or a
        hub data set with one configuration per subject and columns ``question``,
        ``choices`` and ``answer`` (an index), such as ``cais/mmlu``.
    subjects : sequence of str, optional
        Subjects to load (file-name form, e.g. ``"abstract_algebra"``); default: every
        subject in the directory, or MMLU's 57 for a hub data set.
    split : {"test", "val"}
        The split to evaluate (the hub's ``validation`` is ``"val"``).
    limit_per_subject : int, optional
        Keep only the first N items of each subject (in file order).

    Returns
    -------
    MMLUData

    Raises
    ------
    DataError
        For a missing folder or file, a malformed row (naming the file, line and field), an
        unknown subject, or a hub data set that cannot be loaded (e.g. with
        ``HF_HUB_OFFLINE=1`` and nothing cached).

    Notes
    -----
    Item ids are ``"<subject>/<split>/<row>"`` with ``row`` counted from 0 in file order (as
    the reference code's ``DataFrame`` index). Metadata: ``subject``, ``category``,
    ``subcategory``, ``split``; a subject outside MMLU's 57 gets ``"uncategorised"``.
    """
    if split not in ("test", "val"):
        raise DataError(f"unknown split {split!r}", field="split", expected="test or val")
    if limit_per_subject is not None and (
        isinstance(limit_per_subject, bool)
        or not isinstance(limit_per_subject, int)
        or limit_per_subject < 1
    ):
        raise DataError(
            f"got {limit_per_subject!r}", field="limit_per_subject", expected="a positive integer"
        )
    subjects = _check_subjects(subjects)
    text = str(source)
    where = locate(text)  # a folder, or a hub id (never decided by a suffix)
    if where.exists and where.path.is_dir():
        chosen, dev, evaluated = _load_dir(where.path, subjects, split)
    elif where.kind != "hub":
        raise DataError(
            "not a directory" if where.kind == "path" else f"not a hub id: {where.why}",
            file=show_path(text),
            expected="a folder with dev/ and test/ in the original MMLU layout, or a hub "
            "data set name such as cais/mmlu",
        )
    else:
        chosen, dev, evaluated = _load_hub(text, subjects, split)
    available = {s: len(evaluated[s]) for s in chosen}
    kept = [it for s in chosen for it in evaluated[s][:limit_per_subject]]
    return MMLUData(
        source=text,
        subjects=tuple(chosen),
        dev=tuple(it for s in chosen for it in dev[s]),
        evaluated=tuple(kept),
        split=split,
        available=available,
    )


def load_mmlu_items(
    source: str | Path,
    *,
    subjects: Sequence[str] | None = None,
    split: Split = "test",
    limit_per_subject: int | None = None,
) -> list[Item]:
    """MMLU as multiple-choice items (see :func:`load_mmlu`): the ``test`` or ``val`` items to
    evaluate, or with ``split="dev"`` the few-shot pool (for a run config's shot pool).
    Metadata: ``subject``, ``category``, ``subcategory``, ``split``."""
    if split == "dev":
        return list(load_mmlu(source, subjects=subjects).dev)
    data = load_mmlu(source, subjects=subjects, split=split, limit_per_subject=limit_per_subject)
    return list(data.evaluated)
