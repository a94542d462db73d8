"""``steadyeval run``'s Ray flags (issue 37): --address or --workers without --executor ray
is an error naming the flag (--address x was accepted and ignored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval.cli import main


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--address", "x"], "--address"),
        (["--workers", "3"], "--workers"),
        (["--executor", "local", "--address", "auto"], "--address"),
    ],
)
def test_ray_flags_need_the_ray_executor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], flag: str
) -> None:
    monkeypatch.chdir(tmp_path)
    item = {"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0}
    Path("items.jsonl").write_text(json.dumps(item) + "\n")
    argv = ["run", "--model", "hf:./nowhere", "--data", "items.jsonl", *extra, "--dry-run"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {flag} applies only to the Ray executor"), line
    assert "--executor ray" in line
