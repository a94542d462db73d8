"""A generation budget the model's positions cannot hold is refused up front, in the dry run
and the run alike (it was an IndexError deep in torch's embedding, after the model loaded)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from steadyeval.cli import main


def _config(tmp: Path, model: str, max_new_tokens: int) -> Path:
    (tmp / "items.jsonl").write_text(
        json.dumps({"id": "a", "question": "Two and two?", "answer": "4"}) + "\n"
    )
    path = tmp / "run.yaml"
    path.write_text(
        f"data: items.jsonl\nmodels: ['{model}']\nconditions:\n"
        f"  - {{name: free, format: free, scoring: generate, "
        f"generation: {{max_new_tokens: {max_new_tokens}}}}}\n"
    )
    return path


def test_a_budget_past_the_position_table_is_refused(tmp_path: Path, tiny_gpt2: Path) -> None:
    positions = json.loads((tiny_gpt2 / "config.json").read_text())["n_positions"]
    config = _config(tmp_path, f"hf:{tiny_gpt2}", positions)
    for extra in (["--dry-run"], ["--out", str(tmp_path / "run")]):
        result = CliRunner().invoke(main, ["run", str(config), *extra])
        assert result.exit_code == 2, result.output
        assert f"at most {positions - 1:,}" in result.output and "Traceback" not in result.output
    ok = _config(tmp_path, f"hf:{tiny_gpt2}", positions - 1)
    assert CliRunner().invoke(main, ["run", str(ok), "--dry-run"]).exit_code == 0


def test_chat_without_a_chat_template_is_refused_by_the_dry_run(tmp_path: Path) -> None:
    from steadyeval.models import build_tiny_model

    tiny_t5 = build_tiny_model(tmp_path / "t5", "t5")
    (tmp_path / "items.jsonl").write_text(
        json.dumps({"id": "a", "question": "Two and two?", "answer": "4"}) + "\n"
    )
    config = tmp_path / "run.yaml"
    config.write_text(
        f"data: items.jsonl\nmodels: ['hf-seq2seq:{tiny_t5}']\nconditions:\n"
        "  - {name: free, format: free, scoring: generate, chat: true}\n"
    )
    for extra in (["--dry-run"], ["--out", str(tmp_path / "run")]):
        result = CliRunner().invoke(main, ["run", str(config), *extra])
        assert result.exit_code == 2 and "has none; set chat: false" in result.output, result.output
