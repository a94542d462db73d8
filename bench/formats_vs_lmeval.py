"""Benchmark: the formats workload with steadyeval vs lm-evaluation-harness.

One workload — a ~12M-parameter GPT-2-architecture model (random weights; speed is measured)
and 200 SQuAD 2.0 questions (100 answerable + 100 unanswerable, seed 2022) × 3
multiple-choice formats scored by option log-probability + free-form generation of up to 24
tokens — run by each tool in its own subprocess with the same dtype (float32) and thread
count. lm-eval runs at its best batch size among 8/16/32/64 (one timed run each), then both
tools are timed 3 times and the medians compared. Prints the wall-time ratio, the scoring
tokens each forwarded (padding excluded), the prefix-trie lower bound, and peak RSS, and
checks that the per-option log-probabilities agree.

    python bench/formats_vs_lmeval.py [--threads 2] [--repeats 3] [--work bench/.work]

Needs ../shared/data/squad2 and lm-eval (a dev dependency). Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _workload  # noqa: E402

MC_TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: multiple_choice
doc_to_text: prompt
doc_to_choice: choices
doc_to_target: gold
target_delimiter: ""
metric_list:
  - metric: acc
"""

GEN_TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: generate_until
doc_to_text: prompt
doc_to_target: target
generation_kwargs:
  until: {until}
  max_gen_toks: {max_gen_toks}
  do_sample: false
metric_list:
  - metric: exact_match
"""


def write_tasks(work: Path, docs: dict[str, list[dict[str, Any]]]) -> Path:
    """One lm-eval YAML task per condition over its exact strings; a generation task takes
    its stop strings and token limit from its first doc (default: a newline, 24 tokens)."""
    tasks = work / "lmeval_tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for name, rows in docs.items():
        data = tasks / f"bench_{name.replace('-', '_')}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        task = f"bench_{name.replace('-', '_')}"
        if rows and "choices" not in rows[0]:
            until = json.dumps(rows[0].get("until", ["\n"]))
            text = GEN_TASK.format(
                name=task, path=data, until=until, max_gen_toks=rows[0].get("max_gen_toks", 24)
            )
        else:
            text = MC_TASK.format(name=task, path=data)
        (tasks / f"{task}.yaml").write_text(text)
    return tasks


def trie_bound(model: Path, docs: dict[str, list[dict[str, Any]]]) -> int:
    """Scoring tokens any prefix-sharing scheme must forward: the nodes of one trie over every
    (context + continuation minus its last token) sequence, split as both tools split them."""
    from steadyeval import load_backend
    from steadyeval.models._packing import trie_size
    from steadyeval.requests import ScoreRequest

    backend = load_backend(f"hf:{model}")
    reqs = [
        ScoreRequest(d["prompt"], c)
        for name, rows in docs.items()
        if name != "free"
        for d in rows
        for c in d["choices"]
    ]
    fed = [p.fed for p in backend._prepare_scores(reqs)]  # type: ignore[attr-defined]
    return trie_size(fed)


def timed(cmd: list[str], out: Path, threads: int) -> dict[str, Any]:
    env = _workload.child_env(threads)
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--batch-sizes", default="8,16,32,64")
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    model = _workload.build_model(work / "gpt2-12m")
    docs = _workload.requests(_workload.items())
    tasks = write_tasks(work, docs)
    n_mc = sum(len(d["choices"]) for name, rows in docs.items() if name != "free" for d in rows)
    print(
        f"workload: {len(docs['free'])} questions, {n_mc} option scores, "
        f"{len(docs['free'])} generations; threads={args.threads}",
        flush=True,
    )
    py = sys.executable

    def lmeval(batch: int) -> dict[str, Any]:
        out = work / f"lmeval_{batch}.json"
        return timed(
            [
                py,
                str(HERE / "_run_lmeval.py"),
                str(model),
                str(args.threads),
                str(batch),
                str(tasks),
                str(out),
            ],
            out,
            args.threads,
        )

    def steady() -> dict[str, Any]:
        out = work / "steadyeval.json"
        return timed(
            [py, str(HERE / "_run_steadyeval.py"), str(model), str(args.threads), str(out)],
            out,
            args.threads,
        )

    trials = {}
    for b in (int(x) for x in args.batch_sizes.split(",")):
        trials[b] = lmeval(b)
        print(f"lm-eval batch {b}: {trials[b]['wall_s']:.1f} s", flush=True)
    best = min(trials, key=lambda b: trials[b]["wall_s"])
    le_runs = [trials[best]] + [lmeval(best) for _ in range(args.repeats - 1)]
    se_runs = [steady() for _ in range(args.repeats)]
    le_wall = statistics.median(r["wall_s"] for r in le_runs)
    se_wall = statistics.median(r["wall_s"] for r in se_runs)
    le, se = le_runs[0], se_runs[0]
    shared = sorted(set(le["scores"]) & set(se["scores"]))
    diff = max((abs(le["scores"][k] - se["scores"][k]) for k in shared), default=float("nan"))
    bound = trie_bound(model, docs)
    print()
    print(
        f"per-option log-probabilities compared: {len(shared)} of {n_mc}; "
        f"max |difference| = {diff:.2e}"
    )
    print(
        f"wall (median of {args.repeats}): steadyeval {se_wall:.1f} s, lm-eval {le_wall:.1f} s "
        f"(batch {best}); ratio steadyeval/lm-eval = {se_wall / le_wall:.3f} (target <= 0.25)"
    )
    print(
        f"scoring tokens forwarded: steadyeval {se['tokens_forwarded']}, lm-eval "
        f"{le['tokens_forwarded']} (padded batches: {le['tokens_forwarded_with_padding']}); "
        f"prefix-trie bound {bound}; steadyeval/bound = "
        f"{se['tokens_forwarded'] / bound:.3f} (target <= 1.2)"
    )
    print(
        f"peak RSS: steadyeval {se['peak_rss_mb']:.0f} MB, lm-eval {le['peak_rss_mb']:.0f} MB; "
        f"ratio = {se['peak_rss_mb'] / le['peak_rss_mb']:.3f} (target <= 1)"
    )


if __name__ == "__main__":
    main()
