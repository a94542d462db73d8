"""PET's additions for issue 19: soft targets, auxiliary MLM on unlabelled text (PET+MLM),
Noisy Student's input noise and early stopping; loss pieces checked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from steadyeval import ConfigError
from steadyeval.models import load_backend
from steadyeval.requests import ScoreRequest
from steadyeval.train import (
    MaskedPrompts,
    PromptExample,
    TokenNoise,
    TrainConfig,
    fit,
    pet_loss,
    score_masked,
    train_pet,
)
from steadyeval.train._masked import Filled
from steadyeval.train._pet import slot_mlm_loss

from .toy import NEG, POS, FixedLogits, accuracy, toy


def test_pet_loss_hard_and_soft_targets_by_hand() -> None:
    scores = [torch.tensor([1.0, 3.0]), torch.tensor([0.0, 0.0, 0.0])]
    hard = [PromptExample("[Y]", ("a", "b"), 0), PromptExample("[Y]", ("a", "b", "c"), 2)]
    # -log softmax([1, 3])[0] = log(1 + e^2); uniform over 3: log 3
    expected = (math.log(1 + math.e**2) + math.log(3)) / 2
    assert pet_loss(scores, hard).item() == pytest.approx(expected, rel=1e-6)
    soft = [PromptExample("[Y]", ("a", "b"), 1, soft=(0.25, 0.75))]
    log_p = [1 - math.log(math.e + math.e**3), 3 - math.log(math.e + math.e**3)]
    expected_soft = -(0.25 * log_p[0] + 0.75 * log_p[1])
    assert pet_loss(scores[:1], soft).item() == pytest.approx(expected_soft, rel=1e-6)


@pytest.mark.parametrize(
    ("soft", "gold", "match"),
    [
        ((0.5, 0.25, 0.25), 0, "3 probabilities for 2 options"),
        ((0.5, 0.6), 1, "summing to 1"),
        ((-0.1, 1.1), 1, "non-negative"),
        ((0.7, 0.3), 1, "not the argmax"),
    ],
)
def test_soft_targets_are_validated(soft: tuple[float, ...], gold: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PromptExample("x [Y]", ("a", "b"), gold, soft=soft)


def test_slot_mlm_loss_by_hand_never_targets_the_slot(toy_bert: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_bert)
    text = "the movie was good . it was [Y] ."
    ids = tok(text.replace("[Y]", tok.mask_token))["input_ids"]
    table = torch.randn(1, len(ids), len(tok), generator=torch.Generator().manual_seed(0))
    model = FixedLogits(table)
    # probability 1: every token but [CLS], [SEP] and the slot's mask is a target.
    loss = slot_mlm_loss(
        model, tok, [text], probability=1.0, generator=torch.Generator(), max_length=64
    )
    targets = [p for p, t in enumerate(ids) if t not in tok.all_special_ids]
    assert len(targets) == len(ids) - 3  # [CLS], [MASK], [SEP] excluded

    def nll(p: int) -> float:
        row = [float(x) for x in table[0, p]]
        return float(-(row[ids[p]] - math.log(sum(math.exp(x) for x in row))))

    assert loss.item() == pytest.approx(sum(nll(p) for p in targets) / len(targets), rel=1e-5)


def test_token_noise_masks_or_drops_context_tokens_only() -> None:
    # Two fillings of one prompt: [CLS]=1 10 11 12 <option> 13 [SEP]=2; option 20 or 30 31.
    a = Filled((1, 10, 11, 12, 20, 13, 2), 4, 5, False)
    b = Filled((1, 10, 11, 12, 30, 31, 13, 2), 4, 6, False)
    noise = TokenNoise(0.5, 99, {1, 2}, torch.Generator().manual_seed(0))
    na, nb = noise.apply([a, b])
    assert na.ids[na.start : na.end] == (20,) and nb.ids[nb.start : nb.end] == (30, 31)
    assert na.ids[0] == nb.ids[0] == 1 and na.ids[-1] == nb.ids[-1] == 2
    # The same draw for both options: their contexts are identical after the noise.
    assert na.ids[: na.start] == nb.ids[: nb.start] and na.ids[na.end :] == nb.ids[nb.end :]
    context = [t for t in na.ids[1 : na.start] + na.ids[na.end : -1]]
    assert set(context) <= {10, 11, 12, 13, 99}
    # Nearly always noised: every context token is masked or dropped, half and half.
    seen = {"mask": 0, "drop": 0}
    sure = TokenNoise(0.999, 99, {1, 2}, torch.Generator().manual_seed(1))
    for _ in range(200):
        (f,) = sure.apply([a])
        kept = [t for t in f.ids if t not in (1, 2, 20)]
        seen["clean"] = seen.get("clean", 0) + sum(t != 99 for t in kept)
        seen["mask"] += sum(t == 99 for t in kept)
        seen["drop"] += 4 - len(kept)
    assert seen["clean"] <= 5  # ~0.8 expected in 800 draws
    assert 300 < seen["mask"] < 500 and 300 < seen["drop"] < 500
    with pytest.raises(ValueError, match="noise"):
        TokenNoise(1.0, 99, set(), torch.Generator())


def test_early_stopping_keeps_the_best_and_stops(one_thread: None) -> None:
    model = torch.nn.Linear(2, 1)
    dev = iter([0.5, 0.7, 0.6, 0.7, 0.9, 0.95])
    config = TrainConfig(learning_rate=1e-3, steps=12, batch_size=1, eval_every=2, patience=2)
    outcome = fit(
        model,
        lambda idx: model(torch.ones(len(idx), 2)).sum(),
        4,
        lambda: next(dev),
        config,
        seed=0,
    )
    # 0.7 at step 4, then 0.6 and 0.7 (no improvement): stop after step 8.
    assert outcome.history == ((2, 0.5), (4, 0.7), (6, 0.6), (8, 0.7))
    assert (outcome.best_step, outcome.best_dev) == (4, 0.7)
    assert "patience" not in TrainConfig().fingerprint()
    assert config.fingerprint()["patience"] == 2
    with pytest.raises(ValueError, match="patience"):
        TrainConfig(patience=2)  # needs eval_every


def test_pet_refuses_a_causal_lm(toy_gpt2: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^PET needs a masked LM; {toy_gpt2} is a causal LM$"):
        train_pet(toy_gpt2, toy(2, 0), [], TrainConfig(steps=1), seed=0, out_dir=tmp_path)


def test_pet_extras_are_validated(toy_bert: Path, tmp_path: Path) -> None:
    config = TrainConfig(steps=1)
    with pytest.raises(ValueError, match="needs unlabelled texts"):
        train_pet(toy_bert, toy(2, 0), [], config, seed=0, out_dir=tmp_path, mlm_weight=0.1)
    with pytest.raises(ValueError, match="noise must be in"):
        train_pet(toy_bert, toy(2, 0), [], config, seed=0, out_dir=tmp_path, noise=1.0)


UNLABELLED = [f"the movie was {w} . it was [Y] ." for w in POS + NEG] + [
    "the movie was good .",
    "the river flows through the city .",
]


def test_pet_mlm_learns_and_the_checkpoint_scores_as_trained(
    toy_bert: Path, tmp_path: Path, one_thread: None
) -> None:
    train, dev, test = toy(32, 0), toy(16, 1), toy(64, 2)
    config = TrainConfig(learning_rate=3e-3, steps=40, batch_size=8, eval_every=10)
    outcome = train_pet(
        toy_bert, train, dev, config, seed=0, out_dir=tmp_path / "a",
        unlabeled=UNLABELLED, mlm_weight=1e-4,
    )  # fmt: skip
    scores = score_masked(tmp_path / "a", test, max_length=outcome.extra["max_length"])
    assert accuracy(scores, test) >= 0.8
    backend = load_backend(f"hf-masked:{tmp_path / 'a'}?max_length={outcome.extra['max_length']}")
    got = backend.score([ScoreRequest(e.prompt, o) for e in test[:8] for o in e.options])
    assert [r.logprob for r in got] == pytest.approx([v for s in scores[:8] for v in s], abs=1e-5)
    # The auxiliary loss is really added: another weight gives other weights.
    short = TrainConfig(learning_rate=3e-3, steps=2, batch_size=8)
    for name, weight in (("w0", 0.0), ("w1", 1.0), ("w1b", 1.0)):
        train_pet(
            toy_bert, train, [], short, seed=0, out_dir=tmp_path / name,
            unlabeled=UNLABELLED, mlm_weight=weight,
        )  # fmt: skip
    weights = {n: (tmp_path / n / "model.safetensors").read_bytes() for n in ("w0", "w1", "w1b")}
    assert weights["w0"] != weights["w1"] and weights["w1"] == weights["w1b"]


def test_noisy_student_training_learns_and_is_seeded(
    toy_bert: Path, tmp_path: Path, one_thread: None
) -> None:
    train, dev, test = toy(32, 0), toy(16, 1), toy(64, 2)
    # Soft targets as a teacher would give them.
    soft = [
        PromptExample(e.prompt, e.options, e.gold, soft=(0.1, 0.9) if e.gold else (0.9, 0.1))
        for e in train
    ]
    config = TrainConfig(learning_rate=3e-3, steps=40, batch_size=8, eval_every=10)
    outcome = train_pet(toy_bert, soft, dev, config, seed=0, out_dir=tmp_path / "s", noise=0.1)
    assert outcome.best_dev is not None and outcome.best_dev >= 0.8
    test_acc = accuracy(score_masked(tmp_path / "s", test), test)
    assert test_acc >= 0.8
    short = TrainConfig(learning_rate=3e-3, steps=2, batch_size=8)
    for name, noise in (("n0", 0.0), ("n1", 0.3), ("n1b", 0.3)):
        train_pet(toy_bert, train, [], short, seed=0, out_dir=tmp_path / name, noise=noise)
    weights = {n: (tmp_path / n / "model.safetensors").read_bytes() for n in ("n0", "n1", "n1b")}
    assert weights["n0"] != weights["n1"] and weights["n1"] == weights["n1b"]


def test_noise_is_for_training_only(toy_bert: Path) -> None:
    """Scoring with noise differs from clean scoring; ``scores`` without noise is clean."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    prompts = MaskedPrompts(AutoTokenizer.from_pretrained(toy_bert), 64)
    model = AutoModelForMaskedLM.from_pretrained(toy_bert).eval()
    examples = toy(4, 5)
    with torch.no_grad():
        clean = [s.tolist() for s in prompts.scores(model, examples)]
        noise = TokenNoise(0.5, prompts.tokenizer.mask_token_id, [], torch.Generator())
        noisy = [s.tolist() for s in prompts.scores(model, examples, noise=noise)]
    assert clean == score_masked(toy_bert, examples, max_length=64)
    assert clean != noisy
