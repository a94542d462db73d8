"""Issue 19: the re-evaluation's methods (spellings, semi-supervised chains), its metrics,
YAML spaces with numbers, unlabelled data and the methods × tasks table."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from steadyeval import ConfigError, RunOptions
from steadyeval.models._tiny import DEFAULT_CORPUS, build_tiny_model
from steadyeval.reports import sections_markdown
from steadyeval.results import ResultsFrame
from steadyeval.studies import run_study
from steadyeval.studies.fewshot import analyze, build_grid, get_method, get_task, load_space
from steadyeval.studies.fewshot._combo import parse_spelling
from steadyeval.studies.fewshot._data import load_unlabelled_items
from steadyeval.studies.fewshot._metrics import (
    accuracy,
    binary_f1,
    group_exact_match,
    macro_f1,
    task_average,
    task_scores,
)
from steadyeval.studies.fewshot._report import fewshot_report_sections
from steadyeval.studies.fewshot._semi import ensemble_probs, grow_sizes, pick_pseudo
from steadyeval.train import Noise

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread


# -- spellings ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spelling", "name", "base", "semi", "strategy"),
    [
        ("adapet", "adapet", "adapet", None, "single-split"),
        ("P-Tuning", "ptuning", "ptuning", None, "single-split"),
        ("mlm+pet", "pet+mlm", "pet", "mlm", "single-split"),
        ("ipet", "ipet", "pet", "ipet", "single-split"),
        ("ipet/single-split", "ipet", "pet", "ipet", "single-split"),
        ("noisy/cross-split", "noisy/cross-split", "pet", "noisy", "cross-split"),
        ("adapet+ipet/cross-split", "ipet+adapet/cross-split", "adapet", "ipet", "cross-split"),
        ("noisy+ptuning", "noisy+ptuning", "ptuning", "noisy", "single-split"),
        ("adapet+mlm", "adapet+mlm", "adapet", "mlm", "single-split"),
        ("mlm+p-tuning", "ptuning+mlm", "ptuning", "mlm", "single-split"),
        ("noisy+adapet", "noisy+adapet", "adapet", "noisy", "single-split"),
        ("ipet+ptuning/cross-split", "ipet+ptuning/cross-split", "ptuning", "ipet", "cross-split"),
    ],
)
def test_spellings_parse_to_one_canonical_method(
    spelling: str, name: str, base: str, semi: str | None, strategy: str
) -> None:
    s = parse_spelling(spelling)
    assert (s.name, s.base, s.semi, s.strategy) == (name, base, semi, strategy)
    method = get_method(spelling)
    assert method.name == name and get_method(name) is method
    assert method.uses_unlabelled == (semi is not None)
    # Every prompt-based method shares PET's space; the rest is its own.
    assert list(method.params)[:8] == list(get_method("pet").params)


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("ipet+noisy", "at most one base"),
        ("pet+adapet", "at most one base"),
        ("pet/cross-split", "goes with ipet or noisy"),
        ("ipet/sideways", "unknown pseudo-labelling strategy 'sideways'"),
        ("ipet+bert", "unknown part 'bert'"),
    ],
)
def test_bad_spellings_say_what_is_wrong(spelling: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        get_method(spelling)


@pytest.mark.parametrize("base", ["pet", "adapet", "ptuning"])
def test_every_base_passes_unlabelled_texts_and_noise_to_its_trainer(
    base: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """PET+MLM's texts and Noisy Student's noise reach ADAPET's and P-tuning's trainers as
    PET's (issue 19's combinations: adapet+mlm, ptuning+mlm, noisy+adapet, ...)."""
    import steadyeval.studies.fewshot._trainers as trainers
    import steadyeval.train as train_package
    from steadyeval.studies.fewshot._trainers import BASES, Extras, Job
    from steadyeval.train import TrainConfig, TrainOutcome

    seen: dict[str, Any] = {}

    def fake(*args: Any, **kwargs: Any) -> TrainOutcome:
        seen.update(kwargs)
        return TrainOutcome(best_step=0, best_dev=None, history=())

    monkeypatch.setattr(train_package, f"train_{base}", fake)
    monkeypatch.setattr(trainers, "train_pet", fake)
    h = {"mask_probability": 0.105, "lm_weight": 1.0, "prompt_tokens": 4}
    extras = Extras(("it was [Y] .",), 0.5, 0.2, 0.1)
    BASES[base].train(Job(tmp_path, (), (), TrainConfig(), 0, h, False, extras), tmp_path / "o")
    got = tuple(seen[k] for k in ("unlabeled", "mlm_weight", "mlm_probability", "noise"))
    assert got == (("it was [Y] .",), 0.5, 0.2, 0.1)


# -- metrics -----------------------------------------------------------------------------------
def test_metrics_against_hand_computed_values() -> None:
    # CB: 3 labels. gold 0 0 0 1 1 2; pred 0 0 1 1 None 2.
    golds, preds = [0, 0, 0, 1, 1, 2], [0, 0, 1, 1, None, 2]
    assert accuracy(preds, golds) == pytest.approx(4 / 6)
    # F1(0) = 2*2/(2*2+0+1) = 0.8; F1(1) = 2/(2+1+1) = 0.5; F1(2) = 1.
    assert macro_f1(preds, golds) == pytest.approx((0.8 + 0.5 + 1.0) / 3)
    cb = task_scores("CB", preds, golds)
    assert cb["score"] == pytest.approx((4 / 6 + (0.8 + 0.5 + 1.0) / 3) / 2)
    # MultiRC: two questions; F1a over "true" (1) answers, EM per question.
    golds, preds, groups = [1, 0, 1, 1, 0], [1, 0, 0, 1, 1], ["q1", "q1", "q1", "q2", "q2"]
    assert binary_f1(preds, golds) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    assert group_exact_match(preds, golds, groups) == 0.0
    assert group_exact_match([1, 0, 1, 1, 0], golds, groups) == 1.0
    mrc = task_scores("MultiRC", preds, golds, groups)
    assert (mrc["f1a"], mrc["em"], mrc["score"]) == pytest.approx((2 / 3, 0.0, 1 / 3))
    assert task_scores("RTE", [1, None], [1, 1]) == {"accuracy": 0.5, "score": 0.5}
    assert task_average({"RTE": 0.5, "CB": 0.7, "WiC": 0.6}) == pytest.approx(0.6)
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert math.isnan(accuracy([], []))


# -- spaces ------------------------------------------------------------------------------------
def test_yaml_space_numbers_and_located_errors(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(
        "learning_rate: [1e-5, 2E-5]\nsteps: 5\npattern: [question]\n"
        "ipet:\n  generations: 2\n  temperature: 1\n"
    )
    pet, ipet, task = get_method("pet"), get_method("ipet"), get_task("RTE")
    grid = build_grid(pet, task, load_space(space, "pet"))
    assert [h["learning_rate"] for h in grid] == [1e-5, 2e-5] and grid[0]["steps"] == 5
    grid = build_grid(ipet, task, load_space(space, "ipet"))
    assert {(h["generations"], h["temperature"], h["learning_rate"]) for h in grid} == {
        (2, 1.0, 1e-5),
        (2, 1.0, 2e-5),
    }
    space.write_text("steps: 5\nlearning_rate: [1e-5, fast]\n")
    with pytest.raises(
        ConfigError, match=r"space.yaml, line 2: learning_rate: expected a positive"
    ):
        build_grid(pet, task, load_space(space, "pet"))
    space.write_text("pet:\n  steps: 5\n  lr: 1\n")
    with pytest.raises(
        ConfigError, match=r"space.yaml, line 3: method pet has no hyperparameter 'lr'"
    ):
        build_grid(pet, task, load_space(space, "pet"))


# -- unlabelled data ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["COPA", "WiC", "WSC", "MultiRC"])
def test_fewglue_unlabelled_files_load(shared_data: Path, name: str) -> None:
    path = shared_data / "fewglue" / "FewGLUE" / name / "unlabeled.jsonl"
    items = load_unlabelled_items(get_task(name), path)
    assert len(items) > 100 and all(i.metadata["unlabelled"] for i in items)
    assert len({i.id for i in items}) == len(items)


# -- chains ------------------------------------------------------------------------------------
def test_ipet_sizes_labels_and_selection() -> None:
    # iPET's training set grows 5x per generation: 8 -> 40 -> 200 -> 1000 (capped by the pool).
    assert grow_sizes(8, 5.0, 3, 10_000) == [32, 192, 992]
    assert grow_sizes(8, 5.0, 3, 300) == [32, 192, 300]
    # Averaged probabilities at temperature 2: softmax([2, 0]/2) and softmax([0, 0]).
    p = ensemble_probs([np.array([[2.0, 0.0]]), np.array([[0.0, 0.0]])], 2.0)
    e = 1 / (1 + math.exp(-1))
    assert p[0] == pytest.approx([(e + 0.5) / 2, (1 - e + 0.5) / 2])
    probs = np.array([[0.9, 0.1]] * 6 + [[0.2, 0.8]] * 6)
    a = pick_pseudo(probs, 4, [0.5, 0.5], np.random.default_rng(0))
    b = pick_pseudo(probs, 4, [0.5, 0.5], np.random.default_rng(0))
    assert a == b and len(a) == 4 and sum(i < 6 for i in a) == 2  # two of each label


# -- the methods x tasks table -----------------------------------------------------------------
def _rows(task: str, method: str, split: int, part: str, hits: list[bool]) -> list[dict[str, Any]]:
    return [
        {"strategy": "multisplit", "n_splits": 2, "split_index": split, "hparams_id": "h",
         "part": part, "correct": c, "task": task, "method": method,
         "parsed_option": 1 if c else 0, "gold_options": [1], "metadata": "{}"}
        for c in hits
    ]  # fmt: skip


def test_methods_table_content() -> None:
    # Test scores per split: pet RTE 0.5/0.75, CB (acc = F1 here) ...; ipet one better each.
    tests = {
        ("RTE", "pet"): ([True, False, True, False], [True, True, True, False]),
        ("RTE", "ipet"): ([True, True, True, False], [True, True, True, True]),
        ("WiC", "pet"): ([False, False, True, False], [True, False, True, False]),
        ("WiC", "ipet"): ([True, False, True, False], [True, True, True, False]),
    }
    rows = []
    for (task, method), splits in tests.items():
        for i, hits in enumerate(splits):
            rows += _rows(task, method, i, "dev", [True]) + _rows(task, method, i, "test", hits)
    grid = [{"id": "h", "hparams": {"pattern": "question"}}]
    info = {
        "experiments": [
            {"key": f"{t}/{m}", "task": t, "method": m, "grid": grid, "n_labelled": 8,
             "n_test": 4} for t, m in tests
        ],
        "grid": grid, "task": "RTE", "method": "pet", "strategies": ["multisplit"], "k": 2,
        "k_values": [2], "seed": 0, "ratio": 0.5, "model": "hf:tiny", "skipped_k": [],
    }  # fmt: skip
    analysis = analyze(ResultsFrame(pa.Table.from_pylist(rows)), info)
    table = analysis.methods
    assert table.strategy == "multisplit" and table.tasks == ["RTE", "WiC"]
    pet, ipet = table.rows
    rte = pet.tasks["RTE"]
    assert rte is not None and rte.scores == [0.5, 0.75]
    assert rte.mean == pytest.approx(0.625)
    assert rte.std == pytest.approx(np.std([0.5, 0.75], ddof=1))
    assert pet.average == pytest.approx((0.625 + 0.375) / 2)
    assert ipet.average == pytest.approx((0.875 + 0.625) / 2)
    (pair,) = table.paired
    assert (pair.a, pair.b, pair.n_pairs) == ("pet", "ipet", 4)
    assert pair.estimate == pytest.approx(-0.25) and pair.wins == 0 and pair.losses == 4
    # Every split differs by the same 0.25: no spread, so no p-value and no adjusted one.
    assert pair.pvalue is None and pair.pvalue_holm is None
    own = fewshot_report_sections(analysis, info, figures=False)
    # The methods table is the study's answer: it leads the report, before the headline.
    assert [s.id for s in own if s.lead] == ["fewshot-methods"]
    md = sections_markdown(own)
    assert "Methods × tasks (multisplit, K = 2)" in md
    assert "| pet | 62.5 ± 17.7 | 37.5 ± 17.7 |" in md
    assert "pet − ipet" in md and "p (Holm)" in md


def test_paired_method_comparisons_are_holm_adjusted() -> None:
    from steadyeval.stats import holm
    from steadyeval.studies.fewshot import (
        FewShotDesign,
        FewShotDesignExperiment,
        FewShotExperiment,
        StrategyRow,
        compare_methods,
    )

    scores = {"a": [0.9, 0.8, 0.7, 0.9], "b": [0.5, 0.6, 0.4, 0.7], "c": [0.6, 0.5, 0.6, 0.6]}
    experiments, designs = {}, []
    for m, xs in scores.items():
        row = StrategyRow(
            strategy="multisplit", k=4, test_mean=float(np.mean(xs)), test_std=0.1,
            test_scores=xs, selected="h", selected_hparams={}, dev_mean=1.0, spearman=0.0,
            oracle_test_mean=float(np.mean(xs)), regret=0.0, test_range_over_k=0.0,
            spearman_range_over_k=0.0, final_test_mean=None, final_test_std=None,
        )  # fmt: skip
        experiments[f"RTE/{m}"] = FewShotExperiment(
            strategies={}, side_by_side=[row], metric="accuracy"
        )
        designs.append(FewShotDesignExperiment(key=f"RTE/{m}", task="RTE", method=m, grid=[]))
    design = FewShotDesign(strategies=["multisplit"], k=4, k_values=[4], grid=[])
    out = compare_methods(experiments, designs, design)
    raw = [p.pvalue for p in out.paired]
    assert [(p.a, p.b) for p in out.paired] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(p is not None and 0 < p <= 1 for p in raw) and len(set(raw)) == 3
    holm_p = [p.pvalue_holm for p in out.paired]
    assert holm_p == pytest.approx(list(holm(raw).pvalues))
    assert min(p for p in holm_p if p is not None) == pytest.approx(3 * min(raw))


# -- the methods learn ----------------------------------------------------------------------------
_A = {1: ["good"], 0: ["bad"]}
_B = {1: ["great", "fine", "nice"], 0: ["awful", "poor", "sad"]}


def _row(i: int, y: int, words: list[str], label: bool = True) -> str:
    row: dict[str, Any] = {"premise": f"the movie was {' and '.join(words)} .",
                           "hypothesis": "it was fun .", "idx": i}  # fmt: skip
    if label:
        row["label"] = "entailment" if y else "not_entailment"
    return json.dumps(row) + "\n"


def _synthetic(folder: Path) -> dict[str, str]:
    """16 labelled items cued by good/bad only (8 train + 8 dev in one split), 200 unlabelled
    items holding a good/bad cue and a new cue word of the same class, and 64 test items
    holding only the new cue words: the labelled items alone cannot teach them."""
    rng = random.Random(0)
    unl = []
    for i in range(200):
        y = rng.randint(0, 1)
        words = [rng.choice(_A[y]), rng.choice(_B[y])]
        rng.shuffle(words)
        unl.append(_row(1000 + i, y, words, label=False))
    files = {
        "labelled": "".join(_row(i, i % 2, _A[i % 2]) for i in range(16)),
        "unlabelled": "".join(unl),
        "test": "".join(_row(2000 + i, i % 2, [rng.choice(_B[i % 2])]) for i in range(64)),
    }
    out = {}
    for name, text in files.items():
        (folder / f"{name}.jsonl").write_text(text)
        out[name] = str(folder / f"{name}.jsonl")
    return out


def test_ipet_and_noisy_students_beat_pet_on_eight_labelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steadyeval.studies.fewshot._trainers import PETBase

    noises: list[tuple[int, Any]] = []  # (training examples, noise) of every PET run
    real = PETBase.train

    def spy(self: Any, job: Any, out: Path) -> Any:
        noises.append((len(job.train), job.extras.noise))
        return real(self, job, out)

    monkeypatch.setattr(PETBase, "train", spy)
    words = " ".join(w for ws in [*_A.values(), *_B.values()] for w in ws)
    corpus = [*DEFAULT_CORPUS, f"the movie was {words} and . it was fun . Question Answer yes no"]
    model = build_tiny_model(tmp_path / "bert", "bert", seed=0, corpus=corpus)
    space = {
        "pattern": ["question"], "learning_rate": [3e-3], "steps": [40], "batch_size": [8],
        "eval_every": [10], "max_length": [32],
        # Tiny random models give small logit margins, so the distillation uses T = 1.
        # Two seeds: a member's committee leaves out its own predecessor (FewNLU's rule).
        "ipet": {"generations": 1, "ensemble": "own-pattern", "ensemble_seeds": 2,
                 "temperature": 1.0, "steps": 60},
        # Hard pseudo-labels (FewNLU's labelling) need more steps than soft ones.
        "noisy": {"rounds": 1, "steps": 150, "ensemble": "own-pattern", "ensemble_seeds": 2,
                  "growth": 25.0},
    }  # fmt: skip
    config = {
        "models": [f"hf:{model}"], "task": "RTE", **_synthetic(tmp_path),
        "methods": ["pet", "ipet", "noisy"], "strategies": ["multisplit"], "k": 1,
        "k_values": [1], "space": space,
    }  # fmt: skip
    result = run_study("fewshot", config, options=RunOptions(out=tmp_path / "run", progress=False))
    test = {r.method: r.test_mean for r in result.analysis.side_by_side}
    assert test["pet"] <= 0.6, test  # the 8 labelled items teach only good / bad
    assert test["ipet"] > test["pet"] + 0.1 and test["noisy"] > test["pet"] + 0.1, test
    # FewNLU's noise (embedding dropout 0.05) on the students only: the generation-0 models
    # (8 labelled examples) train clean, the one student (8 + pseudo-labelled) noised.
    fewnlu = Noise("embedding-dropout", 0.05)
    noised = [n for n, noise in noises if noise == fewnlu]
    assert len(noised) == 1 and noised[0] > 100, noises
    assert all(noise == 0.0 for n, noise in noises if n == 8) and len(noises) > 4
    # The noise and the committee are recorded in the noisy model's checkpoint manifest.
    manifests = (tmp_path / "run" / "checkpoints").rglob("steadyeval-checkpoint.json")
    payloads = [json.loads(m.read_text())["payload"] for m in manifests]
    (noisy,) = [p for p in payloads if p.get("method") == "noisy"]
    assert noisy["noise"] == {"kind": "embedding-dropout", "rate": 0.05, "on": "students"}
    assert noisy["committee"] == {"rule": "fewnlu", "share": 1.0}
    design = result.summary["design"]
    assert {e["key"]: e["unlabelled"] for e in design["experiments"]}["RTE/ipet"] == {
        "source": str(tmp_path / "unlabelled.jsonl"),
        "available": 200,
    }


def test_ipet_pseudo_labels_do_not_depend_on_the_model_files_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same model in a new place with new file times (a copy) draws the same iPET
    pseudo-labels: the draw is seeded from the chain node, not from the checkpoint key
    (which holds the base model's path and file times)."""
    import os
    import shutil

    from steadyeval.studies.fewshot import _semi

    draws: list[tuple[str, Any]] = []
    real = _semi.pick_pseudo

    def spy(probs: Any, n: int, share: Any, rng: Any) -> Any:
        picked = real(probs, n, share, rng)
        draws.append((run_name, list(picked)))
        return picked

    monkeypatch.setattr(_semi, "pick_pseudo", spy)
    model = build_tiny_model(tmp_path / "bert", "bert", seed=0)
    space = {"pattern": ["question"], "learning_rate": [3e-3], "steps": [5], "batch_size": [8],
             "eval_every": [5], "max_length": [32], "generations": 1, "growth": 3.0,
             "ensemble": "own-pattern", "ensemble_seeds": 2}  # fmt: skip
    data = _synthetic(tmp_path)
    for run_name in ("a", "b"):
        where = tmp_path / f"model-{run_name}"
        shutil.copytree(model, where)
        for f in where.iterdir():
            os.utime(f, ns=(ord(run_name) * 10**9, ord(run_name) * 10**9))
        config = {"models": [f"hf:{where}"], "task": "RTE", **data, "methods": ["ipet"],
                  "strategies": ["multisplit"], "k": 1, "k_values": [1], "space": space}  # fmt: skip
        run_study("fewshot", config, options=RunOptions(out=tmp_path / run_name, progress=False))
    a = [d for name, d in draws if name == "a"]
    b = [d for name, d in draws if name == "b"]
    assert a and a == b


