"""Subprocess entry for the kill -9 test: run a plan on the SCRIPTED test backend slowly."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from steadyeval import RunOptions, parse_model_spec, run
from tests.core.test_run import CONDITIONS, ITEMS
from tests.scripted_backend import ScriptedBackend

if __name__ == "__main__":
    cache, out, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    backend = ScriptedBackend(spec=parse_model_spec("scripted:slow"), delay=delay)
    run(
        ITEMS,
        CONDITIONS,
        [backend],
        options=RunOptions(out=Path(out), cache=Path(cache), batch_size=1, progress=False),
    )
