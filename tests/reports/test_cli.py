"""``steadyeval report``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval.cli import main


def test_report_command_formats_and_bounds(scripted_run: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["report", str(scripted_run), "--max-rows", "20"])
    assert done.exit_code == 0, done.output
    page = (scripted_run / "report.html").read_text()
    assert done.output.startswith(f"wrote {scripted_run / 'report.html'} (")
    assert "at most 20 rows" in page
    out = tmp_path / "r.json"
    done = runner.invoke(
        main,
        [
            "report",
            str(scripted_run),
            "--format",
            "json",
            "-o",
            str(out),
            "--max-chars",
            "10",
            "--seed",
            "3",
        ],
    )
    assert done.exit_code == 0, done.output
    items = next(
        b
        for s in json.loads(out.read_text())["sections"]
        for b in s["blocks"]
        if b["type"] == "item_table"
    )
    assert max(len(r[4] or "") for r in items["rows"]) == 10
    done = runner.invoke(
        main, ["report", str(scripted_run), "--format", "md", "-o", str(tmp_path / "r.md")]
    )
    assert done.exit_code == 0 and (tmp_path / "r.md").read_text().startswith("# steadyeval run")


def test_report_command_errors(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert done.exit_code == 2
    assert "no results.parquet" in done.output
    done = CliRunner().invoke(main, ["report", str(tmp_path), "--max-rows", "0"])
    assert done.exit_code == 2 and "Invalid value for '--max-rows'" in done.output


def test_report_output_dash_is_stdout(
    scripted_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o -`` writes the report to stdout (no file named ``-``, no "wrote" line)."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    done = runner.invoke(main, ["report", str(scripted_run), "--format", "json", "-o", "-"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["title"].startswith("steadyeval run")
    done = runner.invoke(main, ["report", str(scripted_run), "--format", "md", "--output", "-"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("# steadyeval run") and "wrote " not in done.output
    done = runner.invoke(main, ["report", str(scripted_run), "-o", "-"])
    assert done.exit_code == 0 and done.output.lstrip().lower().startswith("<!doctype html")
    assert not (tmp_path / "-").exists()
    shown = runner.invoke(main, ["report", "--help"], terminal_width=300).output
    assert "- writes the report to stdout" in shown
    # ./- is a file named -, as for other tools (pathlib reads Path("./-") as "-")
    done = runner.invoke(main, ["report", str(scripted_run), "--format", "md", "-o", "./-"])
    assert done.exit_code == 0 and done.output.startswith("wrote "), done.output
    assert (tmp_path / "-").read_text(encoding="utf-8").startswith("# steadyeval run")


def test_report_to_a_closed_stdout_is_an_error(scripted_run: Path) -> None:
    """``-o -`` with stdout closed (``>&-``): Python has no sys.stdout, and the report was
    dropped with exit status 0."""
    command = ["report", str(scripted_run), "--format", "md", "-o", "-"]
    done = subprocess.run(
        [sys.executable, "-m", "steadyeval", *command],
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 2, done.stderr
    assert "--output -: stdout is closed; give a file to write instead" in done.stderr
