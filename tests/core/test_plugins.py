"""Installed packages extend steadyeval through entry points: ``steadyeval.plugins`` modules
register backends, scoring modes, loaders or studies; ``steadyeval.studies`` names studies."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import steadyeval._lazy as lazy
from steadyeval import ConfigError, load_items
from steadyeval.studies import _protocol


def _entry_points(points: dict[str, list[tuple[str, str]]]) -> object:
    def fake(*, group: str) -> list[importlib.metadata.EntryPoint]:
        return [importlib.metadata.EntryPoint(n, v, group) for n, v in points.get(group, [])]

    return fake


def test_a_plugin_module_is_imported_when_a_registry_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = {lazy.PLUGIN_GROUP: [("toy", "tests.core._plugin_toy")]}
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(points))
    monkeypatch.setattr(lazy, "_plugins_loaded", False)
    path = tmp_path / "lines.txt"
    path.write_text("one?\ntwo?\n")
    items = load_items(path, loader="toy-lines", limit=1)
    assert [i.question for i in items] == ["one?"]


def test_a_broken_plugin_warns_and_the_rest_works(monkeypatch: pytest.MonkeyPatch) -> None:
    points = {lazy.PLUGIN_GROUP: [("broken", "tests.core.no_such_plugin_module")]}
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(points))
    monkeypatch.setattr(lazy, "_plugins_loaded", False)
    with (
        pytest.warns(UserWarning, match="plug-in 'broken'"),
        pytest.raises(ConfigError, match="unknown data loader 'nope'"),
    ):
        load_items("x.jsonl", loader="nope")


def test_a_study_entry_point_that_is_not_a_study_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    points = {_protocol.ENTRY_POINT_GROUP: [("not-a-study", "steadyeval._lazy:load_entry")]}
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(points))
    monkeypatch.setattr(_protocol, "_entry_points_read", False)
    monkeypatch.setattr(lazy, "_plugins_loaded", True)
    monkeypatch.setattr(_protocol, "_REGISTRY", dict(_protocol._REGISTRY))
    assert "not-a-study" in _protocol.study_names()
    with pytest.raises(ConfigError, match="is not a Study instance"):
        _protocol.get_study("not-a-study")
    missing = {_protocol.ENTRY_POINT_GROUP: [("gone", "no_such_package.mod:STUDY")]}
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(missing))
    monkeypatch.setattr(_protocol, "_entry_points_read", False)
    with pytest.raises(ConfigError, match="study 'gone' is not available"):
        _protocol.get_study("gone")
