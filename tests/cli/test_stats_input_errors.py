"""An input error raised by steadyeval.stats (which imports nothing else of the project, so
its errors are not SteadyevalErrors) is one ``error:`` line with exit 2 through the CLI, not
a traceback (``compare --confidence nan`` passed click's range check)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from steadyeval.cli import main
from tests.scripted_backend import register

register()


def test_compare_confidence_nan_is_one_error_line(tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"{i}?", "options": ["a", "b"], "answer": 0})
            + "\n"
            for i in range(6)
        )
    )
    out = tmp_path / "run"
    argv = ["run", "--model", "scripted:m", "--data", str(data), "--out", str(out)]
    assert CliRunner().invoke(main, argv).exit_code == 0
    result = CliRunner().invoke(main, ["compare", str(out), str(out), "--confidence", "nan"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith("error: confidence must lie in")
