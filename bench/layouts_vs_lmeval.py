"""Benchmark: the prompt layouts the studies use, steadyeval vs lm-evaluation-harness (issue 22).

Workloads (``bench/_workload.py``; sizes: full / ``--quick`` / ``--size tiny``):

  a  paragraph-first: the issue-12 workload (``qa`` template; 3 option lists + free form)
  b  question-first: the formats study's UnifiedQA order (question, options, paragraph);
     free form (24 tokens, no stop) + three option lists incl. both escape options
  c  MMLU 5-shot letter scoring (the subject's five dev questions before every question)
  d  cloze probing: LPAQA mined templates cut at ``[Y]``, gold object scored after them
  e  workload b on a GPT-2-small-shaped model (~89M parameters, random weights), fewer items

Each tool runs in its own subprocess with the same dtype and thread count. lm-eval's batch
size is the fastest of ``--batch-sizes`` on the workload at ``--search-size`` (default
``quick``: one run per batch size on fewer items, so the full protocol fits an hour on two
cores; ``--search-size full`` picks it on the timed size and counts that run as the first
repeat), then both tools run ``--repeats`` times at ``--size``, medians compared. Peak RSS is read from each child's own rusage (``os.wait4``).

    python bench/layouts_vs_lmeval.py [--quick] [--workloads abcde] [--threads 2]
    python bench/layouts_vs_lmeval.py --backend vllm --lmeval-model vllm --device cuda ...

Not a test.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _layout_report  # noqa: E402
import _workload  # noqa: E402
from formats_vs_lmeval import write_tasks  # noqa: E402


def child(cmd: list[str], out: Path, threads: int, dry: bool) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process; its report plus its own peak RSS (``wait4``)."""
    import json

    if dry:
        print("  would run:", shlex.join(cmd), flush=True)
        return {}
    env = _workload.child_env(threads)
    err = out.with_suffix(".stderr")
    with err.open("wb") as stderr:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = err.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{tail}")
    report: dict[str, Any] = json.loads(out.read_text())
    report["child_peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: KiB
    return report


def bounds(model: Path, docs: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Trie bounds: scoring (every context + continuation minus its last token, split as
    the backend splits them), generation prompts, and both in one trie."""
    from steadyeval import load_backend
    from steadyeval.models._packing import trie_size

    backend: Any = load_backend(f"hf:{model}?device=cpu")
    fed = [p.fed for p in backend._prepare_scores(_workload.score_requests(docs))]
    prompts = [
        list(backend._prompt_ids(d["prompt"], False, None, d["max_gen_toks"])[0])
        for rows in docs.values()
        for d in rows
        if "choices" not in d
    ]
    return {
        "score": trie_size(fed),
        "prompts": trie_size(prompts),
        "joint": trie_size(fed + prompts),
        "naive_prompts": sum(len(p) for p in prompts),
        "naive_score": sum(len(f) for f in fed),
    }


def run_workload(key: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """Both tools on workload ``key``: the medians and what the report needs."""
    try:
        wl = _workload.workload(key, args.size)
    except FileNotFoundError as exc:
        print(f"[{key}] skipped: {exc}", flush=True)
        return None
    model = _workload.build_model(args.work / f"gpt2-{wl.shape}", shape=wl.shape)
    docs = _workload.requests(wl.items, wl.conditions, wl.shot_pools)
    n_scores = sum(len(d["choices"]) for rows in docs.values() for d in rows if "choices" in d)
    n_gen = sum(1 for rows in docs.values() for d in rows if "choices" not in d)
    print(
        f"[{key}] {wl.name}: {len(wl.items)} items x {len(wl.conditions)} conditions, "
        f"{n_scores} scores, {n_gen} generations; model {wl.shape}; threads={args.threads}",
        flush=True,
    )
    py, common = sys.executable, ["--device", args.device, "--dtype", args.dtype]

    def lmeval(tasks: Path, batch: int) -> dict[str, Any]:
        out = tasks.parent / f"lmeval_{batch}.json"
        cmd = [py, str(HERE / "_run_lmeval.py"), str(model), str(args.threads), str(batch)]
        cmd += [str(tasks), str(out), "--model", args.lmeval_model, *common]
        return child(cmd, out, args.threads, args.dry_run)

    def steady() -> dict[str, Any]:
        out = args.work / f"{key}-{args.size}" / "steadyeval.json"
        cmd = [py, str(HERE / "_run_steadyeval.py"), str(model), str(args.threads), str(out)]
        cmd += ["--workload", key, "--size", args.size, "--backend", args.backend, *common]
        return child(cmd, out, args.threads, args.dry_run)

    def tasks_at(size: str, size_docs: dict[str, Any]) -> Path:
        work: Path = args.work / f"{key}-{size}"
        work.mkdir(parents=True, exist_ok=True)
        return write_tasks(work, size_docs)

    tasks = tasks_at(args.size, docs)
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    search, trials = args.search_size, {}
    if len(sizes) > 1 and search != args.size:  # the batch size is picked on fewer items
        sw = _workload.workload(key, search)
        search_tasks = tasks_at(search, _workload.requests(sw.items, sw.conditions, sw.shot_pools))
        for b in sizes:
            got = lmeval(search_tasks, b)
            if not args.dry_run:
                print(
                    f"  lm-eval batch {b} ({search} size, to pick): {got['wall_s']:.1f} s",
                    flush=True,
                )
                trials[b] = got["wall_s"]
        best = min(trials, key=lambda b: trials[b]) if trials else sizes[0]
        le_runs = [lmeval(tasks, best) for _ in range(args.repeats)]
    else:
        first = {b: lmeval(tasks, b) for b in sizes}
        if args.dry_run:
            steady()
            return None
        for b, got in first.items():
            print(f"  lm-eval batch {b}: {got['wall_s']:.1f} s", flush=True)
        best = min(first, key=lambda b: first[b]["wall_s"])
        le_runs = [first[best]] + [lmeval(tasks, best) for _ in range(args.repeats - 1)]
    if args.dry_run:
        steady()
        return None
    for i, r in enumerate(le_runs):
        print(f"  lm-eval run {i + 1} (batch {best}): {r['wall_s']:.1f} s", flush=True)
    se_runs = [steady() for _ in range(args.repeats)]
    for i, r in enumerate(se_runs):
        print(f"  steadyeval run {i + 1}: {r['wall_s']:.1f} s", flush=True)
    return {
        "key": key,
        "name": wl.name,
        "best_batch": best,
        "le": le_runs,
        "se": se_runs,
        "bounds": bounds(model, docs),
        "n_scores": n_scores,
        "n_gen": n_gen,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default=_workload.WORKLOADS, help="letters, e.g. be")
    ap.add_argument("--quick", action="store_true", help="one run each, fewer items")
    ap.add_argument("--size", choices=sorted(_workload.SIZES), default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument(
        "--batch-sizes",
        default=None,
        help="default 8,16,32 (16 with --quick); 64 was the slowest of 8-64 in every earlier run",
    )
    ap.add_argument(
        "--search-size",
        choices=sorted(_workload.SIZES),
        default="quick",
        help="size at which lm-eval's batch size is picked (default quick; the timed runs "
        "are at --size)",
    )
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    ap.add_argument("--lmeval-model", choices=["hf", "vllm"], default="hf")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args(argv)
    args.size = args.size or ("quick" if args.quick else "full")
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.batch_sizes = args.batch_sizes or ("16" if args.quick else "8,16,32")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(
        f"size {args.size}, repeats {args.repeats}, lm-eval batch sizes {args.batch_sizes}, "
        f"steadyeval {args.backend}: vs lm-eval --model {args.lmeval_model}, "
        f"device {args.device}, dtype {args.dtype}",
        flush=True,
    )
    ratios, t0 = [], time.perf_counter()
    for key in args.workloads:
        got = run_workload(key, args)
        if got is not None:
            ratios.append(_layout_report.report(got))
    if ratios:
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"\ngeometric mean of wall ratios (steadyeval / lm-eval): {geo:.3f}")
    print(f"benchmark wall time: {(time.perf_counter() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()
