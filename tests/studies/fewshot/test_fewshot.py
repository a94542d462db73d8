"""Study 4: split sizes, grouping, selection, the criteria, methods through the pipeline."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import scipy.stats
from click.testing import CliRunner

from steadyeval import ConfigError, DataError, PlanCounts, RunOptions, load_backend, read_results
from steadyeval.cli._main import main
from steadyeval.models._tiny import build_tiny_model
from steadyeval.results import ResultsFrame
from steadyeval.studies import read_analysis, reanalyze, run_study
from steadyeval.studies.fewshot import (
    TASKS,
    FewShotAnalysis,
    FewShotConfig,
    analyze,
    build_grid,
    get_method,
    get_task,
    item_groups,
    load_space,
    load_task_items,
    make_splitter,
    split_off_test,
)
from steadyeval.studies.fewshot._framework import _splits

FEWGLUE = ("BoolQ", "CB", "COPA", "MultiRC", "RTE", "WiC", "WSC")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "bert", "bert", seed=0)


def _rte_file(path: Path, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("w") as fh:
        for i in range(n):
            yes = rng.random() < 0.5
            premise = f"The cat sat on the mat number {i}."
            hypothesis = f"A cat sat on mat {i}." if yes else f"No dog ran {i}."
            fh.write(
                json.dumps(
                    {
                        "premise": premise,
                        "hypothesis": hypothesis,
                        "idx": i,
                        "label": "entailment" if yes else "not_entailment",
                    }
                )
                + "\n"
            )
    return path


# -- split sizes and grouping -------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 4, 8])
def test_multisplit_sizes_do_not_depend_on_k(k: int) -> None:
    sizes = [(len(t), len(d)) for t, d in make_splitter("multisplit", k, ratio=0.5).split(64)]
    assert sizes == [(32, 32)] * k


def test_cv_and_mdl_sizes() -> None:
    assert [(len(t), len(d)) for t, d in make_splitter("cv", 4).split(64)] == [(48, 16)] * 4
    assert [(len(t), len(d)) for t, d in make_splitter("mdl", 4).split(64)] == [
        (32, 8),
        (40, 8),
        (48, 8),
        (56, 8),
    ]
    for strategy in ("multisplit", "cv", "mdl"):
        for train, dev in make_splitter(strategy, 4, seed=3).split(64):
            assert not set(train.tolist()) & set(dev.tolist())


def _multirc_items(n_groups: int) -> list[Any]:
    from steadyeval import Item

    items = []
    for g in range(n_groups):
        for a in range(1 + g % 3):
            items.append(
                Item(
                    id=f"m-{g}-{a}",
                    question="q",
                    options=("false", "true"),
                    gold_options=(a % 2,),
                    metadata={"group": f"g{g}"},
                )
            )
    return items


@pytest.mark.parametrize("strategy", ["multisplit", "cv", "mdl"])
def test_grouped_splits_keep_groups_together(strategy: str) -> None:
    items = _multirc_items(16)
    config = FewShotConfig(
        models=["hf:x"], tasks=["MultiRC"], labelled="unused", test_from_labelled=4,
        strategies=[strategy], k=4,
    )  # fmt: skip
    for train, dev in _splits(strategy, 4, config, items):
        tg = {i.metadata["group"] for i in train}
        dg = {i.metadata["group"] for i in dev}
        assert not tg & dg
        assert len(train) + len(dev) == sum(1 for i in items if i.metadata["group"] in tg | dg)
    labelled, test = split_off_test(items, 4, seed=0)
    assert len({i.metadata["group"] for i in test}) == 4
    assert not {i.metadata["group"] for i in test} & {i.metadata["group"] for i in labelled}


# -- the analysis -------------------------------------------------------------------------------
def _table(scores: dict[tuple[str, int, int, str, str], float], n: int = 20) -> ResultsFrame:
    """A minimal results table: n rows per (strategy, K, split, setting, part), with the
    given share correct."""
    cols: dict[str, list[Any]] = {
        c: [] for c in ("strategy", "n_splits", "split_index", "hparams_id", "part", "correct")
    }
    for (s, k, i, h, p), acc in scores.items():
        hits = round(acc * n)
        for j in range(n):
            for c, v in zip(cols, (s, k, i, h, p, j < hits), strict=True):
                cols[c].append(v)
    return ResultsFrame(pa.table(cols))


def _info(grid_ids: list[str], k: int = 2) -> dict[str, Any]:
    return {
        "grid": [{"id": g, "hparams": {"h": g}} for g in grid_ids],
        "strategies": ["cv"],
        "k": k,
        "k_values": [k],
        "seed": 0,
    }


def test_selection_is_the_argmax_of_mean_dev_and_first_on_ties() -> None:
    rng = np.random.default_rng(0)
    grid = ["a", "b", "c", "d", "e"]
    dev = {(h, i): float(rng.integers(0, 21)) / 20 for h in grid for i in range(2)}
    test = {(h, i): float(rng.integers(0, 21)) / 20 for h in grid for i in range(2)}
    scores = {("cv", 2, i, h, "dev"): dev[h, i] for h in grid for i in range(2)}
    scores |= {("cv", 2, i, h, "test"): test[h, i] for h in grid for i in range(2)}
    res = analyze(_table(scores), _info(grid)).strategies["cv"].by_k["2"]
    means = [np.mean([dev[h, i] for i in range(2)]) for h in grid]
    assert res.selected == grid[int(np.argmax(means))]
    test_means = [np.mean([test[h, i] for i in range(2)]) for h in grid]
    expected = scipy.stats.spearmanr(means, test_means).statistic
    assert res.spearman == pytest.approx(expected, abs=1e-12)
    chosen = grid.index(res.selected)
    assert res.test_mean == pytest.approx(test_means[chosen])
    assert res.test_std == pytest.approx(np.std([test[grid[chosen], i] for i in range(2)], ddof=1))
    assert res.oracle_test_mean == pytest.approx(max(test_means))
    # Ties go to the first setting in grid order.
    tied = {("cv", 2, i, h, p): 0.5 for h in grid for i in range(2) for p in ("dev", "test")}
    tied[("cv", 2, 0, "c", "dev")] = tied[("cv", 2, 0, "e", "dev")] = 0.75
    assert analyze(_table(tied), _info(grid)).strategies["cv"].by_k["2"].selected == "c"


def test_spearman_is_none_with_a_note_when_undefined() -> None:
    scores = {("cv", 2, i, h, p): 0.5 for h in "ab" for i in range(2) for p in ("dev", "test")}
    res = analyze(_table(scores), _info(["a", "b"])).strategies["cv"].by_k["2"]
    assert res.spearman is None and res.spearman_note and "at least 3" in res.spearman_note


def test_the_analysis_names_a_missing_column() -> None:
    table = _table({("cv", 2, 0, "a", "dev"): 0.5}).table.drop_columns(["part"])
    with pytest.raises(DataError, match=r"missing column\(s\) part; the few-shot analysis reads"):
        analyze(ResultsFrame(table), _info(["a"]))


# -- tasks ----------------------------------------------------------------------------------------
@pytest.mark.shared
@pytest.mark.parametrize("name", FEWGLUE)
def test_fewglue_training_sets_load_and_every_pattern_renders(shared_data: Path, name: str) -> None:
    from steadyeval.conditions import expand
    from steadyeval.studies.fewshot import ICLMethod, PETMethod, verbalize
    from steadyeval.studies.fewshot._methods import icl_condition

    task = get_task(name)
    items = load_task_items(task, shared_data / "fewglue" / "FewGLUE" / name / "train.jsonl")
    if name == "MultiRC":
        assert len(items) == 154 and len(set(item_groups(items) or [])) == 32
    else:
        assert len(items) == 32
    assert len({i.id for i in items}) == len(items)
    assert (item_groups(items) is not None) == task.grouped
    assert len(task.patterns) >= 2
    for grid_method in (ICLMethod(), PETMethod()):
        for h in build_grid(
            grid_method,
            task,
            {"pattern": list(task.patterns), "verbalizer": list(task.verbalizers) or ["none"]},
        ):
            words = None if task.kind == "choice" else task.verbalizers[h["verbalizer"]]
            cond = (
                icl_condition(task, h, 0)
                if isinstance(grid_method, ICLMethod)
                else grid_method.condition(task, h)
            )
            shown = verbalize(items, words)
            trials = expand(shown, [cond], shot_pools={"train": shown}).trials
            assert len(trials) == len(items)
            slot = [t.prompt.count("[Y]") for t in trials]
            assert slot == (
                [1] * len(items) if isinstance(grid_method, PETMethod) else [0] * len(items)
            )
    assert all(len(task.cls_inputs(i)) == (2 if task.kind == "choice" else 1) for i in items)


def test_task_rows_are_checked_with_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "rte.jsonl"
    bad.write_text(
        '{"premise": "p", "hypothesis": "h", "idx": 1, "label": "entailment"}\n'
        '{"premise": "p", "hypothesis": "h", "idx": 2, "label": "maybe"}\n'
    )
    with pytest.raises(DataError, match=r"rte.jsonl, line 2, field 'label'.*entailment"):
        load_task_items("RTE", bad)
    bad.write_text('{"premise": "p", "hypothesis": "h", "idx": 1}\n')
    with pytest.raises(DataError, match=r"line 1, field 'label': missing field .unlabelled"):
        load_task_items("RTE", bad)
    bad.write_text('{"premise": "p", "hypothesis": 3, "idx": 1, "label": "entailment"}\n')
    with pytest.raises(DataError, match="field 'hypothesis'"):
        load_task_items("RTE", bad)
    with pytest.raises(ConfigError, match="ReCoRD is not supported"):
        get_task("ReCoRD")
    assert sorted(t.name for t in TASKS.values()) == sorted(FEWGLUE)


def test_hub_test_set_offline_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match=r"super_glue/rte\[validation\].*--test-from-labelled"):
        load_task_items("RTE", "superglue:validation")


def test_hub_rows_are_read_in_fewglue_form(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    rows = {
        "rte": [{"premise": "p", "hypothesis": "h", "idx": 0, "label": 1}],
        "wsc.fixed": [
            {
                "text": "t",
                "span1_index": 0,
                "span2_index": 2,
                "span1_text": "A",
                "span2_text": "it",
                "idx": 3,
                "label": 0,
            }
        ],
        "multirc": [
            {
                "paragraph": "P",
                "question": "Q",
                "answer": a,
                "label": y,
                "idx": {"paragraph": 0, "question": 1, "answer": i},
            }
            for i, (a, y) in enumerate([("x", 1), ("y", 0)])
        ],
    }
    calls = []

    def fake(name: str, config: str, split: str) -> list[dict[str, Any]]:
        calls.append((name, config, split))
        return rows[config]

    monkeypatch.setattr(datasets, "load_dataset", fake)
    (rte,) = load_task_items("RTE", "superglue:validation")
    assert rte.id == "rte-validation-0" and rte.options is not None
    assert rte.options[rte.gold_options[0]] == "not_entailment"
    (wsc,) = load_task_items("WSC", "superglue:validation")
    assert wsc.metadata["span2"] == "it" and wsc.gold_options == (0,)
    mrc = load_task_items("MultiRC", "superglue:validation")
    assert [i.id for i in mrc] == ["multirc-validation-0-1-0", "multirc-validation-0-1-1"]
    assert item_groups(mrc) == ["0-1", "0-1"] and [i.gold_options for i in mrc] == [(1,), (0,)]
    assert calls[0] == ("super_glue", "rte", "validation")
    rows["rte"][0]["label"] = -1  # SuperGLUE's test split has no labels
    with pytest.raises(DataError, match=r"field 'label': missing field .unlabelled"):
        load_task_items("RTE", "superglue:test")


def test_space_and_grid_errors(tmp_path: Path) -> None:
    task, icl = get_task("RTE"), get_method("icl")
    space = tmp_path / "space.yaml"
    space.write_text("icl:\n  pattern: [question]\n  shots: [1, 2]\npet:\n  steps: 5\n")
    grid = build_grid(icl, task, load_space(space, "icl"))
    assert len(grid) == 4 and {h["shots"] for h in grid} == {1, 2}
    assert all(
        h["steps"] == 5 for h in build_grid(get_method("pet"), task, load_space(space, "pet"))
    )
    with pytest.raises(ConfigError, match=r"no hyperparameter 'lr'.*learning_rate"):
        build_grid(get_method("pet"), task, {"lr": [1]})
    with pytest.raises(ConfigError, match="RTE has no pattern 'nope'; choose from question"):
        build_grid(icl, task, {"pattern": ["nope"]})
    with pytest.raises(ConfigError, match=r"shots: expected an integer in 0\.\.1,000, got -1"):
        build_grid(icl, task, {"shots": [-1]})


def test_space_values_per_task(tmp_path: Path) -> None:
    """Pattern names differ between tasks: a value may be a mapping of task names to values;
    a task it leaves out keeps the default (its first two patterns)."""
    space = tmp_path / "space.yaml"
    space.write_text(
        "pattern:\n  rte: [based-on]\n  COPA: [pet-choices]\n"
        "pet:\n  learning_rate: {CB: [1e-4, 2e-4]}\n"
    )
    pet = get_method("pet")
    rte, copa, cb = get_task("RTE"), get_task("COPA"), get_task("CB")
    assert {h["pattern"] for h in build_grid(pet, rte, load_space(space, "pet"))} == {"based-on"}
    assert {h["pattern"] for h in build_grid(pet, copa, load_space(space, "pet"))} == {
        "pet-choices"
    }
    cb_grid = build_grid(pet, cb, load_space(space, "pet"))
    assert {h["pattern"] for h in cb_grid} == set(list(cb.patterns)[:2])
    assert sorted({h["learning_rate"] for h in cb_grid}) == [1e-4, 2e-4]
    rte_rates = {h["learning_rate"] for h in build_grid(pet, rte, load_space(space, "pet"))}
    assert rte_rates == {1e-5, 1e-4}  # PET's default grid
    with pytest.raises(ConfigError, match=r"space.yaml, line 1: pattern: RTE has no pattern"):
        space.write_text("pattern:\n  RTE: [pet-choices]\n")
        build_grid(pet, rte, load_space(space, "pet"))
    with pytest.raises(ConfigError, match=r"steps: 'nope' is not a task; a mapping here gives"):
        build_grid(pet, rte, {"steps": {"nope": 3}})


# -- methods through the pipeline ----------------------------------------------------------------
def _config(data: Path, model: Path, **kw: Any) -> dict[str, Any]:
    return {"models": [f"hf:{model}"], "task": "RTE", "labelled": str(data),
            "test_from_labelled": 4, **kw}  # fmt: skip


def test_icl_runs_through_the_pipeline_and_resumes(tiny_gpt2: Path, tmp_path: Path) -> None:
    data = _rte_file(tmp_path / "rte.jsonl", 14)
    config = _config(
        data,
        tiny_gpt2,
        method="icl",
        strategies=["multisplit", "cv", "mdl"],
        k=2,
        k_values=[2, 4],
        final_seeds=2,
        space={
            "pattern": ["question", "based-on", "pet-quote"],
            "verbalizer": ["yes-no"],
            "shots": [1],
        },
    )
    out = tmp_path / "run"
    result = run_study("fewshot", config, options=RunOptions(out=out, progress=False))
    table = result.table
    labelled, test = split_off_test(load_task_items("RTE", data), 4, seed=0)
    # rows = sum over (strategy, K, split) of (dev + test items) x settings, plus the final runs
    n = len(labelled)
    dev_sizes = {
        "multisplit": {2: [5, 5], 4: [5] * 4},
        "cv": {2: [5, 5], 4: [3, 3, 2, 2]},
        "mdl": {2: [2, 3], 4: [1, 1, 1, 2]},
    }
    expected = sum((d + len(test)) * 3 for s in dev_sizes.values() for ds in s.values() for d in ds)
    n_final = len({r.selected for r in result.analysis.side_by_side}) * 2 * len(test)
    assert n == 10 and table.num_rows == expected + n_final
    assert set(table.column("model").to_pylist()) == {load_backend(f"hf:{tiny_gpt2}").identity()}
    assert set(table.column("scoring").to_pylist()) == {"option-logprob"}
    splits = set(table.column("split").to_pylist())
    assert "cv/K=4/3/dev" in splits and "final/1/test" in splits
    hp = {json.loads(h)["pattern"] for h in table.column("hparams").to_pylist()}
    assert hp == {"question", "based-on", "pet-quote"}
    assert set(table.column("verbalizer").to_pylist()) == {"yes-no"}
    assert set(table.column("options").to_pylist()[0]) == {"yes", "no"}
    assert all(u == 1 for u in table.column("n_shots_used").to_pylist())
    side = result.analysis.side_by_side
    assert [r.strategy for r in side] == ["multisplit", "cv", "mdl"]
    assert all(len(result.analysis.strategies[s].by_k) == 2 for s in ("cv", "mdl"))
    assert all(r.final_test_mean is not None for r in side)
    # 54 (setting, split) results; Multi-Splits' K=2 splits are the first two of its K=4
    # splits, so those share units (and their requests: each is sent once).
    cfg = FewShotConfig(**config)
    distinct_splits = {
        (tuple(i.id for i in tr), tuple(i.id for i in dv))
        for s in ("multisplit", "cv", "mdl")
        for k in (2, 4)
        for tr, dv in _splits(s, k, cfg, labelled)
    }
    assert len(distinct_splits) == 16
    assert result.summary["design"]["units"] == {"distinct": 3 * 16, "usages": 54}
    on_disk = read_results(out)
    assert on_disk.num_rows == table.num_rows
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["analysis"]["k"] == 2 and "(2) rho(dev, test)" in (out / "summary.md").read_text()
    )
    # A rerun sends nothing: every answer comes from the response cache.
    again = run_study("fewshot", config, options=RunOptions(out=out, progress=False))
    assert again.summary["plan"]["model_calls"] == 0
    assert again.table.equals(table)
    # summary.json reads back as the same typed analysis, and reanalyze recomputes it
    assert isinstance(result.analysis, FewShotAnalysis)
    assert read_analysis(out) == result.analysis
    assert reanalyze(out) == result.analysis
    assert reanalyze(out).to_json() == summary["analysis"]


def test_pet_trains_once_and_scores_through_hf_masked(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    space = {
        "pattern": ["question", "based-on", "pet-quote"],
        "steps": [4],
        "eval_every": [2],
        "batch_size": [4],
        "learning_rate": [1e-3],
        "max_length": [64],
    }
    config = _config(
        _rte_file(tmp_path / "rte.jsonl", 12), tiny_bert, method="pet", strategies=["cv"],
        k=2, k_values=[2], space=space,
    )  # fmt: skip
    out = tmp_path / "run"
    options = RunOptions(out=out, cache=tmp_path / "cache.sqlite", progress=False)
    dry = run_study("fewshot", config, options=options, dry_run=True)
    assert isinstance(dry, PlanCounts) and not (out / "checkpoints").exists()  # trains nothing
    assert isinstance(run_study("fewshot", config, dry_run=True), PlanCounts)  # no run dir
    result = run_study("fewshot", config, options=options)
    models = set(result.table.column("model").to_pylist())
    assert len(models) == 6 and all(
        m.startswith("hf-masked:pet-") and m.endswith("?max_length=64") for m in models
    )
    ckpts = sorted((out / "checkpoints").iterdir())
    assert len(ckpts) == 6
    # The dev accuracy kept at training time equals the pipeline's dev accuracy.
    for ckpt in ckpts:
        manifest = json.loads((ckpt / "steadyeval-checkpoint.json").read_text())
        rows = [
            r
            for r in result.table.to_pylist()
            if r["model"].startswith(f"hf-masked:pet-{ckpt.name[:12]}") and r["part"] == "dev"
        ]
        assert rows and manifest["best_dev"] == pytest.approx(
            sum(r["correct"] for r in rows) / len(rows)
        )
    import steadyeval.studies.fewshot._builtin as builtin

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("retrained a finished checkpoint")

    monkeypatch.setattr(builtin, "train_pet", boom)
    # A rerun with an empty response cache scores the stored checkpoints again ...
    fresh = RunOptions(out=out, cache=tmp_path / "fresh.sqlite", progress=False)
    again = run_study("fewshot", config, options=fresh)
    assert again.summary["plan"]["model_calls"] > 0 and again.table.equals(result.table)
    # ... and one with a warm cache needs neither the training nor the checkpoints.
    for ckpt in ckpts:
        shutil.rmtree(ckpt)
    warm = run_study("fewshot", config, options=options)
    assert warm.summary["plan"]["model_calls"] == 0 and warm.table.equals(result.table)


def test_cls_rows_join_the_results_table(tiny_bert: Path, tmp_path: Path) -> None:
    config = _config(
        _rte_file(tmp_path / "rte.jsonl", 12), tiny_bert, method="cls",
        strategies=["multisplit"], k=2, k_values=[2], keep_checkpoints=False,
        space={"steps": [2], "max_length": [64], "learning_rate": [1e-4, 1e-3, 1e-2]},
    )  # fmt: skip
    result = run_study("fewshot", config, options=RunOptions(out=tmp_path / "run"))
    assert not [p for p in (tmp_path / "run" / "checkpoints").iterdir() if p.is_dir()]
    t = result.table
    assert set(t.column("scoring").to_pylist()) == {"classifier-head"}
    assert {m.split("-")[0] for m in t.column("model").to_pylist()} == {"hf"}
    assert all(m.startswith("hf-classifier:cls-") for m in t.column("model").to_pylist())
    assert t.num_rows == 3 * 2 * (4 + 4)  # settings x splits x (dev + test)
    lps = t.column("option_logprobs").to_pylist()
    assert all(sum(math.exp(x) for x in lp) == pytest.approx(1.0, abs=1e-5) for lp in lps)
    prompts = t.column("prompt").to_pylist()
    assert all(" | " in p for p in prompts)  # the pair as the row's prompt: premise | hypothesis


# -- CLI --------------------------------------------------------------------------------------------
def test_cli_study_fewshot(tiny_gpt2: Path, tmp_path: Path) -> None:
    data = _rte_file(tmp_path / "rte.jsonl", 12)
    runner = CliRunner()
    assert runner.invoke(main, ["study", "fewshot", "--help"]).exit_code == 0
    out = tmp_path / "run"
    args = [
        "study", "fewshot", "--model", f"hf:{tiny_gpt2}", "--task", "rte", "--labelled",
        str(data), "--test-from-labelled", "4", "--method", "icl", "--strategy", "cv",
        "--strategy", "mdl", "--k", "2", "--k-values", "2", "--out", str(out), "--quiet",
    ]  # fmt: skip
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    md = (out / "summary.md").read_text()
    assert "(2) rho(dev, test)" in md and "| pattern=question" in md
    assert "| pattern=question" in res.output  # the headline table
    both = runner.invoke(main, [*args, "--test", str(data)])
    assert (
        both.exit_code == 2 and "exactly one of test (a file) and test_from_labelled" in both.output
    )
    bad = runner.invoke(main, [*args[:-3], "--k", "9", "--out", str(out), "--quiet"])
    assert bad.exit_code == 2 and "cv with K=9" in bad.output