def test_combinations_on_adapet_and_ptuning_run_two_steps(tmp_path: Path) -> None:
    """PET+MLM and Noisy Student on ADAPET and P-tuning bases run as methods (2 training
    steps each; learning is checked elsewhere; the trainers' terms in tests/train)."""
    model = build_tiny_model(
        tmp_path / "bert", "bert", seed=0, corpus=[*DEFAULT_CORPUS, "good bad"]
    )
    small = {"unlabelled_size": 8}
    space = {
        "pattern": ["question"], "learning_rate": [1e-3], "steps": [2], "batch_size": [4],
        "max_length": [32], "mlm": small, "noisy": {"rounds": 1, **small},
    }  # fmt: skip
    methods = ["adapet+mlm", "noisy+ptuning"]
    config = {
        "models": [f"hf:{model}"], "task": "RTE", **_synthetic(tmp_path), "methods": methods,
        "strategies": ["multisplit"], "k": 1, "k_values": [1], "space": space,
    }  # fmt: skip
    result = run_study("fewshot", config, options=RunOptions(out=tmp_path / "run", progress=False))
    assert sorted(r.method for r in result.analysis.side_by_side) == sorted(methods)


# -- the design: tasks x methods, unlabelled sources, cross-split, causal models ---------------
def test_tasks_times_methods_design_records_unlabelled_sources(
    shared_data: Path, tiny_bert: Path, tiny_gpt2: Path
) -> None:
    from steadyeval import load_backend
    from steadyeval.studies.fewshot import FewShotConfig, FewShotDesign, fewshot_design
    from steadyeval.train import TrainedModel

    config = FewShotConfig(
        models=[f"hf:{tiny_bert}"], tasks=["RTE", "COPA"], methods=["pet", "ipet/cross-split"],
        labelled=str(shared_data / "fewglue" / "FewGLUE"), test_from_labelled=16,
        strategies=["multisplit"], k=2, k_values=[2], transductive=True,
        space={"learning_rate": [1e-3], "steps": [2], "ipet": {"generations": 1}},
    )  # fmt: skip
    design = fewshot_design(config, [load_backend(f"hf:{tiny_bert}")], RunOptions())
    info = design.info
    assert isinstance(info, FewShotDesign)
    assert [e.key for e in info.experiment_list] == [
        "RTE/pet", "RTE/ipet/cross-split", "COPA/pet", "COPA/ipet/cross-split",
    ]  # fmt: skip
    sources = {e.key: e.unlabelled for e in info.experiment_list}
    assert sources["RTE/pet"] is None
    rte = sources["RTE/ipet/cross-split"]
    assert rte is not None and (rte.source, rte.available) == ("test-inputs", 16)
    copa = sources["COPA/ipet/cross-split"]
    assert copa is not None
    assert copa.source.endswith("COPA/unlabeled.jsonl") and copa.available == 400
    # 2 tasks x 2 methods x 2 splits x 2 patterns, dev and test blocks each.
    assert len(design.blocks) == 2 * 2 * 2 * 2 * 2
    assert {b.tags["task"] for b in design.blocks} == {"RTE", "COPA"}
    # Cross-split: a unit's model depends on its sibling split (its teachers' keys).
    ipet = [b for b in design.blocks if b.tags["method"] == "ipet/cross-split"]
    models = [b.models[0] for b in ipet if b.tags["split"].endswith("/dev")]
    recipes = [m.recipe for m in models if isinstance(m, TrainedModel)]
    assert len(recipes) == len(models) == 8
    # RTE's teachers: its 3 patterns' models on the other split; COPA's: its 2 patterns'.
    assert sorted(len(r["teachers"]) for r in recipes) == [2] * 4 + [3] * 4
    assert len({tuple(r["teachers"]) for r in recipes}) == 2 * 2  # per task, per split
    assert info.transductive
    with pytest.raises(ConfigError, match=r"^method ipet needs a masked LM; .* is causal"):
        gpt = config.model_copy(update={"models": [f"hf:{tiny_gpt2}"], "methods": ["ipet"]})
        fewshot_design(gpt, [load_backend(f"hf:{tiny_gpt2}")], RunOptions())
