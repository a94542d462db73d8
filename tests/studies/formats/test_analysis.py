"""The analysis on answers scripted per question and format, so every count is known."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from steadyeval.items import Item
from steadyeval.models import ModelSpec, register_backend
from steadyeval.requests import GenerateRequest, GenerateResponse
from steadyeval.results import ResultsFrame
from steadyeval.run import RunOptions
from steadyeval.studies import StudyResult, read_analysis, reanalyze, run_study
from steadyeval.studies.formats import (
    FORMATS_STUDY,
    FormatsAnalysis,
    FormatsConfig,
    Outcome,
    analyze_formats,
    formats_design,
)

from ...scripted_backend import ScriptedBackend


@dataclass
class RuleScriptedBackend(ScriptedBackend):
    """SCRIPTED test backend: the generated text is ``rule(prompt)``."""

    rule: Callable[[str], str] = lambda prompt: ""

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        self.calls["generate"] += len(requests)
        return [GenerateResponse(text=self.rule(r.prompt), n_input_tokens=9) for r in requests]


def _format_of(prompt: str) -> str:
    if "\nA. " not in prompt:
        return "free"
    if "\nD. none of the above" in prompt:
        return "list-nota"
    if "\nD. no answer>" in prompt:
        return "list-refusal"
    return "list"


def _rule(items: Sequence[Item]) -> Callable[[str], str]:
    """Answers chosen so that every outcome count below is known in advance."""
    by_question = {it.question: it for it in items}
    unans = [it for it in items if not it.answerable]
    ans = [it for it in items if it.answerable]

    def rule(prompt: str) -> str:
        question = re.search(r"Question: (.*)\n", prompt)
        assert question is not None
        item = by_question[question.group(1)]
        fmt = _format_of(prompt)
        assert item.options is not None
        if not item.answerable:
            k = unans.index(item)
            decoy = item.metadata["decoy"]
            other = next(o for o in item.options if o != decoy)
            return {
                # refuses on 0, 2, 4; answers with the decoy text otherwise
                "free": "no answer>" if k % 2 == 0 else decoy,
                # the decoy 3×, another option 2×, writes no answer> once
                "list": decoy if k < 3 else (other if k < 5 else "no answer>"),
                # refuses on 0..3 (letter D), decoy on 4, 5
                "list-nota": "D" if k < 4 else decoy,
                # refuses on 0..4, unmatched once
                "list-refusal": "no answer>" if k < 5 else "zzz qqq",
            }[fmt]
        k = ans.index(item)
        gold = item.options[item.gold_options[0]]
        label = "ABC"[item.gold_options[0]]
        return {
            "free": "no answer>" if k == 0 else gold,
            "list": label,
            "list-nota": "none of the above" if k == 1 else gold,
            "list-refusal": "xyzzy plugh" if k == 2 else gold,
        }[fmt]

    return rule


@pytest.fixture(scope="module")
def scripted_run(
    squad_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[StudyResult, RuleScriptedBackend, FormatsConfig, Path]:
    cfg = FormatsConfig(models=["scripted-formats:rules"], data=str(squad_file), answerable=6,
                        unanswerable=6, seed=11, examples=3)  # fmt: skip
    design = formats_design(cfg, [])
    backend = RuleScriptedBackend(
        spec=ModelSpec("scripted-formats", "rules"), rule=_rule(design.items)
    )
    register_backend("scripted-formats", lambda spec: backend, replace=True)
    out = tmp_path_factory.mktemp("runs") / "scripted"
    result = run_study(
        "formats",
        cfg,
        options=RunOptions(out=out, cache=out.parent / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return result, backend, cfg, out


def _outcome(result: StudyResult, subset: str, condition: str) -> Outcome:
    recs = [r for r in result.analysis.outcomes
            if r.subset == subset and r.condition == condition]  # fmt: skip
    assert len(recs) == 1
    return recs[0]


def _counts(result: StudyResult, subset: str, condition: str) -> dict[str, Any]:
    return _outcome(result, subset, condition).counts.model_dump()


def test_outcome_counts_are_the_scripted_ones(scripted_run: Any) -> None:
    result = scripted_run[0]
    assert isinstance(result.analysis, FormatsAnalysis)
    counts = {c: _counts(result, "unanswerable", c)
              for c in ("free", "list", "list-nota", "list-refusal")}  # fmt: skip
    assert counts["free"] == {"refused": 3, "decoy": 0, "other": 0, "answered": 3,
                              "unmatched": 0, "control": 0}  # fmt: skip
    assert counts["list"]["decoy"] == 3 and counts["list"]["other"] == 2
    assert counts["list"]["refused"] == 1
    assert _outcome(result, "unanswerable", "list").refused_without_escape == 1
    assert counts["list-nota"] == {"refused": 4, "decoy": 2, "other": 0, "answered": 0,
                                   "unmatched": 0, "control": 0}  # fmt: skip
    assert counts["list-refusal"]["refused"] == 5 and counts["list-refusal"]["unmatched"] == 1
    free = _outcome(result, "unanswerable", "free")
    assert free.subset == "unanswerable" and free.near_decoy == 3
    answered = {c: _counts(result, "answerable", c)
                for c in ("free", "list", "list-nota", "list-refusal")}  # fmt: skip
    assert answered["free"] == {"correct": 5, "refused": 1, "wrong": 0, "unmatched": 0,
                                "control": 0}  # fmt: skip
    assert answered["list"]["correct"] == 6
    assert answered["list-nota"]["refused"] == 1 and answered["list-nota"]["correct"] == 5
    assert answered["list-refusal"]["unmatched"] == 1
    for rec in result.analysis.outcomes:  # every format's counts add up
        assert sum(rec.counts.model_dump().values()) == rec.n == 6
        rate = rec.rates.refused
        assert rate.low <= rate.rate <= rate.high


def test_pairs_match_statsmodels_and_holm(scripted_run: Any) -> None:
    result = scripted_run[0]
    pairs = [p for p in result.analysis.pairs
             if p.subset == "unanswerable" and p.outcome == "refused"]  # fmt: skip
    assert len(pairs) == 6  # 4 formats: every pair once
    free_nota = next(p for p in pairs if (p.a, p.b) == ("free", "list-nota"))
    # free refuses on 0, 2, 4; the NOTA list on 0..3
    assert (free_nota.both, free_nota.only_a, free_nota.only_b) == (2, 1, 2)
    assert free_nota.neither == 1 and free_nota.flips == 3
    for p in pairs:
        table = [[p.both, p.only_a], [p.only_b, p.neither]]
        if p.flips:
            assert p.p_exact == pytest.approx(sm_mcnemar(table, exact=True).pvalue, abs=1e-12)
        else:
            assert p.p_exact is None  # NaN: no test without discordant pairs
        assert p.noise_floor == 1  # NOTA (0..3) vs "no answer>" (0..4) differ on one
    finite = [p for p in pairs if p.flips]
    ps = sorted(p.p_exact for p in finite if p.p_exact is not None)
    smallest = min(finite, key=lambda p: p.p_exact or 0.0)
    assert smallest.p_holm == pytest.approx(min(1.0, ps[0] * len(ps)))


def test_rerun_is_cached_and_reanalysis_is_offline(scripted_run: Any) -> None:
    result, backend, cfg, out = scripted_run
    calls = backend.calls["generate"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plan"]["model_calls"] == calls > 0
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == 12 * 4
    assert set(table.column("format").to_pylist()) == {"free", "mc", "mc-nota", "mc-refusal"}
    before = (out / "results.parquet").read_bytes()
    again = run_study(
        "formats",
        cfg,
        options=RunOptions(out=out, cache=out.parent / "cache.sqlite", progress=False),
    )
    assert isinstance(again, StudyResult)
    assert again.summary["plan"]["model_calls"] == 0 and backend.calls["generate"] == calls
    assert (out / "results.parquet").read_bytes() == before
    assert read_analysis(out) == result.analysis
    assert reanalyze(out) == result.analysis
    offline = analyze_formats(ResultsFrame(table), summary["design"])
    assert offline == result.analysis


def test_summary_markdown_has_the_seed_layout(scripted_run: Any) -> None:
    result, _, _, out = scripted_run
    md = (out / "summary.md").read_text()
    assert "### Unanswerable questions (n = 6)" in md
    # refused, decoy, other option, answered, near the decoy, unmatched, control, truncated
    assert "| free form | 3 | 0 | 0 | 3 | 3 | 0 | – | 0 |" in md
    assert "| list, no escape | 1 | 3 | 2 | – | – | 0 | – | 0 |" in md
    assert (
        '| list + "none of the above" | unanswerable | refused | 4 | 6 | 66.7% [30.0, 90.3] |' in md
    )
    assert "### Paired: refused, unanswerable questions" in md
    assert '| free form | list + "none of the above" | 3 | 4 | 2 | 1 | 1 | 2 | 3 |' in md
    assert "### Examples: 3 of" in md
    assert FORMATS_STUDY.markdown(result.analysis, result.summary["design"]) in md
    examples = result.analysis.examples
    assert len(examples) == 3
    assert all(len({o.refused for o in e.outputs.values()}) == 2 for e in examples)


def test_the_determinism_gap_never_drops_a_nan() -> None:
    """A rerun whose log-probability is NaN where the first run's was a number is not
    identical (``max`` over the gaps dropped the NaN and reported 0)."""
    import math

    from steadyeval.studies.formats._extras import _gap

    assert max(0.0, _gap(math.nan, -1.0)) == math.inf
    assert _gap(math.nan, math.nan) == 0.0 and _gap(-math.inf, -math.inf) == 0.0
    assert _gap(-1.0, -1.25) == 0.25
