"""ADAPET (Tam et al., 2021): its two loss terms by hand on fixed logits, that it learns, and
PET's semi-supervised terms (auxiliary MLM, token noise) added to its loss."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

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
    TrainOutcome,
    effective_max_length,
    score_masked,
    train_adapet,
)
from steadyeval.train._adapet import decoupled_label_loss, label_conditioned_mlm_loss
from steadyeval.train._pet import TextBatches, seeded_generator, slot_mlm_loss

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


# -- PET's semi-supervised terms on ADAPET's loss ----------------------------------------------
#: Unlabelled texts for the auxiliary MLM term (a ``[Y]`` stands for the mask token).
UNLABELLED = ["the movie was good . it was [Y] .", "the movie was sad .", "it was fine ."]


def first_loss(
    monkeypatch: pytest.MonkeyPatch,
    module: ModuleType,
    train_fn: Callable[..., TrainOutcome],
    probe: Callable[[Any, int], Any],
    **kwargs: Any,
) -> tuple[float, Any]:
    """Run ``train_fn`` (defined in ``module``) with its ``fit`` replaced by one evaluation of
    the training loss on the whole training set, the model as loaded (eval mode, no step):
    ``(that loss, probe(model, max_length))``, the probe run on the same model first."""
    seen: list[tuple[float, Any]] = []

    def fake_fit(model: Any, loss_fn: Any, n: int, evaluate: Any, config: Any, **_: Any) -> Any:
        n_max = effective_max_length(None, model.config, config.max_length)
        probed = probe(model, n_max)
        seen.append((loss_fn(list(range(n))).item(), probed))
        return TrainOutcome(best_step=0, best_dev=None, history=())

    monkeypatch.setattr(module, "fit", fake_fit)
    train_fn(**kwargs)
    return seen[0]


def soften(examples: list[PromptExample]) -> list[PromptExample]:
    """``examples`` with the first one's target a soft distribution (0.7 on its gold)."""
    first = examples[0]
    soft = (0.3, 0.7) if first.gold == 1 else (0.7, 0.3)
    return [dataclasses.replace(first, soft=soft), *examples[1:]]


def test_adapet_mlm_weight_and_noise_change_the_loss_as_specified(
    toy_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_thread: None
) -> None:
    from transformers import AutoTokenizer

    import steadyeval.train._adapet as adapet_module

    tok = AutoTokenizer.from_pretrained(toy_bert)
    train = soften(toy(4, 0))
    config = TrainConfig(steps=1, batch_size=2, max_length=64)

    def old_loss(model: Any, n: int, noise: TokenNoise | None = None) -> float:
        prompts = MaskedPrompts(tok, n)
        label = decoupled_label_loss(prompts.token_logprobs(model, train, noise=noise), train)
        lc_mlm = label_conditioned_mlm_loss(
            model, prompts, train, probability=0.105, generator=seeded_generator(0, 4)
        )
        return float((label + lc_mlm).item())

    def mlm_term(model: Any, n: int) -> float:
        texts = TextBatches(UNLABELLED, 2, seeded_generator(0, 2)).next()
        gen = seeded_generator(0, 3)
        aux = slot_mlm_loss(model, tok, texts, probability=0.15, generator=gen, max_length=n)
        return float(aux.item())

    def run(probe: Callable[[Any, int], Any], **kwargs: Any) -> tuple[float, Any]:
        return first_loss(
            monkeypatch, adapet_module, train_adapet, probe, base=toy_bert, train=train,
            dev=[], config=config, seed=0, out_dir=tmp_path / str(len(kwargs)), **kwargs,
        )  # fmt: skip

    # mlm_weight = 0 (the default): exactly the loss without the new arguments' terms.
    loss, expected = run(old_loss)
    assert loss == expected
    loss_mlm, (base, aux) = run(
        lambda m, n: (old_loss(m, n), mlm_term(m, n)), unlabeled=UNLABELLED, mlm_weight=0.5
    )
    assert base == expected and aux > 0
    assert loss_mlm == pytest.approx(expected + 0.5 * aux, rel=1e-6)
    # Noise corrupts the decoupled objective's prompts, drawn from the run's noise generator.
    noiser = TokenNoise(0.3, tok.mask_token_id, tok.all_special_ids, seeded_generator(0, 1))
    loss_noise, noised = run(lambda m, n: old_loss(m, n, noiser), noise=0.3)
    assert loss_noise == pytest.approx(noised, rel=1e-6) and loss_noise != expected
    with pytest.raises(ValueError, match="needs unlabelled texts"):
        train_adapet(toy_bert, train, [], config, seed=0, out_dir=tmp_path, mlm_weight=0.1)
