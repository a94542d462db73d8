"""``steadyeval study``: a group; each study's command lives in ``_study_<name>.py``."""

from __future__ import annotations

import importlib

import click


@click.group("study")
def study_group() -> None:
    """Run one of the studies (each writes a run directory with its analysis)."""


for _name in ("formats", "sensitivity", "knowledge", "fewshot"):
    try:
        _module = importlib.import_module(f"steadyeval.cli._study_{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name != f"steadyeval.cli._study_{_name}":
            raise
        continue
    study_group.add_command(_module.command)
