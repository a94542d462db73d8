"""Load items from JSONL, CSV or Hugging Face ``datasets``, or with a named loader (a
registry: SQuAD 2.0, MMLU, FewGLUE, LAMA-style probes, and any registered one)."""

from __future__ import annotations

import csv
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError, show_path
from .._extras import require
from .._hub import locate
from .._lazy import load_entry, load_plugins
from ._item import Item
from ._jsonl import read_jsonl, read_lines
from ._record_fields import (
    check_shape,
    check_str,
    parse_aliases,
    parse_answer,
    parse_answerable,
    parse_id,
    parse_metadata,
    parse_options,
)
from ._text import shorten

__all__ = [
    "get_loader",
    "items_from_records",
    "load_csv",
    "load_hf",
    "load_items",
    "load_jsonl",
    "loader_names",
    "register_loader",
]


def _record_to_item(rec: Any, *, file: str, line: int) -> Item:
    """Validate one generic record (already parsed) and build its Item."""
    rec = check_shape(rec, file=file, line=line)
    item_id = parse_id(rec["id"], file=file, line=line)
    question = check_str(rec["question"], file=file, line=line, field="question")
    context = check_str(rec.get("context"), file=file, line=line, field="context", optional=True)
    options = parse_options(rec.get("options"), file=file, line=line)
    answerable = parse_answerable(rec.get("answerable", True), file=file, line=line)
    answers, gold = parse_answer(rec, options, answerable, file=file, line=line)
    metadata = parse_metadata(rec.get("metadata"), file=file, line=line)
    aliases = parse_aliases(rec.get("aliases"), file=file, line=line)
    assert question is not None
    return Item(
        id=item_id,
        question=question,
        context=context,
        options=options,
        answers=answers,
        gold_options=gold,
        answerable=answerable,
        aliases=aliases,
        metadata=metadata,
    )


def unique_items(
    records: Iterable[tuple[int, Any]],
    to_items: Callable[[Any, int], Iterable[Item]],
    *,
    file: str,
    field: str,
    unique: str,
    nonempty: str,
) -> list[Item]:
    """The items that ``to_items(record, line)`` makes of each ``(line, record)`` pair, in
    order. A repeated item id is a :class:`DataError` on ``field`` (``unique`` says what was
    expected), and so is a file without items (``nonempty``)."""
    items: list[Item] = []
    seen: dict[str, int] = {}
    for line, rec in records:
        for item in to_items(rec, line):
            if item.id in seen:
                raise DataError(
                    f"duplicate id {shorten(repr(item.id))} (first on line {seen[item.id]})",
                    file=file,
                    line=line,
                    field=field,
                    expected=unique,
                )
            seen[item.id] = line
            items.append(item)
    if not items:
        raise DataError("no items", file=file, expected=nonempty)
    return items


def items_from_records(records: Iterable[tuple[int, Any]], *, file: str) -> list[Item]:
    """Build items from ``(line, record)`` pairs; duplicate ids are an error."""
    return unique_items(
        records,
        lambda rec, line: (_record_to_item(rec, file=file, line=line),),
        file=file,
        field="id",
        unique="ids unique in the file",
        nonempty="at least one row",
    )


def load_jsonl(path: str | Path) -> list[Item]:
    """Load items from the generic JSONL format (see ``docs/data.md``)."""
    return items_from_records(read_jsonl(path), file=str(path))


