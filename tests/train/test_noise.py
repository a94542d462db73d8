"""Issue 40: Noisy Student's noise as FewNLU applies it -- its ``DropoutWords``
(``fewnlu/methods/base_model.py:16-23``) zeroes whole embedding dimensions of the word
embeddings, the same ones at every position of an input, in training mode only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from steadyeval.train import EmbeddingDropout, Noise, TrainConfig, score_masked, train_pet

from .toy import toy


def _bert(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForMaskedLM

    model: torch.nn.Module = AutoModelForMaskedLM.from_pretrained(path)
    return model


def _columns(x: torch.Tensor) -> torch.Tensor:
    """Per row and embedding dimension: is it zero at every position (True) or at none
    (False)? Fails if a dimension is zero at some positions only."""
    zero = x == 0
    assert torch.equal(zero.all(dim=1), zero.any(dim=1)), "zeros are not whole dimensions"
    return zero.all(dim=1)


def test_fewnlus_dropout_words_drops_embedding_dimensions() -> None:
    """The reading of FewNLU's module that steadyeval follows: Dropout2d over
    ``[batch, dim, 1, positions]`` drops whole dimensions at every position."""
    torch.manual_seed(0)
    x = torch.ones(4, 7, 16)
    dropped = torch.nn.Dropout2d(0.5).train()(x.unsqueeze(2).permute(0, 3, 2, 1))
    y = dropped.permute(0, 3, 2, 1).squeeze(2)
    cols = _columns(y)
    assert cols.any() and not cols.all()
    assert set(y.unique().tolist()) == {0.0, 2.0}  # kept ones scaled by 1 / (1 - 0.5)


def test_embedding_dropout_matches_that_in_training_only(toy_bert: Path) -> None:
    model = _bert(toy_bert).train()
    ids = torch.randint(5, 30, (64, 9), generator=torch.Generator().manual_seed(0))
    emb = model.get_input_embeddings()
    with torch.no_grad():
        clean = emb(ids)
        noise = EmbeddingDropout(0.3, torch.Generator().manual_seed(1))
        with noise.active(model):
            noised = emb(ids)
        again = EmbeddingDropout(0.3, torch.Generator().manual_seed(1))
        with again.active(model):
            same = emb(ids)
        after = emb(ids)  # the hook is gone
        model.eval()
        with noise.active(model):
            in_eval = emb(ids)
    assert torch.equal(noised, same) and torch.equal(after, clean) and torch.equal(in_eval, clean)
    dropped = _columns(noised)
    share = dropped.float().mean().item()
    assert 0.25 < share < 0.35  # 64 x dim draws at rate 0.3
    kept = ~dropped.unsqueeze(1).expand_as(noised)
    assert torch.allclose(noised[kept], clean[kept] / 0.7)
    assert noise.apply([]) == []  # the tokens are left as they are


def test_train_pet_takes_the_noise_as_a_setting(
    toy_bert: Path, tmp_path: Path, one_thread: None
) -> None:
    train, probe = toy(8, 0), toy(6, 1)
    config = TrainConfig(learning_rate=1e-3, steps=3, batch_size=4)

    def scores(name: str, noise: float | Noise) -> list[list[float]]:
        out = tmp_path / name
        train_pet(toy_bert, train, [], config, seed=0, out_dir=out, noise=noise)
        return score_masked(out, probe)

    clean = scores("clean", 0.0)
    assert scores("zero", Noise("embedding-dropout", 0.0)) == clean
    dropout = scores("dropout", Noise("embedding-dropout", 0.5))
    assert dropout != clean
    assert scores("dropout-again", Noise("embedding-dropout", 0.5)) == dropout
    assert scores("tokens", Noise("tokens", 0.5)) not in (clean, dropout)
    with pytest.raises(ValueError, match="noise kind must be one of embedding-dropout, tokens"):
        Noise("words", 0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"noise must be in \[0, 1\)"):
        Noise("embedding-dropout", 1.0)
