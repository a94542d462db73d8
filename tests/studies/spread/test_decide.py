"""The decide study (issue 44): cells drawn batch by batch until the anytime-valid test
decides; the analysis replays the sequence from the table and adds the comparison over
formats. The sequential loop on synthetic answers; the study end to end on the scripted test
backend (its answers depend on the prompt alone, so two scripted models always agree)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.run import RunOptions
from steadyeval.studies import StudyResult, reanalyze, run_study
from steadyeval.studies.spread._decide_cells import draw_sequence, first_cells
from tests.run_folder_edits import write_as_the_run
from tests.scripted_backend import register


def _answers(rule: Any) -> Any:
    return lambda cells: [rule(f, i) for f, i in cells]


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_clear_difference_stops_early(adaptive: bool) -> None:
    # A right on every item, B right on a third of them
    seq = draw_sequence(
        30, 60, budget=2000, batch=10, adaptive=adaptive, confidence=0.95, seed=0,
        answer=_answers(lambda f, i: (1.0, float(i % 3 == 0))),
    )  # fmt: skip
    assert 20 <= len(seq) < 200
    again = draw_sequence(
        30, 60, budget=2000, batch=10, adaptive=adaptive, confidence=0.95, seed=0,
        answer=_answers(lambda f, i: (1.0, float(i % 3 == 0))),
    )  # fmt: skip
    assert seq == again  # deterministic given the seed and the answers
    assert seq[:10] == first_cells(30, 60, budget=2000, batch=10, adaptive=adaptive, seed=0)
    if adaptive:
        assert all(0 < w <= bound for _, _, w, bound in seq)


def test_no_difference_spends_the_budget() -> None:
    seq = draw_sequence(
        30, 60, budget=300, batch=25, adaptive=False, confidence=0.95, seed=1,
        answer=_answers(lambda f, i: (float(i % 2), float(i % 2))),
    )  # fmt: skip
    assert len(seq) == 300


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"What is {i} + {i}?",
         "options": [str(2 * i), str(2 * i + 1), str(2 * i + 2)], "answer": 0}
        for i in range(12)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _decide(tmp_path: Path, items: Path, **kw: Any) -> StudyResult:
    register()
    config = {
        "models": ["scripted:a", "scripted:b"], "data": str(items), "n_formats": 10,
        "budget": 60, "batch": 20, "draws": 60, **kw,
    }  # fmt: skip
    result = run_study("decide", config, options=RunOptions(out=tmp_path / "run", progress=False))
    assert isinstance(result, StudyResult)
    return result


def test_study_end_to_end_rerun_and_reanalyze(tmp_path: Path, items_file: Path) -> None:
    result = _decide(tmp_path, items_file)
    plan = result.summary["plan"]
    assert plan["model_calls"] == plan["unique"] > 0  # the batches' calls are counted
    seq = result.analysis
    assert seq.decision == "undecided" and seq.cells == 60 and seq.budget == 60
    (pair,) = seq.pairs
    assert pair.winner is None and pair.decided_at is None and pair.level == 0.95
    assert pair.difference.estimate == 0.0 and pair.difference.low < 0 < pair.difference.high
    design = result.summary["design"]
    assert len(design["sequence"]) == 60 and design["models"] == ["scripted:a", "scripted:b"]
    # every distinct cell answered by both models, once
    assert result.table.num_rows == 2 * seq.distinct_cells
    (over,) = result.analysis.over_formats
    assert len(over.formats) == 10 and over.difference.low <= 0 <= over.difference.high
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "Decision: undecided at 95%" in summary and "is better than B on" in summary
    again = reanalyze(tmp_path / "run")
    assert again == seq
    second = _decide(tmp_path, items_file)  # resumes from the run folder and the cache
    assert second.summary["design"]["sequence"] == design["sequence"]


def test_the_comparison_says_when_it_starts_and_ends(
    tmp_path: Path, items_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="steadyeval")
    _decide(tmp_path, items_file)
    got = [r.getMessage() for r in caplog.records if "comparison of" in r.getMessage()]
    # one comparison: the first batch is not analysed on its own (the batches after it
    # are the study's follow-up, and the final analysis covers them all)
    start, end = got
    assert start.startswith("comparison of 2 models over formats: 10 formats × ")
    assert start.endswith(" cells (60 draws)…")
    assert end.startswith("comparison of 2 models over formats: done in ")
    # the run's progress=False (--no-progress): no per-batch progress lines either
    assert not [r for r in caplog.records if "cells drawn" in r.getMessage()]


def test_refusals(tmp_path: Path, items_file: Path) -> None:
    register()
    runner = CliRunner()
    base = ["study", "decide", "--data", str(items_file), "--out", str(tmp_path / "r")]
    out = runner.invoke(main, [*base, "--model", "scripted:a"])
    assert out.exit_code != 0 and "compares 2 to 6 models" in out.output
    out = runner.invoke(
        main, [*base, "--model", "scripted:a", "--model", "scripted:b", "--batch", "0"]
    )
    assert out.exit_code != 0 and "batch" in out.output


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (None, None),  # only re-serialised: the same analysis
        ([999, 0, 1.0, 1.0], "format index 999"),
        ([-1, 0, 1.0, 1.0], "format index -1"),
        ([0, 0, -5.0, 1.0], "weight -5"),
        ([0, 0], "is not [format, item, weight, weight bound]"),
    ],
)
def test_reanalyze_an_edited_summary(
    tmp_path: Path, items_file: Path, cell: Any, message: str | None
) -> None:
    from steadyeval import DataError

    result = _decide(tmp_path, items_file, budget=20)
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    if cell is not None:
        summary["design"]["sequence"][0] = cell
    write_as_the_run(path.parent, path.name, summary)  # as another version might write it
    if message is None:
        assert reanalyze(tmp_path / "run") == result.analysis
        return
    with pytest.raises(DataError, match=r"summary\.json") as info:
        reanalyze(tmp_path / "run")
    assert message in str(info.value) and "sequence[0]" in str(info.value)


def test_one_cell_says_what_it_cannot_tell(tmp_path: Path, items_file: Path) -> None:
    result = _decide(tmp_path, items_file, budget=1)
    assert result.analysis.cells == 1
    assert result.analysis.notes  # e.g. every observed cell correct, or one format observed
    assert result.analysis.notes[0] in (tmp_path / "run" / "summary.md").read_text()


def test_three_models_every_pair_tested_at_a_shared_level(tmp_path: Path, items_file: Path) -> None:
    result = _decide(
        tmp_path, items_file, models=["scripted:a", "scripted:b", "scripted:c"], budget=40
    )
    analysis = result.analysis
    assert [(p.a, p.b) for p in analysis.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert all(p.level == pytest.approx(1 - 0.05 / 3) for p in analysis.pairs)
    assert len(analysis.over_formats) == 3 and len(analysis.accuracy) == 3
    assert sum(r.probability for r in analysis.rankings) <= 1.0 + 1e-9
    assert result.table.num_rows == 3 * analysis.distinct_cells
    assert "Rankings by mean accuracy" in (tmp_path / "run" / "summary.md").read_text()


def test_three_clear_models_are_ranked() -> None:
    from steadyeval.studies.spread._decide_cells import decide_pairs

    rule = lambda f, i: (1.0, float(i % 2 == 0), float(i % 5 == 0))  # noqa: E731
    seq = draw_sequence(
        30, 60, budget=3000, batch=20, adaptive=False, confidence=0.95, seed=0,
        answer=_answers(rule),
    )  # fmt: skip
    import numpy as np

    y = np.array([rule(f, i) for f, i, _, _ in seq])
    ones = np.ones(len(seq))
    assert all(d.decision == 1 for d in decide_pairs(y, ones, ones, 0.95))


def test_reanalyze_refuses_a_truncated_sequence(tmp_path: Path, items_file: Path) -> None:
    # the table holds cells the sequence no longer lists: not the run's sequence (review 44b)
    from steadyeval import SteadyevalError

    _decide(tmp_path, items_file, budget=40)
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    summary["design"]["sequence"] = summary["design"]["sequence"][:20]
    write_as_the_run(path.parent, path.name, summary)
    with pytest.raises(SteadyevalError, match="sequence does not list"):
        reanalyze(tmp_path / "run")


def test_a_level_is_never_rounded_to_100_and_the_terminal_prints_the_decision(
    tmp_path: Path, items_file: Path
) -> None:
    register()
    models = ["--model", "scripted:a", "--model", "scripted:b", "--model", "scripted:c"]
    args = [
        "study", "decide", *models, "--data", str(items_file), "--n-formats", "10",
        "--budget", "20", "--draws", "50", "--confidence", "0.999",
        "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
    ]  # fmt: skip
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert "Decision: undecided at 99.9% after" in out.output
    assert "each tested at 99.967%" in out.output
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "100%" not in summary and "(99.9% posterior intervals" in summary


def test_a_ranking_follows_from_the_decided_pairs() -> None:
    from steadyeval.studies.spread._decide_cells import closure, implied_order

    assert implied_order(3, [(0, 1), (1, 2)]) == [0, 1, 2]  # A > B, B > C: A > C follows
    assert implied_order(3, [(1, 0), (2, 0)]) is None  # B vs C still open
    assert implied_order(2, [(1, 0)]) == [1, 0]
    assert implied_order(3, [(0, 1), (1, 2), (2, 0)]) is None  # a cycle
    assert closure(3, [(0, 1), (1, 2), (2, 0)]).diagonal().all()


def test_the_decision_uses_transitivity_and_notes_a_cycle() -> None:
    from steadyeval.studies.spread._decide_analysis import _decision
    from steadyeval.studies.spread._decide_cells import implied_order

    def decide(won: list[tuple[int, int]], notes: list[str]) -> str:
        return _decision(won, implied_order(3, won), 3, notes)

    notes: list[str] = []
    assert decide([(0, 1), (1, 2)], notes) == "A > B > C"  # A > C implied
    assert decide([(1, 0)], notes) == "B > A"
    assert not notes
    assert decide([(0, 1), (2, 0), (1, 2)], notes) == "A > B, C > A, B > C"
    assert "cycle" in notes[0]


def test_a_model_whose_cells_are_all_wrong_is_noted() -> None:
    import numpy as np

    from steadyeval import stats

    models, rows, cols = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 2] * 2), np.zeros(6, int)
    with pytest.warns(
        stats.StatsWarning, match="model 0: every one of its 3 observed cells is wrong"
    ):
        stats.compare_formats(models, rows, cols, [0, 0, 0, 1, 0, 1], (2, 3, 2), draws=50)


def test_a_decided_pair_reports_the_bound_its_own_test_gives() -> None:
    from types import SimpleNamespace

    import numpy as np

    from steadyeval.studies.spread._decide_analysis import _pairs
    from steadyeval.studies.spread._decide_cells import decide_pairs

    rng = np.random.default_rng(0)
    y = np.column_stack([rng.random(400) < 0.8, rng.random(400) < 0.5]).astype(float)
    design = SimpleNamespace(sequence=[[0, 0, 1.0, 1.0]] * 400, confidence=0.95)
    ones = np.ones(400)
    decisions = decide_pairs(y, ones, ones, 0.95)
    (pair,) = _pairs(design, y, decisions, [0, 1])  # type: ignore[arg-type]
    assert pair.winner == "A" and pair.margin is not None and pair.margin > 0
    assert pair.margin <= pair.difference.estimate


def test_a_dry_run_says_what_its_counts_leave_out(tmp_path: Path, items_file: Path) -> None:
    register()
    out = CliRunner().invoke(
        main,
        ["study", "decide", "--model", "scripted:a", "--model", "scripted:b", "--data",
         str(items_file), "--budget", "300", "--dry-run"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "first batch's (20 cells)" in out.output and "at most 300 cells × 2 models" in out.output
