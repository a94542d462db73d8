"""ADAPET: PET's objective made denser, without unlabelled data (unless combined).

ADAPET (Tam et al., 2021, "Improving and Simplifying Pattern Exploiting Training") replaces
PET's loss with the sum of two terms:

* **Decoupled label objective** (:func:`decoupled_label_loss`). Instead of a softmax over the
  label words only, each label word's probability at the mask is read from the softmax over
  the whole vocabulary and trained with a binary cross-entropy: towards 1 for the gold
  label's word, towards 0 for every other label's word,
  ``L_D = -log p(y*) - sum_{y != y*} log(1 - p(y))``. An example with a ``soft`` target
  distribution uses it as the BCE targets (``-sum_y q_y log p(y) + (1 - q_y) log(1 - p(y))``),
  which is the same for a one-hot ``q``. A multi-token label's ``p(y)`` is the geometric mean
  of its tokens' probabilities, each read at a mask over that token while the others keep
  their tokens (``exp`` of the mean of the pseudo-log-likelihood's terms), so a label's
  length does not decide its probability; a one-token label's ``p(y)`` is exactly the
  paper's.
* **Label-conditioned MLM** (:func:`label_conditioned_mlm_loss`). The gold label's words are
  written into the slot, a share of the other (non-special) tokens is corrupted as BERT does
  (``mask_probability``, 10.5% as in the paper; the shared corruption of
  :mod:`steadyeval.train._lm_loss`, so 80% of the chosen tokens become the mask token, 10%
  a random token, 10% stay), and the model is trained to restore them (cross-entropy). As
  in the paper, the same corrupted context with a wrong label (one of the other options,
  drawn at random per example) in the slot gets the unlikelihood term
  ``-log(1 - p(x_m))`` on the same targets: the context must be predictable from the right
  label and not from a wrong one. Examples with a single option skip the wrong-label term.

The total is ``L_D + lm_weight * L_M`` (the paper adds them with weight 1). Checkpoint
selection and the served checkpoint use PET's option score (the ``hf-masked`` backend's).

Combined with a semi-supervised method (issue 19's combinations), ADAPET takes PET's
additions through the same :class:`~steadyeval.train._pet.SemiTerms`: ``mlm_weight`` times
PET's auxiliary masked-LM loss on unlabelled texts is added to the total (``adapet+mlm``),
and Noisy Student's token noise corrupts the prompts the decoupled label objective scores
(the label-conditioned MLM corrupts its inputs already and sees clean prompts). Soft
targets (pseudo-labels) are the decoupled objective's BCE targets; the label-conditioned MLM
conditions on their argmax (``gold``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._extras import HF_MODEL_MODULES, require
from ._base import load_lm, require_kind
from ._checkpoint import TrainOutcome
from ._lm_loss import IGNORE_INDEX, corrupt_tokens, log1mexp, masked_lm_loss
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MaskedPrompts, PromptExample
from ._noise import Noise
from ._pet import (
    SemiTerms,
    check_semi_args,
    dev_accuracy,
    effective_max_length,
    save_checkpoint,
    seeded_generator,
)

__all__ = ["decoupled_label_loss", "label_conditioned_mlm_loss", "train_adapet"]


def decoupled_label_loss(
    token_logprobs: Sequence[Sequence[Any]], examples: Sequence[PromptExample]
) -> Any:
    """ADAPET's decoupled label loss, averaged over examples (module docstring).

    ``token_logprobs[e][o]`` holds option ``o``'s token log-probabilities at their masks
    (:meth:`MaskedPrompts.token_logprobs`).
    """
    import torch

    losses = []
    for row, ex in zip(token_logprobs, examples, strict=True):
        logp = torch.stack([t.mean() for t in row])
        if ex.soft is None:
            target = torch.zeros_like(logp)
            target[ex.gold] = 1.0
        else:
            target = torch.tensor(ex.soft, dtype=logp.dtype, device=logp.device)
        losses.append(-(target * logp + (1 - target) * log1mexp(logp)).sum())
    return torch.stack(losses).mean()


def _padded(rows: Sequence[Sequence[int]], fill: int) -> Any:
    import torch

    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), fill, dtype=torch.long)
    for b, r in enumerate(rows):
        out[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    return out


def label_conditioned_mlm_loss(
    model: Any,
    prompts: MaskedPrompts,
    examples: Sequence[PromptExample],
    *,
    probability: float,
    generator: Any,
) -> Any:
    """ADAPET's label-conditioned MLM loss on ``examples`` (module docstring): the MLM loss
    with the gold label in the slot plus the unlikelihood loss with a wrong one."""
    import torch

    tok = prompts.tokenizer
    special = set(tok.all_special_ids)
    gold = [prompts.fill(ex.prompt, ex.options[ex.gold]) for ex in examples]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = _padded([f.ids for f in gold], pad)
    attention = _padded([[1] * len(f.ids) for f in gold], 0)
    eligible = torch.zeros_like(ids, dtype=torch.bool)
    for b, f in enumerate(gold):
        for p, t in enumerate(f.ids):
            eligible[b, p] = t not in special and not f.start <= p < f.end
    inputs, labels = corrupt_tokens(
        model, tok, ids, eligible, probability=probability, generator=generator
    )
    device = next(model.parameters()).device
    loss = masked_lm_loss(model, inputs.to(device), attention.to(device), labels.to(device))
    wrong_in, wrong_lab = [], []
    for b, (ex, f) in enumerate(zip(examples, gold, strict=True)):
        others = [o for o in range(len(ex.options)) if o != ex.gold]
        if not others:
            continue
        pick = others[int(torch.randint(len(others), (1,), generator=generator))]
        w = prompts.fill(ex.prompt, ex.options[pick])
        label_ids = list(w.ids[w.start : w.end])
        row, lab = inputs[b, : len(f.ids)].tolist(), labels[b, : len(f.ids)].tolist()
        spliced = row[: f.start] + label_ids + row[f.end :]
        if len(spliced) > prompts.max_length:
            continue  # a longer wrong label no longer fits: no unlikelihood term here
        wrong_in.append(spliced)
        wrong_lab.append(lab[: f.start] + [IGNORE_INDEX] * len(label_ids) + lab[f.end :])
    if wrong_in:
        w_ids, w_lab = _padded(wrong_in, pad), _padded(wrong_lab, IGNORE_INDEX)
        w_att = _padded([[1] * len(r) for r in wrong_in], 0)
        loss = loss + masked_lm_loss(
            model, w_ids.to(device), w_att.to(device), w_lab.to(device), unlikelihood=True
        )
    return loss


def train_adapet(
    base: str | Path,
    train: Sequence[PromptExample],
    dev: Sequence[PromptExample],
    config: TrainConfig,
    *,
    seed: int,
    out_dir: str | Path,
    mask_probability: float = 0.105,
    lm_weight: float = 1.0,
    unlabeled: Sequence[str] = (),
    mlm_weight: float = 0.0,
    mlm_probability: float = 0.15,
    noise: float | Noise = 0.0,
) -> TrainOutcome:
    """Fine-tune the masked LM in ``base`` with ADAPET (Tam et al., 2021); save to ``out_dir``.

    Loss per batch: :func:`decoupled_label_loss` + ``lm_weight`` *
    :func:`label_conditioned_mlm_loss` (see the module docstring), plus PET+MLM's auxiliary
    term when ``mlm_weight > 0``. With a ``dev`` set, the best-dev weights (accuracy of PET's option scores, which the
    ``hf-masked`` backend reproduces) are kept, as in :func:`~steadyeval.train.train_pet`.

    Parameters
    ----------
    base
        A local ``transformers`` masked-LM folder (a causal LM is refused with a
        :class:`~steadyeval.ConfigError`).
    train, dev, config, seed, out_dir
        As :func:`~steadyeval.train.train_pet`; ``seed`` also fixes the corruption and the
        choice of wrong labels.
    mask_probability
        Share of the context tokens corrupted for the label-conditioned MLM (the paper's
        10.5%).
    lm_weight
        Weight of the label-conditioned MLM term (1, the paper's sum of the two losses).
    unlabeled, mlm_weight, mlm_probability, noise
        As :func:`~steadyeval.train.train_pet` (the same implementation): the auxiliary
        masked-LM loss on unlabelled texts and Noisy Student's token noise, both off by
        default; the noise applies to the decoupled label objective's prompts.
    """
    require("fine-tuning runs", *HF_MODEL_MODULES)
    if not 0 < mask_probability <= 1:
        raise ValueError(f"mask_probability must be in (0, 1], got {mask_probability}")
    if not lm_weight >= 0:
        raise ValueError(f"lm_weight must be >= 0, got {lm_weight}")
    check_semi_args(unlabeled, mlm_weight, mlm_probability, noise)
    require_kind(base, "masked", "ADAPET")
    tokenizer, model = load_lm(base, "masked", seed)
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    prompts = MaskedPrompts(tokenizer, max_length)
    train_list = list(train)
    generator = seeded_generator(seed, 4)
    semi = SemiTerms(
        tokenizer, seed=seed, batch_size=config.batch_size, max_length=max_length,
        unlabeled=unlabeled, mlm_weight=mlm_weight, mlm_probability=mlm_probability,
        noise=noise,
    )  # fmt: skip

    def loss_fn(indices: list[int]) -> Any:
        batch = [train_list[i] for i in indices]
        logprobs = prompts.token_logprobs(model, batch, noise=semi.noise)
        loss = decoupled_label_loss(logprobs, batch)
        if lm_weight > 0:
            mlm = label_conditioned_mlm_loss(
                model, prompts, batch, probability=mask_probability, generator=generator
            )
            loss = loss + lm_weight * mlm
        return semi.add_mlm(model, loss)

    evaluate = dev_accuracy(prompts, model, dev)
    outcome = fit(model, loss_fn, len(train_list), evaluate, config, seed=seed)
    return save_checkpoint(model, tokenizer, out_dir, outcome, max_length)
