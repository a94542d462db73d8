"""SQuAD 2.0 adapter: the official JSON format and the hub data set, as frozen records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError, show_path
from .._extras import require
from .._files import limit_from_env, loads_json, read_text_file
from .._hub import locate
from ._item import Item
from ._text import shorten, value_problem

__all__ = [
    "SquadArticle",
    "SquadData",
    "SquadParagraph",
    "SquadQuestion",
    "load_squad",
    "load_squad2_items",
    "squad_from_rows",
]


@dataclass(frozen=True)
class SquadQuestion:
    """One SQuAD question.

    ``answers`` are the gold answer texts in file order (annotators may repeat each other);
    ``plausible_answers`` are SQuAD 2.0's decoy spans for unanswerable questions (empty when
    the source does not carry them, as the hub's ``squad_v2`` does not).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    plausible_answers: tuple[str, ...]
    is_impossible: bool


@dataclass(frozen=True)
class SquadParagraph:
    """A paragraph and its questions; ``id`` is ``"<title>#<index within the article>"``."""

    id: str
    title: str
    context: str
    questions: tuple[SquadQuestion, ...]


@dataclass(frozen=True)
class SquadArticle:
    title: str
    paragraphs: tuple[SquadParagraph, ...]


@dataclass(frozen=True)
class SquadData:
    """A SQuAD source as articles → paragraphs → questions, in source order."""

    source: str
    articles: tuple[SquadArticle, ...]

    @property
    def questions(self) -> list[SquadQuestion]:
        return [q for a in self.articles for p in a.paragraphs for q in p.questions]

    @property
    def has_plausible_answers(self) -> bool:
        """Whether any unanswerable question carries a plausible answer (a decoy)."""
        return any(q.plausible_answers for q in self.questions if q.is_impossible)


def load_squad(source: str | Path, *, split: str | None = None) -> SquadData:
    """Load SQuAD 2.0 from the official JSON file or a Hugging Face hub data set.

    Parameters
    ----------
    source : str or Path
        A ``.json`` file in the official SQuAD format (``{"version", "data": [{"title",
        "paragraphs": [{"context", "qas": [...]}]}]}``), or a hub name such as
        ``"squad_v2"`` (loaded with ``datasets.load_dataset(source, split=split)``).
    split : str, optional
        The hub split (default ``"validation"``). A file has no splits: a split given with a
        file is a :class:`ConfigError`.

    Raises
    ------
    DataError
        The file is missing or malformed (naming the file, the line of the question where
        one is known, and the JSON path of the bad field), or the hub cannot be reached.
    ConfigError
        A ``split`` given with a file.

    Notes
    -----
    The hub's ``squad_v2`` has no ``plausible_answers`` column, so its unanswerable
    questions have no decoy; the official ``dev-v2.0.json`` has them.
    """
    text = str(source)
    where = locate(text)  # a file, or a hub id (never decided by a suffix, but .json's)
    if where.exists and where.path.is_file():
        if split is not None:  # never ignored: the user meant some part of the data
            raise ConfigError(
                f"split {shorten(repr(split), 40)} applies to a hub data set; "
                f"{show_path(text)} is a local file, which has no splits: leave the split out"
            )
        return _load_json(where.path)
    if where.kind != "hub" or where.path.suffix == ".json":
        if where.exists:
            problem = "not a file"
        elif where.kind == "neither" and where.path.suffix != ".json":
            problem = f"no such file, and not a hub id: {where.why}"
        else:
            problem = "file not found"
        raise DataError(
            problem, file=show_path(text), expected="a SQuAD-format .json file or a hub name"
        )
    return _load_hub(text, "validation" if split is None else split)


# -- the official JSON format ------------------------------------------------------------


