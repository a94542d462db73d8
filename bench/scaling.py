"""Benchmark: does cost grow linearly?

1. Pipeline: time per item of a run at 100 items vs 1,000 items (tiny local GPT-2, three
   multiple-choice formats scored by option log-probability, cold caches, model loaded and
   warmed up first). Target: per-item time at 1,000 ≤ 1.2 × at 100.
2. Analyses: a 1,000,000-row results table (a real formats-study run on a tiny model, its
   rows tiled with fresh item ids) is read from Parquet, then summarised and analysed by the
   formats study. Target: analysis time ≤ 3 × the read time.

    python bench/scaling.py [--rows 1000000] [--work bench/.work]

Not a test: it prints ratios measured in the same process, so machine noise cancels.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from steadyeval import FORMATS, TEMPLATES, Condition, Format, Item, RunOptions, load_backend, run
from steadyeval.models import build_tiny_model
from steadyeval.results import summarize

HERE = Path(__file__).resolve().parent
SQUAD = HERE.parents[1] / "shared" / "data" / "squad2" / "dev-v2.0.controlled_subset.json"


def synthetic_items(n: int) -> list[Item]:
    return [
        Item(
            id=f"q{i}",
            context=f"Passage {i}: the river number {i % 97} flows past the town of {i % 89}.",
            question=f"Which river flows past town {i % 89}?",
            options=(f"river {i % 97}", f"river {(i + 1) % 97}", f"lake {i % 13}"),
            gold_options=(0,),
        )
        for i in range(n)
    ]


def pipeline(work: Path) -> None:
    model = work / "tiny-gpt2"
    if not (model / "model.safetensors").exists():
        build_tiny_model(model, "gpt2", seed=0, overwrite=True)
    backend = load_backend(f"hf:{model}")
    qa = TEMPLATES["qa"]
    conds = [
        Condition(name="mc", template=qa, format=FORMATS["mc"], scoring="option-logprob"),
        Condition(name="nota", template=qa, format=FORMATS["mc-nota"], scoring="option-logprob"),
        Condition(
            name="refusal",
            template=qa,
            format=Format(name="r", escape="no answer>"),
            scoring="option-logprob",
        ),
    ]
    run(
        synthetic_items(20),
        conds,
        [backend],
        options=RunOptions(progress=False, cache=Path(tempfile.mkdtemp()) / "warm.sqlite"),
    )  # load and warm up the model
    per_item = {}
    for n in (100, 1000):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run(
                synthetic_items(n),
                conds,
                [backend],
                options=RunOptions(progress=False, cache=Path(tmp) / "c.sqlite"),
            )
            per_item[n] = (time.perf_counter() - t0) / n
        print(f"pipeline: {n} items → {per_item[n] * 1000:.2f} ms per item", flush=True)
    print(
        f"pipeline: per-item time at 1,000 / at 100 = {per_item[1000] / per_item[100]:.3f} "
        "(target <= 1.2)"
    )


def formats_run(work: Path) -> Path:
    out = work / "formats-run"
    if (out / "results.parquet").exists():
        return out
    model = work / "tiny-gpt2"
    cmd = [
        sys.executable,
        "-m",
        "steadyeval",
        "study",
        "formats",
        "--model",
        f"hf:{model}",
        "--data",
        str(SQUAD),
        "--answerable",
        "50",
        "--unanswerable",
        "50",
        "--scoring",
        "logprob",
        "--out",
        str(out),
        "--no-progress",
    ]
    subprocess.run(
        cmd,
        check=True,
        capture_output=True,
        env={
            "STEADYEVAL_CACHE": str(work / "formats-cache.sqlite"),
            "PATH": "/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
        },
    )
    return out


def analyses(work: Path, rows: int) -> None:
    from steadyeval.studies.formats import analyze_formats

    run_dir = formats_run(work)
    base = pq.read_table(run_dir / "results.parquet")
    info = json.loads((run_dir / "summary.json").read_text())["design"]
    copies = -(-rows // base.num_rows)
    tiles = []
    for k in range(copies):
        t = base.set_column(
            base.schema.get_field_index("item_id"),
            "item_id",
            pc.binary_join_element_wise(base["item_id"], pa.scalar(f"#{k}"), ""),
        )
        tiles.append(t)
    big = pa.concat_tables(tiles).slice(0, rows)
    path = work / "big.parquet"
    pq.write_table(big, path, compression="zstd")
    t0 = time.perf_counter()
    table = pq.read_table(path)
    read = time.perf_counter() - t0
    t1 = time.perf_counter()
    summarize(table)
    summ = time.perf_counter() - t1
    t2 = time.perf_counter()
    analyze_formats(table, info)
    fmt = time.perf_counter() - t2
    print(
        f"analyses on {table.num_rows:,} rows: read {read:.2f} s; summarize {summ:.2f} s "
        f"({summ / read:.2f}x); formats analysis {fmt:.2f} s ({fmt / read:.2f}x) "
        "(target <= 3x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--skip-pipeline", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.skip_pipeline:
        pipeline(args.work)
    analyses(args.work, args.rows)


if __name__ == "__main__":
    main()
