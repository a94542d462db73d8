"""Read Inspect AI logs (``.json`` and ``.eval``) without Inspect.

A ``.json`` log is one ``EvalLog`` object (``version``, ``status``, ``eval``, ``plan``,
``results``, ``stats``, ``samples``). A ``.eval`` log is a zip archive: ``header.json``
(the log without samples, written when the eval ends; a log still running, or killed, has
only ``_journal/start.json``; older files have ``start.json`` and, once ended,
``results.json``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch. Inspect compresses the members with
Zstandard (zip method 93), which :mod:`zipfile` reads only from Python 3.14; members so
compressed are decompressed here with the ``zstandard`` package.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import DataError
from ..items import shorten

__all__ = ["LISTINGS", "find_inspect_logs", "read_inspect_log"]

#: Files Inspect writes beside its logs that are not logs: the folder listing and an
#: eval set's description.
LISTINGS = frozenset({"logs.json", "eval-set.json"})
_HEADERS = ("header.json", "_journal/start.json", "start.json")
_ZSTD = 93  # the zip compression method number of Zstandard
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra length


def find_inspect_logs(paths: Sequence[str | Path]) -> list[Path]:
    """The ``.eval`` and ``.json`` logs named by ``paths`` (folders are searched
    recursively; Inspect's ``logs.json`` listing and an eval set's ``eval-set.json`` are
    skipped)."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            hits = sorted(
                q
                for q in p.rglob("*")
                if q.suffix in (".eval", ".json") and q.name not in LISTINGS and q.is_file()
            )
            if not hits:
                raise DataError(f"{p}: no .eval or .json Inspect logs in this folder")
            found += hits
        elif p.is_file():
            if p.name in LISTINGS:
                raise DataError(
                    f"{p}: Inspect's {p.name} describes logs but holds no samples; pass its "
                    "folder (or the .eval/.json logs) instead"
                )
            found.append(p)
        else:
            raise DataError(f"{p}: no such file or folder")
    return sorted(dict.fromkeys(q.resolve() for q in found))


def _load_json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise DataError(f"{where}: not UTF-8 text; expected a JSON document") from None


def _zstd_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A member compressed with Zstandard: its raw bytes from the local header on,
    decompressed and checked against the archive's CRC and size."""
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
            data = r.read()
    except zstandard.ZstdError as exc:
        raise DataError(f"{where}: damaged Zstandard data ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise DataError(f"{where}: size or CRC differs from the archive's directory; damaged")
    return data


def _member(zf: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo) -> bytes:
    if info.compress_type == _ZSTD:
        return _zstd_member(path, info)
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise DataError(
            f"{path}!{info.filename}: cannot be read from the archive ({exc})"
        ) from None


def _read_eval(p: Path) -> tuple[dict[str, Any], list[Any]]:
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(
            f"{p}: not a readable zip archive ({exc}); an Inspect .eval log is one (a log "
            "cut short while Inspect was writing it cannot be read)"
        ) from None
    with zf:
        names = zf.namelist()
        head_name = next((h for h in _HEADERS if h in names), None)
        if head_name is None:
            raise DataError(
                f"{p}: no header.json (or _journal/start.json) in the archive; not an "
                "Inspect .eval log"
            )
        head_info = [i for i in zf.infolist() if i.filename == head_name][-1]
        header = _load_json(_member(zf, p, head_info), f"{p}!{head_name}")
        if isinstance(header, dict) and head_name != "header.json":
            if "results.json" in names:  # an older layout: the end of the eval apart
                info = [i for i in zf.infolist() if i.filename == "results.json"][-1]
                ending = _load_json(_member(zf, p, info), f"{p}!results.json")
                header.update(ending if isinstance(ending, dict) else {})
            header.setdefault("status", "started")  # no header.json: the eval never ended
        members: dict[str, zipfile.ZipInfo] = {}
        for info in zf.infolist():  # a re-written sample appears twice; the last wins
            if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                members[info.filename] = info
        samples = [_load_json(_member(zf, p, i), f"{p}!{n}") for n, i in members.items()]
    return header, samples


def _sample_order(sample: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Inspect's order: by epoch, then id (integer ids before string ids)."""
    sid = sample.get("id")
    epoch = int(sample.get("epoch", 1))
    return (epoch, 0, sid, "") if isinstance(sid, int) else (epoch, 1, 0, str(sid))


def read_inspect_log(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, samples)`` of one Inspect log; ``header`` has at least ``eval`` and
    ``status`` (``started`` for a ``.eval`` log without ``header.json``).

    Raises
    ------
    ValueError
        If the file is not an Inspect log (no ``eval`` spec) or is malformed; the message
        names the file (and the archive member) and what was expected.
    """
    p = Path(path)
    if p.suffix == ".eval":
        header, samples = _read_eval(p)
    else:
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise DataError(f"{p}: cannot be read ({exc.strerror})") from None
        header = _load_json(data, str(p))
        if not isinstance(header, dict):
            raise DataError(f"{p}: expected a JSON object (an Inspect EvalLog)")
        samples = header.pop("samples", None) or []
        if not isinstance(samples, list):
            raise DataError(f"{p}: 'samples' is {type(samples).__name__}; expected a list")
    if not isinstance(header, dict) or not isinstance(header.get("eval"), Mapping):
        raise DataError(f"{p}: no 'eval' object; not an Inspect evaluation log")
    for i, s in enumerate(samples):
        if not isinstance(s, Mapping) or "id" not in s:
            raise DataError(f"{p}: sample {i} has no 'id'; expected an Inspect EvalSample")
        epoch = s.get("epoch", 1)
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise DataError(f"{p}: sample {i}: epoch {shorten(repr(epoch))}; expected an integer")
    samples.sort(key=_sample_order)
    return header, samples
