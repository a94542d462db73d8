"""One timed steadyeval run of the benchmark workload (run in its own subprocess)."""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _workload

from steadyeval import RunOptions, load_backend, run


def main() -> None:
    model_dir, threads, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    torch.set_num_threads(threads)
    # Both tools are timed from the same point: libraries imported (lm-eval's import brings in
    # transformers; steadyeval imports it on first use, so it is imported here), then data,
    # model and evaluation inside the timer.
    import transformers  # noqa: F401

    t0 = time.perf_counter()
    its = _workload.items()
    backend = load_backend(f"hf:{model_dir}?dtype=float32&device=cpu")
    with tempfile.TemporaryDirectory() as tmp:  # a cold cache: every request is computed
        result = run(
            its,
            _workload.conditions(),
            [backend],
            options=RunOptions(cache=Path(tmp) / "c.sqlite", progress=False),
        )
    wall = time.perf_counter() - t0
    scores = {}
    for row in result.table.to_pylist():
        if row["option_logprobs"] is not None:
            for cont, lp in zip(row["options"], row["option_logprobs"], strict=True):
                scores[f"{row['prompt']}\x1f {cont}"] = lp
    report = {
        "tool": "steadyeval",
        "wall_s": wall,
        "tokens_forwarded": backend.tokens_forwarded,  # type: ignore[attr-defined]
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "scores": scores,
        "model_calls": result.summary["plan"]["model_calls"],
    }
    out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
