"""``[Y]`` prompts for causal LMs: each option scored as the ``hf`` backend scores it.

A causal LM reads a slot prompt left to right (as :class:`steadyeval.models.SlotReader` does):
the context is the text before the slot without its trailing whitespace, the continuation is
that whitespace followed by the option, and the text after the slot is dropped. The option's
score is the sum of its tokens' log-probabilities after the context, with the text encoded
by the backend's own rules (:class:`steadyeval.models._causal_text.CausalText`: the pair is
encoded whole, the context's tokens are cut off; over-long inputs lose tokens from the left).
So a checkpoint served as ``hf-causal:FOLDER?max_length=N`` gives, for
:func:`causal_option_request`, exactly the scores training saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import CausalText, split_slot
from ..requests import ScoreRequest
from ._masked import PromptExample

__all__ = ["CausalPrompts", "causal_option_request"]


def causal_option_request(prompt: str, option: str) -> ScoreRequest:
    """The score request whose answer is ``option``'s score for ``prompt`` on a causal LM:
    context = the text before ``[Y]`` (trailing whitespace removed), continuation = that
    whitespace + the option (stripped)."""
    context, gap, _ = split_slot(prompt)
    return ScoreRequest(context=context, continuation=gap + option.strip())


class CausalPrompts:
    """Encodes ``[Y]`` prompts for one tokenizer and scores options with a causal LM."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._text = CausalText(tokenizer, "causal prompt scorer")
        self._encoded: dict[tuple[str, str], tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def encode(self, prompt: str, option: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(fed, targets)``: the tokens the model reads (context and all but the last
        option token, cut to ``max_length`` from the left) and the option's tokens, predicted
        from the last ``len(targets)`` positions (as the ``hf`` backend prepares a score)."""
        key = (prompt, option)
        if key not in self._encoded:
            tokens, n_cont = self._text.encode_pair(causal_option_request(prompt, option))
            fed = tokens[:-1][-self.max_length :]
            n = min(n_cont, len(fed))
            targets = tokens[len(tokens) - n :] if n else []
            self._encoded[key] = (tuple(fed), tuple(targets))
        return self._encoded[key]

    def scores(
        self, model: Any, examples: Sequence[PromptExample], *, batch_size: int = 32
    ) -> list[Any]:
        """One 1-D tensor of option scores per example (differentiable when grads are on)."""
        import torch

        device = next(model.parameters()).device
        pairs = [self.encode(ex.prompt, o) for ex in examples for o in ex.options]
        flat: list[Any] = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            width = max(len(fed) for fed, _ in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            att = torch.zeros((len(chunk), width), dtype=torch.long)
            for b, (fed, _) in enumerate(chunk):
                ids[b, : len(fed)] = torch.tensor(fed, dtype=torch.long)
                att[b, : len(fed)] = 1
            logits = model(input_ids=ids.to(device), attention_mask=att.to(device)).logits
            for b, (fed, targets) in enumerate(chunk):
                if not targets:
                    flat.append(logits.sum() * 0.0)
                    continue
                rows = logits[b, len(fed) - len(targets) : len(fed)].float()
                logp = torch.log_softmax(rows, dim=-1)
                target = torch.tensor(targets, dtype=torch.long, device=device)
                flat.append(logp.gather(1, target[:, None]).sum())
        out, at = [], 0
        for ex in examples:
            out.append(torch.stack(flat[at : at + len(ex.options)]))
            at += len(ex.options)
        return out
