"""Write zip archives member by member, with any compression method and any declared sizes,
for hostile ``.eval`` logs: Zstandard members (zip method 93, which :mod:`zipfile` cannot
write before Python 3.14), compression bombs built small, members whose directory entry
lies about their size or CRC, and the members of a real fixture log re-packed."""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFLATE",
    "STORED",
    "ZSTD",
    "Member",
    "deflate",
    "filled",
    "fixture_members",
    "streamed",
    "write_zip",
    "zeros",
    "zstd",
]

ZSTD = 93
DEFLATE = 8
STORED = 0


@dataclass(frozen=True)
class Member:
    """One archive member: its name, its bytes as stored, the method, and the size and CRC
    the archive declares for its decompressed bytes."""

    name: str
    raw: bytes
    method: int
    size: int
    crc: int


def zstd(name: str, data: bytes, *, size: int | None = None) -> Member:
    """A Zstandard member holding ``data`` (declared ``size`` if given)."""
    import zstandard

    raw = zstandard.ZstdCompressor().compress(data)
    return Member(name, raw, ZSTD, len(data) if size is None else size, zlib.crc32(data))


def deflate(name: str, data: bytes, *, size: int | None = None) -> Member:
    """A deflate member holding ``data`` (declared ``size`` if given)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = c.compress(data) + c.flush()
    return Member(name, raw, DEFLATE, len(data) if size is None else size, zlib.crc32(data))


def streamed(name: str, parts: Iterable[bytes], method: int = ZSTD, *, level: int = 9) -> Member:
    """A member holding the concatenation of ``parts``, compressed as they come (the whole
    is never held): a small archive whose members inflate to gigabytes."""
    crc = size = 0
    chunks: list[bytes] = []
    if method == ZSTD:
        import zstandard

        z = zstandard.ZstdCompressor().compressobj()
        compress, flush = z.compress, z.flush
    else:
        d = zlib.compressobj(level, zlib.DEFLATED, -15)
        compress, flush = d.compress, d.flush
    for part in parts:
        crc = zlib.crc32(part, crc)
        size += len(part)
        chunks.append(compress(part))
    chunks.append(flush())
    return Member(name, b"".join(chunks), method, size, crc)


def filled(n_bytes: int, fill: bytes = b"\0") -> Iterator[bytes]:
    """``n_bytes`` bytes of ``fill`` (one byte), in blocks of 1 MiB."""
    block = fill * (1 << 20)
    full, rest = divmod(n_bytes, len(block))
    yield from (block for _ in range(full))
    yield block[:rest]


def zeros(name: str, n_bytes: int, method: int = ZSTD) -> Member:
    """A member of ``n_bytes`` zero bytes, compressed in a streaming way (never held whole):
    a bomb of a few kilobytes that inflates to ``n_bytes``."""
    return streamed(name, filled(n_bytes), method)


def write_zip(path: Path, members: Sequence[Member]) -> Path:
    """Write ``members`` as a zip archive (names as given, ``../x`` included)."""
    out = bytearray()
    central = bytearray()
    for m in members:
        name = m.name.encode("utf-8", "surrogatepass")
        offset = len(out)
        big = max(m.size, len(m.raw)) >= 0xFFFFFFFF
        size32 = 0xFFFFFFFF if big else m.size
        comp32 = 0xFFFFFFFF if big else len(m.raw)
        extra = struct.pack("<HHQQ", 1, 16, m.size, len(m.raw)) if big else b""
        flags = 0x800
        out += struct.pack(
            "<4sHHHHHIIIHH",
            b"PK\x03\x04",
            45,
            flags,
            m.method,
            0,
            0x21,
            m.crc,
            comp32,
            size32,
            len(name),
            len(extra),
        )
        out += name + extra + m.raw
        central += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            45,
            45,
            flags,
            m.method,
            0,
            0x21,
            m.crc,
            comp32,
            size32,
            len(name),
            len(extra),
            0,
            0,
            0,
            0,
            offset,
        )
        central += name + extra
    start = len(out)
    out += central
    out += struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0
    )
    path.write_bytes(bytes(out))
    return path


def fixture_members(path: Path) -> list[tuple[str, bytes]]:
    """The members of a real ``.eval`` log (decompressed), in archive order."""
    import zstandard

    out = []
    with zipfile.ZipFile(path) as zf, path.open("rb") as fh:
        for info in zf.infolist():
            if info.compress_type != ZSTD:
                out.append((info.filename, zf.read(info)))
                continue
            fh.seek(info.header_offset)
            head = fh.read(30)
            n, e = struct.unpack("<HH", head[26:30])
            fh.seek(info.header_offset + 30 + n + e)
            raw = fh.read(info.compress_size)
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            out.append((info.filename, reader.read()))
    return out
