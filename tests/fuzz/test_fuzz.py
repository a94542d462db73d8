"""Property-based fuzzing of every entry point that reads outside input (issue 37).

Each target (``targets_*.py``) draws hostile or odd inputs with Hypothesis from a fixed seed,
and each input must either succeed or give steadyeval's own error (through the CLI: exit 2
and one ``error:`` line), never another exception. Targets run in subprocesses
(``_runner.py``, one per shard of targets, so imports are paid once per shard) whose peak
resident memory (their own ``getrusage``, reported after each target) must stay under
:data:`MAX_RSS`; an address-space limit keeps a regression from eating the machine.

The suite runs a short budget (``STEADYEVAL_FUZZ_EXAMPLES``, default 15 per target); a long
run sets it higher, e.g. ``STEADYEVAL_FUZZ_EXAMPLES=2000 python -m pytest tests/fuzz -n 2``,
and ``STEADYEVAL_FUZZ_SEED`` changes the seed. One target alone:
``python -m tests.fuzz._runner NAME --examples 500``. Time is only a hang guard (generous).
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
EXAMPLES = int(os.environ.get("STEADYEVAL_FUZZ_EXAMPLES", "15"))
SEED = int(os.environ.get("STEADYEVAL_FUZZ_SEED", "20261206"))
HANG_GUARD_S = 1800 + EXAMPLES * 10


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


#: Targets run in this many subprocesses (each pays the interpreter and imports once).
SHARDS = 2


def _shard(k: int) -> list[str]:
    return sorted(all_targets())[k::SHARDS]


@pytest.mark.parametrize("shard", range(SHARDS))
def test_fuzz_targets(shard: int, tmp_path: Path) -> None:
    names = _shard(shard)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    argv = [sys.executable, "-m", "tests.fuzz._runner", *names]
    argv += ["--examples", str(EXAMPLES), "--seed", str(SEED)]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_limit,
    )  # fmt: skip
    guard = HANG_GUARD_S * len(names)
    try:
        out, err = proc.communicate(timeout=guard)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    reports = [json.loads(line) for line in out.decode(errors="replace").splitlines() if line]
    problems = []
    for report in reports:
        name, failure = report["target"], report["failure"]
        if failure is not None:
            problems.append(
                f"{name} ({report['entry']}) after {report['examples']} examples:\n"
                f"input: {failure['input']}\n{failure['error']}\n{failure['traceback']}"
            )
        elif report["peak_rss_bytes"] >= MAX_RSS:
            problems.append(f"{name}: peak RSS {report['peak_rss_bytes'] / 2**20:,.0f} MiB")
        elif report["examples"] == 0:
            problems.append(f"{name}: ran no example")
    done = [r["target"] for r in reports]
    if done != names:
        missing = names[len(done)]
        problems.append(
            f"{missing}: no report (a crash, a memory limit, or still running after {guard} s: "
            f"a hang?); exit {proc.returncode}\n{err.decode(errors='replace')[-4000:]}"
        )
    assert not problems, "\n\n".join(problems)


def test_every_target_is_in_one_shard() -> None:
    shards = [_shard(k) for k in range(SHARDS)]
    assert sorted(n for shard in shards for n in shard) == sorted(all_targets())
