"""``steadyeval compare --over formats`` on spread-study runs (issue 44), with the scripted
test backend (its answers depend on the prompt alone, so two scripted models agree)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.compare import compare_over_formats
from steadyeval.run import RunOptions
from steadyeval.studies import run_study
from steadyeval.studies.spread import SpreadConfig
from tests.scripted_backend import register


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


def _spread(tmp_path: Path, items: Path, name: str, models: list[str], **kw: Any) -> Path:
    register()
    cfg = SpreadConfig(
        models=models, data=str(items), n_formats=kw.pop("n_formats", 15), budget=40, draws=60, **kw
    )
    out = tmp_path / name
    run_study("spread", cfg, options=RunOptions(out=out, progress=False))
    return out


def test_two_runs_compared_over_formats(tmp_path: Path, items_file: Path) -> None:
    a = _spread(tmp_path, items_file, "a", ["scripted:a"])
    b = _spread(tmp_path, items_file, "b", ["scripted:b"])
    result = compare_over_formats([a, b], draws=60)
    assert [arm.model for arm in result.arms] == ["scripted:a", "scripted:b"]
    (pair,) = result.pairs
    # the scripted models answer alike: no difference can be claimed
    assert pair.difference[1] < 0 < pair.difference[2] or pair.difference == (0.0, 0.0, 0.0)
    assert len(pair.formats) == 15 and sum(f.shared for f in pair.formats) == 40
    assert all(f.observed == 0.0 for f in pair.formats if f.shared)
    assert sum(p for _, p in result.rankings) == pytest.approx(1.0)
    out = CliRunner().invoke(
        main,
        ["compare", str(a), str(b), "--over", "formats", "--rank", "--draws", "60",
         "--json", str(tmp_path / "cmp.json")],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "is better than A on" in out.output and "rankings" in out.output
    data = json.loads((tmp_path / "cmp.json").read_text())
    assert data["pairs"][0]["b"] == "B" and len(data["pairs"][0]["formats"]) == 15


def test_one_run_with_two_models(tmp_path: Path, items_file: Path) -> None:
    run = _spread(tmp_path, items_file, "ab", ["scripted:a", "scripted:b"])
    result = compare_over_formats([run], draws=60, seed=3)
    assert len(result.arms) == 2 and result.arms[0].cells == 40


def test_refusals(tmp_path: Path, items_file: Path) -> None:
    a = _spread(tmp_path, items_file, "a", ["scripted:a"])
    other = _spread(tmp_path, items_file, "other", ["scripted:b"], n_formats=16)
    runner = CliRunner()
    cases = [
        ([str(a)], "needs two"),
        ([str(a), str(other)], "one population of formats"),
        ([str(a), str(a), "--cluster", "x"], "--cluster does not go"),
        ([str(a), str(a), "--outcome", "refused"], "--outcome correct"),
        ([str(a), str(tmp_path / "nowhere")], "not a run folder"),
    ]
    for args, message in cases:
        out = runner.invoke(main, ["compare", *args, "--over", "formats"])
        assert out.exit_code != 0 and message in out.output, (args, out.output)
    out = runner.invoke(main, ["compare", str(a), str(a), "--rank"])
    assert out.exit_code != 0 and "--rank goes with --over formats" in out.output


def test_runs_on_different_items_are_compared_on_the_shared_ones(
    tmp_path: Path, items_file: Path
) -> None:
    a = _spread(tmp_path, items_file, "a", ["scripted:a"], sample=8, seed=1)
    b = _spread(tmp_path, items_file, "b", ["scripted:b"], sample=8, seed=2)
    result = compare_over_formats([a, b], draws=60)
    assert result.n_items < 8 and any("different items" in n for n in result.notes)
    with pytest.raises(Exception, match="the same run as"):
        compare_over_formats([a, tmp_path / "a" / "."], draws=60)
    out = CliRunner().invoke(
        main, ["compare", str(a), str(b), "--over", "formats", "--model", "nope"]
    )
    assert out.exit_code != 0 and "'scripted:a'" in out.output


def test_items_with_the_same_ids_but_other_content_are_noted(
    tmp_path: Path, items_file: Path
) -> None:
    a = _spread(tmp_path, items_file, "a", ["scripted:a"])
    changed = tmp_path / "changed.jsonl"
    changed.write_text(items_file.read_text().replace("What is", "Compute"))
    b = _spread(tmp_path, changed, "b", ["scripted:b"])
    result = compare_over_formats([a, b], draws=60)
    assert any("items differ: 12 of 12" in n for n in result.notes)
