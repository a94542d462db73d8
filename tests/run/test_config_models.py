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


def test_one_folder_under_two_names_is_listed_twice_with_its_line(tmp_path: Path) -> None:
    import pytest

    from steadyeval import ConfigError

    (tmp_path / "cfg" / "tiny").mkdir(parents=True)
    (tmp_path / "cfg" / "d.yaml").write_text(
        f'data: x.jsonl\nmodels: ["hf:tiny", "hf:{tmp_path}/cfg/../cfg/tiny"]\n'
    )
    with pytest.raises(ConfigError, match=r"d\.yaml, line 2: models\.1: .* is listed twice"):
        load_run_config(tmp_path / "cfg" / "d.yaml")


def test_a_spec_built_in_python_is_checked_as_text_is() -> None:
    import pytest
    from pydantic import ValidationError

    from steadyeval.models import ModelSpec
    from steadyeval.run import RunConfig

    for bad, said in [
        (ModelSpec("hf", "", {}), "the model name is empty"),
        (ModelSpec("hf", "a\x00b", {}), "control character"),
        (ModelSpec("hf", "x", {"dtype": 5}), "must be text"),  # type: ignore[dict-item]
    ]:
        with pytest.raises(ValidationError, match=said):
            RunConfig(data="x.jsonl", models=[bad])
    (spec,) = RunConfig(data="x.jsonl", models=[ModelSpec("HF", "x", {})]).models
    assert str(spec) == "hf:x"


def test_an_empty_spec_says_it_is_empty(tmp_path: Path) -> None:
    import pytest

    from steadyeval import ConfigError

    (tmp_path / "e.yaml").write_text('models: [""]\ndata: x.jsonl\n')
    with pytest.raises(ConfigError, match=r"e\.yaml, line 1: models\.0: .*a model spec is empty"):
        load_run_config(tmp_path / "e.yaml")
