"""Property-based fuzzing of every entry point that reads outside input (issue 37).

Each target (``targets_*.py``) runs in its own subprocess (``_runner.py``): Hypothesis draws
hostile or odd inputs from a fixed seed, and each must either succeed or give steadyeval's own
error (through the CLI: exit 2 and one ``error:`` line), never another exception. The
subprocess's peak resident memory (its own ``getrusage`` at exit) must stay under
:data:`MAX_RSS`, and an address-space limit keeps a regression from eating the machine.

The suite runs a short budget (``STEADYEVAL_FUZZ_EXAMPLES``, default 25 per target); a long
run sets it higher, e.g. ``STEADYEVAL_FUZZ_EXAMPLES=2000 python -m pytest tests/fuzz -n 2``,
and ``STEADYEVAL_FUZZ_SEED`` changes the seed. Time is only a hang guard (generous).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz._registry import all_targets

ROOT = Path(__file__).resolve().parents[2]
#: Peak resident memory a target's process may reach (the interpreter and steadyeval's
#: imports take about 200-300 MB of it).
MAX_RSS = 1 << 30
#: Address space the process may map: far above any honest target, well under the machine.
ADDRESS_SPACE = 6 << 30
EXAMPLES = int(os.environ.get("STEADYEVAL_FUZZ_EXAMPLES", "25"))
SEED = int(os.environ.get("STEADYEVAL_FUZZ_SEED", "20261206"))
HANG_GUARD_S = 1800 + EXAMPLES * 10


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.mark.parametrize("name", sorted(all_targets()))
def test_fuzz_target(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fuzz._runner",
            name,
            "--examples",
            str(EXAMPLES),
            "--seed",
            str(SEED),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limit,
    )
    try:
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"fuzz target {name} still running after {HANG_GUARD_S} s (a hang?)")
    lines = out.decode(errors="replace").strip().splitlines()
    assert lines, f"no report (exit {proc.returncode}):\n{err.decode(errors='replace')[-4000:]}"
    report = json.loads(lines[-1])
    failure = report["failure"]
    assert failure is None, (
        f"{name} ({report['entry']}) after {report['examples']} examples:\n"
        f"input: {failure['input']}\n{failure['error']}\n{failure['traceback']}"
    )
    assert proc.returncode == 0, err.decode(errors="replace")[-4000:]
    assert report["examples"] > 0
    peak = report["peak_rss_bytes"]
    assert peak < MAX_RSS, f"{name}: peak RSS {peak / 2**20:,.0f} MiB"
