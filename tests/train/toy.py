"""A 2-label toy task a tiny random model can learn: the label follows from one input word."""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import torch

from steadyeval.train import PromptExample

POS = ("good", "great", "fine", "nice")
NEG = ("bad", "awful", "poor", "sad")
PATTERN = "the movie was {w} . it was [Y] ."
#: Sentences added to the tiny models' tokenizer corpus so that the toy words are tokens.
CORPUS_EXTRA = ("the movie was " + " ".join(POS + NEG) + " . yes no maybe",)


def toy(n: int, seed: int, pattern: str = PATTERN) -> list[PromptExample]:
    """``n`` examples: gold 1 ("yes") when the word is positive, 0 ("no") otherwise."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.randint(0, 1)
        word = rng.choice(POS if y else NEG)
        out.append(PromptExample(pattern.replace("{w}", word), ("no", "yes"), y))
    return out


def accuracy(scores: Sequence[Sequence[float]], examples: Sequence[PromptExample]) -> float:
    hits = [
        max(range(len(s)), key=lambda j: (s[j], -j)) == e.gold
        for s, e in zip(scores, examples, strict=True)
    ]
    return sum(hits) / len(hits)


class FixedLogits(torch.nn.Module):
    """A 'model' whose logits are a fixed table indexed by position (it ignores its input),
    with an input embedding of ``vocab`` rows so that code asking for it finds one."""

    def __init__(self, logits: Any) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(logits)
        self.embed = torch.nn.Embedding(logits.shape[-1], 2)

    def get_input_embeddings(self) -> Any:
        return self.embed

    def forward(self, input_ids: Any, attention_mask: Any) -> Any:
        width = input_ids.shape[1]
        return SimpleNamespace(logits=self.table[:, :width].expand(input_ids.shape[0], -1, -1))
