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
from steadyeval.train._adapet import (
    decoupled_label_loss,
    draw_conditioned,
    label_conditioned_mlm_loss,
)
from steadyeval.train._pet import TextBatches, seeded_generator, slot_mlm_loss

from .toy import FixedLogits, accuracy, toy

LOG = math.log


def test_decoupled_label_loss_by_hand() -> None:
    """The reference's reduction (rrmenon10/ADAPET src/adapet.py:178-186): one BCE per
    (example, label), averaged over batch x labels."""
    ex = PromptExample("x [Y]", ("a", "b", "c"), 0)
    # p(a) = 0.5, p(b) = 0.2, and c has two tokens with p 0.4 and 0.1: geometric mean 0.2.
    rows = [
        [torch.tensor([LOG(0.5)]), torch.tensor([LOG(0.2)]), torch.tensor([LOG(0.4), LOG(0.1)])]
    ]
    terms = [-LOG(0.5), -LOG(1 - 0.2), -LOG(1 - 0.2)]
    assert decoupled_label_loss(rows, [ex]).item() == pytest.approx(sum(terms) / 3, rel=1e-6)
    # A second example with soft targets (0.25, 0.75): BCE against them; the mean of all five.
    soft = PromptExample("x [Y]", ("a", "b"), 1, soft=(0.25, 0.75))
    rows2 = [[torch.tensor([LOG(0.5)]), torch.tensor([LOG(0.3)])]]
    terms2 = [-(0.25 * LOG(0.5) + 0.75 * LOG(0.5)), -(0.75 * LOG(0.3) + 0.25 * LOG(0.7))]
    both = decoupled_label_loss(rows + rows2, [ex, soft]).item()
    assert both == pytest.approx(sum(terms + terms2) / 5, rel=1e-6)


def test_decoupled_label_loss_equals_the_references_bce_mean() -> None:
    """A batch of 3 binary examples: torch's BCELoss (the reference's loss) over the
    [bs * num_lbl] probabilities, mean-reduced, gives the same value."""
    probs = torch.tensor([[0.7, 0.2], [0.1, 0.6], [0.45, 0.5]])
    gold = [0, 1, 1]
    rows = [[torch.log(p[0:1]), torch.log(p[1:2])] for p in probs]
    examples = [PromptExample("x [Y]", ("no", "yes"), g) for g in gold]
    onehot = torch.nn.functional.one_hot(torch.tensor(gold), 2).float()
    reference = torch.nn.BCELoss()(probs.reshape(-1), onehot.reshape(-1))
    assert decoupled_label_loss(rows, examples).item() == pytest.approx(reference.item(), rel=1e-6)


def test_label_conditioned_draws_follow_the_reference(toy_bert: Path) -> None:
    """Seeded draws: the label is uniform over the options (gold included) with target 1
    exactly when it is gold; the number of masked tokens is max(int(u alpha L), 2) - 1 for
    u uniform, so between 1 and alpha L and about alpha L / 2 on average, positions
    distinct and anywhere in the filled prompt."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_bert)
    prompts = MaskedPrompts(tok, 64)
    long_prompt = " ".join(["the movie was good ."] * 8) + " it was [Y] ."
    ex = PromptExample(long_prompt, ("no", "yes", "maybe"), 1)
    gen = torch.Generator().manual_seed(0)
    draws = [draw_conditioned(prompts, ex, alpha=0.5, generator=gen) for _ in range(3000)]
    labels = [d.label for d in draws]
    for o in range(3):
        assert labels.count(o) / len(draws) == pytest.approx(1 / 3, abs=0.03)
    assert all(d.target == (1.0 if d.label == 1 else 0.0) for d in draws)
    counts = [len(d.masked) for d in draws]
    assert min(counts) == 1 and all(len(d.masked) <= int(0.5 * len(d.ids)) for d in draws)

    def expected(m: float) -> float:
        """E[max(int(U m), 2) - 1] for U uniform in [0, 1): int(U m) = j with probability
        1/m for j < floor(m) and (m - floor(m))/m for j = floor(m)."""
        whole = math.floor(m)
        probs = [1 / m] * whole + [(m - whole) / m]
        return sum(p * (max(j, 2) - 1) for j, p in enumerate(probs))

    mean = sum(expected(0.5 * len(d.ids)) for d in draws) / len(draws)
    assert mean > 9  # a long prompt: the count's mean is near alpha L / 2
    # 3000 draws, the count's sd about alpha L / sqrt(12) < 7: a standard error near 0.13.
    assert sum(counts) / len(counts) == pytest.approx(mean, abs=0.4)
    assert all(len(set(d.masked)) == len(d.masked) for d in draws)
    n = len(draws[0].ids)
    seen = {p for d in draws if len(d.ids) == n for p in d.masked}
    assert seen == set(range(n))  # special tokens and the label slot included
    again = torch.Generator().manual_seed(0)
    assert draw_conditioned(prompts, ex, alpha=0.5, generator=again) == draws[0]


def test_label_conditioned_mlm_loss_by_hand(toy_bert: Path) -> None:
    """Fixed logits: the loss is the BCE of each masked position's original token against
    "the drawn label is gold", averaged over the batch's masked positions
    (rrmenon10/ADAPET src/adapet.py:218-228)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_bert)
    prompts = MaskedPrompts(tok, 64)
    examples = [
        PromptExample("the movie was good . it was [Y] .", ("no", "yes"), 1),
        PromptExample("the movie was bad . it was [Y] .", ("no", "yes"), 0),
        PromptExample("the movie was sad . it was [Y] .", ("no", "yes"), 0),
    ]
    width = max(len(prompts.fill(e.prompt, o).ids) for e in examples for o in e.options)
    table = torch.randn(1, width, len(tok), generator=torch.Generator().manual_seed(0))
    # The draws the loss makes, replayed from the same seed.
    replay = torch.Generator().manual_seed(1)
    draws = [draw_conditioned(prompts, e, alpha=1.0, generator=replay) for e in examples]
    assert {d.target for d in draws} == {0.0, 1.0}  # this seed draws gold and wrong labels
    loss = label_conditioned_mlm_loss(
        FixedLogits(table), prompts, examples, probability=1.0,
        generator=torch.Generator().manual_seed(1),
    )  # fmt: skip

    def prob(at: int, token: int) -> float:
        row = [math.exp(float(x)) for x in table[0, at]]
        return row[token] / sum(row)

    terms = [
        -LOG(prob(p, d.ids[p])) if d.target == 1 else -LOG(1 - prob(p, d.ids[p]))
        for d in draws
        for p in d.masked
    ]
    assert len(terms) == sum(len(d.masked) for d in draws) > len(draws)
    assert loss.item() == pytest.approx(sum(terms) / len(terms), rel=1e-5)


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
