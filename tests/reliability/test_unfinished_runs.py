"""A run that did not finish is never read as complete (issue 38, points 2 and 6): a study that
fails after writing rows, one interrupted by Ctrl-C, one killed (kill -9) between its passes or
before it wrote anything: ``report``, ``compare`` and ``reanalyze`` refuse the folder with what
happened and how to resume (exit 2), and the same command again resumes from the cache and
completes it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from steadyeval import DataError
from steadyeval.cli import main
from steadyeval.studies import reanalyze
from steadyeval.studies.spread import SpreadStudy
from tests.scripted_backend import register

register()
ROOT = Path(__file__).resolve().parents[2]
#: The CLI with the scripted test backend registered, in a child process.
CHILD = (
    "import sys; from tests.scripted_backend import register; register(); "
    "from steadyeval.cli import main; sys.exit(main())"
)


def _items(tmp: Path, n: int = 12) -> Path:
    path = tmp / "items.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"Item {i}?", "options": ["a", "b", "c"], "answer": i % 3}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _study_argv(data: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["study", "spread", "--model", "scripted:m", "--data", str(data), "--n-formats", "6",
            "--budget", "12", "--draws", "50", "--out", str(out), "--cache", str(cache),
            "--no-progress", *extra]  # fmt: skip


def _refused(run_dir: Path, *expected: str) -> None:
    """``report`` and ``compare`` refuse ``run_dir`` with exit 2 and the resume hint;
    ``reanalyze`` too."""
    for argv in (["report", str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2, r.output
        assert "run the same command again to resume" in r.output, r.output
        assert "no results.parquet" not in r.output and "Traceback" not in r.output
        for text in expected:
            assert text in r.output, r.output
    assert not (run_dir / "report.html").exists()
    with pytest.raises(DataError, match="run the same command again to resume"):
        reanalyze(run_dir)


def _complete(r: Result, run_dir: Path) -> dict[str, Any]:
    assert r.exit_code == 0, r.output
    assert json.loads((run_dir / "manifest.json").read_text())["state"] == "complete"
    report = CliRunner().invoke(main, ["report", str(run_dir), "--format", "md"])
    assert report.exit_code == 0, report.output
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    assert summary["analysis"]["models"]
    return summary


def test_a_study_that_fails_after_writing_rows_is_refused_then_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed `study spread --method search` of issue 38 left 5 rows, a manifest and no
    analysis, and `report` read it as a finished run."""
    data, out, cache = _items(tmp_path), tmp_path / "run", tmp_path / "cache.sqlite"
    argv = _study_argv(data, out, cache, "--method", "search")

    def fails(self: SpreadStudy, table: Any, info: Any) -> dict[str, Any]:
        raise RuntimeError("the estimator broke down\nwith a second line")

    monkeypatch.setattr(SpreadStudy, "analyze", fails)
    r = CliRunner().invoke(main, argv)
    assert isinstance(r.exception, RuntimeError)
    assert (out / "results.parquet").exists()  # the first batch's rows were written
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "failed"
    assert manifest["reason"] == "RuntimeError: the estimator broke down"
    _refused(out, "failed before it finished (RuntimeError: the estimator broke down)")
    monkeypatch.undo()
    summary = _complete(CliRunner().invoke(main, argv), out)
    assert summary["n_rows"] == 12
    assert summary["plan"]["cache_hits"] >= 5 * 3  # the first batch was not asked again


def test_a_failed_analysis_reruns_from_the_cache_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out, cache = _items(tmp_path), tmp_path / "run", tmp_path / "cache.sqlite"
    argv = _study_argv(data, out, cache)
    monkeypatch.setattr(SpreadStudy, "analyze", lambda *a: {}["no such key"])
    r = CliRunner().invoke(main, argv)
    assert isinstance(r.exception, KeyError)
    _refused(out, "failed before it finished (KeyError: 'no such key')")
    monkeypatch.undo()
    summary = _complete(CliRunner().invoke(main, argv), out)
    assert summary["plan"]["model_calls"] == 0  # every answer came from the cache


def test_ctrl_c_between_passes_reads_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, out, cache = _items(tmp_path), tmp_path / "run", tmp_path / "cache.sqlite"
    argv = _study_argv(data, out, cache, "--sampler", "adaptive")

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(SpreadStudy, "follow_up", interrupted)
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 130, r.output
    assert json.loads((out / "manifest.json").read_text())["state"] == "interrupted"
    _refused(out, "was interrupted before it finished")
    monkeypatch.undo()
    summary = _complete(CliRunner().invoke(main, argv), out)
    assert summary["n_rows"] == 12


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, *argv], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def _cached(cache: Path) -> int:
    try:
        with sqlite3.connect(cache, timeout=600) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _kill_when(proc: subprocess.Popen[bytes], ready: Any) -> None:
    try:
        while not ready():
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(600)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_kill_9_between_a_studys_passes_reads_as_interrupted(tmp_path: Path) -> None:
    """The first (stratified) pass is written, the adaptive pass is under way: the folder
    holds rows, a summary and a manifest, and is still not a finished run."""
    data, out, cache = _items(tmp_path, 40), tmp_path / "run", tmp_path / "cache.sqlite"
    argv = _study_argv(data, out, cache, "--sampler", "adaptive", "--budget", "80")
    argv[argv.index("scripted:m")] = "scripted:m?delay=0.05"
    _kill_when(_start(argv), lambda: (out / "manifest.json").exists())
    assert json.loads((out / "manifest.json").read_text())["state"] == "running"
    _refused(out, "did not finish (interrupted")
    summary = _complete(CliRunner().invoke(main, argv), out)
    assert summary["n_rows"] == 80


def test_kill_9_before_anything_is_written_reads_as_interrupted(tmp_path: Path) -> None:
    """A plain run killed while it asks the model: the folder holds the steadyeval marker
    and no results yet (`report` said 'no results.parquet')."""
    data, out, cache = _items(tmp_path, 40), tmp_path / "run", tmp_path / "cache.sqlite"
    argv = ["run", "--model", "scripted:m?delay=0.01", "--data", str(data), "--out", str(out),
            "--cache", str(cache), "--no-progress"]  # fmt: skip
    _kill_when(_start(argv), lambda: (out / ".steadyeval-run").exists() and _cached(cache) > 3)
    assert not (out / "results.parquet").exists()
    _refused(out, "did not finish writing its files")
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
