"""P-tuning (Liu et al., 2021): prompt placement, folding the prompt encoder into ordinary
checkpoints that the backends score exactly as training did, that it learns, and PET's
semi-supervised terms and soft targets on its loss."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from steadyeval import ConfigError
from steadyeval.models import load_backend
from steadyeval.requests import ScoreRequest
from steadyeval.train import (
    CausalPrompts,
    MaskedPrompts,
    TokenNoise,
    TrainConfig,
    causal_option_request,
    ptuning_pattern,
    score_masked,
    train_ptuning,
)
from steadyeval.train._pet import TextBatches, seeded_generator, slot_mlm_loss
from steadyeval.train._ptuning import attach_prompt_encoder, fold_prompt_encoder, prompt_token

from .test_adapet import UNLABELLED, first_loss, soften
from .toy import PATTERN, accuracy, toy

P4 = ptuning_pattern(PATTERN, 4)


@pytest.mark.parametrize(
    ("pattern", "n", "expected"),
    [
        ("{{ a }} ? [Y] , {{ b }}", 4, "[P0] [P1] {{ a }} ? [P2] [P3] [Y] , {{ b }}"),
        ("it was [Y] .", 3, "[P0] [P1] it was [P2] [Y] ."),
        ("it was [Y] .", 1, "[P0] it was [Y] ."),
        ("x?[Y]", 2, "[P0] x? [P1][Y]"),
        ("[Y] , right?", 2, "[P0] [P1][Y] , right?"),
    ],
)
def test_ptuning_pattern_places_the_prompt_tokens(pattern: str, n: int, expected: str) -> None:
    assert ptuning_pattern(pattern, n) == expected


def test_ptuning_pattern_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        ptuning_pattern("no slot", 2)
    with pytest.raises(ValueError, match="n_prompt_tokens"):
        ptuning_pattern("[Y]", 0)


def _scores(kind: str, model: Any, tokenizer: Any, examples: Any) -> list[list[float]]:
    scorer = MaskedPrompts(tokenizer, 64) if kind == "masked" else CausalPrompts(tokenizer, 64)
    with torch.no_grad():
        return [s.tolist() for s in scorer.scores(model, examples)]


@pytest.mark.parametrize("kind", ["masked", "causal"])
def test_folded_checkpoint_scores_equal_the_wrapped_model(
    kind: str, toy_bert: Path, toy_gpt2: Path, tmp_path: Path
) -> None:
    """The encoder's outputs folded into the embedding rows give the served checkpoint the
    wrapped model's scores, also where the output layer shares the input embedding."""
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    base = toy_bert if kind == "masked" else toy_gpt2
    auto = AutoModelForMaskedLM if kind == "masked" else AutoModelForCausalLM
    tokenizer, model = AutoTokenizer.from_pretrained(base), auto.from_pretrained(base)
    wrapped = attach_prompt_encoder(model, tokenizer, 4, seed=0)
    model.eval()
    examples = toy(4, 0, P4)
    trained_view = _scores(kind, model, tokenizer, examples)
    fold_prompt_encoder(model, wrapped)
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    if kind == "masked":
        backend = load_backend(f"hf-masked:{tmp_path / 'm'}?max_length=64")
        requests = [ScoreRequest(e.prompt, o) for e in examples for o in e.options]
    else:
        backend = load_backend(f"hf-causal:{tmp_path / 'm'}?max_length=64")
        requests = [causal_option_request(e.prompt, o) for e in examples for o in e.options]
    served = [r.logprob for r in backend.score(requests)]
    assert served == pytest.approx([v for row in trained_view for v in row], abs=1e-5)
    # The prompt tokens matter: without them the scores differ.
    plain = _scores(
        kind, auto.from_pretrained(base), AutoTokenizer.from_pretrained(base), toy(4, 0)
    )
    assert plain != trained_view


@pytest.mark.parametrize("kind", ["masked", "causal"])
def test_ptuning_learns_and_the_backend_scores_as_trained(
    kind: str, toy_bert: Path, toy_gpt2: Path, tmp_path: Path, one_thread: None
) -> None:
    base = toy_bert if kind == "masked" else toy_gpt2
    train, dev, test = toy(32, 0, P4), toy(16, 1, P4), toy(64, 2, P4)
    config = TrainConfig(learning_rate=3e-3, steps=40, batch_size=8, eval_every=10)
    out = tmp_path / kind
    outcome = train_ptuning(base, train, dev, config, seed=0, out_dir=out, kind=kind)  # type: ignore[arg-type]
    n = outcome.extra["max_length"]
    request: Callable[[str, str], ScoreRequest]
    if kind == "masked":
        backend = load_backend(f"hf-masked:{out}?max_length={n}")
        request = ScoreRequest
    else:
        backend = load_backend(f"hf-causal:{out}?max_length={n}")
        request = causal_option_request

    def served(examples: Any) -> list[list[float]]:
        got = backend.score([request(e.prompt, o) for e in examples for o in e.options])
        return [[got[i].logprob, got[i + 1].logprob] for i in range(0, len(got), 2)]

    scores = served(test)
    assert accuracy(scores, test) >= 0.8
    # The dev accuracy training selected on is the one the served checkpoint has.
    assert outcome.best_dev == accuracy(served(dev), dev)
    flat = [v for row in scores for v in row]
    if kind == "masked":
        ours = score_masked(out, test, max_length=n)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model: Any = AutoModelForCausalLM.from_pretrained(out)
        model.eval()
        ours = _scores(kind, model, AutoTokenizer.from_pretrained(out), test)
    assert flat == pytest.approx([v for row in ours for v in row], abs=1e-5)


