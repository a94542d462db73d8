"""Benchmark: does cost grow linearly?

1. Pipeline: time per item of a run at 100 items vs 1,000 items (tiny local GPT-2, three
   multiple-choice formats scored by option log-probability, cold caches, model loaded and
   warmed up first). Target: per-item time at 1,000 ≤ 1.2 × at 100.
2. Analyses: for each study (formats, knowledge, sensitivity) a real run on tiny local models
   (made once through the CLI into ``--work``) is tiled to a 1,000,000-row results table with
   fresh item ids (and, in the metadata, fresh ids that key items: paragraph and base ids,
   so each tile is new items on new paragraphs, as in a larger run). The table is written
   to Parquet, read back (the median of three reads), and analysed. Target: each analysis
   ≤ 3 × the read time. Time spent in ``stats.spread`` (bootstrap resampling of items) is
   shown apart.

    python bench/scaling.py [--rows 1000000] [--work bench/.work] [--skip-pipeline]
                            [--studies formats,knowledge,sensitivity]

Not a test: it prints ratios measured in the same process, so machine noise cancels. One
line per analysis: its time and its ratio to the time of reading that table from Parquet.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from steadyeval import FORMATS, TEMPLATES, Condition, Format, Item, RunOptions, load_backend, run
from steadyeval.models import build_tiny_model
from steadyeval.results import ResultsFrame, summarize

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data"
SQUAD = DATA / "squad2" / "dev-v2.0.controlled_subset.json"
MMLU = DATA / "mmlu" / "hendrycks_format"
LPAQA = DATA / "lama" / "lpaqa"
STUDIES = ("formats", "knowledge", "sensitivity")


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


def tiny(work: Path, kind: str) -> Path:
    model = work / f"tiny-{kind}"
    if not (model / "model.safetensors").exists():
        build_tiny_model(model, kind, seed=0, overwrite=True)  # type: ignore[arg-type]
    return model


def pipeline(work: Path) -> None:
    backend = load_backend(f"hf:{tiny(work, 'gpt2')}")
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


# -- small real runs, made once through the CLI --------------------------------------------


def _study_run(work: Path, name: str, args: list[str]) -> Path:
    out = work / f"{name}-run"
    if (out / "results.parquet").exists() and (out / "summary.json").exists():
        return out
    cmd = [sys.executable, "-m", "steadyeval", "study", *args, "--out", str(out), "--no-progress"]
    env = {
        "STEADYEVAL_CACHE": str(work / f"{name}-cache.sqlite"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return out


def formats_run(work: Path) -> Path:
    """The answer-format study, 50 + 50 SQuAD 2.0 questions, lists scored by log-prob."""
    gpt2 = tiny(work, "gpt2")
    return _study_run(
        work,
        "formats",
        ["formats", "--model", f"hf:{gpt2}", "--data", str(SQUAD), "--answerable", "50",
         "--unanswerable", "50", "--scoring", "logprob"],
    )  # fmt: skip


def knowledge_run(work: Path) -> Path:
    """MMLU, 2 questions × 57 subjects: letter and option scoring, two prompt headers, 0 and
    1 shot, the 3 other rotations, and the memorisation check (33 conditions)."""
    gpt2 = tiny(work, "gpt2")
    return _study_run(
        work,
        "knowledge",
        ["knowledge", "--model", f"hf:{gpt2}", "--data", str(MMLU), "--shots", "0,1",
         "--limit-per-subject", "2", "--scoring", "letter,option",
         "--templates", "reference,single-space", "--rotations", "--memorisation"],
    )  # fmt: skip


def sensitivity_run(work: Path) -> Path:
    """LPAQA's 41 T-REx relations, 4 facts each, 3 templates, a tiny GPT-2 and a tiny BERT
    (default analysis options: 1,000 subsets of 20 relations, 1,000 bootstrap resamples)."""
    gpt2, bert = tiny(work, "gpt2"), tiny(work, "bert")
    return _study_run(
        work,
        "sensitivity",
        ["sensitivity", "--model", f"hf:{gpt2}", "--model", f"hf:{bert}", "--data", str(LPAQA),
         "--limit-per-relation", "4", "--templates-per-relation", "3"],
    )  # fmt: skip


# -- tiling ----------------------------------------------------------------------------------

#: Metadata keys whose values identify items or their clusters; each tile gets fresh ones.
_ID_KEYS = ("base_id", "paragraph_id")


def tile(base: pa.Table, rows: int) -> pa.Table:
    """``base`` repeated (whole copies, about ``rows`` rows in all, so every item keeps all
    its conditions); copy k suffixes item ids (and the id keys of the metadata) with
    ``#k``."""
    copies = max(1, round(rows / base.num_rows))
    keys = "|".join(_ID_KEYS)
    tiles = []
    for k in range(copies):
        t = base.set_column(
            base.schema.get_field_index("item_id"),
            "item_id",
            pc.binary_join_element_wise(base["item_id"], pa.scalar(f"#{k}"), ""),
        )
        meta = pc.replace_substring_regex(
            t["metadata"], pattern=f'"({keys})":"([^"]*)"', replacement=f'"\\1":"\\2#{k}"'
        )
        t = t.set_column(t.schema.get_field_index("metadata"), "metadata", meta)
        tiles.append(t)
    return pa.concat_tables(tiles)