class _Where:
    """Locates errors: the file, and the line where a question id first appears."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = str(path), text

    def error(self, field: str, message: str, expected: str, qid: str | None = None) -> DataError:
        line = None
        if qid:
            pos = self.text.find(json.dumps(qid))
            line = self.text.count("\n", 0, pos) + 1 if pos >= 0 else None
        return DataError(message, file=self.path, line=line, field=field, expected=expected)


#: The largest SQuAD JSON file read (the official train-v2.0.json is 42 MB);
#: ``STEADYEVAL_MAX_FILE_MB`` raises it.
MAX_SQUAD_BYTES = 128 * 1024 * 1024
#: The most JSON values a SQuAD file may hold (train-v2.0.json: about 4 million, counted as
#: below); ``STEADYEVAL_MAX_JSON_VALUES`` raises it.
MAX_SQUAD_VALUES = 10_000_000


def _load_json(path: Path) -> SquadData:
    """The official JSON file, read as untrusted input: a regular file within the size limit
    (``STEADYEVAL_MAX_FILE_MB``), at most :data:`MAX_SQUAD_VALUES` values (bounded before it
    is parsed: each takes tens of bytes), UTF-8, JSON without NaN/Infinity nested at most 100
    deep (:mod:`steadyeval._files`), and no lone surrogate in any text (named by its JSON
    path)."""
    text = read_text_file(
        path,
        "a SQuAD JSON file",
        max_bytes=limit_from_env("STEADYEVAL_MAX_FILE_MB", MAX_SQUAD_BYTES),
    )
    bound = text.count(",") + text.count("[") + text.count("{") + 1  # values <= this
    most = limit_from_env("STEADYEVAL_MAX_JSON_VALUES", MAX_SQUAD_VALUES, unit=1)
    if bound > most:
        raise DataError(
            f"may hold up to {bound:,} JSON values, over the limit of {most:,} "
            "(STEADYEVAL_MAX_JSON_VALUES raises it)",
            file=str(path),
            expected="a SQuAD file (the official train set holds about 4 million)",
        )
    raw = loads_json(text, str(path))
    problem = value_problem(raw)
    if problem is not None:
        raise DataError(
            problem.message, file=str(path), field=problem.field, expected=problem.expected
        )
    where = _Where(path, text)
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise where.error("data", "no list of articles", 'a mapping with a "data" list')
    articles = [_article(a, f"data[{i}]", where) for i, a in enumerate(raw["data"])]
    _check_unique_ids(articles, where)
    return SquadData(source=str(path), articles=tuple(articles))


def _str(value: Any, field: str, where: _Where, qid: str | None = None) -> str:
    if not isinstance(value, str):
        raise where.error(field, f"got {type(value).__name__}", "a string", qid)
    return value


def _list(value: Any, field: str, where: _Where, qid: str | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise where.error(field, f"got {type(value).__name__}", "a list", qid)
    return value


def _article(raw: Any, at: str, where: _Where) -> SquadArticle:
    if not isinstance(raw, dict):
        raise where.error(at, f"got {type(raw).__name__}", "an article mapping")
    title = _str(raw.get("title"), f"{at}.title", where)
    paragraphs = []
    for j, p in enumerate(_list(raw.get("paragraphs"), f"{at}.paragraphs", where)):
        pat = f"{at}.paragraphs[{j}]"
        if not isinstance(p, dict):
            raise where.error(pat, f"got {type(p).__name__}", "a paragraph mapping")
        context = _str(p.get("context"), f"{pat}.context", where)
        qas = [
            _question(q, f"{pat}.qas[{k}]", where)
            for k, q in enumerate(_list(p.get("qas"), f"{pat}.qas", where))
        ]
        paragraphs.append(SquadParagraph(f"{title}#{j}", title, context, tuple(qas)))
    return SquadArticle(title, tuple(paragraphs))


def _texts(raw: Any, field: str, where: _Where, qid: str) -> tuple[str, ...]:
    out = []
    for i, a in enumerate(_list(raw, field, where, qid)):
        if not isinstance(a, dict):
            raise where.error(f"{field}[{i}]", f"got {type(a).__name__}", '{"text": ...}', qid)
        out.append(_str(a.get("text"), f"{field}[{i}].text", where, qid))
    return tuple(out)


def _question(raw: Any, at: str, where: _Where) -> SquadQuestion:
    if not isinstance(raw, dict):
        raise where.error(at, f"got {type(raw).__name__}", "a question mapping")
    qid = _str(raw.get("id"), f"{at}.id", where)
    question = _str(raw.get("question"), f"{at}.question", where, qid)
    answers = _texts(raw.get("answers", []), f"{at}.answers", where, qid)
    plausible = _texts(raw.get("plausible_answers", []), f"{at}.plausible_answers", where, qid)
    impossible = raw.get("is_impossible", not answers)
    if not isinstance(impossible, bool):
        raise where.error(f"{at}.is_impossible", f"got {impossible!r}", "true or false", qid)
    if impossible and answers:
        raise where.error(
            f"{at}.answers", "an unanswerable question has answers", "an empty list", qid
        )
    if not impossible and not answers:
        raise where.error(f"{at}.answers", "an answerable question has none", "answers", qid)
    return SquadQuestion(qid, question, answers, plausible, impossible)


def _check_unique_ids(articles: Iterable[SquadArticle], where: _Where) -> None:
    seen: set[str] = set()
    for a in articles:
        for p in a.paragraphs:
            for q in p.questions:
                if q.id in seen:
                    raise where.error("id", f"question id {q.id!r} repeats", "unique ids", q.id)
                seen.add(q.id)


# -- the hub data set --------------------------------------------------------------------


def _load_hub(name: str, split: str) -> SquadData:
    require(f"{name}: Hugging Face data sets", "datasets")
    import datasets

    try:
        rows = datasets.load_dataset(name, split=split)
    except (ConnectionError, OSError, ValueError) as exc:
        raise DataError(
            f"could not load hub data set {name!r} (split {split!r}): {exc}",
            file=name,
            expected="a reachable hub data set (or one in the local cache, with "
            "HF_DATASETS_OFFLINE=1), or a local SQuAD .json file such as dev-v2.0.json",
        ) from None
    return squad_from_rows(rows, source=f"{name}[{split}]")


def _row_error(message: str, source: str, n: int, field: str, expected: str) -> DataError:
    return DataError(message, file=source, line=n, field=field, expected=expected)


def _row_texts(value: Any, source: str, n: int, field: str) -> tuple[str, ...]:
    """``{"text": [...]}`` (the hub's column layout) or ``[{"text": ...}, ...]`` (or a
    list of strings); missing or None is no answer."""
    expected = '{"text": [strings]} or a list of {"text": string}'
    if value is None:
        return ()
    if isinstance(value, Mapping):
        value = value.get("text", [])
        if not isinstance(value, list):
            raise _row_error(f"got {type(value).__name__}", source, n, f"{field}.text", "a list")
    if not isinstance(value, list):
        raise _row_error(f"got {type(value).__name__}", source, n, field, expected)
    out = []
    for i, a in enumerate(value):
        text = a.get("text") if isinstance(a, Mapping) else a
        if not isinstance(text, str):
            raise _row_error(f"got {type(text).__name__}", source, n, f"{field}[{i}]", expected)
        out.append(text)
    return tuple(out)


def _row_question(row: Any, n: int, source: str) -> tuple[str, str, SquadQuestion]:
    """One hub row's (title, context, question), every field of the type SQuAD has."""
    if not isinstance(row, Mapping):
        raise _row_error(f"got {type(row).__name__}", source, n, "(row)", "a mapping of columns")
    cols = "SQuAD columns id, title, context, question, answers"
    missing = [k for k in ("id", "title", "context", "question") if k not in row]
    if missing:
        raise _row_error(f"missing column {missing[0]!r}", source, n, missing[0], cols)
    qid = row["id"]
    if isinstance(qid, bool) or not isinstance(qid, str | int):
        raise _row_error(f"got {type(qid).__name__}", source, n, "id", "a string")
    for key in ("title", "context", "question"):
        if not isinstance(row[key], str):
            raise _row_error(f"got {type(row[key]).__name__}", source, n, key, "a string")
    problem = value_problem({k: row[k] for k in ("id", "title", "context", "question")})
    if problem is not None:
        raise _row_error(problem.message, source, n, problem.field, problem.expected)
    answers = _row_texts(row.get("answers"), source, n, "answers")
    plausible = _row_texts(row.get("plausible_answers"), source, n, "plausible_answers")
    q = SquadQuestion(str(qid), row["question"], answers, plausible, not answers)
    return row["title"], row["context"], q


