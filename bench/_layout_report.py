"""The per-workload report of ``layouts_vs_lmeval.py``: ratios, token counts, the token
floor and the issue-22 targets, from both tools' run reports."""

from __future__ import annotations

import statistics
from typing import Any


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)


def _rate(tokens: int | None, seconds: float) -> str:
    if tokens is None or seconds <= 0:
        return "n/a"
    return f"{tokens / seconds:,.0f} tok/s"


def _ok(flag: bool) -> str:
    return "ok" if flag else "MISSED"


def parity(le: dict[str, Any], se: dict[str, Any]) -> str:
    """How far the per-continuation log-probabilities and the greedy texts agree."""
    shared = sorted(set(le["scores"]) & set(se["scores"]))
    diff = max((abs(le["scores"][k] - se["scores"][k]) for k in shared), default=float("nan"))
    text = f"log-probs compared {len(shared)} of {len(le['scores'])}, max |diff| {diff:.2e}"
    gens = sorted(set(le["generations"]) & set(se["generations"]))
    if le["generations"]:
        same = sum(le["generations"][k] == se["generations"][k] for k in gens)
        text += f"; generations identical {same} of {len(le['generations'])}"
    return text


def token_floor(got: dict[str, Any]) -> tuple[float, int, int, bool]:
    """(floor, tokens steadyeval must forward, tokens lm-eval forwarded): scoring at its trie
    bound + the generation prompts' trie + one forward per generated token, over lm-eval's
    scoring tokens + generation prompt tokens + decoding steps x rows (estimated, flag True,
    where lm-eval's model does not count them)."""
    le, se, b = got["le"][0], got["se"][0], got["bounds"]
    must = b["score"] + b["prompts"] + int(se["generated_tokens"])
    if le["tokens_forwarded"] is None:  # not counted (vLLM): every sequence in full
        theirs = b["naive_score"] + b["naive_prompts"] + int(se["generated_tokens"])
        return must / theirs, must, theirs, True
    theirs = int(le["tokens_forwarded"]) + int(le["prefill_tokens"]) + int(le["decode_tokens"])
    return must / theirs, must, theirs, False


def report(got: dict[str, Any]) -> float:
    """Print the workload's lines; return its wall ratio (steadyeval / lm-eval)."""
    le_runs, se_runs, b = got["le"], got["se"], got["bounds"]
    le, se = le_runs[0], se_runs[0]
    le_wall, se_wall = _median(le_runs, "wall_s"), _median(se_runs, "wall_s")
    ratio = se_wall / le_wall
    n = len(se_runs)
    print(
        f"\n== [{got['key']}] {got['name']}: {got['n_scores']} scores, {got['n_gen']} generations"
    )
    print(f"  parity: {parity(le, se)}")
    print(
        f"  wall (median of {n}): steadyeval {se_wall:.1f} s, lm-eval {le_wall:.1f} s "
        f"(batch {got['best_batch']}); ratio {ratio:.3f}"
    )
    se_tok, le_tok = se["tokens_forwarded"], le["tokens_forwarded"]
    padded = le.get("tokens_forwarded_with_padding")
    print(
        f"  scoring tokens: steadyeval {se_tok}, lm-eval {le_tok} (padded {padded}); "
        f"trie bound {b['score']}"
        + (f"; steadyeval/bound {se_tok / b['score']:.3f}" if se_tok else "")
        + (f" (+{se['check_tokens']} in one-time checks)" if se.get("check_tokens") else "")
    )
    se_score, le_score = _median(se_runs, "score_s"), _median(le_runs, "score_s")
    se_joint = statistics.median(float(r.get("joint_s", 0.0)) for r in se_runs)
    se_decode = statistics.median(float(r.get("joint_generate_s", 0.0)) for r in se_runs)
    rows_s = se_joint - se_decode  # a joint call's scoring, with the joined prompts' prefill
    if se_joint:
        rows_tok = (se_tok or 0) + int(se.get("joint_prompt_tokens") or 0)
        print(
            f"  scoring time: steadyeval {se_score + rows_s:.1f} s in all ({rows_s:.1f} s of it "
            f"in joint calls less their generation, which also prefill the joined prompts: "
            f"{_rate(rows_tok, se_score + rows_s)} with their {rows_tok - (se_tok or 0)} "
            f"extra tokens), lm-eval {le_score:.1f} s ({_rate(le_tok, le_score)})"
        )
    else:
        print(
            f"  scoring time: steadyeval {se_score:.1f} s ({_rate(se_tok, se_score)}), "
            f"lm-eval {le_score:.1f} s ({_rate(le_tok, le_score)})"
        )
    if se_joint:
        print(
            f"  scoring and generation in joint calls (one prefill for both): steadyeval "
            f"{se_joint:.1f} s (lm-eval's two together: {le_score + _median(le_runs, 'generate_s'):.1f} s)"
        )
    if se.get("joint_prompts"):
        print(
            f"  generation prompts prefilled in the scoring rows: {se['joint_prompts']} of "
            f"{got['n_gen']}, {se['joint_prompt_tokens']} tokens beyond the scored paths"
        )
    se_gen, le_gen = _median(se_runs, "generate_s") + se_decode, _median(le_runs, "generate_s")
    joint_part = f" ({se_decode:.1f} s of it in joint calls)" if se_joint else ""
    print(
        f"  generation time: steadyeval {se_gen:.1f} s{joint_part}, lm-eval {le_gen:.1f} s; "
        "prompt tokens "
        f"{b['naive_prompts']} (trie {b['prompts']}; with scoring in one trie "
        f"{b['joint']} vs {b['score'] + b['prompts']} apart); generated: steadyeval "
        f"{se['generated_tokens']}, lm-eval decoding steps x rows {le.get('decode_tokens')}"
    )
    se_rss = max(r["child_peak_rss_mb"] for r in se_runs)
    le_rss = le_runs[0]["child_peak_rss_mb"]
    print(
        f"  peak RSS (child, max over runs / lm-eval at its best batch): steadyeval "
        f"{se_rss:.0f} MB, lm-eval {le_rss:.0f} MB; ratio {se_rss / le_rss:.3f}"
    )
    floor, must, theirs, estimated = token_floor(got)
    if estimated:
        print(
            "  (lm-eval's tokens not counted with this model: estimated as every sequence in full)"
        )
    if got["n_gen"] and b["joint"] < b["score"] + b["prompts"]:
        joint = (b["joint"] + int(se["generated_tokens"])) / theirs
        print(
            f"  (with scoring and generation prompts in one trie the floor would be {joint:.3f}; "
            "the target uses the two tries apart)"
        )
    score_ok = se_tok is not None and se_tok <= 1.1 * b["score"]
    print(
        f"  token floor {floor:.3f} ({must} / {theirs}); targets: wall {ratio:.3f} <= "
        f"1.25 x floor = {1.25 * floor:.3f}: {_ok(ratio <= 1.25 * floor)}; scoring tokens "
        f"<= 1.1 x bound: {_ok(score_ok)}; peak RSS <= lm-eval's: {_ok(se_rss <= le_rss)}"
    )
    return ratio
