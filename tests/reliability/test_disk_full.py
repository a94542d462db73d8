"""Issue 37, class 6: a disk that fills up (or a file size limit) while steadyeval writes is
one clear ``error:`` line with exit 2, never a traceback; nothing is half-written (files are
replaced through temporary files, which never stay), a finished run is kept, and the same
command resumes from the cache once there is room.

The run-folder cases need a small file system: a tmpfs mounted for the test (skipped where
mounting is not allowed). The cache case uses a file size limit (``RLIMIT_FSIZE``), which
works everywhere."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from steadyeval import StorageError
from steadyeval._json import replace_atomically, write_json

ROOT = Path(__file__).resolve().parents[2]
#: The CLI with the scripted backend, after an optional file size limit (argv[1], bytes).
CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
limit = int(sys.argv.pop(1))
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from tests.scripted_backend import register
register()
from steadyeval.cli import main
main(sys.argv[1:], prog_name="steadyeval")
"""


def _cli(cwd: Path, *argv: str, limit: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _items(folder: Path, n: int = 60) -> Path:
    path = folder / "items.jsonl"
    rows = [{"id": f"q{i}", "question": f"Item {i}?", "options": ["a", "b", "c"], "answer": 1}
            for i in range(n)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _clean_error(done: subprocess.CompletedProcess[str], *expect: str) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("error: ") and "run the same command again" in last, last
    for text in expect:
        assert text in last, last


def test_a_failed_replace_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json(path, {"kept": True})

    def full(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(StorageError, match="no space left") as err:
        replace_atomically(path, full)
    assert str(path) in str(err.value) and isinstance(err.value, OSError)
    assert json.loads(path.read_text()) == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


@pytest.mark.parametrize(
    ("code", "remedy"),
    [
        (errno.ENOSPC, "make room, then"),
        (errno.EDQUOT, "make room, then"),
        (errno.EROFS, "make it writable, or write elsewhere, then"),
        (errno.EACCES, "make it writable, or write elsewhere, then"),
        (errno.EIO, "check the disk, then"),
        (errno.EFBIG, "raise the file size limit (ulimit -f) or write elsewhere, then"),
    ],
)
def test_a_storage_error_says_what_to_do_about_its_cause(code: int, remedy: str) -> None:
    from steadyeval._json import storage_error

    error = storage_error(OSError(code, os.strerror(code)), "runs/a/summary.json")
    assert error is not None and remedy in str(error), error
    assert str(error).endswith("run the same command again")


def test_a_cache_over_the_file_size_limit_is_a_clean_error_and_resumes(tmp_path: Path) -> None:
    _items(tmp_path)
    argv = ("run", "--model", "scripted:m", "--data", "items.jsonl", "--cache", "c.sqlite")
    _clean_error(_cli(tmp_path, *argv, "--out", "a", limit=16_000), "--cache c.sqlite")
    done = _cli(tmp_path, *argv, "--out", "a")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "60 rows" in done.stdout


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (root and a mount namespace that allows it; skipped otherwise)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` but ``leave`` bytes."""
    free = shutil.disk_usage(disk).free
    (disk / "filler").write_bytes(b"\0" * max(0, free - leave))


def test_a_full_disk_under_a_new_run_folder(tmp_path: Path, small_disk: Path) -> None:
    _items(tmp_path)
    _fill(small_disk, 12 * 1024)
    out = small_disk / "run"
    argv = ("run", "--model", "scripted:m", "--data", "items.jsonl", "--cache", "c.sqlite")
    _clean_error(_cli(tmp_path, *argv, "--out", str(out)), "no space left")
    assert not list(out.glob("*.tmp"))
    report = _cli(tmp_path, "report", str(out))  # not read as a finished run
    assert report.returncode == 2 and "Traceback" not in report.stderr
    (small_disk / "filler").unlink()
    done = _cli(tmp_path, *argv, "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "180 cached, 0 sent" in done.stdout  # every response came from the cache


def test_a_full_disk_on_a_rerun_loses_nothing(tmp_path: Path, small_disk: Path) -> None:
    _items(tmp_path)
    out = small_disk / "run"
    argv = ("run", "--model", "scripted:m", "--data", "items.jsonl", "--cache", "c.sqlite")
    assert _cli(tmp_path, *argv, "--out", str(out)).returncode == 0
    before = (out / "results.parquet").read_bytes()
    (out / "summary.json").unlink()  # the rerun has files to write again
    _fill(small_disk, 2 * 1024)
    _clean_error(_cli(tmp_path, *argv, "--out", str(out)), "no space left")
    assert not list(out.glob("*.tmp"))
    assert (out / "results.parquet").read_bytes() == before  # whole, never half-written
    (small_disk / "filler").unlink()
    done = _cli(tmp_path, *argv, "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "results.parquet").read_bytes() == before
    assert _cli(tmp_path, "report", str(out), "--format", "json").returncode == 0
