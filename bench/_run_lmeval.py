"""One timed lm-evaluation-harness run of a benchmark workload (its own subprocess).

    python bench/_run_lmeval.py MODEL_DIR THREADS BATCH TASKS_DIR OUT.json
        [--model hf|vllm] [--device cpu|cuda] [--dtype float32]

``loglikelihood`` and ``generate_until`` are timed; with ``hf`` the scoring tokens are
counted where lm-eval pads its batches, and the generation tokens where it calls
``generate`` (prompt tokens without padding; decoding steps x rows).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch


def count_hf(counted: dict[str, int]) -> None:
    """Count what the ``hf`` model forwards: scoring tokens (and their padded size) in
    ``pad_and_concat``, generation prompt and decoding tokens in ``_model_generate``."""
    import lm_eval.models.huggingface as hf_module

    real_pad = hf_module.pad_and_concat

    def counting_pad(max_length, tensors, padding_side="right"):  # type: ignore[no-untyped-def]
        # Every scoring batch is built here: count its real tokens and its padded size.
        counted["tokens"] += sum(int(t.shape[0]) for t in tensors)
        counted["padded"] += max_length * len(tensors)
        return real_pad(max_length, tensors, padding_side=padding_side)

    hf_module.pad_and_concat = counting_pad
    real_generate = hf_module.HFLM._model_generate

    def counting_generate(self, context, max_length, stop, **kw):  # type: ignore[no-untyped-def]
        out = real_generate(self, context, max_length, stop, **kw)
        mask = kw.get("attention_mask")
        counted["prefill"] += int(mask.sum()) if mask is not None else context.numel()
        steps = int(out.shape[1] - context.shape[1])
        counted["decode"] += max(steps - 1, 0) * int(context.shape[0])
        return out

    hf_module.HFLM._model_generate = counting_generate


def timed_methods(lm: Any, times: dict[str, float]) -> None:
    for name in ("loglikelihood", "generate_until"):
        real = getattr(lm, name)

        def timed(requests, _real=real, _name=name, **kw):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            out = _real(requests, **kw)
            times[_name] += time.perf_counter() - t0
            return out

        setattr(lm, name, timed)


def load_model(args: argparse.Namespace) -> Any:
    if args.model == "vllm":
        from lm_eval.models.vllm_causallms import VLLM

        return VLLM(
            pretrained=str(args.model_dir), dtype=args.dtype, batch_size="auto", max_length=1024
        )
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=str(args.model_dir),
        backend="causal",
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch,
        max_length=1024,
    )


def collect(res: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """Per (context, continuation) log-probability, and per prompt the generated text."""
    scores: dict[str, float] = {}
    generations: dict[str, str] = {}
    for samples in res["samples"].values():
        for s in samples:
            args = s["arguments"]
            if args and "choices" in s["doc"]:
                for (ctx, cont), resp in zip(args, s["resps"], strict=True):
                    scores[f"{ctx}\x1f{cont}"] = float(resp[0][0])
            elif args:
                generations[args[0][0]] = s["resps"][0][0]
    return scores, generations


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("threads", type=int)
    ap.add_argument("batch", type=int)
    ap.add_argument("tasks_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", default="hf", choices=["hf", "vllm"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import lm_eval
    from lm_eval.tasks import TaskManager

    counted = {"tokens": 0, "padded": 0, "prefill": 0, "decode": 0}
    if args.model == "hf":
        count_hf(counted)
    times = {"loglikelihood": 0.0, "generate_until": 0.0}

    t0 = time.perf_counter()
    lm = load_model(args)
    timed_methods(lm, times)
    tm = TaskManager(include_path=str(args.tasks_dir))
    names = sorted(p.stem for p in args.tasks_dir.glob("*.yaml"))
    res = lm_eval.simple_evaluate(
        model=lm, tasks=names, task_manager=tm, log_samples=True, batch_size=args.batch
    )
    wall = time.perf_counter() - t0
    scores, generations = collect(res)
    hf = args.model == "hf"
    report = {
        "tool": "lm-eval",
        "model": args.model,
        "batch_size": args.batch,
        "wall_s": wall,
        "score_s": times["loglikelihood"],
        "generate_s": times["generate_until"],
        # Scoring tokens lm-eval forwards (counted where it pads its batches), padding excluded.
        "tokens_forwarded": counted["tokens"] if hf else None,
        "tokens_forwarded_with_padding": counted["padded"] if hf else None,
        "prefill_tokens": counted["prefill"] if hf else None,
        "decode_tokens": counted["decode"] if hf else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "scores": scores,
        "generations": generations,
    }
    args.out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
