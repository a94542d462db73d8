"""One timed steadyeval run of a benchmark workload (run in its own subprocess).

    python bench/_run_steadyeval.py MODEL_DIR THREADS OUT.json [--workload a] [--size full]
        [--backend hf|vllm] [--device cpu|cuda] [--dtype float32]

The default (workload ``a`` at full size on ``hf:`` on the CPU) is the issue-12 benchmark.
The backend's ``score`` and ``generate`` are wrapped to time them and to record every
(context, continuation) log-probability and every generated text, for the parity checks.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _workload

from steadyeval import RunOptions, load_backend, run


def instrument(backend: Any, report: dict[str, Any]) -> None:
    """Time the backend's ``score``, ``generate`` and (where the runner sends both kinds in one
    call) ``score_and_generate``, and record what they answer."""
    report.update(
        score_s=0.0, generate_s=0.0, joint_s=0.0, scores={}, generations={}, generated_tokens=0
    )
    inside = [False]  # a joint call may call score/generate itself: counted once, as joint

    def wrap(name: str, key: str, record: Callable[[Any, Any], None]) -> None:
        real = getattr(backend, name)

        def timed(*requests: Any) -> Any:
            if inside[0]:  # generate() inside a joint call: timed as its generation part
                t0 = time.perf_counter()
                try:
                    return real(*requests)
                finally:
                    if name == "generate":
                        report["joint_generate_s"] += time.perf_counter() - t0
            inside[0] = True
            t0 = time.perf_counter()
            try:
                out = real(*requests)
            finally:
                inside[0] = False
            report[key] += time.perf_counter() - t0
            record(requests, out)
            return out

        setattr(backend, name, timed)

    def scores(reqs: Sequence[Any], resps: Sequence[Any]) -> None:
        for r, a in zip(reqs, resps, strict=True):
            report["scores"][f"{r.context}\x1f{r.continuation}"] = a.logprob

    def generations(reqs: Sequence[Any], resps: Sequence[Any]) -> None:
        for r, a in zip(reqs, resps, strict=True):
            report["generations"][r.prompt] = a.text
            report["generated_tokens"] += a.n_output_tokens

    # Inside a joint call, its generation (the greedy decoding of the joined prompts'
    # groups, and generate() for the others) is timed apart, so that the report can split
    # the call into scoring (with the joined prompts' prefill) and generation.
    from steadyeval.models import _joint_prefill

    real_decode = _joint_prefill._decode
    report["joint_generate_s"] = 0.0

    def timed_decode(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real_decode(*args, **kwargs)
        finally:
            report["joint_generate_s"] += time.perf_counter() - t0

    _joint_prefill._decode = timed_decode  # type: ignore[assignment]
    wrap("score", "score_s", lambda reqs, out: scores(reqs[0], out))
    wrap("generate", "generate_s", lambda reqs, out: generations(reqs[0], out))
    if callable(getattr(backend, "score_and_generate", None)):
        wrap(
            "score_and_generate",
            "joint_s",
            lambda reqs, out: (scores(reqs[0], out[0]), generations(reqs[1], out[1])),
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("threads", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--workload", default="a")
    ap.add_argument("--size", default="full")
    ap.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # Both tools are timed from the same point: libraries imported, then data, model and
    # evaluation inside the timer. lm-eval's runner imports lm_eval (its evaluator, tasks and
    # the hf model module, with transformers and pandas) before its timer; steadyeval's
    # top-level import is lazy, so what run() uses is imported here: transformers, the run
    # and stats modules (scipy.stats), and pandas (pyarrow imports it on the first pa.array).
    import pandas  # noqa: F401
    import transformers  # noqa: F401

    import steadyeval.results
    import steadyeval.run
    import steadyeval.stats  # noqa: F401

    t0 = time.perf_counter()
    wl = _workload.workload(args.workload, args.size)
    if args.backend == "hf":
        spec = f"hf:{args.model_dir}?dtype={args.dtype}&device={args.device}"
    else:
        spec = f"vllm:{args.model_dir}?dtype={args.dtype}"
    backend = load_backend(spec)
    report: dict[str, Any] = {"tool": "steadyeval", "backend": args.backend}
    if args.backend == "hf":  # load now (lm-eval loads before it scores), not in the first call
        t_load = time.perf_counter()
        backend.model  # noqa: B018
        backend.tokenizer  # noqa: B018
        report["load_s"] = time.perf_counter() - t_load
    instrument(backend, report)
    with tempfile.TemporaryDirectory() as tmp:  # a cold cache: every request is computed
        result = run(
            wl.items,
            wl.conditions,
            [backend],
            options=RunOptions(cache=Path(tmp) / "c.sqlite", progress=False),
            shot_pools=wl.shot_pools,
        )
    report["wall_s"] = time.perf_counter() - t0
    # Scoring tokens the backend forwarded (padding excluded); vLLM does not count them.
    report["tokens_forwarded"] = getattr(backend, "tokens_forwarded", None)
    report["check_tokens"] = getattr(backend, "check_tokens", None)  # one-time packing checks
    # Generation prompts prefilled in the scoring rows (joint calls): their tokens beyond the
    # scored paths, and how many prompts went that way.
    report["joint_prompt_tokens"] = getattr(backend, "joint_prompt_tokens", None)
    report["joint_prompts"] = getattr(backend, "joint_prompts", None)
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["model_calls"] = result.summary["plan"]["model_calls"]
    args.out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
