"""The spread study end to end on the scripted test backend (and a tiny model through the
CLI): only the sampled cells reach the model; the analysis and the report come from the
table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, DataError
from steadyeval.cli import main
from steadyeval.run import RunOptions
from steadyeval.studies import StudyResult, read_analysis, reanalyze, run_study
from steadyeval.studies.spread import (
    SpreadAnalysis,
    SpreadConfig,
    load_format_file,
    spread_report_sections,
)
from tests.scripted_backend import register

SHARED_TEMPLATES = Path(__file__).resolve().parents[4] / "shared/data/prompteval/templates.json"


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"What is {i} + {i}?",
         "options": [str(2 * i), str(2 * i + 1), str(2 * i + 2)], "answer": 0,
         "metadata": {"subject": "arithmetic"}}
        for i in range(12)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(tmp_path: Path, items_file: Path, **kw: Any) -> StudyResult:
    register()
    cfg = SpreadConfig(
        **{
            "models": ["scripted:x"],
            "data": str(items_file),
            "n_formats": 15,
            "budget": 40,
            "draws": 100,
            **kw,
        }
    )
    result = run_study("spread", cfg, options=RunOptions(out=tmp_path / "run", progress=False))
    assert isinstance(result, StudyResult)
    return result


def test_estimate_runs_only_the_sampled_cells(tmp_path: Path, items_file: Path) -> None:
    result = _run(tmp_path, items_file)
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert table.num_rows == 40  # budget cells, not 15 formats × 12 items
    assert result.summary["plan"]["model_calls"] == 40 * 3  # one score request per option
    keys = set(zip(table.column("condition").to_pylist(), table.column("item_id").to_pylist(),
                   strict=True))  # fmt: skip
    assert len(keys) == 40
    assert isinstance(result.analysis, SpreadAnalysis)
    rec = result.analysis.models[0]
    assert rec.cells == 40 and rec.cells_total == 180
    assert rec.formats_observed == 15
    assert rec.tau_format > 0 and rec.tau_item > 0  # posterior s.d. of the effects, logits
    levels = [q.level for q in rec.quantiles]
    assert levels == [5, 25, 50, 75, 95]
    for q in rec.quantiles:
        assert 0 <= q.low <= q.estimate <= q.high <= 1
    est = [q.estimate for q in rec.quantiles]
    assert est == sorted(est)
    assert rec.best.estimate >= rec.worst.estimate
    assert rec.best.prompt.startswith("Question: ") or rec.best.prompt
    assert sum(r.observed for r in rec.per_format) == 40
    assert rec.search is None
    # the fit check: recorded, and its message among the notes when it flags
    d = rec.diagnostic
    assert d is not None and d.cells_per_format == pytest.approx(40 / 15)
    assert d.format_sd_low <= d.format_sd <= d.format_sd_high
    assert (d.message in rec.notes) == (d.prior_driven or d.misfit) == bool(d.message)
    assert set(table.column("spread_phase").to_pylist()) == {"stratified"}
    # summary.json reads back as the same typed analysis; recomputed offline, it is the same
    assert read_analysis(tmp_path / "run") == result.analysis
    assert reanalyze(tmp_path / "run") == result.analysis


def test_adaptive_spends_the_same_budget_and_analyses_once(
    tmp_path: Path,
    items_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="steadyeval")
    from steadyeval.studies.spread import SpreadStudy

    analysed: list[int] = []
    analyze = SpreadStudy.analyze

    def counted(self: SpreadStudy, results: Any, design: Any) -> Any:
        analysed.append(results.table.num_rows)
        return analyze(self, results, design)

    monkeypatch.setattr(SpreadStudy, "analyze", counted)
    result = _run(tmp_path, items_file, sampler="adaptive")
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert table.num_rows == 40
    phases = table.column("spread_phase").to_pylist()
    assert phases.count("stratified") == 20 and phases.count("adaptive") == 20
    assert result.analysis.models[0].cells == 40
    # the first (stratified) pass is not estimated on its own: the final analysis covers it
    assert analysed == [40]
    # the adaptive step's own estimate (which chooses the cells) says what it does
    said = [r.getMessage() for r in caplog.records if "adaptive cells" in r.getMessage()]
    assert re.fullmatch(
        r"spread of \S+: adaptive cells: estimating from the first 20 cells \(200 draws\)…", said[0]
    )
    assert said[1].startswith(said[0].split(": estimating")[0] + ": estimated in ")


def test_search_finds_best_and_worst_within_budget(tmp_path: Path, items_file: Path) -> None:
    result = _run(tmp_path, items_file, method="search", budget=48, batch=8)
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert table.num_rows == 48  # the budget: the first batch and the search's steps
    search = result.analysis.models[0].search
    assert search is not None
    assert search.best.posterior_mean >= search.worst.posterior_mean
    assert search.formats_evaluated >= 2
    assert read_analysis(tmp_path / "run") == result.analysis
    assert reanalyze(tmp_path / "run") == result.analysis
    sections = spread_report_sections(result.analysis, result.summary["design"])
    kinds = {type(b).__name__ for s in sections for b in s.blocks}
    assert {"LineChart", "BarChart", "Table", "Preformatted"} <= kinds


def test_budget_below_formats_is_an_error(tmp_path: Path, items_file: Path) -> None:
    with pytest.raises(ConfigError, match="below the number of formats"):
        _run(tmp_path, items_file, budget=10)


def test_cli_help_and_dry_run(tmp_path: Path, items_file: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["study", "spread", "--help"])
    assert out.exit_code == 0, out.output
    assert "--n-formats" in out.output and "--method" in out.output
    register()
    dry = runner.invoke(main, ["study", "spread", "--model", "scripted:x", "--data",
                               str(items_file), "--n-formats", "12", "--budget", "30",
                               "--dry-run"])  # fmt: skip
    assert dry.exit_code == 0, dry.output
    assert "30" in dry.output and "first pass" not in dry.output  # the whole run's counts
    # with a follow-up the counts are the first pass's, and the note says what may follow
    for extra, after in ((["--sampler", "adaptive"], "the adaptive pass depends"),
                         (["--method", "search", "--batch", "5"], "the search's steps depend")):  # fmt: skip
        dry = runner.invoke(main, ["study", "spread", "--model", "scripted:x", "--data",
                                   str(items_file), "--n-formats", "12", "--budget", "30",
                                   "--dry-run", *extra])  # fmt: skip
        assert dry.exit_code == 0, dry.output
        assert (
            f"dry run: the counts are the first pass's; {after} on its answers: at most 30 "
            "cells × 1 model in all"
        ) in dry.output


def test_prompteval_templates_load(items_file: Path) -> None:
    if not SHARED_TEMPLATES.exists():
        pytest.skip("../shared/data/prompteval is not present")
    formats = load_format_file(SHARED_TEMPLATES)
    assert len(formats) == 100
    from steadyeval.conditions import expand
    from steadyeval.items import load_items

    item = load_items(items_file)[0]
    trials = expand([item], [f.condition("option-logprob") for f in formats]).trials
    # the file holds 93 distinct template strings (7 pairs are identical as released)
    assert len({t.prompt for t in trials}) == len({f.source for f in formats}) == 93
    assert all("arithmetic" in t.prompt and item.question in t.prompt for t in trials)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2", "invalid JSON"),
        ("[NaN]", "NaN is not JSON"),
        ("[" * 5000 + "]" * 5000, "nested deeper than"),
        ('["{question}' + "x" * 20_000 + '"]', "over the limit of 10,000"),
        ("[]", "expected a non-empty list of template strings"),
        ('["Q: {question}\\n{choices}", 5]', "template 1: expected a string, got int 5"),
        ('["{choices} only"]', "template 0: the template has no {question} placeholder"),
        ('["{question} {answer}"]', "template 0: unknown placeholder {answer}"),
    ],
)
def test_a_bad_formats_file_names_the_file_and_the_template(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "formats.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_format_file(path)
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(
    "literal",
    [
        "{% endraw %}[[{{ 7*7 }}]]{% raw %}",
        "{{ 7*7 }}",
        "{%- if true -%}yes{%- endif -%}",
        "{# hidden #}",
        "{{- 7*7 -}}",
        "{% set x = 7 * 7 %}{{ x }}",
        "{{ ''.__class__ }}",
        "{{{{ 7*7 }}}}",
        "}} %} #} {%",
        "{{ '{' }}",
        "{%- raw -%}",
        "\\{{ 7*7 }}",
    ],
)
def test_a_formats_file_template_is_text_never_evaluated(tmp_path: Path, literal: str) -> None:
    """Class 8 of issue 37: text around the placeholders renders as itself, whatever Jinja
    delimiters it holds (there is no raw block to break out of)."""
    from steadyeval.conditions import render_template

    path = tmp_path / "formats.json"
    path.write_text(json.dumps([f"{literal} Q: {{question}} {literal}\n{{choices}}"]))
    (fmt,) = load_format_file(path)
    values = {"question": "Why?", "options_block": "A. x", "subject": None, "context": None}
    prompt = render_template(fmt.body, values, where="test")
    assert prompt == f"{literal} Q: Why? {literal}\nA. x"
    assert "49" not in prompt


def test_a_formats_file_that_is_a_fifo_or_a_device_is_refused(tmp_path: Path) -> None:
    """Class 3 of issue 37: a FIFO with no writer and /dev/zero are refused before reading."""
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        with pytest.raises(ConfigError, match=kind):
            load_format_file(path)


def test_report_leads_with_the_estimated_distribution(tmp_path: Path, items_file: Path) -> None:
    from steadyeval.reports import build_report, render_markdown

    result = _run(tmp_path, items_file)
    report = build_report(tmp_path / "run")
    ids = [s.id for s in report.sections]
    # the study's answer first, then the generic per-format headline, then the details
    assert ids[0] == "spread-headline"
    assert ids.index("spread-headline") < ids.index("headline") < ids.index("spread-model-1")
    rec = result.analysis.models[0]
    lead = report.sections[0]
    table, check = [b for b in lead.blocks if type(b).__name__ == "Table"]
    (row,) = table.rows
    assert row[0] == rec.model and rec.best.format in row[-2]
    assert rec.worst.format in row[-1]
    text = render_markdown(report)
    assert text.index("Estimated accuracy across formats") < text.index("Headline results")
    # the fit check: one line per model, and a warning when it flags
    assert check.title.startswith("Can the estimate be trusted?")
    (line,) = check.rows
    d = rec.diagnostic
    assert d is not None and line[0] == rec.model and line[2] == d.cells_per_format
    assert line[4:7] == (d.ppc_format_p, d.ppc_item_p, d.ppc_interaction_p)
    assert d.prior_mass is not None and 0 < d.prior_mass < 1  # 15 formats: a prior to compare
    older = {k: v for k, v in d.model_dump().items() if k != "prior_mass"}
    assert type(d).model_validate(older).prior_mass is None  # written before the field: reads
    assert f"[{d.format_sd_low:.2f}, {d.format_sd_high:.2f}]" in line[1]
    flags = [name for name, on in (("prior-driven", d.prior_driven), ("misfit", d.misfit)) if on]
    assert line[-1] == (", ".join(flags) or "ok")
    notes = [b for b in lead.blocks if type(b).__name__ == "Note"]
    assert any(d.message in n.text and n.level == "warning" for n in notes) == bool(flags)


def test_the_estimate_says_when_it_starts_and_ends(
    tmp_path: Path, items_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The analysis can take minutes (all of MMLU: about 6): it logs at INFO what it
    estimates and how long it took (and every 30 s between, see ProgressLog)."""
    import logging

    caplog.set_level(logging.INFO, logger="steadyeval")
    _run(tmp_path, items_file)
    got = [r.getMessage() for r in caplog.records if "spread of" in r.getMessage()]
    assert len(got) == 2, got
    assert re.fullmatch(
        r"spread of \S+: estimating 15 formats × 12 items from 40 cells \(100 draws\)…", got[0]
    )
    assert re.fullmatch(r"spread of \S+: estimated in [\d.]+ s", got[1])


