"""A run config's model specs: a folder named beside the config file (issue 39 review)."""

from __future__ import annotations

from pathlib import Path

from steadyeval.run import load_run_config


def test_only_local_backends_take_a_folder_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / "cfg" / "tiny").mkdir(parents=True)
    long_name = "a" * 5000  # no file system takes it: not a folder, and no OSError
    (tmp_path / "cfg" / "c.yaml").write_text(
        'models: ["openai:tiny?base_url=http://127.0.0.1:8000/v1", "hf:tiny", '
        f'"vllm:tiny", "hf:{long_name}"]\ndata: x.jsonl\n'
    )
    specs = load_run_config(tmp_path / "cfg" / "c.yaml").models
    assert specs[0].name == "tiny"  # a server's model name stays as written
    assert specs[1].name == specs[2].name == str(tmp_path / "cfg" / "tiny")
    assert specs[3].name == long_name