def test_ptuning_checks_kind_and_prompts(toy_bert: Path, toy_gpt2: Path, tmp_path: Path) -> None:
    config = TrainConfig(steps=1)
    with pytest.raises(ConfigError, match=f"^P-tuning \\(masked\\) needs a masked LM; {toy_gpt2}"):
        train_ptuning(toy_gpt2, toy(2, 0, P4), [], config, seed=0, out_dir=tmp_path, kind="masked")
    with pytest.raises(ConfigError, match="P-tuning \\(causal\\) needs a causal LM"):
        train_ptuning(toy_bert, toy(2, 0, P4), [], config, seed=0, out_dir=tmp_path, kind="causal")
    with pytest.raises(ValueError, match=r"lacks the prompt token \[P0\]"):
        train_ptuning(toy_bert, toy(2, 0), [], config, seed=0, out_dir=tmp_path, kind="masked")


def test_ptuning_soft_targets_mlm_weight_and_noise_change_the_loss_as_specified(
    toy_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_thread: None
) -> None:
    from transformers import AutoTokenizer

    import steadyeval.train._ptuning as ptuning_module

    tok = AutoTokenizer.from_pretrained(toy_bert)
    tok.add_tokens([prompt_token(i) for i in range(4)], special_tokens=True)
    train = soften(toy(4, 0, P4))
    config = TrainConfig(steps=1, batch_size=2, max_length=64)

    def soft_ce(model: Any, n: int, noise: TokenNoise | None = None) -> float:
        """PET's loss by hand: the soft cross-entropy for the soft example, else -log p(gold)."""
        rows = MaskedPrompts(tok, n).scores(model, train, noise=noise)
        losses = []
        for s, ex in zip(rows, train, strict=True):
            logp = torch.log_softmax(s, dim=0)
            q = torch.tensor(ex.soft) if ex.soft else torch.eye(len(s))[ex.gold]
            losses.append(-(q * logp).sum())
        return torch.stack(losses).mean().item()

    def prompt_ids(model: Any) -> range:
        first = model.get_input_embeddings().first_id
        return range(first, first + 4)

    def mlm_term(model: Any, n: int) -> float:
        texts = TextBatches(UNLABELLED, 2, seeded_generator(0, 2)).next()
        aux = slot_mlm_loss(
            model, tok, texts, probability=0.15, generator=seeded_generator(0, 3),
            max_length=n, protected=prompt_ids(model),
        )  # fmt: skip
        return float(aux.item())

    def run(probe: Any, **kwargs: Any) -> tuple[float, Any]:
        return first_loss(
            monkeypatch, ptuning_module, train_ptuning, probe, base=toy_bert, train=train,
            dev=[], config=config, seed=0, out_dir=tmp_path / str(len(kwargs)), kind="masked",
            **kwargs,
        )  # fmt: skip

    loss, expected = run(soft_ce)
    assert loss == pytest.approx(expected, rel=1e-6)
    loss_mlm, (base, aux) = run(
        lambda m, n: (soft_ce(m, n), mlm_term(m, n)), unlabeled=UNLABELLED, mlm_weight=0.5
    )
    assert base == pytest.approx(expected, rel=1e-6) and aux > 0
    assert loss_mlm == pytest.approx(expected + 0.5 * aux, rel=1e-6)

    def noised(model: Any, n: int) -> float:
        # The prompt tokens are protected like the special tokens.
        keep = {*tok.all_special_ids, *prompt_ids(model)}
        return soft_ce(model, n, TokenNoise(0.3, tok.mask_token_id, keep, seeded_generator(0, 1)))

    loss_noise, expected_noise = run(noised, noise=0.3)
    assert loss_noise == pytest.approx(expected_noise, rel=1e-6) and loss_noise != expected
    for extra, what in (
        (dict(unlabeled=UNLABELLED, mlm_weight=0.1), "mlm_weight"),
        (dict(noise=0.1), "noise"),
    ):
        with pytest.raises(
            ConfigError, match=f"^P-tuning with {what} > 0 needs a masked LM; kind is causal$"
        ):
            train_ptuning(
                toy_bert,
                train,
                [],
                config,
                seed=0,
                out_dir=tmp_path,
                kind="causal",
                **extra,  # type: ignore[arg-type]
            )
