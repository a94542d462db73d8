"""``steadyeval study spread --sample N``: the study runs N items drawn with its seed (not the
first N), and ``--sample`` with ``--limit`` is one error line naming both."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.items import load_items, sample_items
from steadyeval.results import read_results
from tests.scripted_backend import register

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "items.jsonl"


def test_spread_runs_the_seeded_sample(tmp_path: Path) -> None:
    register()
    out = tmp_path / "run"
    argv = ["study", "spread", "--model", "scripted:m", "--data", str(EXAMPLE),
            "--n-formats", "2", "--sample", "3", "--seed", "5", "--out", str(out)]  # fmt: skip
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    asked = set(read_results(out).column("item_id").to_pylist())
    items = load_items(EXAMPLE)
    expected = [item.id for item in sample_items(items, 3, seed=5)]
    assert asked == set(expected) and len(asked) == 3
    assert expected != [item.id for item in items[:3]]  # a sample, not the first three


def test_spread_refuses_sample_with_limit(tmp_path: Path) -> None:
    register()
    argv = ["study", "spread", "--model", "scripted:m", "--data", str(EXAMPLE),
            "--limit", "2", "--sample", "2", "--dry-run"]  # fmt: skip
    r = CliRunner().invoke(main, argv)
    assert r.exit_code != 0
    assert "give limit (the first N items) or sample" in r.output and "not both" in r.output
    assert "Traceback" not in r.output
