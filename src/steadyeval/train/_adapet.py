"""ADAPET: PET's objective made denser, without unlabelled data (unless combined).

ADAPET (Tam et al., 2021, "Improving and Simplifying Pattern Exploiting Training") replaces
PET's loss with the sum of two terms; both follow the authors' code (rrmenon10/ADAPET at
commit e82a40e, ``src/adapet.py`` and ``src/data/tokenize.py``; lines cited below).

* **Decoupled label objective** (:func:`decoupled_label_loss`). Instead of a softmax over the
  label words only, each label word's probability at the mask is read from the softmax over
  the whole vocabulary and trained with a binary cross-entropy: towards 1 for the gold
  label's word, towards 0 for every other label's word. The terms are averaged over batch x
  labels, as the reference's ``torch.mean(BCELoss(reduction="none")(...))`` over the
  ``[bs * num_lbl]`` probabilities (``src/adapet.py:178-186``): on a binary task
  ``L_D = (-log p(y*) - log(1 - p(y'))) / 2`` per example. An example with a ``soft`` target
  distribution uses it as the BCE targets (``-q_y log p(y) - (1 - q_y) log(1 - p(y))``),
  which is the same for a one-hot ``q``. A multi-token label's ``p(y)`` is the geometric mean
  of its tokens' probabilities, each read at a mask over that token while the others keep
  their tokens (``exp`` of the mean of the pseudo-log-likelihood's terms), so a label's
  length does not decide its probability; a one-token label's ``p(y)`` is exactly the
  reference's. (The reference's multi-token path, ``src/adapet.py:146-173``, instead averages
  a BCE per label token, leaving out tokens every label shares.)
* **Label-conditioned MLM** (:func:`label_conditioned_mlm_loss`). Per example, one label is
  drawn uniformly from all the options, the gold one included (``np.random.randint(num_lbl)``,
  ``src/data/BoolQReader.py:139-140``), and written into the slot; the target is 1 when it is
  the gold label and 0 otherwise. Then ``max(int(u * alpha * L), 2) - 1`` positions of the
  ``L`` tokens of the filled prompt (special tokens and the label's tokens included) are
  drawn without replacement, ``u`` uniform in [0, 1), ``alpha = mask_probability`` (the
  paper's 10.5%), and replaced by the mask token (``src/data/tokenize.py:53-63``): at least
  one token, on average ``alpha / 2`` of them. The loss is the binary cross-entropy of the
  probability of each masked position's original token against the target (``-log p`` for
  the gold label, ``-log(1 - p)`` for a wrong one), averaged over every masked position of
  the batch (``src/adapet.py:218-228``): the context must be predictable from the right
  label and not from a wrong one.

The total is ``L_D + lm_weight * L_M`` (the reference adds them with weight 1,
``src/adapet.py:213-230``). Checkpoint selection and the served checkpoint use PET's option
score (the ``hf-masked`` backend's).

Combined with a semi-supervised method (issue 19's combinations), ADAPET takes PET's
additions through the same :class:`~steadyeval.train._pet.SemiTerms`: ``mlm_weight`` times
PET's auxiliary masked-LM loss on unlabelled texts is added to the total (``adapet+mlm``),
and Noisy Student's token noise corrupts the prompts the decoupled label objective scores
(the label-conditioned MLM corrupts its inputs already and sees clean prompts). Soft
targets (pseudo-labels) are the decoupled objective's BCE targets; the label-conditioned MLM
takes ``gold`` (their argmax) as the gold label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._extras import HF_MODEL_MODULES, require
from ._base import load_lm, require_kind
from ._checkpoint import TrainOutcome
from ._lm_loss import log1mexp
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

__all__ = [
    "ConditionedDraw",
    "decoupled_label_loss",
    "draw_conditioned",
    "label_conditioned_mlm_loss",
    "train_adapet",
]


def decoupled_label_loss(
    token_logprobs: Sequence[Sequence[Any]], examples: Sequence[PromptExample]
) -> Any:
    """ADAPET's decoupled label loss: the mean over every (example, label) pair of the batch
    of the label's binary cross-entropy (module docstring).

    ``token_logprobs[e][o]`` holds option ``o``'s token log-probabilities at their masks
    (:meth:`MaskedPrompts.token_logprobs`).
    """
    import torch

    terms = []
    for row, ex in zip(token_logprobs, examples, strict=True):
        logp = torch.stack([t.mean() for t in row])
        if ex.soft is None:
            target = torch.zeros_like(logp)
            target[ex.gold] = 1.0
        else:
            target = torch.tensor(ex.soft, dtype=logp.dtype, device=logp.device)
        terms.append(-(target * logp + (1 - target) * log1mexp(logp)))
    return torch.cat(terms).mean()


def _padded(rows: Sequence[Sequence[int]], fill: int) -> Any:
    import torch

    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), fill, dtype=torch.long)
    for b, r in enumerate(rows):
        out[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    return out


@dataclass(frozen=True)
class ConditionedDraw:
    """One example's draw for the label-conditioned MLM: the label written into the slot,
    whether it is the gold one (the BCE target), the filled prompt's ids and the masked
    positions (sorted)."""

    label: int
    target: float
    ids: tuple[int, ...]
    masked: tuple[int, ...]


def draw_conditioned(
    prompts: MaskedPrompts, example: PromptExample, *, alpha: float, generator: Any
) -> ConditionedDraw:
    """The reference's draw for one example (module docstring): a label uniformly from all
    the options, then ``max(int(u * alpha * L), 2) - 1`` of the ``L`` positions of the
    filled prompt, without replacement."""
    import torch

    label = int(torch.randint(len(example.options), (1,), generator=generator))
    filled = prompts.fill(example.prompt, example.options[label])
    n = len(filled.ids)
    u = float(torch.rand((), generator=generator))
    k = min(max(int(u * alpha * n), 2) - 1, n)
    order = torch.randperm(n, generator=generator)[:k]
    return ConditionedDraw(
        label=label,
        target=1.0 if label == example.gold else 0.0,
        ids=tuple(filled.ids),
        masked=tuple(sorted(int(p) for p in order)),
    )


def label_conditioned_mlm_loss(
    model: Any,
    prompts: MaskedPrompts,
    examples: Sequence[PromptExample],
    *,
    probability: float,
    generator: Any,
) -> Any:
    """ADAPET's label-conditioned MLM loss on ``examples`` (module docstring): per example a
    label drawn uniformly and masked context (:func:`draw_conditioned`, ``alpha =
    probability``); the BCE of each masked token's probability against "the label is gold",
    averaged over the batch's masked positions."""
    import torch

    tok = prompts.tokenizer
    mask_id = int(tok.mask_token_id)
    draws = [
        draw_conditioned(prompts, ex, alpha=probability, generator=generator) for ex in examples
    ]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = _padded([d.ids for d in draws], pad)
    attention = _padded([[1] * len(d.ids) for d in draws], 0)
    inputs = ids.clone()
    counted = torch.zeros_like(ids, dtype=torch.bool)
    for b, d in enumerate(draws):
        at = torch.tensor(d.masked, dtype=torch.long)
        inputs[b, at] = mask_id
        # As the reference: a position counts where masking changed the token.
        counted[b, at] = ids[b, at] != mask_id
    device = next(model.parameters()).device
    logits = model(input_ids=inputs.to(device), attention_mask=attention.to(device)).logits
    keep = counted.to(device)
    if not keep.any():
        return logits.sum() * 0.0
    logp = torch.log_softmax(logits[keep].float(), dim=-1)
    logp = logp.gather(1, ids.to(device)[keep].unsqueeze(1)).squeeze(1)
    targets = torch.tensor([d.target for d in draws], device=device)
    target = targets.unsqueeze(1).expand_as(keep)[keep]
    return -(target * logp + (1 - target) * log1mexp(logp)).mean()


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
        As :func:`~steadyeval.train.train_pet`; ``seed`` also fixes the label-conditioned MLM's
        labels and masks.
    mask_probability
        ``alpha`` of the label-conditioned MLM: each example masks
        ``max(int(u * alpha * L), 2) - 1`` of its ``L`` tokens, ``u`` uniform in [0, 1)
        (the reference's ``mask_alpha``, 10.5%).
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
