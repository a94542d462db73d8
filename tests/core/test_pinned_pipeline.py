"""Whole runs pinned before the refactor of issue 16 must come out the same (CHANGES.md lists
what may differ). See ``tests/golden/pipeline/cases.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval.cli._main import main
from steadyeval.models._tiny import build_tiny_model
from tests.golden.pipeline.cases import (
    CASES,
    EXAMPLES,
    HERE,
    Case,
    argv,
    snapshot,
    write_inputs,
)
from tests.golden.pipeline.compare import compare, upgrade

# Each case runs a whole study on tiny models; minutes, not seconds, on a busy 2-core machine.


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This session's folder for the cases' models, data and runs (``<tmp>`` in the pins:
    the refactored code's outputs no longer depend on where the models lie)."""
    return tmp_path_factory.mktemp("pinned")


@pytest.fixture(scope="session")
def inputs(root: Path) -> dict[str, str]:
    return write_inputs(root, lambda p, arch: build_tiny_model(p, arch, seed=0))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pinned_run_is_unchanged(
    case: Case, root: Path, inputs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = root / "runs" / case.name
    cache = root / "caches" / f"{case.name}.sqlite"
    cache.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("STEADYEVAL_CACHE", str(cache))
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = CliRunner().invoke(main, argv(case, inputs, out), catch_exceptions=False)
    finally:
        torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    fresh = snapshot(out, {str(root): "<tmp>", str(EXAMPLES): "<examples>"})
    pinned = json.loads((HERE / f"{case.name}.json").read_text(encoding="utf-8"))
    problems = compare(case.name, pinned, fresh)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])


def test_a_difference_is_caught() -> None:
    """The comparison itself can fail: an unlisted change of one value is reported."""
    pinned = json.loads((HERE / "quickstart.json").read_text(encoding="utf-8"))
    same = upgrade(pinned)
    fresh = json.loads(json.dumps(same))
    fresh["results"]["correct"][3] = not fresh["results"]["correct"][3]
    fresh["summary"]["n_rows"] += 1
    fresh["results"]["brand_new"] = [None] * len(fresh["results"]["correct"])
    problems = compare("quickstart", pinned, fresh)
    assert any(p.startswith("results.correct[3]") for p in problems)
    assert any(p.startswith("summary.n_rows") for p in problems)
    assert any(p.startswith("results.brand_new") for p in problems)
    assert compare("quickstart", pinned, same) == []


def test_pins_are_where_the_cases_say() -> None:
    assert sorted(p.stem for p in HERE.glob("*.json")) == sorted(c.name for c in CASES)
    assert Path(HERE / "make_golden.py").is_file()


def test_a_loose_rule_widens_the_tolerance_of_its_paths_only() -> None:
    from tests.golden.pipeline.compare import Comparison, Rule

    rules = [Rule("k", "summary.stats.*", "loose", "test")]

    def problems(path: str, old: float, new: float) -> list[str]:
        cmp = Comparison("k", rules)
        cmp.walk({"x": old}, {"x": new}, path)
        return cmp.problems

    assert problems("summary.stats", 0.5, 0.5002) == []  # 4e-4 relative: within 1e-3
    assert problems("summary.stats", 0.5, 0.51)  # 2e-2: still a difference
    assert problems("summary.other", 0.5, 0.5002)  # elsewhere 1e-5 holds