def test_rerunning_a_study_with_a_follow_up_keeps_its_report(
    tmp_path: Path, items_file: Path
) -> None:
    """The first pass writes its rows under another run id than the whole run's: a rerun of
    the same study (resumed from the cache) must not take the report for a stale one."""
    from steadyeval.reports import write_report

    first = _run(tmp_path, items_file, sampler="adaptive")
    run_dir = tmp_path / "run"
    page = write_report(run_dir)
    before = page.read_bytes()
    again = _run(tmp_path, items_file, sampler="adaptive")
    assert again.summary["run_id"] == first.summary["run_id"]
    assert page.read_bytes() == before  # same results: the report still holds
    # a rerun that stops after its first pass leaves the first pass's rows: not the
    # report's run, so the report goes
    from steadyeval.studies.spread import SpreadStudy

    def stopped(*args: Any) -> Any:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SpreadStudy, "follow_up", stopped)
        with pytest.raises(KeyboardInterrupt):
            _run(tmp_path, items_file, sampler="adaptive")
    assert not page.exists()
    with pytest.raises(DataError, match="interrupted"):  # the folder holds an unfinished run
        write_report(run_dir)
    assert (
        _run(tmp_path, items_file, sampler="adaptive").summary["run_id"] == first.summary["run_id"]
    )
    write_report(run_dir)
    # another config (--overwrite) replaces the run and its report goes with it
    register()
    cfg = SpreadConfig(
        models=["scripted:x"], data=str(items_file), n_formats=15, budget=30, draws=100,
        sampler="adaptive",
    )  # fmt: skip
    opts = RunOptions(out=run_dir, progress=False, overwrite=True)
    assert isinstance(run_study("spread", cfg, options=opts), StudyResult)
    assert not page.exists()
