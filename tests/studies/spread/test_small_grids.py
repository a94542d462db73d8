"""The spread study on small and degenerate grids, and the documented search command, through
the CLI (issues 37 class 7 and 38 point 2): each ends with an analysis, or one ``error:`` line
before anything runs; never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from steadyeval.cli import main
from steadyeval.results import ResultsFrame
from steadyeval.studies.spread import analyze_spread
from tests.scripted_backend import register

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "items.jsonl"


def _study(*argv: str) -> Result:
    register()
    return CliRunner().invoke(main, ["study", "spread", *argv])


def _analysis(out: Path) -> dict[str, object]:
    analysis: dict[str, object] = json.loads((out / "summary.json").read_text())["analysis"]
    return analysis


def test_the_documented_search_command_runs(tmp_path: Path) -> None:
    """docs/study-spread.md's `--method search` line on examples/items.jsonl, the scripted
    test backend standing in for hf:./tiny-gpt2. Its first pass (the default format's first
    batch alone) crashed the estimator's Newton move with LinAlgError, after writing its
    rows."""
    out = tmp_path / "runs" / "spread-search"
    argv = ["--model", "scripted:m", "--data", str(EXAMPLE), "--n-formats", "20",
            "--budget", "60", "--method", "search", "--out", str(out)]  # fmt: skip
    r = _study(*argv)
    assert r.exit_code == 0, r.output
    (rec,) = _analysis(out)["models"]  # type: ignore[misc]
    assert rec["cells"] == 60 and rec["search"]["formats_evaluated"] >= 2
    assert all(math.isfinite(q["estimate"]) for q in rec["quantiles"])
    report = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
    assert report.exit_code == 0, report.output


@pytest.mark.parametrize(
    "flags",
    [
        ("--n-formats", "2", "--limit", "1", "--budget", "2"),  # one item
        ("--n-formats", "3", "--limit", "1", "--budget", "3"),  # one item, three formats
        ("--n-formats", "2", "--limit", "2", "--budget", "4"),  # the full 2 × 2 grid
        ("--n-formats", "2", "--limit", "2", "--budget", "4", "--no-covariates"),
        ("--n-formats", "2", "--limit", "2", "--budget", "2", "--sampler", "adaptive"),
    ],
)
def test_small_grids_end_with_an_analysis(tmp_path: Path, flags: tuple[str, ...]) -> None:
    out = tmp_path / "run"
    r = _study("--model", "scripted:m", "--data", str(EXAMPLE), *flags, "--out", str(out))
    assert r.exit_code == 0, r.output
    (rec,) = _analysis(out)["models"]  # type: ignore[misc]
    for q in rec["quantiles"]:
        assert 0 <= q["low"] <= q["high"] <= 1 and 0 <= q["estimate"] <= 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--method", "search", "--budget", "5"), "below two search steps of --batch 5"),
        (("--method", "search", "--limit", "1"), "budget 2 (the default: 2 × items)"),
        (("--method", "search", "--batch", "20"), "pass --budget 40 or more"),
    ],
)
def test_a_search_budget_under_two_steps_is_refused_before_running(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    """It was a StatsInputError traceback after the first batch had run (and the first
    batch could plan more cells than the budget)."""
    for dry in ((), ("--dry-run",)):
        out = tmp_path / f"run{len(dry)}"
        r = _study("--model", "scripted:m", "--data", str(EXAMPLE), *flags, *dry, "--out", str(out))
        assert r.exit_code == 2 and message in r.output, r.output
        assert "Traceback" not in r.output
        assert not (out / "results.parquet").exists()


def test_a_search_over_one_format_is_refused(tmp_path: Path) -> None:
    formats = tmp_path / "one.json"
    formats.write_text(json.dumps(["Q: {question}\n{choices}\nA:"]))
    r = _study("--model", "scripted:m", "--data", str(EXAMPLE), "--formats", str(formats),
               "--method", "search", "--budget", "12", "--out", str(tmp_path / "run"))  # fmt: skip
    assert r.exit_code == 2 and "a search needs at least 2 formats" in r.output, r.output


def _table(cells: list[tuple[str, str, bool]]) -> ResultsFrame:
    table = pa.table(
        {
            "model": ["m"] * len(cells),
            "condition": [c[0] for c in cells],
            "item_id": [c[1] for c in cells],
            "correct": [c[2] for c in cells],
            "sample_index": [0] * len(cells),
            "prompt": ["p"] * len(cells),
        }
    )
    return ResultsFrame(table)


def _info(n_formats: int, n_items: int) -> dict[str, object]:
    return {
        "formats": [{"name": f"f{k}", "choices": {}} for k in range(n_formats)],
        "items": [f"i{k}" for k in range(n_items)],
        "covariates": None,
        "confidence": 0.9,
        "draws": 50,
        "seed": 0,
        "method": "estimate",
    }


def test_the_analysis_notes_what_degenerate_cells_cannot_tell() -> None:
    everything_right = _table([("f0", "i0", True), ("f0", "i1", True), ("f1", "i1", True)])
    (rec,) = analyze_spread(everything_right, _info(2, 2)).models
    assert any("every observed cell (3) is correct" in n for n in rec.notes)
    assert all(q.estimate > 0.5 for q in rec.quantiles)
    one_format = _table([("f0", "i0", True), ("f0", "i1", False)])
    (rec,) = analyze_spread(one_format, _info(5, 2)).models
    assert rec.diagnostic is not None and rec.diagnostic.prior_driven
    assert rec.notes == [
        "only one of the 5 formats has observed cells: how the others differ from it comes "
        "from the prior alone",
        rec.diagnostic.message,  # the fit check: 1 of 5 formats has two cells
    ]
    assert rec.diagnostic.message.startswith("fit check: only 20% of the 5 formats")
    ordinary = _table([("f0", "i0", True), ("f1", "i1", False), ("f1", "i0", True)])
    (rec,) = analyze_spread(ordinary, _info(2, 2)).models
    # nothing the cells cannot tell; three cells say little about how far formats differ
    assert all(note.startswith("fit check: ") for note in rec.notes)


def test_a_fully_observed_grid_is_not_flagged() -> None:
    """Every cell observed (3 formats × 4 items, one cell per format and item): nothing is
    predicted, so the fit check says ok and adds no note, however little 4 cells per
    format say about how far formats differ."""
    right = {("f0", "i0"), ("f0", "i1"), ("f1", "i0"), ("f1", "i2"), ("f1", "i3"), ("f2", "i3")}
    cells = [(f"f{f}", f"i{i}", (f"f{f}", f"i{i}") in right) for f in range(3) for i in range(4)]
    (rec,) = analyze_spread(_table(cells), _info(3, 4)).models
    assert rec.cells == rec.cells_total == 12
    assert rec.diagnostic is not None
    assert not rec.diagnostic.prior_driven and not rec.diagnostic.misfit
    assert rec.notes == [] and rec.spread.low == rec.spread.high == 0.5


def test_the_report_shows_the_fit_check_and_reads_analyses_written_before_it() -> None:
    from steadyeval.document import Note, Table
    from steadyeval.studies.spread import SpreadAnalysis, spread_report_sections

    one_format = _table([("f0", "i0", True), ("f0", "i1", False), ("f1", "i1", True)])
    analysis = analyze_spread(one_format, _info(5, 2))
    (rec,) = analysis.models
    assert rec.diagnostic is not None and rec.diagnostic.prior_driven
    assert rec.diagnostic.ppc_interaction_p is None  # no two formats share two items
    lead = spread_report_sections(analysis, _info(5, 2))[0]
    (check,) = [b for b in lead.blocks if isinstance(b, Table) and "fit check" in b.title]
    assert check.rows[0][0] == "m" and check.rows[0][-1] == "prior-driven"
    assert check.rows[0][6] is None  # shown as a dash
    warnings = [b.text for b in lead.blocks if isinstance(b, Note) and b.level == "warning"]
    assert f"m: {rec.diagnostic.message}" in warnings
    # summary.json written before the check (no "diagnostic"): it reads, and says so
    data = analysis.to_json()
    for model in data["models"]:
        del model["diagnostic"]
    old = SpreadAnalysis.from_json(data)
    assert old.models[0].diagnostic is None
    lead = spread_report_sections(old, _info(5, 2))[0]
    assert not [b for b in lead.blocks if isinstance(b, Table) and "fit check" in b.title]
    assert any(isinstance(b, Note) and "no fit check" in b.text for b in lead.blocks)


def test_the_cells_are_read_from_the_results_frame() -> None:
    """model_cells is a view of the ResultsFrame: a cell counts once (its first row), other
    models' rows and conditions outside the design are skipped, a null answer is wrong."""
    from steadyeval.studies.spread._analysis import model_cells

    table = pa.table(
        {
            "model": ["m", "m", "n", "m", "m", "m"],
            "condition": ["f1", "f1", "f0", "other", "f0", "f1"],
            "item_id": ["i1", "i1", "i0", "i0", "i0", "i0"],
            "correct": [True, False, True, True, None, True],
            "prompt": ["", "p1", "q", "x", "p0", "p1b"],
        }
    )
    rows, cols, y, prompts = model_cells(ResultsFrame(table), _info(3, 2), "m")
    assert rows.tolist() == [1, 0, 1] and cols.tolist() == [1, 0, 0]
    assert y.tolist() == [1.0, 0.0, 1.0]
    assert prompts == ["p0", "p1b", ""]


def test_a_missing_column_or_a_foreign_item_is_named() -> None:
    from steadyeval import ConfigError, DataError

    cells = _table([("f0", "i0", True), ("f1", "i9", False)])
    with pytest.raises(DataError, match=r"missing column\(s\) prompt; the spread analysis reads"):
        analyze_spread(ResultsFrame(cells.table.drop_columns(["prompt"])), _info(2, 2))
    with pytest.raises(ConfigError, match="results row of item 'i9': not an item of the design"):
        analyze_spread(cells, _info(2, 2))
