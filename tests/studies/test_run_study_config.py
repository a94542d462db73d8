"""``run_study``'s config argument (issue 37): a value of another type (None, a list) is a
ConfigError saying which types are accepted, never a bare TypeError."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from steadyeval import ConfigError, DataError
from steadyeval.studies import run_study, study_names


@pytest.mark.parametrize("study", study_names())
@pytest.mark.parametrize("config", [None, [1, 2], 5, b"x", ("a", "b")])
def test_a_config_of_another_type_is_a_config_error(study: str, config: object) -> None:
    with pytest.raises(ConfigError, match=rf"study '{study}': config is \w+; expected a \w+Config"):
        run_study(study, config)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("models", "said"),
    [
        (["hf:./m", "hf:./m"], "models.1: model 'hf:./m' is listed twice (also models[0])"),
        (["hf:./m?b=1&a=2", "hf:./m?a=2&b=1"], "is listed twice"),  # one spec, two spellings
    ],
)
def test_a_study_config_checks_its_models_before_any_loads(models: list[str], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        run_study("formats", {"models": models, "data": "x.jsonl"}, dry_run=True)


def test_flags_and_files_name_an_unknown_backend_a_python_config_may_name_it_later() -> None:
    from steadyeval.studies import get_study

    study = get_study("formats")
    with pytest.raises(ConfigError, match=re.escape("models.0: unknown backend 'nope'")):
        study.load_config(None, {"models": ["nope:./m"], "data": "x.jsonl"})
    # built in Python, a config may name a backend that is registered before it runs
    assert str(study.config(models=["later:./m"], data="x.jsonl").models[0]) == "later:./m"


@pytest.mark.parametrize(
    ("study", "config"),
    [
        ("spread", {"data": "missing.jsonl"}),
        ("sensitivity", {"data": "missing-probes"}),
        ("formats", {"data": "missing.json"}),
    ],
)
def test_a_wrong_data_file_is_reported_before_any_model_opens(
    study: str, config: dict[str, str], tmp_path: Path
) -> None:
    # the model folder does not exist either: opening it first would report the model
    with pytest.raises(DataError, match="missing"):
        run_study(study, {"models": [f"hf:{tmp_path}/no-model"], **config}, dry_run=True)
