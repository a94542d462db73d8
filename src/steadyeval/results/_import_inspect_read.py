"""Read Inspect AI logs (``.json`` and ``.eval``) without Inspect.

A ``.json`` log is one ``EvalLog`` object (``version``, ``status``, ``eval``, ``plan``,
``results``, ``stats``, ``samples``). A ``.eval`` log is a zip archive: ``header.json``
(the log without samples, written when the eval ends; a log still running, or killed, has
only ``_journal/start.json``; older files have ``start.json`` and, once ended,
``results.json``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch. Inspect compresses the members with
Zstandard (zip method 93), which :mod:`zipfile` reads only from Python 3.14; members so
compressed are decompressed here with the ``zstandard`` package.

Logs are untrusted input: every member is decompressed in chunks under the limits of
:mod:`._import_limits` (bytes per member and per log, members per archive, JSON values
and nesting), and the fields the import uses are type-checked
(:mod:`._import_inspect_fields`).
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import DataError
from .._files import input_file, read_text_file
from ..items import shorten
from ._import_common import utf8_name
from ._import_fields import LIST, OBJECT, Place, get
from ._import_inspect_fields import check_header, check_sample
from ._import_limits import (
    ImportLimits,
    LogBudget,
    json_document,
    member_too_big,
    read_bounded,
)
from ._import_memory import KeptBudget, file_parse_cost, parse_cost

__all__ = ["LISTINGS", "find_inspect_logs", "read_inspect_log"]

#: Files Inspect writes beside its logs that are not logs: the folder listing and an
#: eval set's description.
LISTINGS = frozenset({"logs.json", "eval-set.json"})
_HEADERS = ("header.json", "_journal/start.json", "start.json")
#: The header fields an import reads (:func:`._import_inspect_fields.check_header`); the
#: rest is dropped.
_HEADER_KEPT = ("version", "status", "eval", "error", "results")
_ZSTD = 93  # the zip compression method number of Zstandard
#: Methods a member may use: Inspect writes Zstandard (older versions deflate). Others
#: (bzip2, LZMA) decompress in unbounded steps, so they are refused.
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", _ZSTD: "Zstandard"}
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra length
_CENTRAL_ENTRY = b"PK\x01\x02"
_WHAT = "an Inspect log (.eval or .json)"
#: Errors the zip reader and its decompressors raise on damaged archives.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    RuntimeError,
    OSError,
    ValueError,
    struct.error,
)


def find_inspect_logs(paths: Sequence[str | Path]) -> list[Path]:
    """The ``.eval`` and ``.json`` logs named by ``paths`` (folders are searched
    recursively; Inspect's ``logs.json`` listing and an eval set's ``eval-set.json`` are
    skipped). Every log must be a regular file: a FIFO or device is refused unopened."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            hits = sorted(
                q
                for q in p.rglob("*")
                if q.suffix in (".eval", ".json") and q.name not in LISTINGS and not q.is_dir()
            )
            if not hits:
                raise DataError(f"{p}: no .eval or .json Inspect logs in this folder")
            found += [input_file(utf8_name(q), _WHAT) for q in hits]
        elif not os.path.lexists(p):
            raise DataError(f"{p}: no such file or folder")
        else:
            input_file(utf8_name(p), _WHAT)
            if p.name in LISTINGS:
                raise DataError(
                    f"{p}: Inspect's {p.name} describes logs but holds no samples; pass its "
                    "folder (or the .eval/.json logs) instead"
                )
            found.append(p)
    return sorted(dict.fromkeys(q.resolve() for q in found))


def _count_entries(path: Path, limits: ImportLimits) -> None:
    """Refuse an archive whose central directory could list more than ``limits.members``
    members, before :mod:`zipfile` builds an object for each (every listed member starts
    with the directory entry's signature, so counting signatures bounds them)."""
    count = 0
    tail = b""
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            data = tail + block
            count += data.count(_CENTRAL_ENTRY)
            tail = data[-3:]
            if count > limits.members:
                raise DataError(
                    f"{path}: the archive lists more than {limits.members:,} members, the "
                    "limit for one log; set STEADYEVAL_MAX_LOG_MEMBERS to raise it"
                )


