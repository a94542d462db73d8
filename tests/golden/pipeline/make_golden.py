"""Write ``<case>.json`` for every pinned pipeline case (see ``cases.py``).

Run from the repository root: ``python tests/golden/pipeline/make_golden.py [CASE ...]``.
It was run once on the code before the "one shape for every study" refactor (commit
ed16d27); later runs overwrite the pins, so only run it to re-pin on purpose, and say why in
``tests/golden/CHANGES.md``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.golden.pipeline.cases import (
    CASES,
    EXAMPLES,
    HERE,
    ROOT,
    argv,
    dumps,
    snapshot,
    write_inputs,
)


def main(names: list[str]) -> None:
    import os

    import torch

    from steadyeval.cli._main import main as cli
    from steadyeval.models._tiny import build_tiny_model

    torch.set_num_threads(1)
    wanted = [c for c in CASES if not names or c.name in names]
    shutil.rmtree(ROOT, ignore_errors=True)
    ROOT.mkdir(parents=True)
    values = write_inputs(ROOT, lambda p, arch: build_tiny_model(p, arch, seed=0))
    for case in wanted:
        out = ROOT / "runs" / case.name
        os.environ["STEADYEVAL_CACHE"] = str(ROOT / "caches" / f"{case.name}.sqlite")
        result = CliRunner().invoke(cli, argv(case, values, out), catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"{case.name}: exit {result.exit_code}\n{result.output}")
        snap = snapshot(out, {str(ROOT): "<tmp>", str(EXAMPLES): "<examples>"})
        (HERE / f"{case.name}.json").write_text(dumps(snap), encoding="utf-8")
        print(f"{case.name}: {len(next(iter(snap['results'].values())))} rows")


if __name__ == "__main__":
    main(sys.argv[1:])
