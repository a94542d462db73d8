"""A run folder written by the release before model specs were canonical (its config.json
lists a spec's options as written, and its marker hashes that config) resumes under the same
config: the specs, canonical, are the same run's (CHANGELOG, issue 39)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import steadyeval as se
from steadyeval import ConfigError
from steadyeval.run._folder import MARKER, config_key
from tests.scripted_backend import register

register()

AS_WRITTEN = "Scripted:m?b=2&a=1"  # options out of order, the backend upper-case


def _items(path: Path) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"Item {i}?", "options": ["x", "y"], "answer": i % 2}
        for i in range(6)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _legacy(out: Path, models: list[str]) -> None:
    """Make ``out`` (a finished run) look as the previous release wrote it: config.json
    lists ``models`` as given, and the marker's key hashes that config."""
    recorded: dict[str, Any] = json.loads((out / "config.json").read_text())
    recorded["models"] = models
    (out / "config.json").write_text(json.dumps(recorded))
    old = {k: v for k, v in recorded.items() if k not in ("run_id", "n_items")}
    marker = json.loads((out / MARKER).read_text())
    marker["config_key"] = config_key(old, "")
    (out / MARKER).write_text(json.dumps(marker))


def test_a_legacy_folder_of_the_same_config_resumes(tmp_path: Path) -> None:
    config = {"data": str(_items(tmp_path / "items.jsonl")), "models": [AS_WRITTEN]}
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    first = se.run_config(config, out=out, cache=cache)
    assert json.loads((out / "config.json").read_text())["models"] == ["scripted:m?a=1&b=2"]
    _legacy(out, [AS_WRITTEN])
    again = se.run_config(config, out=out, cache=cache)  # no --overwrite needed
    assert again.summary["run_id"] == first.summary["run_id"]
    assert again.summary["plan"]["model_calls"] == 0  # every response from the cache
    # the folder now holds the canonical config and its key: it resumes as any other
    assert json.loads((out / "config.json").read_text())["models"] == ["scripted:m?a=1&b=2"]
    se.run_config(config, out=out, cache=cache)


@pytest.mark.parametrize(
    "recorded",
    [
        ["scripted:m?b=2&a=3"],  # another option value: another config
        ["scripted:other?b=2&a=1"],
        ["scripted:m?b=2&a=1", "scripted:n"],
    ],
)
def test_a_legacy_folder_of_another_config_is_still_refused(
    tmp_path: Path, recorded: list[str]
) -> None:
    config = {"data": str(_items(tmp_path / "items.jsonl")), "models": [AS_WRITTEN]}
    out = tmp_path / "run"
    se.run_config(config, out=out, cache=tmp_path / "cache.sqlite")
    _legacy(out, recorded)
    with pytest.raises(ConfigError, match="different config; pass --overwrite"):
        se.run_config(config, out=out, cache=tmp_path / "cache.sqlite")


def test_a_legacy_key_that_config_json_does_not_hash_to_is_refused(tmp_path: Path) -> None:
    """The marker must be the hash of the recorded config: a config.json edited (or another
    run's) does not make a folder this run's."""
    config = {"data": str(_items(tmp_path / "items.jsonl")), "models": [AS_WRITTEN]}
    out = tmp_path / "run"
    se.run_config(config, out=out, cache=tmp_path / "cache.sqlite")
    _legacy(out, [AS_WRITTEN])
    recorded = json.loads((out / "config.json").read_text())
    recorded["seed"] = 7
    (out / "config.json").write_text(json.dumps(recorded))
    with pytest.raises(ConfigError, match="different config"):
        se.run_config(config, out=out, cache=tmp_path / "cache.sqlite")
