"""Where steadyeval's time goes on the question-first workloads (issue 22, part 3).

For each workload (default ``b`` and ``e`` at ``--size tiny``), in this process:

1. the whole run under cProfile: the time of the backend's parts (scoring: text encoding,
   packing, mask building, forward, log-softmax; generation: the packing checks, prefill,
   cache gather, decoding steps, stop checks) and the top functions by own time;
2. scoring forwards alone on the same fed sequences: packed trie rows (as steadyeval
   packs them; rows of 256 / 512 / 1,024 nodes) with the 4-D trie mask additive (float) and
   boolean, the same rows with a plain causal mask (what the custom 4-D mask costs; the
   variants chosen with ``--masks``), and lm-eval-style padded batches of the unshared
   sequences (batch 16, longest first): tokens, seconds, tokens per second;
3. ``torch.profiler`` operator totals of one packed batch and one padded batch.

    python bench/profile_layouts.py [--workloads be] [--size tiny] [--threads 2]
        [--masks float,bool,causal] [--skip 3]

Not a test; numbers go to bench/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _workload  # noqa: E402

#: (label, file suffix, function name) of the parts reported from the profile.
PARTS = [
    ("run() in all", "run/_run.py", "run"),
    ("score (backend)", "_hf_causal_score.py", "score"),
    ("  encode pairs (_prepare_scores)", "_hf_causal_score.py", "_prepare_scores"),
    ("  packing check (once)", "_hf_causal_score.py", "_check_packing"),
    ("  _score_packed", "_hf_causal_score.py", "_score_packed"),
    ("    pack_with_prefixes", "_packing.py", "pack_with_prefixes"),
    ("    pack_sequences", "_packing.py", "pack_sequences"),
    ("    _run_rows (a batch of rows)", "_hf_causal_score.py", "_run_rows"),
    ("    _run_prefix_group (cached prefix)", "_hf_causal_score.py", "_run_prefix_group"),
    ("    row_tensors (4-D masks)", "_packing.py", "row_tensors"),
    ("      ancestor_mask", "_packing.py", "ancestor_mask"),
    ("    _forward (model)", "_hf_causal_score.py", "_forward"),
    ("  _score_padded", "_hf_causal_score.py", "_score_padded"),
    ("generate (backend)", "_hf_batching.py", "generate"),
    ("  packed generation check (once)", "_hf.py", "_packed_generation_ok"),
    ("  _generate_plain (check's generate())", "_hf.py", "_generate_plain"),
    ("  packed_greedy", "_packed_decode.py", "packed_greedy"),
    ("    _prefill_padded (left-padded batches)", "_packed_decode.py", "_prefill_padded"),
    ("    _prefill_packed (trie rows + gather)", "_packed_decode.py", "_prefill_packed"),
    ("    _prefill", "_packed_decode.py", "_prefill"),
    ("    _gather", "_packed_decode.py", "_gather"),
    ("    _decode", "_packed_decode.py", "_decode"),
    ("      stop_hit", "_hf_batching.py", "stop_hit"),
    ("sdpa_attention_forward", "sdpa_attention.py", "sdpa_attention_forward"),
    ("eager_attention_forward", "modeling_gpt2.py", "eager_attention_forward"),
    ("cache writes", "cache/_store.py", "put_many"),
]


def parts(stats: pstats.Stats) -> None:
    table: dict[tuple[str, str], list[float]] = {}
    for (path, _line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for label, suffix, fn in PARTS:
            if path.endswith(suffix) and name == fn:
                got = table.setdefault((label, suffix), [0, 0.0, 0.0])
                got[0] += nc
                got[1] = max(got[1], ct)  # recursion-safe: the outermost cumulative time
                got[2] += tt
    print(f"    {'part':44s} {'calls':>7s} {'cum s':>8s} {'own s':>8s}")
    for label, suffix, _ in PARTS:
        if (label, suffix) in table:
            nc, ct, tt = table[(label, suffix)]
            print(f"    {label:44s} {int(nc):7d} {ct:8.2f} {tt:8.2f}")


def profiled_run(wl: Any, backend: Any) -> None:
    from steadyeval import RunOptions, run

    prof = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        prof.enable()
        run(
            wl.items,
            wl.conditions,
            [backend],
            options=RunOptions(cache=Path(tmp) / "c.sqlite", progress=False),
            shot_pools=wl.shot_pools,
        )
        prof.disable()
        wall = time.perf_counter() - t0
    print(f"  1. run() under cProfile: {wall:.1f} s (profiling overhead included)")
    stats = pstats.Stats(prof)
    parts(stats)
    print("    top 12 by own time:")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
    for (path, line, name), (_cc, nc, tt, ct, _c) in rows:
        where = f"{Path(path).name}:{line}({name})"
        print(f"      {tt:7.2f} s own {ct:7.2f} s cum {nc:8d} calls  {where[:70]}")


def _timed(fn: Callable[[], Any], repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def forward_packed(
    model: Any, rows: Sequence[Any], per_batch: int, causal: bool, boolean: bool = False
) -> None:
    import torch

    from steadyeval.models._packing import row_tensors

    dtype = torch.bool if boolean else next(model.parameters()).dtype
    for i in range(0, len(rows), per_batch):
        ids, pos, mask = row_tensors(rows[i : i + per_batch], dtype)
        with torch.inference_mode():
            if causal:  # same shapes, plain causal attention (what the 4-D mask costs)
                model(input_ids=ids, position_ids=pos)
            else:
                model(input_ids=ids, attention_mask=mask, position_ids=pos)


def forward_padded(model: Any, seqs: Sequence[Sequence[int]], batch: int) -> None:
    import torch

    order = sorted(seqs, key=len, reverse=True)
    for i in range(0, len(order), batch):
        chunk = order[i : i + batch]
        width = max(len(s) for s in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for b, s in enumerate(chunk):
            ids[b, : len(s)] = torch.tensor(s)
            mask[b, : len(s)] = 1
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask)


#: ``--masks`` variants of step 2: (label, causal mask only, boolean 4-D mask).
MASKS = {
    "float": ("4-D trie mask", False, False),
    "bool": ("4-D bool mask", False, True),
    "causal": ("causal mask only", True, False),
}


def scoring_forwards(backend: Any, fed: list[list[int]], masks: Sequence[str]) -> None:
    from steadyeval.models._packing import pack_sequences

    model = backend.model
    naive = sum(len(s) for s in fed)
    t = _timed(lambda: forward_padded(model, fed, 16))
    print(f"  2. scoring forwards of {len(fed)} sequences (best of 2):")
    print(
        f"    padded, batch 16 (lm-eval style)   {naive:7d} tok {t:6.2f} s {naive / t:8.0f} tok/s"
    )
    for nodes in (256, 512, 1024):
        t0 = time.perf_counter()
        rows = pack_sequences(fed, max_nodes=nodes)
        t_pack = time.perf_counter() - t0
        tok = sum(len(r.tokens) for r in rows)
        per_batch = max(1, 16 * 512 // nodes)
        t_masks = _timed(lambda rows=rows: [r.ancestor_mask() for r in rows])
        for kind, causal, boolean in (MASKS[m] for m in masks):
            t = _timed(
                lambda r=rows, p=per_batch, c=causal, b=boolean: forward_packed(model, r, p, c, b)
            )
            print(
                f"    packed {nodes:4d}-node rows, {kind:16s} {tok:7d} tok {t:6.2f} s "
                f"{tok / t:8.0f} tok/s ({len(rows)} rows, {per_batch}/batch)"
            )
        print(f"      pack_sequences {t_pack:.3f} s, ancestor masks {t_masks:.3f} s")


def op_profile(backend: Any, fed: list[list[int]]) -> None:
    from torch.profiler import ProfilerActivity, profile

    from steadyeval.models._packing import pack_sequences

    model = backend.model
    rows = pack_sequences(fed, max_nodes=1024)[:2]
    longest = sorted(fed, key=len, reverse=True)[:16]
    for label, fn in (
        (
            "one packed batch (2 rows of <=1024 nodes)",
            lambda: forward_packed(model, rows, 2, False),
        ),
        ("one padded batch (16 longest sequences)", lambda: forward_padded(model, longest, 16)),
    ):
        fn()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        print(f"  3. torch.profiler, {label}:")
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8)
        print("\n".join("    " + line for line in table.splitlines()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="be")
    ap.add_argument("--size", default="tiny", choices=sorted(_workload.SIZES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--skip", default="", help="steps to skip, e.g. 3 or 23")
    ap.add_argument(
        "--masks", default="float,bool,causal", help=f"step 2's mask variants ({','.join(MASKS)})"
    )
    args = ap.parse_args()
    import torch

    from steadyeval import load_backend

    torch.set_num_threads(args.threads)
    for key in args.workloads:
        wl = _workload.workload(key, args.size)
        model = _workload.build_model(args.work / f"gpt2-{wl.shape}", shape=wl.shape)
        print(f"[{key}] {wl.name}, size {args.size}: {len(wl.items)} items, model {wl.shape}")
        backend: Any = load_backend(f"hf:{model}?dtype=float32&device=cpu")
        backend.model  # noqa: B018  (loaded outside the profile)
        if "1" not in args.skip:
            profiled_run(wl, backend)
        docs = _workload.requests(wl.items, wl.conditions, wl.shot_pools)
        fed = [p.fed for p in backend._prepare_scores(_workload.score_requests(docs))]
        if "2" not in args.skip:
            scoring_forwards(backend, fed, args.masks.split(","))
        if "3" not in args.skip:
            op_profile(backend, fed)


if __name__ == "__main__":
    main()
