"""Benchmark: K sampled generations per prompt, steadyeval vs lm-evaluation-harness (issue 43).

Part 1, ``hf`` on the CPU: K = 8 samples per prompt (temperature 0.7, 32 new tokens, no stop
string) of the question-first free-form prompts (``bench/_workload.py``, workload b: the
formats study's UnifiedQA order), on the tiny GPT-2 that ``steadyeval tiny-model`` builds
(256 positions: prompts cut on the left, by both tools alike) and on the GPT-2-small-shaped
model of workload e (~89M parameters). steadyeval's ``hf:`` (the K samples of a prompt
prefilled once and decoded together) against lm-eval's ``hf`` with ``do_sample: true`` and
``repeats: 8`` (its batch size: the fastest of ``--batch-sizes``). Reported: generated
tokens per second of the generation call (model loaded before), and the ratio.

Part 2 (``--server``): the same prompts against a llama.cpp server (llama-cpp-python's,
built by ``bench/llamacpp_check.sh``) on an f32 GGUF of a tiny Llama: steadyeval's
``openai:`` backend with its default concurrency against lm-eval's ``local-completions``
with ``num_concurrent`` equal to it.

Each tool runs in its own subprocess with the same thread count; rounds alternate the tools.

    python bench/sampling_vs_lmeval.py [--quick] [--models tiny,100m] [--threads 2]
    python bench/sampling_vs_lmeval.py --server [--quick]

Not a test.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _workload  # noqa: E402

K, TEMPERATURE, NEW_TOKENS = 8, 0.7, 32
SERVER_CHARS = 400


def child(cmd: list[str], out: Path, threads: int) -> dict[str, Any]:
    env = _workload.child_env(threads)
    err = out.with_suffix(".stderr")
    with err.open("wb") as stderr:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    if proc.returncode != 0:
        tail = err.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{tail}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def prompts(n: int) -> list[str]:
    """The free-form prompts of the question-first workload (b), first ``n``."""
    wl = _workload.workload("b", "full")
    docs = _workload.requests(wl.items, wl.conditions)
    gen = [d["prompt"] for rows in docs.values() for d in rows if "choices" not in d]
    return gen[:n]


def model_dir(name: str, work: Path) -> Path:
    if name == "tiny":
        from steadyeval.models import build_tiny_model

        out = work / "tiny-gpt2"
        return out if (out / "model.safetensors").exists() else build_tiny_model(out, "gpt2")
    return _workload.build_model(work / f"gpt2-{name}", shape=name)


def rate(r: dict[str, Any]) -> float:
    return float(r["tokens"] / r["seconds"])


def compare(label: str, runs: dict[str, list[dict[str, Any]]], names: tuple[str, str]) -> float:
    """Print the medians of both tools and return steadyeval's rate / lm-eval's."""
    se, le = (statistics.median(rate(r) for r in runs[n]) for n in names)
    toks = {n: runs[n][0]["tokens"] for n in names}
    print(
        f"{label}: {names[0]} {se:8.1f} tok/s ({toks[names[0]]} tokens), "
        f"{names[1]} {le:8.1f} tok/s ({toks[names[1]]} tokens); ratio {se / le:.2f}x",
        flush=True,
    )
    return se / le


def part_hf(args: argparse.Namespace, texts: list[str]) -> list[float]:
    ratios = []
    work_file = args.work / "sampling_prompts.json"
    work_file.write_text(
        json.dumps(
            {"prompts": texts, "k": K, "temperature": TEMPERATURE, "max_new_tokens": NEW_TOKENS}
        )
    )
    py = sys.executable
    for name in args.models.split(","):
        model = model_dir(name, args.work)

        def run(
            tool: str, batch: int = 8, _model: Path = model, _name: str = name
        ) -> dict[str, Any]:
            out = args.work / f"sampling-{_name}-{tool}-{batch}.json"
            cmd = [py, str(HERE / "_run_sampling.py"), tool, str(_model), str(args.threads)]
            cmd += [str(work_file), str(out), "--batch", str(batch)]
            return child(cmd, out, args.threads)

        sizes = [int(b) for b in args.batch_sizes.split(",")]
        first = {b: run("lmeval", b) for b in sizes}
        for b, got in first.items():
            print(f"  [{name}] lm-eval hf batch {b}: {rate(got):.1f} tok/s", flush=True)
        best = max(first, key=lambda b: rate(first[b]))
        runs: dict[str, list[dict[str, Any]]] = {"steadyeval hf": [], "lm-eval hf": [first[best]]}
        for i in range(args.repeats):
            runs["steadyeval hf"].append(run("steadyeval"))
            if i:
                runs["lm-eval hf"].append(run("lmeval", best))
        label = f"{name}: {len(texts)} prompts x {K} samples, lm-eval batch {best}"
        ratios.append(compare(label, runs, ("steadyeval hf", "lm-eval hf")))
    return ratios


def part_server(args: argparse.Namespace, texts: list[str]) -> list[float]:
    """Start llama-cpp-python's server on a converted tiny Llama and time both clients."""
    sys.path.insert(0, str(HERE))
    import _llamacpp_server

    # The tiny Llama's vocabulary is characters: a prompt's last SERVER_CHARS characters
    # keep it well inside the server's 1,024 positions.
    texts = [t[-SERVER_CHARS:] for t in texts]
    with _llamacpp_server.serving(args.work) as (url, tokenizer):
        work_file = args.work / "sampling_prompts_server.json"
        work_file.write_text(
            json.dumps(
                {"prompts": texts, "k": K, "temperature": TEMPERATURE, "max_new_tokens": NEW_TOKENS}
            )
        )
        py = sys.executable
        runs: dict[str, list[dict[str, Any]]] = {
            "steadyeval openai": [],
            "lm-eval local-completions": [],
        }
        for _ in range(args.repeats):
            for tool, key in (
                ("openai", "steadyeval openai"),
                ("local-completions", "lm-eval local-completions"),
            ):
                out = args.work / f"sampling-server-{tool}.json"
                cmd = [py, str(HERE / "_run_sampling.py"), tool, url, str(args.threads)]
                cmd += [str(work_file), str(out), "--tokenizer", str(tokenizer)]
                cmd += ["--concurrency", str(args.concurrency)]
                runs[key].append(child(cmd, out, args.threads))
        label = (
            f"llama.cpp server: {len(texts)} prompts x {K} samples, concurrency {args.concurrency}"
        )
        return [compare(label, runs, ("steadyeval openai", "lm-eval local-completions"))]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer prompts, one round")
    ap.add_argument("--prompts", type=int, default=None, help="default 24 (8 with --quick)")
    ap.add_argument("--models", default="tiny,100m", help="tiny, 12m, 100m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument("--batch-sizes", default="8,32", help="lm-eval's; its fastest is kept")
    ap.add_argument("--server", action="store_true", help="part 2 only: a llama.cpp server")
    ap.add_argument("--concurrency", type=int, default=None, help="default: openai:'s default")
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument(
        "--squad", type=Path, default=_workload.SQUAD_FILE, help="the shared SQuAD 2.0 subset"
    )
    args = ap.parse_args(argv)
    _workload.SQUAD_FILE = args.squad
    args.repeats = args.repeats or (1 if args.quick else 3)
    n = args.prompts or (8 if args.quick else 24)
    args.work.mkdir(parents=True, exist_ok=True)
    texts = prompts(n)
    t0 = time.perf_counter()
    if args.server:
        if args.concurrency is None:  # openai:'s default max_concurrency
            from steadyeval.models._openai_options import OpenAIOptions

            args.concurrency = OpenAIOptions().max_concurrency
        ratios = part_server(args, texts)
    else:
        ratios = part_hf(args, texts)
    worst = min(ratios)
    print(f"worst ratio {worst:.2f} (target >= 1.0): {'ok' if worst >= 1.0 else 'MISSED'}")
    print(f"benchmark wall time: {(time.perf_counter() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()
