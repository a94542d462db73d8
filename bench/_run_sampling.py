"""One timed run of K sampled generations per prompt (its own subprocess), for
``bench/sampling_vs_lmeval.py``.

    python bench/_run_sampling.py steadyeval MODEL THREADS PROMPTS.json OUT.json
    python bench/_run_sampling.py lmeval MODEL THREADS PROMPTS.json OUT.json --batch 8
    python bench/_run_sampling.py openai URL THREADS PROMPTS.json OUT.json
    python bench/_run_sampling.py local-completions URL THREADS PROMPTS.json OUT.json

``PROMPTS.json``: ``{"prompts": [...], "k": 8, "temperature": 0.7, "max_new_tokens": 32}``.
Timed: steadyeval's ``backend.generate`` over every (prompt, sample index) request, and
lm-eval's ``generate_until`` over a ``generate_until`` task with ``repeats: K`` and
``do_sample: true`` (lm-eval's own way of sampling K times). Generated tokens: steadyeval's
``n_output_tokens``; for lm-eval's ``hf`` the new tokens of each row of its ``generate``
calls (up to the end-of-sequence / padding token); against a server, the completion tokens
the server reports (``usage``), read by both tools' HTTP layers (counted here from the
texts re-encoded by the model's tokenizer when no usage is seen).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

TASK = """task: bench_sampling
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: generate_until
doc_to_text: prompt
doc_to_target: target
repeats: {k}
generation_kwargs:
  until: []
  max_gen_toks: {max_new_tokens}
  do_sample: true
  temperature: {temperature}
filter_list:
  - name: all
    filter:
      - function: take_first_k
        k: {k}
metric_list:
  - metric: exact_match
"""


def steadyeval(args: argparse.Namespace, work: dict[str, Any]) -> dict[str, Any]:
    from steadyeval import load_backend
    from steadyeval.requests import GenerateRequest

    spec = f"hf:{args.target}?dtype=float32&device=cpu"
    if args.target.startswith("http"):
        spec = f"openai:{args.model_name}?base_url={args.target}"
    backend: Any = load_backend(spec)
    if spec.startswith("hf:"):
        backend.model  # noqa: B018  loaded before the timer, as lm-eval's is
    reqs = [
        GenerateRequest(
            p,
            max_new_tokens=work["max_new_tokens"],
            temperature=work["temperature"],
            sample_index=i,
        )
        for p in work["prompts"]
        for i in range(work["k"])
    ]
    t0 = time.perf_counter()
    out = backend.generate(reqs)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "tokens": sum(r.n_output_tokens for r in out),
        "texts": [r.text for r in out],
    }


def lmeval(args: argparse.Namespace, work: dict[str, Any]) -> dict[str, Any]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    tasks = args.out.parent / f"lmeval_tasks_{args.tool}"
    tasks.mkdir(parents=True, exist_ok=True)
    data = tasks / "bench_sampling.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": p, "target": ""}) + "\n" for p in work["prompts"])
    )
    (tasks / "bench_sampling.yaml").write_text(
        TASK.format(
            path=data,
            k=work["k"],
            max_new_tokens=work["max_new_tokens"],
            temperature=work["temperature"],
        )
    )
    counted = {"tokens": 0}
    if args.tool == "lmeval":
        from lm_eval.models.huggingface import HFLM
        from transformers import AutoConfig

        n_positions = AutoConfig.from_pretrained(args.target).n_positions
        lm: Any = HFLM(
            pretrained=args.target,
            backend="causal",
            device="cpu",
            dtype="float32",
            batch_size=args.batch,
            max_length=n_positions,
        )
        count_new_tokens(lm, counted)
    else:
        from lm_eval.models.openai_completions import LocalCompletionsAPI

        lm = LocalCompletionsAPI(
            model=args.model_name,
            base_url=f"{args.target}/completions",
            tokenizer=args.tokenizer,
            tokenizer_backend="huggingface",
            num_concurrent=args.concurrency,
            max_length=args.max_length,
            tokenized_requests=False,  # the prompt's text, as steadyeval sends it
        )
    seconds = [0.0]
    real = lm.generate_until

    def timed(requests: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(requests, **kw)
        finally:
            seconds[0] += time.perf_counter() - t0

    lm.generate_until = timed
    res = lm_eval.simple_evaluate(
        model=lm, tasks=["bench_sampling"], task_manager=TaskManager(include_path=str(tasks)),
        log_samples=True, batch_size=args.batch,
    )  # fmt: skip
    texts = [t for s in res["samples"]["bench_sampling"] for t in s["resps"][0]]
    if args.tool != "lmeval":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(args.tokenizer)
        counted["tokens"] = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return {"seconds": seconds[0], "tokens": counted["tokens"], "texts": texts}


def count_new_tokens(lm: Any, counted: dict[str, int]) -> None:
    """Count the new tokens of every row lm-eval's ``hf`` generates (up to its first
    end-of-sequence or padding token)."""
    real = type(lm)._model_generate
    stops = {lm.tokenizer.eos_token_id, lm.tokenizer.pad_token_id} - {None}

    def counting(self: Any, context: Any, max_length: int, stop: Any, **kw: Any) -> Any:
        out = real(self, context, max_length, stop, **kw)
        for row in out[:, context.shape[1] :].tolist():
            ends = [row.index(s) for s in stops if s in row]
            counted["tokens"] += min(ends) if ends else len(row)
        return out

    type(lm)._model_generate = counting


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=["steadyeval", "lmeval", "openai", "local-completions"])
    ap.add_argument("target", help="a model folder, or a server's base URL (…/v1)")
    ap.add_argument("threads", type=int)
    ap.add_argument("prompts", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--model-name", default="tiny")
    ap.add_argument("--tokenizer", default=None, help="for local-completions: the HF folder")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=2048)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    import transformers  # noqa: F401  imported before the timers by both tools

    work = json.loads(args.prompts.read_text())
    run = steadyeval if args.tool in ("steadyeval", "openai") else lmeval
    report = run(args, work)
    args.out.write_text(json.dumps({"tool": args.tool, **report}))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