class _SpreadClock:
    """Time spent in ``stats.spread`` (the bootstrap over items) while it is installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def __enter__(self) -> _SpreadClock:
        import steadyeval.stats
        import steadyeval.studies.sensitivity._analysis as sens

        self._saved = steadyeval.stats.spread
        inner = self._saved

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        steadyeval.stats.spread = timed  # type: ignore[assignment]
        sens.spread = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        import steadyeval.stats
        import steadyeval.studies.sensitivity._analysis as sens

        steadyeval.stats.spread = self._saved  # type: ignore[assignment]
        sens.spread = self._saved  # type: ignore[assignment]


def bench_study(work: Path, study: str, rows: int) -> None:
    from steadyeval.studies.formats import analyze_formats
    from steadyeval.studies.knowledge import analyze_knowledge
    from steadyeval.studies.sensitivity import analyze_sensitivity

    make, analyze = {
        "formats": (formats_run, analyze_formats),
        "knowledge": (knowledge_run, analyze_knowledge),
        "sensitivity": (sensitivity_run, analyze_sensitivity),
    }[study]
    run_dir = make(work)
    base = pq.read_table(run_dir / "results.parquet")
    info = json.loads((run_dir / "summary.json").read_text())["design"]
    path = work / f"big-{study}.parquet"
    big = tile(base, rows)
    print(
        f"{study}: a {base.num_rows:,}-row run × {big.num_rows // base.num_rows:,} = "
        f"{big.num_rows:,} rows, {big.num_columns} columns",
        flush=True,
    )
    pq.write_table(big, path, compression="zstd")
    del base, big
    gc.collect()
    _measure(study, path, analyze, info)
    gc.collect()


def _measure(
    study: str, path: Path, analyze: Callable[[ResultsFrame, Any], Any], info: dict[str, Any]
) -> None:
    reads = []
    for _ in range(3):  # the median of three reads: the baseline varies with machine load
        t0 = time.perf_counter()
        table = pq.read_table(path)
        reads.append(time.perf_counter() - t0)
    read = sorted(reads)[1]
    steps: list[tuple[str, Callable[[], Any]]] = [
        (f"analyze_{study}", lambda: analyze(ResultsFrame(table), info))
    ]
    if study == "formats":
        steps.insert(0, ("summarize", lambda: summarize(table)))
    for name, fn in steps:
        with _SpreadClock() as clock:
            t0 = time.perf_counter()
            fn()
            secs = time.perf_counter() - t0
        extra = ""
        if clock.calls:
            extra = f"; of which stats.spread {clock.seconds:.2f} s ({clock.calls} calls)"
        print(
            f"  {name:<20} read {read:5.2f} s  analysis {secs:6.2f} s  "
            f"{secs / read:5.2f}x read (target <= 3x){extra}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--skip-pipeline", action="store_true")
    ap.add_argument("--studies", default=",".join(STUDIES), help="comma-separated subset")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    studies = [s for s in args.studies.split(",") if s]
    unknown = sorted(set(studies) - set(STUDIES))
    if unknown:
        ap.error(f"--studies: unknown {', '.join(unknown)}; choose from {', '.join(STUDIES)}")
    if not args.skip_pipeline:
        pipeline(args.work)
    for study in studies:
        bench_study(args.work, study, args.rows)


if __name__ == "__main__":
    main()
