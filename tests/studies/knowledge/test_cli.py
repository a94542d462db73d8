"""``steadyeval study knowledge`` end to end, in a subprocess, on the mini benchmark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from steadyeval.cli import main


def _cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STEADYEVAL_CACHE": str(tmp / "cache.sqlite"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "steadyeval", "study", "knowledge", *args],
        capture_output=True,
        text=True,
        env=env,
    )


def test_end_to_end(mini_mmlu: Path, tiny_gpt2: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _cli(
        "--model",
        f"hf:{tiny_gpt2}",
        "--data",
        str(mini_mmlu),
        "--shots",
        "0,2",
        "--rotations",
        "--templates",
        "reference,single-space",
        "--memorisation",
        "--out",
        str(out),
        "--no-progress",
        tmp=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    for title in (
        "Accuracy per category",
        "Accuracy vs shots",
        "Calibration",
        "Option order (cyclic rotations)",
        "Template sensitivity",
        "Memorisation check",
    ):
        assert title in (out / "summary.md").read_text()
    assert "STEM" in done.stdout and "humanities" in done.stdout  # the headline table
    assert f"wrote {out}/" in done.stdout
    table = pq.read_table(out / "results.parquet")
    n_conditions = 2 * 2 * 4 + 1
    assert table.num_rows == 7 * n_conditions
    summary = json.loads((out / "summary.json").read_text())
    assert summary["study"] == "knowledge"
    assert len(summary["analysis"]["rotations"]) == 2 * 2
    assert summary["design"]["config"]["templates"] == ["reference", "single-space"]


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["study", "knowledge", *args])


def test_dry_run_and_errors(
    mini_mmlu: Path, tiny_gpt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = f"hf:{tiny_gpt2}"
    done = _invoke("--model", model, "--data", str(mini_mmlu), "--dry-run")
    assert done.exit_code == 0, done.output
    assert "to send" in done.output and "28" in done.output  # 7 items × 4 letters
    bad = _invoke("--model", model, "--data", str(tmp_path / "missing"), "--dry-run")
    assert bad.exit_code == 2 and "missing: not a directory" in bad.output
    shots = _invoke("--model", model, "--data", str(mini_mmlu), "--shots", "0,x", "--dry-run")
    assert shots.exit_code == 2 and "shots.1: Input should be a valid integer" in shots.output
    assert "(got 'x')" in shots.output
    tmpl = _invoke("--model", model, "--data", str(mini_mmlu), "--templates", "fancy", "--dry-run")
    assert tmpl.exit_code == 2 and "unknown template 'fancy'" in tmpl.output
    none = _invoke("--model", model, "--data", str(mini_mmlu), "--subjects", " , ", "--dry-run")
    assert none.exit_code == 2 and "--subjects ' , ': no values" in none.output  # not "all"
    typo = _invoke("--model", model, "--data", str(mini_mmlu), "--subjects", "abstract_algebro")
    assert typo.exit_code == 2, typo.output
    assert "unknown subject 'abstract_algebro' (did you mean 'abstract_algebra'?)" in typo.output
    seed = _invoke("--model", model, "--data", str(mini_mmlu), "--seed", "-1", "--dry-run")
    assert seed.exit_code == 2 and "flag --seed: seed: Input should be greater" in seed.output
    monkeypatch.chdir(tmp_path)
    no_out = _invoke("--model", model, "--data", str(mini_mmlu), "--shots", "0")
    assert no_out.exit_code == 0, no_out.output
    (folder,) = (tmp_path / "runs").iterdir()  # runs/<timestamp>-knowledge by default
    assert folder.name.endswith("-knowledge") and f"wrote runs/{folder.name}/" in no_out.output


def test_help() -> None:
    result = _invoke("--help")
    assert result.exit_code == 0
    for flag in (
        "--shots",
        "--subjects",
        "--limit-per-subject",
        "--rotations",
        "--templates",
        "--scoring",
        "--memorisation",
        "--dry-run",
    ):
        assert flag in result.output
