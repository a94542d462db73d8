"""Token-level input noise for Noisy Student's students (Xie et al., 2020).

Noisy Student trains the student on noised inputs (and with dropout) so that it must be
robust where the teacher was not. For text, the noise here works on the tokens of a filled
prompt: each token outside the answer slot that is not a special token is, with probability
``probability``, replaced by the mask token (half of the time) or dropped (the other half).
The draws for one example are made once, by distance from the slot, and applied to every
option's filling, so all options of an example see the same corrupted context. Every draw
comes from the ``torch.Generator`` given, so a seed fixes the noise. Noise is for training
only: scoring for checkpoint selection and evaluation sees clean prompts.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ._masked import Filled

__all__ = ["TokenNoise"]

_KEEP, _MASK, _DROP = 0, 1, 2


class TokenNoise:
    """Masks or drops context tokens of filled prompts (see the module docstring).

    Parameters
    ----------
    probability : float
        Chance that a context token is noised, in (0, 1).
    mask_token_id : int
        The id a masked token becomes.
    protected : collection of int
        Ids never noised (the tokenizer's special tokens).
    generator : torch.Generator
        The source of every draw.
    """

    def __init__(
        self, probability: float, mask_token_id: int, protected: Collection[int], generator: Any
    ) -> None:
        if not 0.0 < probability < 1.0:
            raise ValueError(f"noise must be in (0, 1), got {probability}")
        self.probability = probability
        self.mask_token_id = mask_token_id
        self.protected = frozenset(protected)
        self.generator = generator

    def _draw(self, n: int) -> list[int]:
        import torch

        u = torch.rand(n, generator=self.generator).tolist()
        half = self.probability / 2
        return [_MASK if x < half else _DROP if x < self.probability else _KEEP for x in u]

    def apply(self, filled: Sequence[Filled]) -> list[Filled]:
        """The fillings of one example's options, with one draw of noise applied to all."""
        n_left = max(f.start for f in filled)
        n_right = max(len(f.ids) - f.end for f in filled)
        left, right = self._draw(n_left), self._draw(n_right)
        return [self._noised(f, left, right) for f in filled]

    def _noised(self, f: Filled, left: list[int], right: list[int]) -> Filled:
        ids: list[int] = []
        for i in range(f.start):  # left[0] is the token next to the slot
            ids.extend(self._token(f.ids[i], left[f.start - 1 - i]))
        start = len(ids)
        ids.extend(f.ids[f.start : f.end])
        end = len(ids)
        for i in range(f.end, len(f.ids)):
            ids.extend(self._token(f.ids[i], right[i - f.end]))
        return Filled(tuple(ids), start, end, f.truncated)

    def _token(self, token: int, action: int) -> list[int]:
        if token in self.protected or action == _KEEP:
            return [token]
        return [self.mask_token_id] if action == _MASK else []
