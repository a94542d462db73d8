"""One plan run by several processes on one cache in ``test_shared_cache.py``:
``python -m tests.reliability.shared_plan BASE_URL CACHE OUT`` runs it against the fault
server at ``BASE_URL`` and logs (WARNING and up) to stderr."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from steadyeval import FORMATS, TEMPLATES, Condition, Generation, Item, RunOptions, run
from steadyeval.run import RunResult

FAST = "max_concurrency=4&backoff_base=0.01&backoff_max=0.05&timeout=120"

ITEMS = [
    Item(id=f"q{i}", question=f"Which colour is number {i}?", options=("red", "green", "blue"),
         gold_options=(i % 3,))
    for i in range(12)
] + [
    Item(id=f"f{i}", question=f"Name river {i}.", answers=("Nile",)) for i in range(24)
]  # fmt: skip
CONDITIONS = [
    Condition(name="opt", template=TEMPLATES["qa"], format=FORMATS["mc"],
              scoring="option-logprob", items="with-options"),
    Condition(name="letter-chat", template=TEMPLATES["qa"], format=FORMATS["mc"],
              scoring="letter-logprob", chat=True, items="with-options"),
    Condition(name="gen", template=TEMPLATES["qa"], format=FORMATS["free"],
              generation=Generation(max_new_tokens=3, stop=()), items="without-options"),
]  # fmt: skip


def model(base_url: str) -> str:
    return f"openai:toy?base_url={base_url}&{FAST}"


def run_plan(base_url: str, cache: Path, out: Path | None = None) -> RunResult:
    opts = RunOptions(cache=cache, out=out, progress=False, batch_size=16)
    result = run(ITEMS, CONDITIONS, [model(base_url)], options=opts)
    assert isinstance(result, RunResult)
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    run_plan(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
    print("done", flush=True)
