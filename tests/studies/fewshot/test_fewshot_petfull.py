"""Issue 40, point 4: full PET (``pet-full``: a PET ensemble distilled into a sequence
classifier) and iPET's final classifier (``final: classifier``), as timoschick/pet's
``train_pet`` / ``train_ipet`` do it; the classifier's soft-label loss."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from steadyeval import ConfigError, RunOptions, load_backend
from steadyeval.studies import run_study
from steadyeval.studies.fewshot import FewShotConfig, fewshot_design, get_method, get_task
from steadyeval.studies.fewshot._committee import merge_scores
from steadyeval.train import ClsExample, TrainConfig, TrainedModel, score_masked, train_cls
from steadyeval.train._cls import cls_loss

from .test_fewshot_methods import _synthetic

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread


# -- the merge and the loss, against hand-computed values -------------------------------------
def test_soft_labels_are_the_softmax_of_pets_weighted_mean_of_scores_at_t() -> None:
    s1, s2 = [[0.0, 2.0]], [[4.0, 0.0]]
    # wmean, weights 3 and 1: merged (3*[0,2] + [4,0]) / 4 = [1, 1.5]; / T=2 = [0.5, 0.75].
    soft = merge_scores([s1, s2], [3.0, 1.0], 2.0)
    assert soft[0].tolist() == pytest.approx([1 / (1 + math.exp(0.25)), 1 / (1 + math.exp(-0.25))])
    # mean: merged [2, 1]; / 2 = [1, 0.5].
    soft = merge_scores([s1, s2], None, 2.0)
    assert soft[0].tolist() == pytest.approx([1 / (1 + math.exp(-0.5)), 1 / (1 + math.exp(0.5))])
    # Scores are averaged before the softmax: not the mean of the members' probabilities.
    probs = [np.exp(np.divide(s[0], 2)) / np.exp(np.divide(s[0], 2)).sum() for s in (s1, s2)]
    assert abs(soft[0][0] - np.mean(probs, axis=0)[0]) > 0.04  # 0.6225 against 0.5749
    # A shift per member and example (log-probabilities instead of logits) changes nothing.
    shifted = merge_scores([[[-5.0, -3.0]], [[1.0, -3.0]]], [3.0, 1.0], 2.0)
    np.testing.assert_allclose(shifted, merge_scores([s1, s2], [3.0, 1.0], 2.0), rtol=1e-12)
    with pytest.raises(ConfigError, match=r"reduction wmean.*got \[0\.0, 0\.0\].*reduction: mean"):
        merge_scores([s1, s2], [0.0, 0.0], 2.0)


def test_the_classifiers_soft_loss_is_pets_distillation_loss() -> None:
    logits = torch.tensor([[1.0, 3.0], [0.5, -0.5]])
    soft = ClsExample((("a", None),), 1, (0.25, 0.75))
    hard = ClsExample((("b", None),), 0)
    # T**2 * KL(q || softmax(z / T)) with T = 2, by hand: log_softmax([0.5, 1.5]).
    lse = math.log(math.exp(0.5) + math.exp(1.5))
    kl = 0.25 * (math.log(0.25) - (0.5 - lse)) + 0.75 * (math.log(0.75) - (1.5 - lse))
    ce = -(0.5 - math.log(math.exp(0.5) + math.exp(-0.5)))
    got = cls_loss(logits, [soft, hard], 2.0)
    assert float(got) == pytest.approx((4 * kl + ce) / 2, rel=1e-6)
    # timoschick/pet's distillation_loss (pet/utils.py:338-342) on the soft row alone.
    p = torch.log_softmax(logits[:1] / 2, dim=1)
    pet = torch.nn.functional.kl_div(p, torch.tensor([[0.25, 0.75]]), reduction="sum") * 4 / 1
    assert float(cls_loss(logits[:1], [soft], 2.0)) == pytest.approx(float(pet), rel=1e-6)
    with pytest.raises(ValueError, match="soft label must be probabilities summing to 1"):
        ClsExample((("a", None),), 0, (0.5, 0.6))
    three = ClsExample((("a", None),), 0, (0.2, 0.3, 0.5))
    with pytest.raises(
        ValueError, match="train example 0: a soft label over 3 classes, expected 2"
    ):
        train_cls("unused", [three], [], TrainConfig(steps=1), n_labels=2, seed=0, out_dir="x")
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        train_cls("unused", [soft], [], TrainConfig(steps=1), n_labels=2, seed=0, out_dir="x",
                  temperature=0.0)  # fmt: skip


# -- the methods ------------------------------------------------------------------------------
def test_pet_full_and_ipets_final_classifier_in_the_design(tiny_bert: Path, tmp_path: Path) -> None:
    data = _synthetic(tmp_path)
    config = FewShotConfig(
        models=[f"hf:{tiny_bert}"], task="RTE", **data,
        methods=["pet-full", "ipet", "pet"], strategies=["multisplit"], k=1, k_values=[1],
        space={"learning_rate": [1e-3], "steps": [2], "pattern": ["question"],
               "ipet": {"generations": 1, "final": ["pet", "classifier"]}},
    )  # fmt: skip
    design = fewshot_design(config, [load_backend(f"hf:{tiny_bert}")], RunOptions())
    by_method: dict[str, list[Any]] = {}
    for b in design.blocks:
        by_method.setdefault(b.tags["method"], []).append(b)
    (full,) = [b for b in by_method["pet-full"] if b.tags["split"].endswith("/dev")]
    model = full.models[0]
    assert isinstance(model, TrainedModel) and model.backend == "hf-classifier"
    assert full.conditions[0].scoring == "classifier-head"
    assert "classifier_inputs" in full.items[0].metadata
    # 3 RTE patterns x 3 seeds (PET's --pet_repetitions); the (question, seed 0) member is
    # the pet method's own checkpoint.
    assert len(model.recipe["teachers"]) == 9 and model.recipe["hparams"]["reduction"] == "wmean"
    (pet,) = [b.models[0] for b in by_method["pet"] if b.tags["split"].endswith("/dev")]
    assert isinstance(pet, TrainedModel) and pet.key in model.recipe["teachers"]
    finals = {
        b.models[0].recipe["hparams"]["final"]: b
        for b in by_method["ipet"]
        if b.tags["split"].endswith("/dev") and isinstance(b.models[0], TrainedModel)
    }
    assert finals["pet"].models[0].backend == "hf-masked"
    assert finals["classifier"].models[0].backend == "hf-classifier"
    assert finals["classifier"].conditions[0].scoring == "classifier-head"
    assert finals["pet"].models[0].key != finals["classifier"].models[0].key
    assert get_method("pet-full").uses_unlabelled


def test_pet_full_trains_its_ensemble_and_distils_it_into_a_classifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steadyeval.models._tiny import DEFAULT_CORPUS, build_tiny_model
    from steadyeval.studies.fewshot import _distil

    words = "great fine nice awful poor sad good bad"
    corpus = [*DEFAULT_CORPUS, f"the movie was {words} . it was fun . Question Answer yes no"]
    model = build_tiny_model(tmp_path / "bert", "bert", seed=0, corpus=corpus)
    seen: list[tuple[list[Any], np.ndarray]] = []
    real = _distil.train_on_soft_labels

    def spy(ctx: Any, task: Any, h: Any, pool: Any, soft: Any, *rest: Any) -> Any:
        seen.append((list(pool), np.asarray(soft)))
        return real(ctx, task, h, pool, soft, *rest)

    monkeypatch.setattr(_distil, "train_on_soft_labels", spy)
    space = {
        "learning_rate": [3e-3], "steps": [4], "batch_size": [8], "eval_every": [2],
        "max_length": [32], "pattern": ["question"], "unlabelled_size": 16,
        "pet-full": {"ensemble_seeds": 1},
        "ipet": {"generations": 1, "ensemble": "own-pattern", "ensemble_seeds": 2, "final": "classifier"},
    }  # fmt: skip
    config = {
        "models": [f"hf:{model}"], "task": "RTE", **_synthetic(tmp_path),
        "methods": ["pet", "pet-full", "ipet"], "strategies": ["multisplit"], "k": 1,
        "k_values": [1], "space": space,
    }  # fmt: skip
    out = tmp_path / "run"
    result = run_study("fewshot", config, options=RunOptions(out=out, progress=False))
    rows = result.table.to_pylist()
    served = {r["method"]: r["model"].split(":")[0] for r in rows}
    assert served == {"pet": "hf-masked", "pet-full": "hf-classifier", "ipet": "hf-classifier"}
    assert {r["scoring"] for r in rows if r["method"] != "pet"} == {"classifier-head"}
    assert len(seen) == 2  # pet-full's and ipet's distillations
    # The soft targets: softmax of the members' scores on the pool averaged with weights =
    # each pattern's accuracy on the train part before training, at T = 2 (recomputed here
    # from the stored checkpoints and the base model, outside the method's code).
    full = next(r for r in rows if r["method"] == "pet-full")
    key = full["model"].split("pet-full-")[1][:12]
    (folder,) = [p for p in (out / "checkpoints").iterdir() if p.name.startswith(key)]
    manifest = json.loads((folder / "steadyeval-checkpoint.json").read_text())
    teachers = manifest["payload"]["teachers"]
    assert len(teachers) == 3  # RTE's three patterns, one seed each
    # 9 checkpoints: pet's (also a pet-full member), 2 more members, pet-full's classifier,
    # iPET's generations 0 and 1 (two seeds each: a committee needs a model besides the own
    # predecessor) and its classifier.
    n_checkpoints = len([p for p in (out / "checkpoints").iterdir() if p.is_dir()])
    assert n_checkpoints == 9, n_checkpoints
    pool, soft = next((p, s) for p, s in seen if len(p) == 16 and s.shape == (16, 2))
    task, pet = get_task("RTE"), get_method("pet")
    scores, weights = [], []
    for key in teachers:
        where = out / "checkpoints" / key[:24]  # the store's folder of a key
        member = json.loads((where / "steadyeval-checkpoint.json").read_text())["payload"]
        h = member["hparams"]
        assert member["method"] == "pet" and member["seed"] == 0
        examples = pet.examples(task, h, pool)  # type: ignore[attr-defined]
        scores.append(np.asarray(score_masked(where, examples, max_length=32)))
        train = _train_items(config["labelled"], member["train"])
        zero = score_masked(model, pet.examples(task, h, train), max_length=32)  # type: ignore[attr-defined]
        gold = [e.gold for e in pet.examples(task, h, train)]  # type: ignore[attr-defined]
        weights.append(np.mean([int(np.argmax(s)) == g for s, g in zip(zero, gold, strict=True)]))
    assert len(set(weights)) > 1, weights  # distinct weights: wmean is not the plain mean here
    merged = np.average(np.stack(scores), axis=0, weights=weights) / 2.0
    expected = np.exp(merged) / np.exp(merged).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(soft, expected, rtol=1e-5, atol=1e-7)


def _train_items(labelled: str, hashes: list[str]) -> list[Any]:
    """The labelled items whose content hashes a recipe's ``train`` lists, in its order."""
    from steadyeval.studies.fewshot import load_task_items

    by_hash = {i.hash: i for i in load_task_items(get_task("RTE"), labelled)}
    return [by_hash[h] for h in hashes]


