"""``sample`` (``--sample N``): a run evaluates N items drawn with its seed, its shots still
come from the whole data set, the sample is in config.json and the run id, a rerun resumes
the same items, and ``limit`` with ``sample`` is refused, naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import steadyeval as se
from steadyeval import ConfigError
from steadyeval.cli import main
from steadyeval.items import sample_items
from tests.scripted_backend import register

register()

SHOTS = [{"name": "mc-2shot", "format": "mc", "scoring": "letter-logprob", "shots": {"n": 2}}]


def _items(path: Path, n: int = 30) -> Path:
    """Items sorted by subject, as MMLU's files are: the first N are all algebra."""
    rows = [
        {
            "id": f"q{i}",
            "question": f"What is item {i}?",
            "options": [f"yes {i}", f"no {i}"],
            "answer": i % 2,
            "metadata": {"subject": "algebra" if i < 20 else "law"},
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_sampled_run_asks_the_sampled_items_with_the_full_runs_shots(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    config = {"data": str(data), "models": ["scripted:m"], "conditions": SHOTS, "seed": 4}
    full = se.run_config(config).to_pandas().set_index("item_id")["prompt_hash"]
    result = se.run_config(config, sample=6, out=tmp_path / "run")
    pilot = result.to_pandas().set_index("item_id")["prompt_hash"]
    expected = sample_items(se.load_items(data), 6, seed=4)
    assert list(pilot.index) == [item.id for item in expected]
    assert sorted(item.metadata["subject"] for item in expected) == ["algebra"] * 4 + ["law"] * 2
    assert (pilot == full.loc[pilot.index]).all()  # shots drawn from all 30 items, as in full
    written = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert written["sample"] == 6 and written["seed"] == 4 and written["limit"] is None


def test_the_seed_picks_the_sample_and_a_rerun_resumes_it(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    config = {"data": str(data), "models": ["scripted:m"], "sample": 5}
    out = tmp_path / "run"
    first = se.run_config(config, out=out)
    again = se.run_config(config, out=out)  # the same config resumes into its folder
    assert again.summary["run_id"] == first.summary["run_id"]
    assert again.summary["plan"]["model_calls"] == 0  # every answer resumed, none asked again
    assert list(again.to_pandas()["item_id"]) == list(first.to_pandas()["item_id"])
    other = se.run_config(config, seed=1)
    assert set(other.to_pandas()["item_id"]) != set(first.to_pandas()["item_id"])
    with pytest.raises(ConfigError, match="different config"):
        se.run_config(config, seed=1, out=out)


def test_limit_and_sample_together_are_refused(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    with pytest.raises(ConfigError, match=r"give limit .* or sample .*, not both"):
        se.run_config({"data": str(data), "models": ["scripted:m"], "limit": 3, "sample": 3})
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"data: {data}\nmodels: [scripted:m]\nlimit: 3\n", encoding="utf-8")
    # a flag for one replaces the file's other, as a flag replaces the file's own key
    result = CliRunner().invoke(main, ["run", str(cfg), "--sample", "3", "--dry-run"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["run", str(cfg), "--sample", "3", "--limit", "2"])
    assert result.exit_code != 0
    assert "limit" in result.output and "sample" in result.output and "not both" in result.output
    with pytest.raises(ConfigError, match="sample"):
        se.run_config({"data": str(data), "models": ["scripted:m"], "sample": 0})


def test_the_cli_sample_flag(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    out = tmp_path / "run"
    argv = ["run", "--model", "scripted:m", "--data", str(data), "--sample", "8", "--seed", "2"]
    result = CliRunner().invoke(main, [*argv, "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    ids = list(se.read_results(out).to_pandas()["item_id"].unique())
    assert ids == [item.id for item in sample_items(se.load_items(data), 8, seed=2)]
    assert ids != [f"q{i}" for i in range(8)]  # not the first eight