def _csv_header(reader: csv.DictReader[str], path: Path) -> list[str]:
    """The header's column names, checked: ``id`` and ``question`` present, none repeated."""
    names = list(reader.fieldnames or [])
    missing = {"id", "question"} - set(names)
    if missing:
        raise DataError(
            "header lacks required column(s)",
            file=str(path),
            line=1,
            field=sorted(missing)[0],
            expected="a header with id, question and answer columns",
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(
            "header repeats a column",
            file=str(path),
            line=1,
            field=shorten(repeated[0]),
            expected="each column name once",
        )
    return names


def _csv_answer(ans: str, has_options: bool) -> str | int:
    """A CSV ``answer`` cell: with options, an index or a letter is an option index."""
    if has_options and ans.strip().isdigit():
        return int(ans)
    if has_options and len(ans.strip()) == 1 and ans.strip().upper() in "ABCDEFGHIJ":
        return "ABCDEFGHIJ".index(ans.strip().upper())
    return ans


def _csv_row(row: dict[str | None, Any], names: list[str], path: Path, line: int) -> dict[str, Any]:
    """One CSV row as a generic record (``names``: the header)."""
    if None in row:
        raise DataError(
            "more cells than header columns",
            file=str(path),
            line=line,
            expected=f"{len(names)} cells",
        )
    short = [k for k, v in row.items() if v is None]
    if short:
        raise DataError(
            f"fewer cells than header columns ({len(names) - len(short)})",
            file=str(path),
            line=line,
            field=shorten(str(short[0])),
            expected=f"{len(names)} cells",
        )
    opt_cols = sorted((c for c in names if c.startswith("option_")), key=lambda c: (len(c), c))
    rec: dict[str, Any] = {"id": row.get("id"), "question": row.get("question")}
    if row.get("context"):
        rec["context"] = row["context"]
    opts = [row[c] for c in opt_cols if row.get(c)]
    if opts:
        rec["options"] = opts
    ans = row.get("answer")
    if ans is not None and ans != "":
        rec["answer"] = _csv_answer(ans, bool(opts))
    if row.get("answerable", "") != "":
        val = row["answerable"].strip().lower()
        if val not in {"true", "false", "1", "0"}:
            raise DataError(
                f"got {shorten(repr(row['answerable']))}",
                file=str(path),
                line=line,
                field="answerable",
                expected="true/false or 1/0",
            )
        rec["answerable"] = val in {"true", "1"}
    known = {"id", "question", "context", "answer", "answerable", *opt_cols}
    meta = {k: v for k, v in row.items() if k not in known}
    if meta:
        rec["metadata"] = meta
    return rec


def _csv_records(path: Path) -> Iterator[tuple[int, Any]]:
    lines = (text for _, text in read_lines(path, "a CSV file"))
    reader = csv.DictReader(lines)
    try:
        if reader.fieldnames is None:
            return
        names = _csv_header(reader, path)
        for row in reader:
            yield reader.line_num, _csv_row(row, names, path, reader.line_num)
    except csv.Error as exc:
        raise DataError(
            f"malformed CSV: {exc}",
            file=str(path),
            line=max(reader.reader.line_num, 1),  # DictReader's own is set per row read
            expected="RFC 4180 CSV",
        ) from None


def load_csv(path: str | Path) -> list[Item]:
    """Load items from CSV with a header.

    Columns: ``id``, ``question``, optional ``context``, ``option_1`` ... ``option_N``,
    ``answer`` (text, option index or letter), optional ``answerable``; any other column
    goes into the item's metadata. The file is read line by line (see
    :func:`~steadyeval.items.read_jsonl` for the limits).
    """
    return items_from_records(_csv_records(Path(path)), file=str(path))


def load_hf(
    name: str,
    *,
    split: str = "test",
    config: str | None = None,
    fields: Mapping[str, str] | None = None,
    data_files: str | list[str] | None = None,
) -> list[Item]:
    """Load items from a Hugging Face ``datasets`` source (hub name or local files).

    ``fields`` maps the generic field names (``id``, ``question``, ``context``, ``options``,
    ``answer``, ``answerable``) to the data set's column names. Rows are numbered from 1
    in errors, under the name ``NAME[split]``.
    """
    require(f"{name}: Hugging Face data sets", "datasets")
    import datasets

    kwargs: dict[str, Any] = {"split": split}
    if data_files is not None:
        kwargs["data_files"] = data_files
    try:
        ds = datasets.load_dataset(name, config, **kwargs)
    except (ConnectionError, OSError) as exc:
        raise DataError(
            f"could not load data set: {exc}",
            file=name,
            expected="a reachable hub data set (set HF_HUB_OFFLINE=1 to use the local cache) "
            "or a local file such as items.jsonl",
        ) from None
    mapping = dict(fields or {})
    label = f"{name}[{split}]"

    def records() -> Iterator[tuple[int, Any]]:
        for row_no, row in enumerate(ds, start=1):
            rec: dict[str, Any] = {}
            meta: dict[str, Any] = {}
            used = set()
            for generic in ("id", "question", "context", "options", "answer", "answerable"):
                col = mapping.get(generic, generic)
                if col in row:
                    rec[generic] = row[col]
                    used.add(col)
            if "id" not in rec:
                rec["id"] = str(row_no)
            for k, v in row.items():
                if k not in used and (v is None or isinstance(v, str | int | float | bool)):
                    meta[k] = v
            if meta:
                rec["metadata"] = meta
            yield row_no, rec

    return items_from_records(records(), file=label)


def _by_suffix(source: str | Path, **kwargs: Any) -> list[Item]:
    """A ``.jsonl`` or ``.csv`` file, else a hub data set name (``kwargs`` for the hub).

    A name that does not end in ``.jsonl``, ``.ndjson`` or ``.csv`` is a local path or a
    hub id by :func:`steadyeval._hub.locate`'s rule (what exists on disk and the hub id
    grammar, never another suffix: ``teknium/OpenHermes-2.5`` is a hub id)."""
    p = Path(source)
    where = locate(str(source))
    if where.exists and p.is_dir():
        raise DataError(
            "is a folder",
            file=str(p),
            expected="a .jsonl or .csv file; a folder needs a named loader "
            "(data: {loader: NAME, path: FOLDER})",
        )
    if p.suffix in {".jsonl", ".ndjson", ".csv"} and not where.exists:
        raise DataError("file not found", file=str(p), expected="an existing .jsonl or .csv file")
    if p.suffix in {".jsonl", ".ndjson", ".csv"} and kwargs:
        raise ConfigError(  # silently dropped before: the file was read as if they were not given
            f"{show_path(p)}: {', '.join(sorted(kwargs))} apply to a hub data set or a "
            "named loader; a local .jsonl or .csv file takes no options (remove them, or set "
            "loader)"
        )
    if p.suffix in {".jsonl", ".ndjson"}:
        return load_jsonl(p)
    if p.suffix == ".csv":
        return load_csv(p)
    if where.exists:
        raise DataError(
            f"unknown file type {p.suffix!r}",
            file=str(p),
            expected="a .jsonl or .csv file, a hub data set name, or a named loader "
            f"({', '.join(loader_names())})",
        )
    if where.kind == "path":
        raise DataError("file not found", file=str(p), expected="an existing .jsonl or .csv file")
    if where.kind == "neither":
        raise DataError(
            f"no such file, and not a hub data set name: {where.why}",
            file=show_path(source),
            expected="an existing .jsonl or .csv file or a hub data set name such as cais/mmlu",
        )
    return load_hf(str(source), **kwargs)


Loader = Callable[..., list[Item]]

# Built-in loaders by import path, so a data set's code is imported only when it is used.
_BUILTIN: dict[str, str] = {
    "jsonl": "steadyeval.items._loaders:load_jsonl",
    "csv": "steadyeval.items._loaders:load_csv",
    "hf": "steadyeval.items._loaders:load_hf",
    "squad2": "steadyeval.items._squad:load_squad2_items",
    "mmlu": "steadyeval.items._mmlu:load_mmlu_items",
    "fewglue": "steadyeval.items._fewglue:load_fewglue_items",
    "lama": "steadyeval.items._probes:load_probe_items",
    "lm-eval": "steadyeval.items._lmeval_task:load_lmeval_items",
    "inspect": "steadyeval.items._inspect_task:load_inspect_items",
}
_LOADERS: dict[str, Loader | str] = dict(_BUILTIN)


def register_loader(name: str, loader: Loader | str, *, replace: bool = False) -> None:
    """Register ``loader(source, **options) -> list[Item]`` (or ``"module:function"``) under
    ``name``, for ``load_items(source, loader=name)`` and run configs' ``data: {loader: name}``."""
    if name in _LOADERS and not replace and _LOADERS[name] != loader:
        raise ValueError(f"loader {name!r} is already registered; pass replace=True")
    _LOADERS[name] = loader


def loader_names() -> list[str]:
    load_plugins()
    return list(_LOADERS)


def get_loader(name: str) -> Loader:
    """The loader registered as ``name``."""
    if name not in _LOADERS:
        load_plugins()
    entry = _LOADERS.get(name)
    if entry is None:
        raise ConfigError(f"unknown data loader {name!r}; known loaders: {', '.join(_LOADERS)}")
    if isinstance(entry, str):
        entry = _LOADERS[name] = load_entry(entry, f"data loader {name!r}")
    assert callable(entry)
    return entry


def load_items(
    source: str | Path | None, *, loader: str | None = None, **options: Any
) -> list[Item]:
    """Load items from ``source`` with a named loader, or by its kind.

    Without ``loader``: a ``.jsonl`` or ``.csv`` file in the generic format (see
    ``docs/data.md``), else a Hugging Face hub data set (``options``: ``split``, ``config``,
    ``fields``). With ``loader`` (``squad2``, ``mmlu``, ``fewglue``, ``lama``, ``jsonl``,
    ``csv``, ``hf`` or a registered one), that loader reads ``source`` with ``options``; an
    option the loader does not take is an error naming the ones it does. ``source`` may be
    None for a loader that needs no path (``lm-eval``: its ``task`` option names what to read).
    """
    if source == "":  # Path("") would be the current folder
        raise ConfigError("the data path is empty: name a file or a hub data set")
    if loader is None:
        if source is None:
            raise ConfigError("no data: give a file or hub data set name, or a named loader")
        return _by_suffix(source, **options)
    fn = get_loader(loader)
    params = inspect.signature(fn).parameters
    first = next(iter(params.values()), None)
    if source is None and first is not None and first.default is inspect.Parameter.empty:
        raise ConfigError(f"data loader {loader!r} reads a path: give path (--data)")
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    allowed = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(allowed))
    if unknown and not takes_any:
        raise ConfigError(
            f"data loader {loader!r} has no option {unknown[0]!r}; its options: "
            f"{', '.join(allowed) or 'none'}"
        )
    return fn(source, **_typed_options(fn, loader, options))


def _typed_options(fn: Loader, loader: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against the loader's annotations (a run config's ``data:`` keys
    reach the loader as YAML gives them): a wrong type is a :class:`ConfigError` naming the
    option, never a ``TypeError`` inside the loader. A loader whose annotations cannot be
    resolved gets its options as they are."""
    from pydantic import TypeAdapter, ValidationError

    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a plug-in's annotations may name what is not importable here
        return dict(options)
    out = dict(options)
    for name, value in options.items():
        if name not in hints:
            continue
        try:
            out[name] = TypeAdapter(hints[name]).validate_python(value)
        except ValidationError as exc:
            why = exc.errors()[0]["msg"] if exc.errors() else str(exc)
            raise ConfigError(
                f"data loader {loader!r}: option {name!r}: {why} (got {shorten(repr(value))})"
            ) from None
    return out
