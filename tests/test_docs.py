"""Every ```python block in docs/*.md runs, and the README's quickstart commands work."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
# docs/stats.md has its own runner in tests/stats/test_stats_api.py.
BLOCKS = [
    (doc, i, code)
    for doc in DOCS
    if doc.name != "stats.md"
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S))
]


@pytest.mark.parametrize(
    ("doc", "index", "code"), BLOCKS, ids=[f"{d.name}#{i}" for d, i, _ in BLOCKS]
)
def test_docs_python_blocks_run(
    doc: Path, index: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # dont_inherit: the block runs as a user's script would, without this file's
    # ``from __future__ import annotations``
    block = compile(code, f"{doc.name} block {index}", "exec", dont_inherit=True)
    exec(block, {"__name__": "__docs__"})


def _block_after(text: str, heading: str) -> list[str]:
    section = text.split(heading, 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_quickstart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the README's quickstart commands, as written, in a copy of the examples; the second
    pass must come entirely from the cache. ``steadyeval`` runs in this process (a new
    process runs ``python -m steadyeval`` in the kill -9 and hub-cache tests)."""
    from click.testing import CliRunner

    from steadyeval.cli import main

    commands = _block_after((ROOT / "README.md").read_text(), "## Quickstart")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    env = {"STEADYEVAL_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    outputs = []
    for _ in range(2):
        for line in commands:
            argv = shlex.split(line)
            if argv[0] != "steadyeval":
                done = subprocess.run(argv, env={**os.environ, **env}, capture_output=True)
                assert done.returncode == 0, f"{line}\n{done.stderr!r}"
            elif "tiny-model" not in argv or not (tmp_path / "tiny-gpt2").exists():
                result = CliRunner().invoke(main, argv[1:], env=env)
                assert result.exit_code == 0, f"{line}\n{result.output}"
        outputs.append((tmp_path / "runs" / "quickstart" / "results.parquet").read_bytes())
        summary = (tmp_path / "runs" / "quickstart" / "summary.md").read_text()
        assert "| free |" in summary and "letters-2shot" in summary
    assert outputs[0] == outputs[1]
    assert "from cache, 0 sent" in summary


def test_real_use_config_validates() -> None:
    from steadyeval.run import load_run_config

    cfg = load_run_config(ROOT / "examples" / "mmlu-hub.yaml")
    assert list(map(str, cfg.models)) == ["hf:Qwen/Qwen2.5-0.5B?dtype=bfloat16"]
    assert len(cfg.build_conditions()) == 3


def test_contributing_example_study_is_one_small_block() -> None:
    """docs/contributing.md's example study (run by test_docs_python_blocks_run) stays under
    150 lines and uses the protocol: two conditions, a paired test, a report section."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    example = text.split("## Example: a study in one page", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", example, re.S)
    assert len(code.splitlines()) < 150
    for needed in (
        "(Study[",
        "(StudyConfig)",
        "(Analysis)",
        "agreement_table",
        "mcnemar",
        "Section.of",
    ):
        assert needed in code, needed
    assert code.count("-logprob") >= 2  # two conditions


def test_readme_lists_every_registered_study_with_its_question() -> None:
    from steadyeval.scoring import get_scoring, scoring_names
    from steadyeval.studies import get_study, study_names

    readme = (ROOT / "README.md").read_text()
    for name in study_names():
        study = get_study(name)
        if not type(study).__module__.startswith("steadyeval.studies."):
            continue  # one a test registered (e.g. docs/contributing.md's example)
        assert f"| `steadyeval study {name}` | {study.question} |" in readme, name
    for scoring in scoring_names():
        if type(get_scoring(scoring)).__module__.startswith("steadyeval.scoring."):
            assert f"`{scoring}`" in readme, scoring  # (skips modes tests registered)
