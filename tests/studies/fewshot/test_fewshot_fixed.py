"""FewNLU's analyses without a counterpart before issue 40: Table 4's per-factor sensitivity
and the fixed hyper-parameters strategy (``--strategy fixed``)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, RunOptions
from steadyeval.cli._main import main
from steadyeval.models._tiny import build_tiny_model
from steadyeval.results import ResultsFrame
from steadyeval.studies import read_analysis, reanalyze, run_study
from steadyeval.studies.fewshot import analyze

from .test_fewshot import _config, _rte_file

Key = tuple[str, int, int, str, str]


def _table(scores: dict[Key, float], n: int = 20) -> ResultsFrame:
    """n rows per (strategy, K, split, setting, part) with the given share correct."""
    names = ("strategy", "n_splits", "split_index", "hparams_id", "part", "correct")
    cols: dict[str, list[Any]] = {c: [] for c in names}
    for (s, k, i, h, p), acc in scores.items():
        hits = round(acc * n)
        for j in range(n):
            for c, v in zip(names, (s, k, i, h, p, j < hits), strict=True):
                cols[c].append(v)
    return ResultsFrame(pa.table(cols))


#: A 2 x 3 grid: pattern in (p0, p1) x learning rate in (1, 2, 3).
GRID = {f"{p}-{lr}": {"pattern": p, "lr": lr} for p in ("p0", "p1") for lr in (1, 2, 3)}


def _design(strategies: list[str], fixed: str | None = None) -> dict[str, Any]:
    grid = [{"id": g, "hparams": h} for g, h in GRID.items()]
    return {
        "experiments": [
            {"key": "RTE/pet", "task": "RTE", "method": "pet", "grid": grid, "fixed": fixed}
        ],
        "task": "RTE",
        "method": "pet",
        "grid": grid,
        "strategies": strategies,
        "k": 2,
        "k_values": [2],
        "seed": 7,
        "final_seeds": 3,
    }


def test_table4_sensitivity_equals_a_hand_computation() -> None:
    # dev / test scores per (setting, split), multiples of 1/20 so the table holds them exactly
    dev = {
        "p0-1": (0.50, 0.60), "p0-2": (0.70, 0.80), "p0-3": (0.55, 0.65),
        "p1-1": (0.40, 0.45), "p1-2": (0.60, 0.50), "p1-3": (0.30, 0.35),
    }  # fmt: skip
    test = {
        "p0-1": (0.55, 0.45), "p0-2": (0.75, 0.65), "p0-3": (0.60, 0.50),
        "p1-1": (0.35, 0.40), "p1-2": (0.45, 0.55), "p1-3": (0.25, 0.30),
    }  # fmt: skip
    scores: dict[Key, float] = {}
    for g in GRID:
        for i in range(2):
            scores[("cv", 2, i, g, "dev")] = dev[g][i]
            scores[("cv", 2, i, g, "test")] = test[g][i]
    final = [0.70, 0.60, 0.85]
    for j, v in enumerate(final):
        scores[("final", 0, j, "p0-2", "test")] = v
    res = analyze(_table(scores), _design(["cv"])).experiments["RTE/pet"].strategies["cv"]
    assert res.by_k["2"].selected == "p0-2"  # mean dev 0.75, the highest
    factors = {f.factor: f for f in res.sensitivity}
    assert list(factors) == ["lr", "pattern", "split", "seed"]  # hyperparameters by name

    def mean(pair: tuple[float, float]) -> float:
        return (pair[0] + pair[1]) / 2

    # pattern: p0-2 and p1-2 (lr fixed at the chosen 2); the sample std of two means.
    pattern = factors["pattern"]
    assert pattern.values == ["p0", "p1"]
    assert pattern.dev_std == pytest.approx(statistics.stdev([0.75, 0.55]))
    assert pattern.test_std == pytest.approx(statistics.stdev([mean(test["p0-2"]), 0.50]))
    assert pattern.dev_std == pytest.approx(abs(0.75 - 0.55) / 2**0.5)
    # lr: p0-1, p0-2, p0-3 (pattern fixed at p0).
    lr = factors["lr"]
    assert lr.values == [1, 2, 3]
    dev_means = [mean(dev[g]) for g in ("p0-1", "p0-2", "p0-3")]
    m = sum(dev_means) / 3
    by_hand = (sum((x - m) ** 2 for x in dev_means) / 2) ** 0.5
    assert lr.dev_std == pytest.approx(by_hand)
    assert lr.test_scores == pytest.approx([mean(test[g]) for g in ("p0-1", "p0-2", "p0-3")])
    # split: the chosen setting's two splits; seed: its three retrained runs (no dev part).
    assert factors["split"].dev_std == pytest.approx(abs(0.70 - 0.80) / 2**0.5)
    assert factors["split"].test_std == pytest.approx(abs(0.75 - 0.65) / 2**0.5)
    seed = factors["seed"]
    assert seed.values == [7, 8, 9] and seed.dev_std is None and "no dev part" in (seed.note or "")
    assert seed.test_std == pytest.approx(statistics.stdev(final))


def test_without_final_runs_the_seed_factor_says_how_to_measure_it() -> None:
    scores = {("cv", 2, i, g, p): 0.5 for g in GRID for i in range(2) for p in ("dev", "test")}
    res = analyze(_table(scores), _design(["cv"])).experiments["RTE/pet"].strategies["cv"]
    seed = next(f for f in res.sensitivity if f.factor == "seed")
    assert seed.test_std is None and "--final-seeds" in (seed.note or "")
    assert next(f for f in res.sensitivity if f.factor == "pattern").dev_std == 0.0


def test_the_fixed_strategy_reports_its_seeds_without_a_choice() -> None:
    scores: dict[Key, float] = {
        ("fixed", 2, j, "p1-3", "test"): v for j, v in enumerate([0.6, 0.9])
    }
    scores |= {("cv", 2, i, g, p): 0.5 for g in GRID for i in range(2) for p in ("dev", "test")}
    analysis = analyze(_table(scores), _design(["cv", "fixed"], fixed="p1-3"))
    exp = analysis.experiments["RTE/pet"]
    head = exp.strategies["fixed"].by_k["2"]
    assert head.selected == "p1-3" and head.selected_hparams == {"pattern": "p1", "lr": 3}
    assert head.test_scores == pytest.approx([0.6, 0.9])
    assert head.test_mean == pytest.approx(0.75)
    assert head.test_std == pytest.approx(statistics.stdev([0.6, 0.9]))
    assert head.dev_mean is None and head.oracle_test_mean is None and head.regret is None
    assert head.spearman is None and "no dev part" in (head.spearman_note or "")
    row = next(r for r in exp.side_by_side if r.strategy == "fixed")
    assert row.test_mean == pytest.approx(0.75) and row.final_test_mean is None
    (seed,) = exp.strategies["fixed"].sensitivity
    assert seed.factor == "seed" and seed.values == [7, 8]
    assert seed.test_std == pytest.approx(statistics.stdev([0.6, 0.9]))


def test_fixed_setting_values_are_checked(tmp_path: Path) -> None:
    from steadyeval.studies.fewshot._framework import fewshot_design
    from steadyeval.studies.fewshot._space import fixed_for, fixed_setting, fixed_values

    grid = [{"pattern": p, "learning_rate": lr} for p in ("a", "b") for lr in (1e-5, 1e-4)]
    known = {"pattern", "learning_rate", "steps"}
    tasks = {"RTE", "CB"}

    def values(*entries: str, task: str = "RTE") -> dict[str, str]:
        return fixed_for(fixed_values(entries, known, tasks), task)

    assert fixed_setting(grid, {}, "pet", "RTE") == grid[0]  # default: the grid's first
    wanted = values("learning_rate=0.0001", "pattern = b")
    assert fixed_setting(grid, wanted, "pet", "RTE") == {"pattern": "b", "learning_rate": 1e-4}
    assert fixed_setting(grid, values("learning_rate=1e-4"), "pet", "RTE") == grid[1]
    # a name this method lacks (another method of the run has it) is skipped for it
    assert fixed_setting(grid, {"steps": "3"}, "pet", "RTE") == grid[0]
    # TASK:NAME=VALUE is that task's (pattern names differ between tasks), and wins there
    scoped = ("pattern=a", "cb:pattern=b", "RTE:learning_rate=1e-4")
    assert values(*scoped, task="RTE") == {"pattern": "a", "learning_rate": "1e-4"}
    assert values(*scoped, task="CB") == {"pattern": "b"}
    refused = [
        (("RTEE:pattern=a",), r"'RTEE' is not a task of the run.*did you mean 'RTE'"),
        ((":pattern=a",), r"expected \[TASK:\]NAME=VALUE"),
        (("CB:pattern=a", "cb:pattern=b"), "pattern is given twice for CB"),
        (("lr",), r"fixed: 'lr'.*expected \[TASK:\]NAME=VALUE"),
        (("learning_rat=1",), r"'learning_rat' is no method's hyperparameter; did you"),
        (("PATTERN=a",), r"'PATTERN' is no method's.*did you mean 'pattern'"),
        (("pattern=a", "pattern=b"), "pattern is given twice"),
    ]
    for entries, match in refused:
        with pytest.raises(ConfigError, match=match):
            values(*entries)
    with pytest.raises(
        ConfigError, match=r"fixed: learning_rate=0.1 is not in the space of pet on RTE; its values"
    ):
        fixed_setting(grid, {"learning_rate": "0.1"}, "pet", "RTE")
    del fewshot_design  # imported to show the design reads them (the end-to-end test runs it)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "bert", "bert", seed=0)


def test_fixed_strategy_runs_end_to_end_beside_multisplit(tiny_bert: Path, tmp_path: Path) -> None:
    space = {
        "pattern": ["question", "based-on"], "steps": [2], "eval_every": [1],
        "batch_size": [4], "learning_rate": [1e-4, 1e-3], "max_length": [64],
    }  # fmt: skip
    config = _config(
        _rte_file(tmp_path / "rte.jsonl", 12), tiny_bert, method="pet",
        strategies=["multisplit", "fixed"], k=2, k_values=[2], space=space,
        fixed=["learning_rate=1e-3", "pattern=based-on"],
    )  # fmt: skip
    out = tmp_path / "run"
    result = run_study("fewshot", config, options=RunOptions(out=out, progress=False))
    t = result.table.to_pylist()
    fixed_rows = [r for r in t if r["strategy"] == "fixed"]
    # 2 seeds x 4 test items, no dev part; the seed column is the run's seed + j
    assert len(fixed_rows) == 2 * 4 and {r["part"] for r in fixed_rows} == {"test"}
    assert {r["seed"] for r in fixed_rows} == {0, 1}
    assert {json.loads(r["hparams"])["learning_rate"] for r in fixed_rows} == {1e-3}
    assert {r["split"] for r in fixed_rows} == {"fixed/K=2/0/test", "fixed/K=2/1/test"}
    summary = json.loads((out / "summary.json").read_text())
    exp = summary["design"]["experiments"][0]
    fixed_id = exp["fixed"]
    assert next(g for g in exp["grid"] if g["id"] == fixed_id)["hparams"]["pattern"] == "based-on"
    side = {r["strategy"]: r for r in summary["analysis"]["side_by_side"]}
    assert side["fixed"]["selected"] == fixed_id and side["fixed"]["spearman"] is None
    assert side["fixed"]["test_mean"] is not None and side["multisplit"]["spearman"] is not None
    factors = summary["analysis"]["strategies"]["multisplit"]["sensitivity"]
    assert [f["factor"] for f in factors] == ["learning_rate", "pattern", "split", "seed"]
    md = (out / "summary.md").read_text()
    assert "Per-factor sensitivity" in md and "| fixed |" in md and "fix_setting" in md
    # the factor's values are shown, the strategy once (on its first row)
    table = md[md.index("### Per-factor sensitivity (K") :].split("\n## ", 1)[0]
    assert "| learning_rate | 0.0001, 0.001 |" in table
    assert "| question, based-on |" in table or "| based-on, question |" in table
    assert table.count("| multisplit |") == 1
    assert read_analysis(out) == result.analysis == reanalyze(out)
    # one strategy order in summary.md and the report rebuilt from summary.json (sorted keys)
    for analysis in (result.analysis, read_analysis(out)):
        (experiment,) = analysis.experiments.values()  # type: ignore[attr-defined]
        assert list(experiment.strategies) == ["multisplit", "fixed"]


def test_cli_strategy_fixed(tiny_gpt2: Path, tmp_path: Path) -> None:
    data = _rte_file(tmp_path / "rte.jsonl", 12)
    out = tmp_path / "run"
    args = [
        "study", "fewshot", "--model", f"hf:{tiny_gpt2}", "--task", "rte", "--labelled",
        str(data), "--test-from-labelled", "4", "--method", "icl", "--strategy", "cv",
        "--strategy", "fixed", "--fixed", "pattern=based-on", "--k", "2", "--k-values", "2",
        "--out", str(out), "--quiet",
    ]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert [r["strategy"] for r in summary["analysis"]["side_by_side"]] == ["cv", "fixed"]
    # the section's heading, not again as its table's title
    assert (out / "summary.md").read_text().count("Stability as K changes") == 1
    bad_args = [a if a != "pattern=based-on" else "pattern=nope" for a in args]
    bad = CliRunner().invoke(main, bad_args)
    assert bad.exit_code != 0 and "pattern=nope is not in the space" in bad.output
    # icl has no learning rate: the fixed entry would be ignored without a word
    lr_args = [a if a != "pattern=based-on" else "learning_rate=1e-5" for a in args]
    lr = CliRunner().invoke(main, lr_args)
    assert lr.exit_code != 0, lr.output
    assert "learning_rate is no hyperparameter of this run's methods" in lr.output


def test_a_fixed_name_no_method_of_the_run_has_is_refused() -> None:
    from steadyeval.studies.fewshot._framework import _check_fixed_used

    grids = [("RTE", {"pattern": "a", "steps": 3}), ("CB", {"pattern": "b"})]
    _check_fixed_used({None: {"pattern": "a"}, "RTE": {"steps": "3"}}, grids)  # all used
    with pytest.raises(ConfigError, match=r"fixed: learning_rate is no hyperparameter.*pattern"):
        _check_fixed_used({None: {"learning_rate": "1e-5", "pattern": "a"}}, grids)
    with pytest.raises(ConfigError, match=r"fixed: steps is no hyperparameter.* on CB"):
        _check_fixed_used({"CB": {"steps": "3"}}, grids)  # RTE's method has it, CB's not


def test_a_plain_fixed_entry_every_task_overrides_is_refused() -> None:
    from steadyeval.studies.fewshot._framework import _check_fixed_used

    grids = [("RTE", {"pattern": "a"}), ("CB", {"pattern": "b"})]
    _check_fixed_used({None: {"pattern": "a"}, "RTE": {"pattern": "b"}}, grids)  # CB reads it
    # never read (and its value never checked against the grid)
    with pytest.raises(ConfigError, match=r"fixed: pattern=nope is given for every task"):
        _check_fixed_used({None: {"pattern": "nope"}, "RTE": {"pattern": "a"}}, grids[:1])
    with pytest.raises(ConfigError, match=r"pattern=nope is given for every task.*CB, RTE"):
        _check_fixed_used(
            {None: {"pattern": "nope"}, "RTE": {"pattern": "a"}, "CB": {"pattern": "b"}}, grids
        )


def test_fixed_without_the_fixed_strategy_is_refused(tmp_path: Path) -> None:
    """--fixed NAME=VALUE with no --strategy fixed was silently ignored (review of issue 40)."""
    from pydantic import ValidationError

    from steadyeval.studies.fewshot import FewShotConfig

    base = {"models": ["hf:x"], "task": "RTE", "labelled": "rte.jsonl", "test_from_labelled": 4}
    with pytest.raises(ValidationError, match=r"fixed: learning_rate=1e-4 is the fixed strategy"):
        FewShotConfig(**base, method="pet", fixed=["learning_rate=1e-4"])
    with pytest.raises(ValidationError, match=r"do not include fixed: add --strategy fixed"):
        FewShotConfig(**base, method="pet", strategies=["cv"], fixed=["pattern=question"])
    ok = FewShotConfig(**base, strategies=["cv", "fixed"], fixed=["pattern=question"])
    assert ok.fixed == ["pattern=question"]