def test_a_transductive_run_opens_its_report_with_a_warning(
    tiny_bert: Path, tmp_path: Path
) -> None:
    """Issue 40, point 3: the report's first (lead) section names the experiments that used
    the test inputs; a run on an unlabelled file has no such section."""
    from steadyeval.studies.fewshot._report import _transductive

    data = _synthetic(tmp_path)
    base = {"models": [f"hf:{tiny_bert}"], "task": "RTE", "labelled": data["labelled"],
            "test": data["test"], "methods": ["ipet", "pet"], "strategies": ["multisplit"],
            "k": 1, "k_values": [1]}  # fmt: skip
    backends = [load_backend(f"hf:{tiny_bert}")]
    info = fewshot_design(FewShotConfig(**base, transductive=True), backends, RunOptions()).info
    (section,) = _transductive(info)  # type: ignore[arg-type]
    assert section.lead and section.title == "Transductive run"
    text = section.blocks[0].text  # type: ignore[union-attr]
    assert "RTE/ipet used the test set's inputs" in text and "RTE/pet" not in text
    assert info.transductive  # type: ignore[union-attr]
    given = FewShotConfig(**base, unlabelled=data["unlabelled"])
    info = fewshot_design(given, backends, RunOptions()).info
    assert _transductive(info) == [] and not info.transductive  # type: ignore[arg-type, union-attr]
