"""A study's analysis in ``summary.json`` that reads as its type but disagrees with the
results table (its models edited) is recomputed from the table for the report, with a note
saying why; the study's sections are never silently emptied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steadyeval.reports import Note, ReportOptions, Section, build_report, context_from_table
from steadyeval.results import read_results
from steadyeval.studies import get_study

from ._studies import StudyRuns

_OPTIONS = ReportOptions(n_resamples=50)


def _report(run_dir: Path, edit: Any = None) -> list[Section]:
    summary = json.loads((run_dir / "summary.json").read_text())
    if edit is not None:
        edit(summary["analysis"])
    ctx = context_from_table(read_results(run_dir), summary, _OPTIONS)
    return list(build_report(ctx).sections)


def _notes(sections: list[Section]) -> list[str]:
    return [b.text for s in sections for b in s.blocks if isinstance(b, Note)]


@pytest.mark.parametrize("name", ["formats", "knowledge"])
@pytest.mark.parametrize(
    ("models", "why"),
    [
        (["nosuch"], "it names model 'nosuch', which the results table lacks"),
        ([], "it leaves out model 'hf:"),
    ],
)
def test_an_analysis_naming_other_models_is_recomputed_with_a_note(
    study_runs: StudyRuns, name: str, models: list[str], why: str
) -> None:
    run_dir = study_runs[name]
    kept = _report(run_dir)
    assert not [n for n in _notes(kept) if "summary.json" in n]
    shown = _report(run_dir, lambda a: a.update(models=models))
    (note,) = [n for n in _notes(shown) if "summary.json" in n]
    assert "does not match the results table" in note and why in note, note
    assert "recomputed it from the results table" in note
    assert "`" not in note  # a Note is plain text: the HTML shows backticks as they are
    # every section is there, with every block it had (and the note)
    assert [s.id for s in shown] == [s.id for s in kept]
    blocks = {s.id: len(s.blocks) for s in kept}
    assert sum(len(s.blocks) for s in shown) == sum(blocks.values()) + 1
    assert all(len(s.blocks) >= blocks[s.id] for s in shown)


def test_an_analysis_the_sections_cannot_show_is_recomputed_with_a_note(
    study_runs: StudyRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disagreement the models check does not see, which the study's sections trip on
    (here: the check turned off), is recomputed too, with the error in the note."""
    run_dir = study_runs["sensitivity"]
    study = get_study("sensitivity")
    monkeypatch.setattr(type(study), "check_analysis", lambda self, a, r: None)
    kept = _report(run_dir)
    shown = _report(run_dir, lambda a: a.update(models=["nosuch"]))
    (note,) = [n for n in _notes(shown) if "summary.json" in n]
    assert "could not be shown (KeyError: 'nosuch')" in note, note
    assert [s.id for s in shown] == [s.id for s in kept]


@pytest.mark.parametrize("name", ["formats", "sensitivity", "knowledge", "disparity"])
def test_an_analysis_naming_a_model_twice_is_recomputed_with_a_note(
    study_runs: StudyRuns, name: str
) -> None:
    """A model listed twice (a pasted line in summary.json) was shown twice: formats
    repeated the model's sections, knowledge switched to its several-models table,
    disparity's table had a column per listing."""
    run_dir = study_runs[name]
    kept = _report(run_dir)
    shown = _report(run_dir, lambda a: a.update(models=a["models"] * 2))
    (note,) = [n for n in _notes(shown) if "summary.json" in n]
    assert "does not match the results table (it names model " in note and "twice" in note
    assert [s.id for s in shown] == [s.id for s in kept]
    assert sum(len(s.blocks) for s in shown) == sum(len(s.blocks) for s in kept) + 1
