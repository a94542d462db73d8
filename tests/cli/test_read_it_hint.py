"""The end-of-run hint is a command to paste into a shell (issue 37): its run folder is
shell-quoted (``read it: steadyeval report /tmp/x y`` named two arguments)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval.cli import main

from ..scripted_backend import register


@pytest.mark.parametrize("name", ["my run", "it's", "a;b $(x)"])
def test_the_report_hint_quotes_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    register()  # scripted:NAME, a test backend
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEADYEVAL_CACHE", str(tmp_path / "cache.sqlite"))
    item = {"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0}
    Path("items.jsonl").write_text(json.dumps(item) + "\n")
    out = tmp_path / name
    argv = ["run", "--model", "scripted:m", "--data", "items.jsonl", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    (hint,) = [line for line in result.output.splitlines() if line.startswith("read it: ")]
    assert shlex.split(hint.removeprefix("read it: ")) == ["steadyeval", "report", str(out)]
