"""The public surface: exports, docstrings, and the runnable examples in docs/stats.md."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import steadyeval.stats as stats_module
from steadyeval import stats

DOC = Path(__file__).resolve().parents[2] / "docs" / "stats.md"


def test_all_names_exist_and_are_documented() -> None:
    for name in stats.__all__:
        obj = getattr(stats_module, name)
        assert inspect.getdoc(obj), name


FUNCTIONS = [n for n in stats.__all__ if inspect.isfunction(getattr(stats, n))] + [
    "KFold",
    "MultiSplits",
    "MDLSplits",
]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_public_callables_state_assumptions_in_notes(name: str) -> None:
    doc = inspect.getdoc(getattr(stats, name)) or ""
    assert "Notes\n-----" in doc, f"{name} has no Notes section"
    assert "Examples\n--------" in doc, f"{name} has no Examples section"


def test_every_public_callable_appears_in_docs() -> None:
    text = DOC.read_text()
    missing = [n for n in FUNCTIONS if f"`{n}" not in text]
    assert not missing


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_docs_have_examples() -> None:
    assert len(_python_blocks()) >= 10


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_docs_example_runs(index: int) -> None:
    code = _python_blocks()[index]
    exec(compile(code, f"docs/stats.md block {index}", "exec"), {"__name__": "__docs__"})


def _docstring_examples() -> list[str]:
    return [
        n
        for n in stats.__all__
        if "Examples\n--------" in (inspect.getdoc(getattr(stats, n)) or "")
    ]


@pytest.mark.parametrize("name", _docstring_examples())
def test_docstring_examples_run(name: str) -> None:
    """Each public docstring's Examples section runs as a doctest and prints what it shows."""
    import doctest

    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(getattr(stats, name), name, globs={}):
        runner.run(test, out=lambda _: None)
    assert runner.failures == 0, f"{name}: {runner.failures} of {runner.tries} examples failed"
