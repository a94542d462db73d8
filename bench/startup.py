"""Start-up time: ``steadyeval --help`` and ``steadyeval study formats --help`` against
``lm_eval --help``, measured in the same run (target: ratio ≤ 1.0).

    python bench/startup.py              # 9 rounds, commands interleaved; medians
    python bench/startup.py --rounds 21

Each command is the console script installed next to this interpreter (so no shell shim is
timed), run in a fresh process per round; rounds interleave the commands so a busy machine
slows all of them alike. The first round warms the file cache and is not counted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET = 1.0


def _script(name: str) -> str:
    """The console script ``name`` next to this interpreter, else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        sys.exit(f"{name} is not installed (pip install -e '.[dev]' installs both tools)")
    return found


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (after one warm-up)")
    args = parser.parse_args()
    steadyeval, lm_eval = _script("steadyeval"), _script("lm_eval")
    commands = {
        "lm_eval --help": [lm_eval, "--help"],
        "steadyeval --help": [steadyeval, "--help"],
        "steadyeval study formats --help": [steadyeval, "study", "formats", "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(args.rounds + 1):
        for name, argv in commands.items():
            t = _wall(argv)
            if round_:
                times[name].append(t)
    median = {name: statistics.median(ts) for name, ts in times.items()}
    base = median["lm_eval --help"]
    print(f"start-up, median of {args.rounds} rounds (fresh process each):")
    worst = 0.0
    for name, m in median.items():
        ratio = m / base
        if name != "lm_eval --help":
            worst = max(worst, ratio)
        print(f"  {name:34s} {m:6.3f} s   {ratio:5.2f}x lm_eval --help")
    verdict = "ok" if worst <= TARGET else "OVER TARGET"
    print(f"worst ratio {worst:.2f} (target <= {TARGET}): {verdict}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
