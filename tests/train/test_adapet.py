"""ADAPET (Tam et al., 2021): its two loss terms by hand on fixed logits, and that it learns."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from steadyeval import ConfigError
from steadyeval.models import load_backend
from steadyeval.requests import ScoreRequest
from steadyeval.train import MaskedPrompts, PromptExample, TrainConfig, score_masked, train_adapet
from steadyeval.train._adapet import decoupled_label_loss, label_conditioned_mlm_loss

from .toy import FixedLogits, accuracy, toy

LOG = math.log


def test_decoupled_label_loss_by_hand() -> None:
    ex = PromptExample("x [Y]", ("a", "b", "c"), 0)
    # p(a) = 0.5, p(b) = 0.2, and c has two tokens with p 0.4 and 0.1: geometric mean 0.2.
    rows = [
        [torch.tensor([LOG(0.5)]), torch.tensor([LOG(0.2)]), torch.tensor([LOG(0.4), LOG(0.1)])]
    ]
    expected = -LOG(0.5) - LOG(1 - 0.2) - LOG(1 - 0.2)
    assert decoupled_label_loss(rows, [ex]).item() == pytest.approx(expected, rel=1e-6)
    # A second example with soft targets (0.25, 0.75): BCE against them; the mean of both.
    soft = PromptExample("x [Y]", ("a", "b"), 1, soft=(0.25, 0.75))
    rows2 = [[torch.tensor([LOG(0.5)]), torch.tensor([LOG(0.3)])]]
    expected2 = -(0.25 * LOG(0.5) + 0.75 * LOG(0.5)) - (0.75 * LOG(0.3) + 0.25 * LOG(0.7))
    both = decoupled_label_loss(rows + rows2, [ex, soft]).item()
    assert both == pytest.approx((expected + expected2) / 2, rel=1e-6)


def test_label_conditioned_mlm_loss_by_hand(toy_bert: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_bert)
    prompts = MaskedPrompts(tok, 64)
    ex = PromptExample("the movie was good . it was [Y] .", ("no", "yes"), 1)
    gold = prompts.fill(ex.prompt, "yes")
    assert gold.end - gold.start == 1 == len(prompts.fill(ex.prompt, "no").ids) - len(gold.ids) + 1
    table = torch.randn(1, len(gold.ids), len(tok), generator=torch.Generator().manual_seed(0))
    model = FixedLogits(table)
    # probability 1: every context token is a target, in the gold- and in the wrong-label input.
    loss = label_conditioned_mlm_loss(
        model, prompts, [ex], probability=1.0, generator=torch.Generator().manual_seed(0)
    )
    special = set(tok.all_special_ids)
    targets = [
        p for p, t in enumerate(gold.ids) if t not in special and not gold.start <= p < gold.end
    ]
    assert len(targets) == len(gold.ids) - 3

    def prob(p: int) -> float:
        row = [math.exp(float(x)) for x in table[0, p]]
        return row[gold.ids[p]] / sum(row)

    likelihood = sum(-LOG(prob(p)) for p in targets) / len(targets)
    unlikelihood = sum(-LOG(1 - prob(p)) for p in targets) / len(targets)
    assert loss.item() == pytest.approx(likelihood + unlikelihood, rel=1e-5)


def test_adapet_refuses_a_causal_lm(toy_gpt2: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^ADAPET needs a masked LM; {toy_gpt2} is a causal LM$"):
        train_adapet(toy_gpt2, toy(2, 0), [], TrainConfig(steps=1), seed=0, out_dir=tmp_path)


def test_adapet_learns_and_the_checkpoint_scores_as_trained(
    toy_bert: Path, tmp_path: Path, one_thread: None
) -> None:
    train, dev, test = toy(32, 0), toy(16, 1), toy(64, 2)
    # The decoupled loss first lifts both label words out of the whole vocabulary, so a
    # random tiny model needs more steps than with PET's loss.
    config = TrainConfig(learning_rate=3e-3, steps=100, batch_size=8, eval_every=50)
    before = torch.random.get_rng_state()
    outcome = train_adapet(toy_bert, train, dev, config, seed=0, out_dir=tmp_path / "a")
    assert torch.equal(before, torch.random.get_rng_state())
    n = outcome.extra["max_length"]
    scores = score_masked(tmp_path / "a", test, max_length=n)
    assert accuracy(scores, test) >= 0.8
    assert outcome.best_dev == accuracy(score_masked(tmp_path / "a", dev, max_length=n), dev)
    backend = load_backend(f"hf-masked:{tmp_path / 'a'}?max_length={n}")
    got = backend.score([ScoreRequest(e.prompt, o) for e in test[:8] for o in e.options])
    assert [r.logprob for r in got] == pytest.approx([v for s in scores[:8] for v in s], abs=1e-5)


def test_label_conditioned_mlm_loss_splices_a_longer_wrong_label(toy_bert: Path) -> None:
    """A wrong label of several tokens shifts the right context: its targets move with it."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_bert)
    prompts = MaskedPrompts(tok, 64)
    ex = PromptExample("the movie was good . it was [Y] .", ("yes", "not so good"), 0)
    gold, wrong = prompts.fill(ex.prompt, "yes"), prompts.fill(ex.prompt, "not so good")
    shift = (wrong.end - wrong.start) - (gold.end - gold.start)
    assert shift >= 2
    table = torch.randn(1, len(wrong.ids), len(tok), generator=torch.Generator().manual_seed(1))
    loss = label_conditioned_mlm_loss(
        FixedLogits(table), prompts, [ex], probability=1.0, generator=torch.Generator()
    )
    special = set(tok.all_special_ids)
    targets = [
        p for p, t in enumerate(gold.ids) if t not in special and not gold.start <= p < gold.end
    ]

    def prob(at: int, token: int) -> float:
        row = [math.exp(float(x)) for x in table[0, at]]
        return row[token] / sum(row)

    likelihood = sum(-LOG(prob(p, gold.ids[p])) for p in targets) / len(targets)
    moved = [p if p < gold.start else p + shift for p in targets]
    unlikelihood = sum(
        -LOG(1 - prob(q, gold.ids[p])) for p, q in zip(targets, moved, strict=True)
    ) / len(targets)
    assert loss.item() == pytest.approx(likelihood + unlikelihood, rel=1e-5)