def _zstd_member(
    path: Path, info: zipfile.ZipInfo, limits: ImportLimits, budget: LogBudget
) -> bytes:
    """A member compressed with Zstandard: its raw bytes from the local header on,
    decompressed in chunks under the limits."""
    where = f"{path}!{info.filename}"
    try:
        import zstandard
    except ImportError:
        raise DataError(
            f"{where}: compressed with Zstandard (as Inspect writes .eval logs); reading it "
            "needs the zstandard package: pip install zstandard"
        ) from None
    with path.open("rb") as f:
        f.seek(info.header_offset)
        head = f.read(_LOCAL_HEADER.size)
        if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
            raise DataError(f"{where}: no local file header where the archive says; truncated?")
        _, name_len, extra_len = _LOCAL_HEADER.unpack(head)
        f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
        raw = f.read(info.compress_size)
    try:
        with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as r:
            return read_bounded(r.read, where, limits, budget)
    except zstandard.ZstdError as exc:
        raise DataError(f"{where}: damaged Zstandard data ({exc})") from None


def _member(
    zf: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo, limits: ImportLimits, budget: LogBudget
) -> bytes:
    """The decompressed bytes of one member, checked against the archive's size and CRC."""
    where = f"{path}!{info.filename}"
    method = _METHODS.get(info.compress_type)
    if method is None:
        raise DataError(
            f"{where}: compressed with zip method {info.compress_type}; expected Zstandard or "
            "deflate, as Inspect writes"
        )
    if max(info.file_size, info.compress_size) > limits.member_bytes:  # as declared
        raise member_too_big(where, limits)
    if info.compress_type == _ZSTD:
        data = _zstd_member(path, info, limits, budget)
    else:
        try:
            with zf.open(info) as fh:
                data = read_bounded(fh.read, where, limits, budget)
        except DataError:
            raise
        except _ZIP_ERRORS as exc:
            raise DataError(f"{where}: cannot be read from the archive ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise DataError(f"{where}: size or CRC differs from the archive's directory; damaged")
    return data


def _open_zip(p: Path, limits: ImportLimits) -> zipfile.ZipFile:
    _count_entries(p, limits)
    try:
        return zipfile.ZipFile(p)
    except _ZIP_ERRORS as exc:
        raise DataError(
            f"{p}: not a readable zip archive ({exc}); an Inspect .eval log is one (a log "
            "cut short while Inspect was writing it cannot be read)"
        ) from None


def _read_eval(p: Path, limits: ImportLimits, kept: KeptBudget) -> tuple[dict[str, Any], list[Any]]:
    budget = LogBudget(str(p), limits)
    with _open_zip(p, limits) as zf:
        infos: dict[str, zipfile.ZipInfo] = {}
        for info in zf.infolist():  # a re-written member appears twice; the last wins
            infos[info.filename] = info

        def load(name: str) -> Any:
            where = f"{p}!{name}"
            data = _member(zf, p, infos[name], limits, budget)
            kept.parse(parse_cost(data), where)
            return json_document(data, where, limits, surrogates=False)

        head_name = next((h for h in _HEADERS if h in infos), None)
        if head_name is None:
            raise DataError(
                f"{p}: no header.json (or _journal/start.json) in the archive; not an "
                "Inspect .eval log"
            )
        header = load(head_name)
        if not isinstance(header, dict):
            raise DataError(
                f"{p}!{head_name}: is not a JSON object; expected an Inspect log header"
            )
        if head_name != "header.json":
            if "results.json" in infos:  # an older layout: the end of the eval apart
                ending = load("results.json")
                header.update(ending if isinstance(ending, dict) else {})
            header.setdefault("status", "started")  # no header.json: the eval never ended
        header = _header(header, Place(f"{p}!{head_name}"), kept)
        samples = [
            _sample(load(name), Place(f"{p}!{name}"), kept)
            for name in infos
            if name.startswith("samples/") and name.endswith(".json")
        ]
    return header, _unique(samples)


def _header(header: dict[str, Any], place: Place, kept: KeptBudget) -> dict[str, Any]:
    """The header's fields an import reads, checked and counted as kept (the rest, such as
    ``plan``, ``stats`` and ``reductions``, is dropped)."""
    check_header(header, place)
    out = {k: header[k] for k in _HEADER_KEPT if k in header}
    kept.keep(out, place.file)
    return out


def _sample(raw: Any, place: Place, kept: KeptBudget) -> tuple[str, dict[str, Any]]:
    """Where the sample was read and the fields of it an import reads, checked and counted
    as kept."""
    where = f"{place.file}, field {place.path!r}" if place.path else place.file
    sample = check_sample(raw, place)
    kept.keep(sample, where)
    return where, sample


def _read_json(p: Path, limits: ImportLimits, kept: KeptBudget) -> tuple[dict[str, Any], list[Any]]:
    if p.stat().st_size <= limits.file_bytes:  # else refused by its size, unread
        kept.parse(file_parse_cost(p), str(p))
    text = read_text_file(p, _WHAT, max_bytes=limits.file_bytes)
    header = json_document(text, str(p), limits, surrogates=False)
    if not isinstance(header, dict):
        raise DataError(f"{p}: is not a JSON object; expected an Inspect EvalLog")
    place = Place(str(p))
    samples = get(header, "samples", place, LIST) or []
    header = _header(header, place, kept)
    out = []
    for i, s in enumerate(samples):
        where = place.at("samples").at(i)
        if not isinstance(s, Mapping):
            raise where.error("is not an object", "an Inspect EvalSample")
        out.append(_sample(s, where, kept))
    return header, _unique(out)


def _unique(samples: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The samples (each with where it was read), refused when two have the same id and
    epoch: Inspect writes one per id and epoch, and the rows of both would collide. Ids
    ``1`` and ``"1"`` count as the same (both become item ``<task>/1``)."""
    seen: dict[tuple[str, int], tuple[str, Any]] = {}
    for where, sample in samples:
        sid, epoch = sample["id"], sample["epoch"]
        first = seen.setdefault((str(sid), epoch), (where, sid))
        if first[0] != where:
            ids = shorten(repr(sid), 60)
            if first[1] != sid:
                ids += f" (and {shorten(repr(first[1]), 60)})"
            raise DataError(
                f"{where}: the log holds sample id {ids}, epoch {epoch} twice (first at "
                f"{first[0]}); expected one sample per id and epoch, as Inspect writes"
            )
    return [sample for _, sample in samples]


def _sample_order(sample: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Inspect's order: by epoch, then id (integer ids before string ids)."""
    sid = sample["id"]
    epoch = sample["epoch"]
    return (epoch, 0, sid, "") if isinstance(sid, int) else (epoch, 1, 0, str(sid))


def read_inspect_log(
    path: str | Path, limits: ImportLimits | None = None, *, kept: KeptBudget | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, samples)`` of one Inspect log; ``header`` holds the fields an import
    uses: ``eval``, ``status`` (``started`` for a ``.eval`` log without ``header.json``),
    and where the log has them ``version``, ``error`` and ``results``. Each sample holds
    the fields an import uses (``id``, ``epoch``, always set, ``input``, ``choices``,
    ``target``, ``messages``, ``output``, ``scores``, ``metadata``, ``error``), their types
    checked; the rest (``events``, ``attachments``, ...) is dropped as it is read.

    Parameters
    ----------
    path : path
        A ``.eval`` or ``.json`` log (a regular file).
    limits : ImportLimits, optional
        What the log may make steadyeval decompress and hold (default: from the
        environment, see :mod:`steadyeval.results._import_limits`).
    kept : KeptBudget, optional
        What the import has kept so far (pass one to bound several logs together; default:
        this log alone, under ``limits.kept_bytes``).

    Raises
    ------
    ValueError
        (:class:`~steadyeval.DataError`) If the file is not an Inspect log (no ``eval``
        spec), is damaged, passes a limit, or holds a field of the wrong type; the message
        names the file, the archive member, the field and what was expected.
    """
    p = input_file(path, _WHAT)
    limits = limits or ImportLimits.from_env()
    kept = kept or KeptBudget(limits)
    if p.suffix == ".eval":
        header, samples = _read_eval(p, limits, kept)
    else:
        header, samples = _read_json(p, limits, kept)
    if not isinstance(get(header, "eval", Place(str(p)), OBJECT), Mapping):
        raise DataError(f"{p}: no 'eval' object; not an Inspect evaluation log")
    samples.sort(key=_sample_order)
    return header, samples
