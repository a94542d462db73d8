"""``steadyeval cache clear`` (issue 37): a model the cache does not hold is an error naming
the models it holds (was "deleted 0 responses", exit 0); without --yes and without a terminal
it says to pass --yes (was click's "Aborted!", exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError
from steadyeval.cache import ResponseCache
from steadyeval.cli import main
from steadyeval.requests import GenerateResponse


def _cache(path: Path, models: list[str]) -> Path:
    with ResponseCache(path) as c:
        c.put_many([(f"k{i}", m, "generate", GenerateResponse("x")) for i, m in enumerate(models)])
    return path


def test_an_unknown_model_names_the_models_held(tmp_path: Path) -> None:
    path = _cache(tmp_path / "c.sqlite", ["hf:a", "hf:b"])
    with ResponseCache(path) as c:
        with pytest.raises(ConfigError, match=r"no responses of model 'nosuch'.*: hf:a, hf:b \("):
            c.clear("nosuch")
        assert len(c) == 2  # nothing deleted
        assert c.clear("hf:a") == 1


def test_the_list_of_models_is_cut(tmp_path: Path) -> None:
    path = _cache(tmp_path / "c.sqlite", [f"hf:{i:02d}-" + "x" * 300 for i in range(11)])
    with ResponseCache(path) as c, pytest.raises(ConfigError) as caught:
        c.clear("y" * 5000)
    text = str(caught.value)
    assert "hf:00-" in text and "hf:07-" in text and "hf:08-" not in text
    assert " and 3 more " in text and len(text) < 1200


def test_an_empty_cache_says_it_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    with ResponseCache(path) as c, pytest.raises(ConfigError, match="holds no responses at all"):
        c.clear("hf:a")


def test_cli_unknown_model_is_one_error_line(tmp_path: Path) -> None:
    path = _cache(tmp_path / "c.sqlite", ["hf:a"])
    r = CliRunner().invoke(
        main, ["cache", "clear", "--cache", str(path), "--model", "nosuch", "--yes"]
    )
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert line.startswith("error: ") and "'nosuch'" in line and "hf:a" in line
    assert "deleted" not in r.output


def test_cli_without_yes_and_without_a_terminal(tmp_path: Path) -> None:
    path = _cache(tmp_path / "c.sqlite", ["hf:a"])
    r = CliRunner().invoke(main, ["cache", "clear", "--cache", str(path)], input="y\n")
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert line.startswith("error: ") and "pass --yes" in line and "not interactive" in line
    with ResponseCache(path) as c:
        assert len(c) == 1  # nothing deleted
