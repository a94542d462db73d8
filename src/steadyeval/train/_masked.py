"""Prompts with a ``[Y]`` answer slot for masked LMs: encoding and option scores.

An option's score is computed exactly as the ``hf-masked`` backend scores a request whose
context holds the slot and whose continuation is the option, so a checkpoint selected on
these scores is evaluated on the same scale by the pipeline:

* the option (whitespace stripped) is written into the slot and the whole text tokenised;
  the option's tokens are found by their character offsets;
* a one-token option is masked and its log-probability read at the mask (PET's score);
  an n-token option gets the pseudo-log-likelihood: n inputs, each masking one of its
  tokens, the n log-probabilities summed;
* inputs longer than ``max_length`` keep their special tokens and lose body tokens from the
  left, or from the right once a left cut would reach the slot.

A softmax over the options' scores is PET's softmax over the verbalizer logits at the mask.
``tests/train`` checks that these scores equal the backend's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models import SLOT, FilledSlot, fill_slot

if TYPE_CHECKING:
    from ._noise import InputNoise

__all__ = ["MASK_SLOT", "MaskedPrompts", "PromptExample"]

#: The answer slot (the one slot convention of :mod:`steadyeval.models`).
MASK_SLOT = SLOT


@dataclass(frozen=True)
class PromptExample:
    """A rendered prompt with one ``[Y]`` slot, the answers that may fill it, and the gold one.

    Parameters
    ----------
    prompt : str
        Text containing :data:`MASK_SLOT` exactly once.
    options : tuple of str
        The verbalized answers (e.g. ``("no", "yes")``).
    gold : int
        Index of the right answer in ``options``.
    soft : tuple of float, optional
        A target distribution over ``options`` (a teacher's, for distillation or
        pseudo-labels: iPET, Noisy Student). When set, PET-style training minimises the soft
        cross-entropy ``-sum(p * log_softmax(scores))`` instead of using ``gold``; ``gold``
        must then be its argmax (accuracy is still measured against ``gold``).
    """

    prompt: str
    options: tuple[str, ...]
    gold: int
    soft: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(self.options))
        n = self.prompt.count(MASK_SLOT)
        if n != 1:
            raise ValueError(
                f"prompt must contain the answer slot {MASK_SLOT} exactly once; found {n} in "
                f"{self.prompt[:80]!r}"
            )
        if not self.options or any(not o.strip() for o in self.options):
            raise ValueError(f"prompt {self.prompt[:60]!r}: options must be non-empty text")
        if not 0 <= self.gold < len(self.options):
            raise ValueError(
                f"prompt {self.prompt[:60]!r}: gold index {self.gold} outside "
                f"0..{len(self.options) - 1}"
            )
        if self.soft is not None:
            self._check_soft()

    def _check_soft(self) -> None:
        soft = tuple(float(p) for p in self.soft or ())
        object.__setattr__(self, "soft", soft)
        where = f"prompt {self.prompt[:60]!r}"
        if len(soft) != len(self.options):
            raise ValueError(
                f"{where}: soft has {len(soft)} probabilities for {len(self.options)} options"
            )
        if any(not math.isfinite(p) or p < 0 for p in soft) or abs(sum(soft) - 1) > 1e-4:
            raise ValueError(
                f"{where}: soft must be non-negative probabilities summing to 1, got {soft}"
            )
        if soft[self.gold] < max(soft):
            raise ValueError(
                f"{where}: gold {self.gold} is not the argmax of soft {soft}; pass the "
                "teacher's most likely option as gold"
            )


#: A prompt tokenised with an option in its slot (the backend's own encoding).
Filled = FilledSlot


class MaskedPrompts:
    """Encodes ``[Y]`` prompts for one (fast) tokenizer and scores options with a masked LM."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no mask token; PET needs a masked LM")
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("PET needs a fast tokenizer (tokenizer.json) to locate the slot")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._filled: dict[tuple[str, str], Filled] = {}

    def fill(self, prompt: str, option: str) -> Filled:
        """Tokenise ``prompt`` with ``option`` in its slot and locate the option's tokens."""
        key = (prompt, option)
        if key not in self._filled:
            self._filled[key] = self._fill(prompt, option)
        return self._filled[key]

    def _fill(self, prompt: str, option: str) -> Filled:
        left, _, right = prompt.partition(MASK_SLOT)
        return fill_slot(self.tokenizer, left, option.strip(), right, self.max_length)

    def scores(
        self,
        model: Any,
        examples: Sequence[PromptExample],
        *,
        batch_size: int = 32,
        noise: InputNoise | None = None,
    ) -> list[Any]:
        """One 1-D tensor of option scores per example (differentiable when grads are on).

        ``noise`` noises the prompts' tokens or the model's input embeddings (training
        only; see :mod:`steadyeval.train._noise`).
        """
        import torch

        rows = self.token_logprobs(model, examples, batch_size=batch_size, noise=noise)
        return [torch.stack([t.sum() for t in row]) for row in rows]

    def token_logprobs(
        self,
        model: Any,
        examples: Sequence[PromptExample],
        *,
        batch_size: int = 32,
        noise: InputNoise | None = None,
    ) -> list[list[Any]]:
        """Per example and option, the 1-D tensor of the option's token log-probabilities,
        each read at a mask over that token (one token: PET's score; several: the terms of
        the pseudo-log-likelihood). Their sum is the option's score."""
        import torch

        device = next(model.parameters()).device
        mask_id = self.tokenizer.mask_token_id
        unique: dict[tuple[tuple[int, ...], int], int] = {}
        # terms[e][o] = [(unique input index, target token id), ...]
        terms: list[list[list[tuple[int, int]]]] = []
        for ex in examples:
            filled = [self.fill(ex.prompt, option) for option in ex.options]
            if noise is not None:
                filled = noise.apply(filled)
            row = []
            for f in filled:
                parts = []
                for p in range(f.start, f.end):
                    key = ((*f.ids[:p], mask_id, *f.ids[p + 1 :]), p)
                    parts.append((unique.setdefault(key, len(unique)), f.ids[p]))
                row.append(parts)
            terms.append(row)
        if noise is None:
            logp = self._logp_at(model, list(unique), batch_size, device)
        else:
            with noise.active(model):
                logp = self._logp_at(model, list(unique), batch_size, device)
        out: list[list[Any]] = []
        for row in terms:
            out.append([torch.stack([logp[u, t] for u, t in parts]) for parts in row])
        return out

    def _logp_at(
        self,
        model: Any,
        keys: list[tuple[tuple[int, ...], int]],
        batch_size: int,
        device: Any,
    ) -> Any:
        """Log-softmax over the vocabulary at position ``p`` of each input ``(ids, p)``."""
        import torch

        pad = self.tokenizer.pad_token_id or 0
        rows: list[Any] = []
        for start in range(0, len(keys), batch_size):
            chunk = keys[start : start + batch_size]
            width = max(len(ids) for ids, _ in chunk)
            ids_t = torch.full((len(chunk), width), pad, dtype=torch.long)
            att = torch.zeros((len(chunk), width), dtype=torch.long)
            for b, (ids, _) in enumerate(chunk):
                ids_t[b, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                att[b, : len(ids)] = 1
            pos = torch.tensor([p for _, p in chunk], dtype=torch.long, device=device)
            logits = model(input_ids=ids_t.to(device), attention_mask=att.to(device)).logits
            picked = logits[torch.arange(len(chunk), device=device), pos]
            rows.append(torch.log_softmax(picked.float(), dim=-1))
        return torch.cat(rows) if rows else torch.zeros((0, 0))
