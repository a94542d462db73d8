"""Run fuzz targets: ``python -m tests.fuzz._runner NAME [NAME ...] --examples N --seed S``
(``--all`` for every target).

Prints one JSON line per target, as each ends: the target, how many examples ran, how they
ended, the failure (its input and traceback) if one was found, and the process's peak
resident memory so far (monotone: the first target whose line crosses a bound is the one
that pushed it there). Exit code 0 when the property held for every example of every
target, 1 when not. ``test_fuzz.py`` runs this in subprocesses (one per shard of targets,
so the interpreter and imports are paid once per shard, not once per target).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests._memory import peak_rss_bytes
from tests.fuzz._registry import OUTCOMES, all_targets


def run(name: str, examples: int, seed_value: int) -> dict[str, Any]:
    spec = all_targets()[name]
    OUTCOMES.clear()
    count = [0]
    failure: dict[str, str] = {}
    home = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,  # no wall-clock limit per example: a busy machine is not a bug
        database=None,
        derandomize=False,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(example=spec.strategy)
    def prop(example: Any) -> None:
        count[0] += 1
        folder = Path(tempfile.mkdtemp(dir=home))
        os.chdir(folder)
        try:
            spec.call(example, folder)
        except BaseException as exc:
            if not failure or len(repr(example)) < len(failure["input"]):
                failure.update(
                    input=repr(example)[:4000],
                    error=f"{type(exc).__name__}: {str(exc)[:2000]}",
                    traceback="".join(traceback.format_exc(limit=-12))[-6000:],
                )
            raise

    with contextlib.suppress(BaseException):  # a failure is reported below
        prop()
    peak = peak_rss_bytes()
    return {
        "target": name,
        "entry": spec.entry,
        "examples": count[0],
        "outcomes": dict(OUTCOMES),
        "failure": failure or None,
        "peak_rss_bytes": peak,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all", action="store_true", help="every registered target")
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = sorted(all_targets()) if args.all else args.names
    unknown = sorted(set(names) - set(all_targets()))
    if unknown or not names:
        parser.error(f"unknown targets {unknown}; known: {', '.join(sorted(all_targets()))}")
    from tests import scripted_backend

    scripted_backend.register()
    failed = False
    start = Path.cwd()
    for name in names:
        os.chdir(start)
        report = run(name, args.examples, args.seed)
        failed = failed or report["failure"] is not None
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
