"""The global ``--log-level``, ``-v`` and ``-q`` options: plain log lines on stderr (progress
in batch jobs, models loading), results alone on stdout, and logging as it was afterwards."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from steadyeval.cli import main
from tests.scripted_backend import register

register()

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR) ")


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"Colour {i}?", "options": ["red", "blue"], "answer": i % 2}
        for i in range(4)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(data: Path, out: Path, *before: str, after: tuple[str, ...] = (), **env: str) -> Result:
    argv = [*before, "run", "--model", "scripted:a", "--data", str(data), "--out", str(out)]
    result = CliRunner().invoke(main, [*argv, *after], env=env or None)
    assert result.exit_code == 0, result.output
    return result


def _levels(stderr: str) -> list[str]:
    return [m.group(1) for line in stderr.splitlines() if (m := LINE.match(line))]


def test_info_lines_by_default_and_results_alone_on_stdout(data: Path, tmp_path: Path) -> None:
    result = _run(data, tmp_path / "run")
    lines = result.stderr.splitlines()
    assert lines and all(LINE.match(line) for line in lines), result.stderr
    assert set(_levels(result.stderr)) == {"INFO"}
    assert " INFO run: 8 requests, 0 cached, 8 to send, 1 model" in lines[0]
    assert " INFO run done: 8/8 requests · sent 8 · cached 0 · " in lines[-1]
    assert not LINE.search(result.stdout) and "rows" in result.stdout
    logger = logging.getLogger("steadyeval")  # the command left logging as it found it
    assert logger.level == logging.NOTSET and logger.propagate
    assert not [h for h in logger.handlers if type(h).__name__ == "_StderrHandler"]


@pytest.mark.parametrize(
    ("before", "env"),
    [
        (["-q"], {}),
        (["--quiet"], {}),
        (["--log-level", "warning"], {}),
        (["--log-level", "ERROR"], {}),
        ([], {"STEADYEVAL_LOG_LEVEL": "warning"}),
        (["-q"], {"STEADYEVAL_LOG_LEVEL": "debug"}),  # the flag wins over the variable
    ],
    ids=["q", "quiet", "warning", "ERROR", "env", "q-over-env"],
)
def test_quiet_levels_print_no_info_lines(
    before: list[str], env: dict[str, str], data: Path, tmp_path: Path
) -> None:
    result = _run(data, tmp_path / "run", *before, **env)
    assert _levels(result.stderr) == [], result.stderr
    assert "rows" in result.stdout


def test_verbose_adds_debug_lines(data: Path, tmp_path: Path) -> None:
    for before in (["-v"], ["--verbose"], ["--log-level", "debug"]):
        result = _run(data, tmp_path / before[-1], *before)
        assert "DEBUG" in _levels(result.stderr) and "INFO" in _levels(result.stderr)
        assert " DEBUG opening model scripted:a" in result.stderr


def test_no_progress_hides_the_progress_lines_only(data: Path, tmp_path: Path) -> None:
    result = _run(data, tmp_path / "run", "-v", after=("--no-progress",))
    assert "opening model scripted:a" in result.stderr
    assert "run:" not in result.stderr and "requests" not in result.stderr


def test_verbose_and_quiet_together_are_refused(data: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["-v", "-q", "run", "--data", str(data)])
    assert result.exit_code == 2 and "cannot be given together" in result.output
    bad = CliRunner().invoke(main, ["--log-level", "loud", "run"])
    assert bad.exit_code == 2 and "'loud' is not one of" in bad.output


def test_a_batch_job_log_shows_start_loading_progress_and_end(
    tiny_gpt2: Path, data: Path, tmp_path: Path
) -> None:
    """As in a batch job: a real process whose stderr is a file, not a terminal."""
    env = {**os.environ, "STEADYEVAL_CACHE": str(tmp_path / "c.sqlite"), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "steadyeval", "run", "--model", f"hf:{tiny_gpt2}"]
    argv += ["--data", str(data), "--out", str(tmp_path / "run")]
    with (tmp_path / "log.txt").open("w") as log:
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    text = (tmp_path / "log.txt").read_text()
    assert done.returncode == 0, text
    messages = [LINE.sub("", line) for line in text.splitlines()]
    assert len(messages) == len(text.splitlines()), text  # every line is a log line
    start = messages.index("run: 8 requests, 0 cached, 8 to send, 1 model")
    loading = messages.index(f"loading model hf:{tiny_gpt2}…")
    loaded = re.compile(rf"loaded model hf:{re.escape(str(tiny_gpt2))} in .+ s \(cpu, \w+\)")
    assert start < loading and loaded.fullmatch(messages[loading + 1]), text
    assert messages[-2].startswith("requests 8/8 (100%) · sent 8 · cached 0 · ")
    assert messages[-1].startswith("run done: 8/8 requests · sent 8 · cached 0 · ")
    assert "INFO" not in done.stdout and "rows" in done.stdout


def test_importing_the_library_configures_no_logging() -> None:
    """Only the command line sets up handlers; a library user's logging stays theirs."""
    code = (
        "import logging, steadyeval, steadyeval.run, steadyeval.models, steadyeval.cli\n"
        "from steadyeval.run._progress import Progress\n"
        "assert not logging.getLogger().handlers, logging.getLogger().handlers\n"
        "logger = logging.getLogger('steadyeval')\n"
        "assert not logger.handlers and logger.level == logging.NOTSET and logger.propagate\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
