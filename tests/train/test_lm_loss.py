"""The shared language-model losses: BERT's corruption and the two losses, checked against
values computed by hand on fixed tiny inputs."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from steadyeval.train._lm_loss import (  # noqa: E402
    IGNORE_INDEX,
    causal_lm_loss,
    mask_tokens,
    masked_lm_loss,
    text_mlm_loss,
)


class _FixedLogits(torch.nn.Module):  # type: ignore[misc]
    """A 'model' whose logits are a fixed table indexed by position (ignores the input)."""

    def __init__(self, logits: Any) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(logits)

    def forward(self, input_ids: Any, attention_mask: Any) -> Any:
        return SimpleNamespace(logits=self.table.expand(input_ids.shape[0], -1, -1))


def test_masked_lm_loss_equals_hand_computed_value() -> None:
    # One row, 3 positions, vocabulary of 2; position 1 is labelled with token 0.
    logits = torch.tensor([[[0.0, 0.0], [1.0, 3.0], [5.0, 0.0]]])
    model = _FixedLogits(logits)
    labels = torch.tensor([[IGNORE_INDEX, 0, IGNORE_INDEX]])
    loss = masked_lm_loss(model, torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 3), labels)
    # -log softmax([1, 3])[0] = log(1 + e^2)
    assert loss.item() == pytest.approx(math.log(1 + math.e**2), rel=1e-6)


def test_causal_lm_loss_skips_padding() -> None:
    logits = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [7.0, -7.0]]])
    model = _FixedLogits(logits)
    ids = torch.tensor([[1, 0, 1]])
    mask = torch.tensor([[1, 1, 0]])  # the last token is padding: one target (id 0 at 1)
    loss = causal_lm_loss(model, ids, mask)
    # position 0 predicts token 0: -log softmax([2, 0])[0] = log(1 + e^-2)
    assert loss.item() == pytest.approx(math.log(1 + math.exp(-2)), rel=1e-6)


def test_mask_tokens_is_seeded_and_respects_eligibility() -> None:
    ids = torch.arange(10, 410).reshape(4, 100)
    eligible = torch.ones_like(ids, dtype=torch.bool)
    eligible[:, 0] = False
    eligible[3] = False  # a row with nothing eligible stays untouched
    one = mask_tokens(
        ids,
        eligible,
        mask_token_id=1,
        vocab_size=500,
        probability=0.15,
        generator=torch.Generator().manual_seed(3),
    )
    two = mask_tokens(
        ids,
        eligible,
        mask_token_id=1,
        vocab_size=500,
        probability=0.15,
        generator=torch.Generator().manual_seed(3),
    )
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])
    inputs, labels = one
    chosen = labels != IGNORE_INDEX
    assert not chosen[:, 0].any() and not chosen[3].any()
    assert torch.equal(inputs[3], ids[3])
    assert torch.equal(labels[chosen], ids[chosen])
    assert 20 <= int(chosen.sum()) <= 70  # ~0.15 of 297 eligible
    masked = inputs == 1
    assert masked.sum() >= 0.6 * chosen.sum()
    assert torch.equal(inputs[~chosen], ids[~chosen])


def test_every_row_with_eligible_tokens_gets_a_target() -> None:
    ids = torch.arange(2, 8).reshape(3, 2)
    eligible = torch.ones_like(ids, dtype=torch.bool)
    _, labels = mask_tokens(
        ids,
        eligible,
        mask_token_id=0,
        vocab_size=10,
        probability=1e-9,
        generator=torch.Generator().manual_seed(0),
    )
    assert ((labels != IGNORE_INDEX).sum(dim=1) == 1).all()


def test_text_mlm_loss_on_a_tiny_masked_lm(tiny_bert: Path) -> None:
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModelForMaskedLM.from_pretrained(tiny_bert)
    texts = ["the capital of france is paris .", "water is wet ."]
    a = text_mlm_loss(
        model,
        tok,
        texts,
        probability=0.15,
        generator=torch.Generator().manual_seed(0),
        max_length=32,
    )
    b = text_mlm_loss(
        model,
        tok,
        texts,
        probability=0.15,
        generator=torch.Generator().manual_seed(0),
        max_length=32,
    )
    assert a.item() == pytest.approx(b.item()) and math.isfinite(a.item()) and a.item() > 0
    a.backward()
    assert model.get_input_embeddings().weight.grad is not None