def squad_from_rows(rows: Iterable[Mapping[str, Any]], *, source: str) -> SquadData:
    """Group flat hub rows (``id, title, context, question, answers``) into articles.

    Articles keep the order in which their titles first appear, paragraphs the order of
    their contexts within the article. A row that is not a mapping, lacks a column or holds
    a value of another type is a :class:`DataError` naming the row and the field.
    """
    articles: dict[str, dict[str, list[SquadQuestion]]] = {}
    seen: set[str] = set()
    for n, row in enumerate(rows, start=1):
        title, context, q = _row_question(row, n, source)
        if q.id in seen:
            raise DataError(
                f"question id {shorten(repr(q.id))} repeats", file=source, line=n, field="id"
            )
        seen.add(q.id)
        articles.setdefault(title, {}).setdefault(context, []).append(q)
    return SquadData(
        source=source,
        articles=tuple(
            SquadArticle(
                title,
                tuple(
                    SquadParagraph(f"{title}#{j}", title, context, tuple(qs))
                    for j, (context, qs) in enumerate(paras.items())
                ),
            )
            for title, paras in articles.items()
        ),
    )


def load_squad2_items(source: str | Path, *, split: str | None = None) -> list[Item]:
    """SQuAD 2.0 as free-form items: one per question, with its paragraph as the context,
    its gold answers, and ``answerable`` false for an unanswerable question (whose right
    answer is a refusal). Metadata: ``title``, ``paragraph_id`` and ``plausible_answers``.
    ``source`` and ``split`` are as for :func:`load_squad`."""
    data = load_squad(source, split=split)
    return [
        Item(
            id=q.id,
            question=q.question,
            context=p.context,
            answers=q.answers,
            answerable=not q.is_impossible,
            metadata={
                "title": p.title,
                "paragraph_id": p.id,
                "plausible_answers": list(q.plausible_answers),
            },
        )
        for a in data.articles
        for p in a.paragraphs
        for q in p.questions
    ]
