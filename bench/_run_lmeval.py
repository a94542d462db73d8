"""One timed lm-evaluation-harness run of the benchmark workload (its own subprocess)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch


def main() -> None:
    model_dir, threads, batch, tasks_dir, out = sys.argv[1:6]
    torch.set_num_threads(int(threads))
    import lm_eval
    import lm_eval.models.huggingface as hf_module
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    counted = {"tokens": 0, "padded": 0}
    real_pad = hf_module.pad_and_concat

    def counting_pad(max_length, tensors, padding_side="right"):  # type: ignore[no-untyped-def]
        # Every scoring batch is built here: count its real tokens and its padded size.
        counted["tokens"] += sum(int(t.shape[0]) for t in tensors)
        counted["padded"] += max_length * len(tensors)
        return real_pad(max_length, tensors, padding_side=padding_side)

    hf_module.pad_and_concat = counting_pad

    t0 = time.perf_counter()
    lm = HFLM(
        pretrained=model_dir,
        backend="causal",
        device="cpu",
        dtype="float32",
        batch_size=int(batch),
        max_length=1024,
    )
    tm = TaskManager(include_path=tasks_dir)
    names = sorted(p.stem for p in Path(tasks_dir).glob("*.yaml"))
    res = lm_eval.simple_evaluate(
        model=lm, tasks=names, task_manager=tm, log_samples=True, batch_size=int(batch)
    )
    wall = time.perf_counter() - t0
    scores = {}
    for task, samples in res["samples"].items():
        for s in samples:
            if (
                s["arguments"]
                and len(s["arguments"][0]) == 2
                and isinstance(s["arguments"][0][1], str)
                and "choices" in s["doc"]
            ):
                for (ctx, cont), resp in zip(s["arguments"], s["resps"], strict=True):
                    scores[f"{ctx}\x1f{cont}"] = float(resp[0][0])
        del task
    report = {
        "tool": "lm-eval",
        "batch_size": int(batch),
        "wall_s": wall,
        # Scoring tokens lm-eval forwards (counted where it pads its batches), padding excluded.
        "tokens_forwarded": counted["tokens"],
        "tokens_forwarded_with_padding": counted["padded"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "scores": scores,
    }
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
