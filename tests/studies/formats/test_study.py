"""The study end to end on tiny local models (random weights: only the plumbing is tested)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from steadyeval import DataError
from steadyeval.cli import main
from steadyeval.reports import build_report
from steadyeval.run import PlanCounts, RunOptions
from steadyeval.studies import StudyResult, read_analysis, reanalyze, run_study
from steadyeval.studies.formats import FormatsAnalysis, FormatsConfig


def _run(out: Path, **kw: Any) -> StudyResult:
    cfg = FormatsConfig(**{"answerable": 4, "unanswerable": 4, "seed": 5, **kw})
    result = run_study("formats", cfg, options=RunOptions(out=out, progress=False))
    assert isinstance(result, StudyResult)
    return result


def _check_counts(result: StudyResult, n_rows: int) -> None:
    table = pq.read_table(result.run_dir / "results.parquet")  # type: ignore[operator]
    assert table.num_rows == n_rows
    keys = list(zip(*(table.column(c).to_pylist() for c in
                      ("model", "item_id", "condition", "sample_index")), strict=True))  # fmt: skip
    assert len(set(keys)) == len(keys)
    assert isinstance(result.analysis, FormatsAnalysis)
    for rec in result.analysis.outcomes:
        assert sum(rec.counts.model_dump().values()) == rec.n
        rows = [r for r in table.select(["condition", "answerable", "truncated"]).to_pylist()
                if r["condition"] == rec.condition
                and r["answerable"] == (rec.subset == "answerable")]  # fmt: skip
        assert rec.truncated == sum(r["truncated"] for r in rows)


def test_tiny_causal_generate_then_warm_rerun(
    tiny_gpt2: Path, squad_file: Path, tmp_path: Path
) -> None:
    models = [f"hf:{tiny_gpt2}"]
    first = _run(tmp_path / "run", models=models, data=str(squad_file), max_new_tokens=6)
    _check_counts(first, 8 * 4)
    assert first.summary["plan"]["model_calls"] > 0
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert set(table.column("scoring").to_pylist()) == {"generate"}
    assert set(table.column("format").to_pylist()) == {"free", "mc", "mc-nota", "mc-refusal"}
    meta = json.loads(table.column("metadata")[0].as_py())
    assert {"paragraph_id", "title", "decoy_option", "article_fallback"} <= set(meta)
    assert read_analysis(tmp_path / "run") == first.analysis  # summary.json reads back typed
    assert reanalyze(tmp_path / "run") == first.analysis  # and recomputes to the same
    # a hand-edited summary.json: every reader refuses it, reanalyze repairs it
    summary_path = tmp_path / "run" / "summary.json"
    text = summary_path.read_text()
    summary_path.write_text(text.replace('"schema_version": 1', '"schema_version": 7'))
    for read in (read_analysis, lambda run: build_report(run)):
        with pytest.raises(DataError, match=r"summary\.json does not belong to run"):
            read(tmp_path / "run")
    assert reanalyze(tmp_path / "run") == first.analysis
    assert summary_path.read_text() == text and read_analysis(tmp_path / "run") == first.analysis
    # the same from the command line
    summary_path.write_text(text.replace('"schema_version": 1', '"schema_version": 7'))
    done = CliRunner().invoke(main, ["reanalyze", str(tmp_path / "run")])
    assert done.exit_code == 0 and "(FormatsAnalysis, schema version 1)" in done.output
    assert summary_path.read_text() == text
    plain = CliRunner().invoke(main, ["reanalyze", str(tmp_path / "nowhere")])
    assert plain.exit_code == 2 and "not a run folder (no such folder" in plain.output
    before = (tmp_path / "run" / "results.parquet").read_bytes()
    again = _run(tmp_path / "run", models=models, data=str(squad_file), max_new_tokens=6)
    assert again.summary["plan"]["model_calls"] == 0
    assert (tmp_path / "run" / "results.parquet").read_bytes() == before
    dry = run_study(
        "formats",
        FormatsConfig(
            models=models,
            data=str(squad_file),
            answerable=4,
            unanswerable=4,
            seed=5,
            max_new_tokens=6,
        ),
        dry_run=True,
    )
    assert isinstance(dry, PlanCounts) and dry.to_send == 0 and dry.rows == 32


def test_tiny_causal_logprob_pairs_equal_statsmodels(
    tiny_gpt2: Path, squad_file: Path, tmp_path: Path
) -> None:
    result = _run(tmp_path / "run", models=[f"hf:{tiny_gpt2}"], data=str(squad_file),
                  answerable=6, unanswerable=6, scoring="option-logprob")  # fmt: skip
    _check_counts(result, 12 * 4)
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    scorings = dict(zip(table.column("condition").to_pylist(), table.column("scoring").to_pylist(),
                        strict=True))  # fmt: skip
    assert scorings == {"free": "generate", "list": "option-logprob",
                        "list-nota": "option-logprob", "list-refusal": "option-logprob"}  # fmt: skip
    pairs = result.analysis.pairs
    assert len(pairs) == 6 * 3  # 6 pairs × (unanswerable refused, answerable refused, correct)
    assert any(p.flips for p in pairs)
    for p in pairs:
        assert p.both + p.neither + p.flips == p.n == 6
        if p.flips:
            table_2x2 = [[p.both, p.only_a], [p.only_b, p.neither]]
            expected = sm_mcnemar(table_2x2, exact=True).pvalue
            assert p.p_exact == pytest.approx(expected, abs=1e-12)
            assert p.p_midp <= p.p_exact <= p.p_holm
    floors = {(f.subset, f.outcome): f.phrase.flips
              for f in result.analysis.noise_floor}  # fmt: skip
    nota_refusal = {(p.subset, p.outcome): p.flips for p in pairs
                    if (p.a, p.b) == ("list-nota", "list-refusal")}  # fmt: skip
    assert floors == nota_refusal and len(floors) == 3


def test_tiny_seq2seq_with_unifiedqa_encoding(
    tiny_t5: Path, squad_file: Path, tmp_path: Path
) -> None:
    pytest.importorskip("steadyeval.models._hf_seq2seq")
    result = _run(tmp_path / "run", models=[f"hf-seq2seq:{tiny_t5}?max_length=48"],
                  data=str(squad_file), template="unifiedqa", max_new_tokens=6)  # fmt: skip
    _check_counts(result, 8 * 4)
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    prompts = dict(zip(table.column("condition").to_pylist(), table.column("prompt").to_pylist(),
                       strict=True))  # fmt: skip
    assert " \\n (a) " in prompts["list-nota"] and "(d) none of the above" in prompts["list-nota"]
    assert "(d) no answer>" in prompts["list-refusal"]
    assert any(table.column("truncated").to_pylist())  # 48 tokens cut every paragraph
    assert result.analysis.outcomes[0].truncated > 0


def test_extras_orders_no_decoy_control_sampling_determinism(
    tiny_gpt2: Path, squad_file: Path, tmp_path: Path
) -> None:
    result = _run(tmp_path / "run", models=[f"hf:{tiny_gpt2}"], data=str(squad_file),
                  answerable=2, unanswerable=2, scoring="option-logprob", orders=2, no_decoy=True,
                  control=True, sampling={"temperature": 1.0, "n_samples": 2},
                  determinism=2, max_new_tokens=3)  # fmt: skip
    a = result.analysis
    names = [c.name for c in a.conditions]
    assert "list-control" in names and "list-nota@order2" in names and "free~sampled" in names
    base_lists = 4  # list, list-nota, list-refusal, list-control
    assert len(a.orders) == base_lists * 2
    for o in a.orders:
        assert o.orders == 2 and o.same_answer <= o.refusal_stable <= o.n == 2
        assert len(o.refusals_per_order) == 3
    assert len(a.no_decoy) == base_lists
    for d in a.no_decoy:
        assert d.n == 2 and d.both + d.neither + d.flips == 2
    floors = [f for f in a.noise_floor if f.subset == "unanswerable"]
    assert set(floors[0].order) == {"list", "list-nota", "list-refusal", "list-control"}
    control = next(r for r in a.outcomes
                   if r.condition == "list-control" and r.subset == "answerable")  # fmt: skip
    assert sum(control.counts.model_dump().values()) == 2
    (samp_u, samp_a) = a.sampling
    assert samp_u.n_samples == 2 and samp_u.n_items == samp_a.n_items == 2
    det = a.determinism
    assert det is not None
    assert det.questions == 2 and det.compared == 2 * 5  # 5 greedy base conditions
    assert det.identical == det.compared and det.model_calls > 0
    assert det.max_logprob_diff is not None and det.max_logprob_diff < 1e-4
    md = (tmp_path / "run" / "summary.md").read_text()
    for heading in ("### Option orders", "### Lists without the decoy", "### Sampling",
                    "## Determinism check", 'control word "'):  # fmt: skip
        assert heading in md


def test_cli_end_to_end(tiny_gpt2: Path, squad_file: Path, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    env = {**os.environ, "STEADYEVAL_CACHE": str(tmp_path / "cache.sqlite"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}  # fmt: skip
    flags = ["--model", f"hf:{tiny_gpt2}", "--data", str(squad_file), "--answerable", "3",
             "--unanswerable", "3", "--scoring", "logprob", "--max-new-tokens", "4",
             "--no-progress"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "steadyeval", "study", "formats", *flags, "--out", "runs/a"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "warning: scoring 'logprob' is deprecated; use 'option-logprob'" in done.stderr
    assert "### Unanswerable questions (n = 3)" in done.stdout
    assert (tmp_path / "runs" / "a" / "summary.md").is_file()
    # The same study from a config file, in-process: every answer comes from the cache.
    monkeypatch.setenv("STEADYEVAL_CACHE", env["STEADYEVAL_CACHE"])
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "study.yaml"
    config.write_text(
        f"models: ['hf:{tiny_gpt2}']\ndata: {squad_file}\nanswerable: 3\nunanswerable: 3\n"
        "scoring: option-logprob\nmax_new_tokens: 4\n"
    )
    runner = CliRunner()
    again = runner.invoke(main, ["study", "formats", str(config), "--out", "runs/b",
                                 "--no-progress"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "0 sent" in again.output
    assert json.loads((tmp_path / "runs" / "b" / "summary.json").read_text())["study"] == "formats"
    config.write_text(config.read_text() + "orderz: 2\n")
    bad = runner.invoke(main, ["study", "formats", str(config), "--dry-run"])
    assert bad.exit_code == 2
    assert f"{config}, line 7: orderz: unknown key" in bad.output
    offline = runner.invoke(main, ["study", "formats", "--model", f"hf:{tiny_gpt2}", "--data",
                                   "squad_v2", "--dry-run"])  # fmt: skip
    assert offline.exit_code == 2 and "squad_v2" in offline.output
    assert offline.exception is None or isinstance(offline.exception, SystemExit)
