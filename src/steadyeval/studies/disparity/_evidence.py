"""The overlap corpus read from a file or a folder (``--overlap-file``): LAMA's T-REx evidence
sentences, the corpus of the seed's sample-disparity experiment, or plain text.

**T-REx** (LAMA's download, ``data/TREx/P*.jsonl``): one JSON object a line, a fact
(``sub_label``, ``obj_label``, ``predicate_id``, ...) with its Wikipedia evidence,
``evidences: [{"sub_surface", "obj_surface", "masked_sentence", ...}]``. Each evidence gives
one sentence: ``masked_sentence`` with every ``[MASK]`` replaced by ``obj_surface``, the
evidence's own surface form of the object; a sentence repeated among one fact's evidences
is kept once, a sentence shared by two facts twice. That is how the seed's authors built
WIKI-LAMA (c-box/causalEval ``mix_data.py`` lines 11-35, ``load_lama_ctx``). A folder is
read as they read it (``utils/read_data.py`` lines 21-37): ``<relation>.jsonl`` for each
probed relation, a relation without a file skipped (and recorded).

**Text**: one sentence per non-blank line (:func:`read_corpus`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ..._errors import DataError
from ..._files import human_bytes, input_file, limit_from_env
from ...items import read_jsonl, read_lines, shorten
from ._mixture import MAX_CORPUS_BYTES, MAX_SENTENCE_CHARS, read_corpus

__all__ = ["MASK", "OverlapCorpus", "OverlapFormat", "read_overlap"]

#: How ``--overlap-file`` is read: ``auto`` (a folder or a ``.jsonl``/``.json`` file, or a
#: file whose first non-blank line is a JSON object: T-REx; else text), ``trex`` or ``text``.
OverlapFormat = Literal["auto", "trex", "text"]
#: The object's place in a T-REx evidence sentence.
MASK = "[MASK]"

_TREX = (
    "LAMA T-REx JSON lines: one fact a line with evidences: "
    '[{"masked_sentence": "... [MASK] ...", "obj_surface": "..."}]'
)
_FOLDER = "LAMA's TREx folder: one <relation>.jsonl per relation (e.g. P19.jsonl)"


@dataclass(frozen=True)
class OverlapCorpus:
    """Overlap sentences read from a file or folder, and where they came from.

    Attributes
    ----------
    sentences : tuple of str
        The pool, in file, line and evidence order.
    format : {"trex", "text"}
        How the source was read.
    path : str
        The file or folder as given.
    files : tuple of str
        The files read (names inside a folder).
    rows : int
        Facts (T-REx rows) or sentences (text) read.
    evidences : int
        Evidences read (T-REx; 0 for text).
    per_relation : dict
        Sentences per relation (T-REx: the row's ``predicate_id``, or the file's relation).
    missing_relations : tuple of str
        Relations asked for that have no file in the folder.
    facts : frozenset
        ``(relation, sub_label, obj_label)`` of the T-REx rows that name all three.
    """

    sentences: tuple[str, ...]
    format: Literal["trex", "text"]
    path: str
    files: tuple[str, ...]
    rows: int
    evidences: int = 0
    per_relation: Mapping[str, int] = field(default_factory=dict)
    missing_relations: tuple[str, ...] = ()
    facts: frozenset[tuple[str, str, str]] = frozenset()

    def info(self) -> dict[str, Any]:
        """What ``summary.json`` records of the source (``design.corpus.overlap_file``)."""
        return {
            "path": self.path,
            "format": self.format,
            "files": list(self.files),
            "rows": self.rows,
            "evidences": self.evidences,
            "sentences": len(self.sentences),
            "missing_relations": list(self.missing_relations),
        }


def read_overlap(
    path: str | os.PathLike[str],
    *,
    relations: Iterable[str] | None = None,
    format: OverlapFormat = "auto",
) -> OverlapCorpus:
    """The overlap corpus in ``path``: a T-REx folder or file, or a text file (see module).

    Parameters
    ----------
    path : path
        A folder of ``<relation>.jsonl`` files (T-REx), a T-REx ``.jsonl`` file or a text
        file (one sentence per line).
    relations : iterable of str, optional
        A folder: read only these relations' files, in this order (the probed relations);
        None: every ``*.jsonl`` file, by name. A single file is read whole.
    format : {"auto", "trex", "text"}
        ``auto`` reads a folder, a ``.jsonl``/``.json`` file or a file whose first non-blank
        line starts with ``{`` as T-REx, anything else as text.

    Raises
    ------
    DataError
        A malformed row (naming the file, line and field: ``evidences[2].obj_surface``), a
        folder without a file of an asked relation, sources over
        :data:`~steadyeval.studies.disparity.MAX_CORPUS_BYTES` in all
        (``STEADYEVAL_MAX_CORPUS_MB`` raises it), or no sentence at all.
    """
    if format not in ("auto", "trex", "text"):
        raise DataError(
            f"unknown overlap format {shorten(repr(format), 40)}",
            file=os.fspath(path),
            expected="auto, trex or text",
        )
    p = Path(path)
    if p.is_dir():
        if format == "text":
            raise DataError(
                "is a folder; a folder is read as LAMA T-REx files",
                file=str(p),
                expected="a text file for overlap_format text",
            )
        return _read_folder(p, None if relations is None else list(relations))
    if format == "text" or (format == "auto" and not _looks_like_trex(p)):
        sentences = read_corpus(p)
        return OverlapCorpus(tuple(sentences), "text", str(path), (p.name,), len(sentences))
    _check_size([p])
    reader = _TrexReader()
    reader.read(p, None)
    return reader.corpus(str(path), (p.name,), ())


def _looks_like_trex(p: Path) -> bool:
    if p.suffix.lower() in (".jsonl", ".json"):
        return True
    lines = cast(
        "Generator[tuple[int, str], None, None]", read_lines(p, "a text file or T-REx JSON lines")
    )
    with contextlib.closing(lines):
        for _, line in lines:
            if line.strip():
                return line.lstrip().startswith("{")
    return False


def _check_size(files: Sequence[Path]) -> None:
    limit = limit_from_env("STEADYEVAL_MAX_CORPUS_MB", MAX_CORPUS_BYTES)
    total = 0
    for f in files:
        total += os.stat(input_file(f, _TREX)).st_size
        if total > limit:
            raise DataError(
                f"the overlap corpus is over the limit of {human_bytes(limit)} "
                "(STEADYEVAL_MAX_CORPUS_MB raises it)",
                file=str(f),
            )


def _read_folder(folder: Path, relations: list[str] | None) -> OverlapCorpus:
    if relations is None:
        wanted = [(f.stem, f) for f in sorted(folder.glob("*.jsonl"))]
        missing: list[str] = []
    else:
        wanted = [(r, folder / f"{r}.jsonl") for r in dict.fromkeys(relations)]
        missing = [r for r, f in wanted if not f.exists()]
        wanted = [(r, f) for r, f in wanted if f.exists()]
    if not wanted:
        asked = "" if relations is None else f" for the probed relations ({_few(missing)})"
        raise DataError(f"no .jsonl file{asked}", file=str(folder), expected=_FOLDER)
    _check_size([f for _, f in wanted])
    reader = _TrexReader()
    for relation, f in wanted:
        reader.read(f, relation)
    return reader.corpus(str(folder), tuple(f.name for _, f in wanted), tuple(missing))


def _few(names: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(shorten(x, 40) for x in names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")


class _TrexReader:
    """Reads T-REx files one after the other into one pool (the authors' rule, see module)."""

    def __init__(self) -> None:
        self.sentences: list[str] = []
        self.rows = 0
        self.evidences = 0
        self.per_relation: dict[str, int] = {}
        self.facts: set[tuple[str, str, str]] = set()

    def read(self, path: Path, relation: str | None) -> None:
        """Every row of ``path``; ``relation``: the folder file's relation, which a row's
        ``predicate_id`` must match."""
        for line, row in read_jsonl(path):
            where: dict[str, Any] = {"file": str(path), "line": line}
            if not isinstance(row, dict):
                raise DataError(
                    f"a JSON {type(row).__name__}, not an object", **where, expected=_TREX
                )
            rel = _optional_str(row, "predicate_id", where)
            if relation is not None and rel is not None and rel != relation:
                raise DataError(
                    f"predicate_id {shorten(rel, 40)!r} in the file of relation "
                    f"{shorten(relation, 40)!r}",
                    **where,
                    field="predicate_id",
                    expected=f"only {shorten(relation, 40)} facts in {path.name}",
                )
            rel = rel if rel is not None else relation
            sub = _optional_str(row, "sub_label", where)
            obj = _optional_str(row, "obj_label", where)
            if rel is not None and sub is not None and obj is not None:
                self.facts.add((rel, sub, obj))
            found = _row_sentences(row, where)
            self.rows += 1
            self.evidences += len(row["evidences"])
            self.sentences += found
            if rel is not None:
                self.per_relation[rel] = self.per_relation.get(rel, 0) + len(found)

    def corpus(self, path: str, files: tuple[str, ...], missing: tuple[str, ...]) -> OverlapCorpus:
        if not self.sentences:
            raise DataError(f"no evidence sentence in {self.rows} facts", file=path, expected=_TREX)
        return OverlapCorpus(
            tuple(self.sentences),
            "trex",
            path,
            files,
            self.rows,
            self.evidences,
            dict(self.per_relation),
            missing,
            frozenset(self.facts),
        )


def _optional_str(
    row: Mapping[str, Any], key: str, where: Mapping[str, Any], prefix: str = ""
) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise DataError(
            f"{type(value).__name__} {shorten(repr(value), 40)}",
            **where,
            field=prefix + key,
            expected="a string",
        )
    return value


def _row_sentences(row: Mapping[str, Any], where: Mapping[str, Any]) -> list[str]:
    """One fact's evidence sentences: ``[MASK]`` filled with the evidence's ``obj_surface``,
    repeats within the fact dropped (``mix_data.py`` lines 24-34)."""
    evidences = row.get("evidences")
    if not isinstance(evidences, list):
        got = "missing" if evidences is None else f"a {type(evidences).__name__}"
        raise DataError(
            got,
            **where,
            field="evidences",
            expected='a list of {"masked_sentence", "obj_surface"} objects',
        )
    out: list[str] = []
    for i, ev in enumerate(evidences):
        name = f"evidences[{i}]"
        if not isinstance(ev, dict):
            raise DataError(
                f"a JSON {type(ev).__name__}", **where, field=name, expected="an object"
            )
        masked, obj = ev.get("masked_sentence"), ev.get("obj_surface")
        if not isinstance(masked, str) or MASK not in masked:
            raise DataError(
                "missing" if masked is None else shorten(repr(masked), 60),
                **where,
                field=f"{name}.masked_sentence",
                expected=f"a sentence with {MASK} where the object stands",
            )
        if not isinstance(obj, str) or not obj.strip():
            raise DataError(
                "missing" if obj is None else shorten(repr(obj), 60),
                **where,
                field=f"{name}.obj_surface",
                expected="the object as the sentence writes it (a non-empty string)",
            )
        _optional_str(ev, "sub_surface", where, f"{name}.")
        sentence = masked.replace(MASK, obj)
        if len(sentence) > MAX_SENTENCE_CHARS:
            raise DataError(
                f"a sentence of {len(sentence):,} characters, over the limit of "
                f"{MAX_SENTENCE_CHARS:,}",
                **where,
                field=f"{name}.masked_sentence",
            )
        if sentence not in out:
            out.append(sentence)
    return out
