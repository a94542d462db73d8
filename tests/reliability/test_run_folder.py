"""A run folder under stress: kill -9 at seeded points and SIGTERM keep every paid response
and resume to the same table; a second process on a busy folder is refused with the
holder's pid, a dead holder's lock is no obstacle; a folder caught mid-write is refused by
every reader instead of read as a mix of two runs."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import steadyeval as se
from steadyeval import ConfigError, DataError
from steadyeval.cli import main
from steadyeval.results._manifest import writing_run
from steadyeval.run._folder import locked_run_dir
from tests.scripted_backend import register

register()
ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 160
#: The CLI with the scripted test backend registered, in a child process.
CHILD = (
    "import sys; from tests.scripted_backend import register; register(); "
    "from steadyeval.cli import main; sys.exit(main())"
)


def _data(tmp: Path) -> Path:
    path = tmp / "items.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"Item {i}?", "options": ["a", "b", "c"], "answer": i % 3}
        for i in range(N_ITEMS)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cached(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(cache, timeout=600) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _start(data: Path, out: Path, cache: Path, delay: float) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", CHILD, "run", "--model", f"scripted:m?delay={delay}",
            "--data", str(data), "--out", str(out), "--cache", str(cache), "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(cache: Path, at_least: int, proc: subprocess.Popen[bytes]) -> bool:
    """Until the cache holds ``at_least`` responses; False if the run ended first."""
    while _cached(cache) < at_least:
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    return True


def _reference(data: Path, tmp: Path) -> pq.ParquetFile:
    out = tmp / "reference"
    se.run_config({"data": str(data), "models": ["scripted:m"]}, out=out, cache=tmp / "ref.sqlite")
    return pq.read_table(out / "results.parquet").drop(["run_id", "model"])


#: Kill points: 5 by default; more with STEADYEVAL_KILL_POINTS=N (e.g. 100 before a release).
KILL_POINTS = int(os.environ.get("STEADYEVAL_KILL_POINTS", "5"))


@pytest.mark.parametrize("seed", range(KILL_POINTS))
def test_kill_9_at_a_seeded_point_then_resume(seed: int, tmp_path: Path) -> None:
    data, cache, out = _data(tmp_path), tmp_path / "cache.sqlite", tmp_path / "run"
    total = N_ITEMS * 3  # one score request per option
    point = random.Random(seed).randrange(1, total)
    proc = _start(data, out, cache, delay=0.002)
    try:
        landed = _wait_for(cache, point, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(600)
    finally:
        if proc.poll() is None:
            proc.kill()
    held = _cached(cache)
    assert landed and 0 < held < total, (point, held)
    r = CliRunner().invoke(main, ["run", "--model", "scripted:m?delay=0.002", "--data",
                                  str(data), "--out", str(out), "--cache", str(cache)])  # fmt: skip
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plan"]["cache_hits"] == held  # nothing paid for was lost ...
    assert summary["plan"]["model_calls"] == total - held  # ... or sent twice
    resumed = pq.read_table(out / "results.parquet").drop(["run_id", "model"])
    assert resumed.equals(_reference(data, tmp_path))


def test_sigterm_stops_like_ctrl_c_and_resumes(tmp_path: Path) -> None:
    data, cache, out = _data(tmp_path), tmp_path / "cache.sqlite", tmp_path / "run"
    proc = _start(data, out, cache, delay=0.002)
    try:
        assert _wait_for(cache, 64, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err.decode()
    assert "terminated: every response received so far is in the cache" in err.decode()
    assert "Traceback" not in err.decode()
    held = _cached(cache)
    r = CliRunner().invoke(main, ["run", "--model", "scripted:m?delay=0.002", "--data",
                                  str(data), "--out", str(out), "--cache", str(cache)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["plan"]["cache_hits"] == held


def test_a_busy_folder_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; "
         "from steadyeval.run._folder import locked_run_dir\n"
         f"with locked_run_dir(Path({str(out)!r})):\n"
         "    print('held', flush=True); time.sleep(600)"],
        cwd=ROOT, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(ConfigError, match=f"another steadyeval process \\(pid {holder.pid} "):
            se.run_config({"data": str(data), "models": ["scripted:m"]}, out=out)
        holder.send_signal(signal.SIGKILL)  # a dead holder's lock goes with it
        holder.wait(600)
    finally:
        if holder.poll() is None:
            holder.kill()
    result = se.run_config({"data": str(data), "models": ["scripted:m"]}, out=out)
    assert result.table.num_rows == N_ITEMS


def test_the_lock_is_reentrant_in_one_process(tmp_path: Path) -> None:
    with locked_run_dir(tmp_path / "run"), locked_run_dir(tmp_path / "run"):
        pass
    with locked_run_dir(tmp_path / "run"):  # released: taken again
        pass


def _two_runs(tmp: Path) -> tuple[Path, Path]:
    data = _data(tmp)
    a, b = tmp / "a", tmp / "b"
    se.run_config({"data": str(data), "models": ["scripted:a"]}, out=a)
    se.run_config({"data": str(data), "models": ["scripted:b"]}, out=b)
    return a, b


def test_a_folder_mixing_two_runs_is_refused_by_every_reader(tmp_path: Path) -> None:
    a, b = _two_runs(tmp_path)
    shutil.copy(b / "results.parquet", a / "results.parquet")  # as a crash mid-replace left it
    for argv in (["report", str(a)], ["compare", str(a), str(b)]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2 and "does not belong to run" in r.output, r.output
    with pytest.raises(DataError, match=r"results\.parquet does not belong to run"):
        se.read_results(a)


def test_a_folder_caught_mid_write_is_refused(tmp_path: Path) -> None:
    a, _ = _two_runs(tmp_path)
    with pytest.raises(RuntimeError), writing_run(a, "x"):
        raise RuntimeError("killed while writing")
    r = CliRunner().invoke(main, ["report", str(a)])
    assert r.exit_code == 2 and "did not finish writing" in r.output
    se.run_config({"data": str(tmp_path / "items.jsonl"), "models": ["scripted:a"]}, out=a)
    assert se.read_results(a).num_rows == N_ITEMS  # the same command again finishes it


def test_two_writers_never_share_a_temp_file(tmp_path: Path) -> None:
    """Writers of one file each use their own temporary name (a fixed ``.tmp`` made one of
    two processes crash with FileNotFoundError)."""
    from concurrent.futures import ThreadPoolExecutor

    from steadyeval._json import write_json

    path = tmp_path / "summary.json"

    def write(n: int) -> None:
        for i in range(200):
            write_json(path, {"writer": n, "i": i})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))  # re-raises a writer's error
    assert json.loads(path.read_text())["i"] == 199
    assert not list(tmp_path.glob("*.tmp"))
