"""The formats study's options at their edges (issue 37): --determinism is at most the
questions sampled (100,000,000 was accepted with 4 questions); --split applies to hub data
sets (a split given with a local .json file was ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError
from steadyeval.cli import main
from steadyeval.items import load_squad, load_squad2_items
from steadyeval.studies.formats import FORMATS_STUDY

from ...scripted_backend import register


def _config(**keys: object) -> object:
    return FORMATS_STUDY.load_config(None, {"models": ["hf:x"], "data": "d", **keys})


@pytest.mark.parametrize(
    ("keys", "asked"),
    [
        ({"answerable": 2, "unanswerable": 2, "determinism": 5}, 4),
        ({"answerable": 2, "unanswerable": 2, "determinism": 100_000_000}, 4),
        ({"answerable": 5, "unanswerable": 3, "limit": 2, "determinism": 5}, 4),
        ({"determinism": 601}, 600),
    ],
)
def test_determinism_is_at_most_the_sample(keys: dict[str, int], asked: int) -> None:
    with pytest.raises(ConfigError, match=rf"determinism: .*the sample holds {asked} "):
        _config(**keys)


def test_determinism_up_to_the_sample_is_accepted() -> None:
    assert _config(answerable=2, unanswerable=2, determinism=4).determinism == 4  # type: ignore[attr-defined]
    assert _config(answerable=5, unanswerable=3, limit=2, determinism=4).determinism == 4  # type: ignore[attr-defined]


def test_cli_determinism_names_the_flag(squad_file: Path) -> None:
    argv = ["study", "formats", "--model", "hf:x", "--data", str(squad_file)]
    argv += ["--answerable", "2", "--unanswerable", "2", "--determinism", "100000000"]
    result = CliRunner().invoke(main, [*argv, "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "flag --determinism" in result.output and "the sample holds 4" in result.output


def test_a_split_with_a_local_file_is_an_error(squad_file: Path) -> None:
    for load in (load_squad, load_squad2_items):
        with pytest.raises(ConfigError, match=r"split 'nosuch' applies to a hub data set; .*"):
            load(squad_file, split="nosuch")  # type: ignore[operator]
    assert load_squad(squad_file).questions  # no split: the file, as before


def test_cli_split_with_a_local_file(squad_file: Path) -> None:
    register()  # scripted:NAME, a test backend
    argv = [
        "study",
        "formats",
        "--model",
        "scripted:m",
        "--data",
        str(squad_file),
        "--split",
        "dev",
    ]
    argv += ["--answerable", "1", "--unanswerable", "1", "--dry-run"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: split 'dev' applies to a hub data set"), line
    assert "is a local file, which has no splits" in line
