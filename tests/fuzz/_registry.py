"""Fuzz targets: one per public entry point that reads outside input.

A target is a Hypothesis strategy of hostile-or-odd inputs and a call that feeds one input
to a public entry point (a CLI command run in process, a public loader or importer). The
property every target checks (``check``): the call either succeeds, or raises steadyeval's
own error type (:class:`~steadyeval.SteadyevalError`) with a short message; through the CLI,
exit code 0, or 2 with one ``error:`` line and no traceback. Peak memory is checked by the
runner, which runs each target in its own subprocess (``_runner.py``, ``test_fuzz.py``).

Targets live in ``targets_*.py`` modules (one per area); :func:`all_targets` imports them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import strategies as st

from steadyeval import SteadyevalError

__all__ = [
    "OUTCOMES",
    "Target",
    "all_targets",
    "check_cli",
    "check_message",
    "expect_own_error",
    "target",
]

#: The longest error message a target accepts (values echoed in messages are cut).
MAX_MESSAGE = 1200


@dataclass(frozen=True)
class Target:
    """One fuzz target: ``call(example, folder)`` feeds an example drawn from ``strategy``
    to the entry point ``entry``, in the empty folder ``folder`` (the working directory)."""

    name: str
    entry: str
    strategy: st.SearchStrategy[Any]
    call: Callable[[Any, Path], None]


_TARGETS: dict[str, Target] = {}
#: How the examples ended ("ok": accepted, "error": steadyeval's own error), for the report.
OUTCOMES: Counter[str] = Counter()


def target(
    name: str, entry: str, strategy: st.SearchStrategy[Any]
) -> Callable[[Callable[[Any, Path], None]], Callable[[Any, Path], None]]:
    """Register the decorated function as the fuzz target ``name``."""

    def register(call: Callable[[Any, Path], None]) -> Callable[[Any, Path], None]:
        if name in _TARGETS:
            raise ValueError(f"fuzz target {name!r} is registered twice")
        _TARGETS[name] = Target(name, entry, strategy, call)
        return call

    return register


def all_targets() -> dict[str, Target]:
    """Every registered target (imports each ``targets_*`` module of this package once)."""
    package = Path(__file__).parent
    for info in pkgutil.iter_modules([str(package)]):
        if info.name.startswith("targets_"):
            importlib.import_module(f"{__package__}.{info.name}")
    return dict(sorted(_TARGETS.items()))


def check_message(exc: SteadyevalError) -> None:
    """A steadyeval error that is fit to print: not empty, short, located on one line."""
    text = str(exc)
    assert text.strip(), f"{type(exc).__name__} with an empty message"
    assert len(text) <= MAX_MESSAGE, f"message of {len(text):,} characters: {text[:300]}..."


def check_cli(argv: Sequence[str], *, input: str | bytes | None = None) -> int:
    """Run ``steadyeval ARGV`` in process; assert exit 0, or exit 2 with one ``error:`` line
    (a traceback, another exit code or a long message fails). Returns the exit code."""
    from steadyeval.cli import main

    result = CliRunner().invoke(main, list(argv), input=input)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise exc  # the runner reports it with its traceback
    out = result.output
    assert "Traceback" not in out, out[-3000:]
    if result.exit_code == 0:
        OUTCOMES["ok"] += 1
        return 0
    assert result.exit_code == 2, f"exit {result.exit_code}: {out[-2000:]}"
    low = out.lower()  # steadyeval's "error: ..." or click's usage "Error: Invalid value ..."
    lines = out[low.rindex("error") :].rstrip("\n").splitlines() if "error" in low else []
    assert lines, f"exit 2 without an error line: {out[-2000:]}"
    assert len(lines) <= 7 and all(len(line) <= 600 for line in lines), out[-3000:]
    OUTCOMES["error"] += 1
    return 2


def expect_own_error(call: Callable[[], object]) -> None:
    """Call ``call``: returning is fine, a :class:`SteadyevalError` is checked with
    :func:`check_message`, anything else propagates (a failure of the property)."""
    try:
        call()
    except SteadyevalError as exc:
        check_message(exc)
        OUTCOMES["error"] += 1
    else:
        OUTCOMES["ok"] += 1
