"""Importing steadyeval is cheap: heavy libraries load on first use (issue: cheap imports).

Each check runs in a fresh interpreter, so what earlier tests imported does not count.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

HEAVY = ("torch", "transformers", "pyarrow", "jinja2")


def _loaded_after(code: str, watch: tuple[str, ...]) -> list[str]:
    script = (
        "import json, sys\n"
        + code
        + f"\nprint(json.dumps([m for m in {list(watch)!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_package_and_stats_loads_no_heavy_library() -> None:
    assert _loaded_after("import steadyeval, steadyeval.stats", HEAVY) == []


def test_the_package_itself_loads_not_even_numpy_or_pydantic() -> None:
    assert _loaded_after("import steadyeval", (*HEAVY, "numpy", "pydantic", "scipy")) == []


HELP_ARGV = [
    ["--help"],
    ["study", "--help"],
    *(["study", name, "--help"] for name in ("formats", "sensitivity", "knowledge", "fewshot")),
    ["run", "--help"],
    ["report", "--help"],
    ["compare", "--help"],
    ["import", "--help"],
    ["import", "lm-eval", "--help"],
    ["import", "inspect", "--help"],
    ["cache", "--help"],
    ["tiny-model", "--help"],
]


@pytest.mark.parametrize("argv", HELP_ARGV, ids=[" ".join(a) for a in HELP_ARGV])
def test_help_loads_no_heavy_library(argv: list[str]) -> None:
    code = (
        f"from steadyeval.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
    )
    assert _loaded_after(code, (*HEAVY, "scipy")) == []


@pytest.mark.parametrize(
    "package",
    [
        "steadyeval",
        "steadyeval.studies",
        "steadyeval.studies.formats",
        "steadyeval.studies.sensitivity",
        "steadyeval.studies.knowledge",
        "steadyeval.studies.fewshot",
    ],
)
def test_every_lazy_export_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018


def test_run_stays_the_function_when_the_subpackage_is_imported() -> None:
    import steadyeval
    import steadyeval.run._run

    assert steadyeval.run is sys.modules["steadyeval.run._run"].run
    from steadyeval import run

    assert run is sys.modules["steadyeval.run._run"].run


def test_the_command_table_names_real_commands() -> None:
    from steadyeval.cli._main import COMMANDS, main

    ctx = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
