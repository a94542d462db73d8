"""Language-model losses on plain text: the masked-LM loss (BERT's corruption) and the
causal-LM loss.

One implementation serves every method that needs them: PET+MLM's auxiliary loss on
unlabelled text, ADAPET's label-conditioned MLM, and continued pre-training (masked LM for
encoders, causal LM for decoders).

Masking follows BERT (Devlin et al., 2019, section 3.1): each eligible token (not a special
token, not padding) is chosen with probability ``probability``; a chosen token becomes the
mask token 80% of the time, a random vocabulary token 10% of the time, and stays as it is
10% of the time; the loss is the cross-entropy of the original token at the chosen
positions only. A row with eligible tokens but none chosen gets one chosen at random, so
every row contributes (short prompts would otherwise often contribute nothing). Every draw
comes from the ``torch.Generator`` passed in, so a seed fixes the corruption.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = [
    "IGNORE_INDEX",
    "causal_lm_loss",
    "corrupt_tokens",
    "encode_texts",
    "log1mexp",
    "mask_tokens",
    "masked_lm_loss",
    "text_mlm_loss",
]

#: Label value of positions the loss skips (the transformers convention).
IGNORE_INDEX = -100


def encode_texts(tokenizer: Any, texts: Sequence[str], max_length: int) -> dict[str, Any]:
    """Tokenise ``texts`` into one padded batch (tensors), with ``special_tokens_mask``."""
    if not texts:
        raise ValueError("no texts to encode")
    return dict(
        tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=max_length,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
    )


def mask_tokens(
    input_ids: Any,
    eligible: Any,
    *,
    mask_token_id: int,
    vocab_size: int,
    probability: float,
    generator: Any,
) -> tuple[Any, Any]:
    """BERT's corruption of ``input_ids`` at ``eligible`` positions (a bool tensor).

    Returns ``(inputs, labels)``: the corrupted ids, and the original ids at the chosen
    positions with :data:`IGNORE_INDEX` elsewhere. Neither input is modified.
    """
    import torch

    if not 0.0 < probability <= 1.0:
        raise ValueError(f"masking probability must be in (0, 1], got {probability}")
    eligible = eligible.bool()
    draw = torch.rand(input_ids.shape, generator=generator)
    chosen = (draw < probability) & eligible
    # Rows with eligible tokens but nothing chosen: choose one eligible token at random.
    empty = (~chosen.any(dim=1)) & eligible.any(dim=1)
    if empty.any():
        weights = torch.rand(input_ids.shape, generator=generator) * eligible.float()
        pick = weights.argmax(dim=1)
        rows = torch.nonzero(empty).flatten()
        chosen[rows, pick[rows]] = True
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    action = torch.rand(input_ids.shape, generator=generator)
    to_mask = chosen & (action < 0.8)
    to_random = chosen & (action >= 0.8) & (action < 0.9)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator)
    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = random_ids[to_random]
    return inputs, labels


def corrupt_tokens(
    model: Any, tokenizer: Any, input_ids: Any, eligible: Any, *, probability: float, generator: Any
) -> tuple[Any, Any]:
    """:func:`mask_tokens` for ``model`` and its ``tokenizer``: the tokenizer's mask token, and
    random replacements drawn from the ids both the tokenizer and the model's embeddings
    know."""
    return mask_tokens(
        input_ids,
        eligible,
        mask_token_id=int(tokenizer.mask_token_id),
        vocab_size=min(len(tokenizer), model.get_input_embeddings().num_embeddings),
        probability=probability,
        generator=generator,
    )


def log1mexp(logp: Any) -> Any:
    """``log(1 - exp(logp))`` for ``logp < 0``, computed stably."""
    import torch

    logp = logp.clamp(max=-1e-7)
    return torch.where(
        logp > -0.6931471805599453,
        torch.log(-torch.expm1(logp)),
        torch.log1p(-torch.exp(logp)),
    )


def masked_lm_loss(
    model: Any, inputs: Any, attention_mask: Any, labels: Any, *, unlikelihood: bool = False
) -> Any:
    """Mean cross-entropy ``-log p`` of the original tokens at the labelled positions, or with
    ``unlikelihood`` the mean ``-log(1 - p)`` (ADAPET's term for a wrong label); 0 when no
    position is labelled."""
    import torch

    logits = model(input_ids=inputs, attention_mask=attention_mask).logits
    keep = labels != IGNORE_INDEX
    if not keep.any():
        return logits.sum() * 0.0
    logp = torch.log_softmax(logits[keep].float(), dim=-1)
    target = logp.gather(1, labels[keep].unsqueeze(1))
    if unlikelihood:
        return -log1mexp(target).mean()
    return -target.mean()


def causal_lm_loss(model: Any, input_ids: Any, attention_mask: Any) -> Any:
    """Mean next-token cross-entropy over the real (unpadded) tokens of each row."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    targets = input_ids[:, 1:]
    keep = attention_mask[:, 1:].bool() & attention_mask[:, :-1].bool()
    if not keep.any():
        return logits.sum() * 0.0
    logp = torch.log_softmax(logits[:, :-1][keep].float(), dim=-1)
    return -logp.gather(1, targets[keep].unsqueeze(1)).mean()


def text_mlm_loss(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    *,
    probability: float,
    generator: Any,
    max_length: int,
    protected: Collection[int] = (),
) -> Any:
    """Masked-LM loss of ``model`` on ``texts``: encode, corrupt, score (one call). Special
    tokens, mask tokens already in the text and the ids in ``protected`` (e.g. P-tuning's
    prompt tokens) are never prediction targets."""
    import torch

    if tokenizer.mask_token_id is None:
        raise ValueError("the tokenizer has no mask token: masked-LM loss needs a masked LM")
    batch = encode_texts(tokenizer, texts, max_length)
    ids = batch["input_ids"]
    eligible = (
        (batch["special_tokens_mask"] == 0)
        & (batch["attention_mask"] == 1)
        & (ids != tokenizer.mask_token_id)
    )
    if protected:
        eligible &= ~torch.isin(ids, torch.tensor(sorted(protected), dtype=ids.dtype))
    inputs, labels = corrupt_tokens(
        model, tokenizer, ids, eligible, probability=probability, generator=generator
    )
    device = next(model.parameters()).device
    return masked_lm_loss(
        model, inputs.to(device), batch["attention_mask"].to(device), labels.to(device)
    )
