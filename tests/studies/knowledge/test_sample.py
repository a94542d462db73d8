"""``steadyeval study knowledge --sample-per-subject N``: N questions of each subject drawn
with the study's seed (the random counterpart of ``--limit-per-subject``), not with it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.items import load_mmlu_items, sample_items
from steadyeval.results import read_results
from tests.scripted_backend import register


def _study(*argv: str) -> list[str]:
    register()
    return ["study", "knowledge", "--model", "scripted:m", *argv]


def test_sample_per_subject_runs_n_of_each_subject(mini_mmlu: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = _study("--data", str(mini_mmlu), "--shots", "0", "--sample-per-subject", "2",
                  "--seed", "3", "--out", str(out))  # fmt: skip
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    asked = set(read_results(out).column("item_id").to_pylist())
    assert Counter(i.split("/")[0] for i in asked) == {
        "abstract_algebra": 2,
        "high_school_us_history": 2,
    }
    items = load_mmlu_items(mini_mmlu)
    for subject in ("abstract_algebra", "high_school_us_history"):
        of = [i for i in items if i.metadata["subject"] == subject]
        assert {i.id for i in of} & asked == {i.id for i in sample_items(of, 2, seed=3)}


def test_sample_per_subject_with_limit_per_subject_is_refused(mini_mmlu: Path) -> None:
    argv = _study("--data", str(mini_mmlu), "--limit-per-subject", "1",
                  "--sample-per-subject", "1", "--dry-run")  # fmt: skip
    r = CliRunner().invoke(main, argv)
    assert r.exit_code != 0
    assert "limit_per_subject" in r.output and "sample_per_subject" in r.output
    assert "not both" in r.output and "Traceback" not in r.output
