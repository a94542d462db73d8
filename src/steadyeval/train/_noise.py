"""Input noise for Noisy Student's students (Xie et al., 2020).

Noisy Student trains the student on noised inputs (and with dropout) so that it must be
robust where the teacher was not. Two noises are offered, chosen by :class:`Noise`:

``embedding-dropout`` (the default) is FewNLU's: its ``DropoutWords`` module
(THUDM/FewNLU ``fewnlu/methods/base_model.py:16-23``, rate ``--dropout_rate`` 0.05 from
``fewnlu/arguments.py:162``) is ``torch.nn.Dropout2d`` applied to the word embeddings
permuted to ``[batch, embedding dim, 1, positions]``, so what it zeroes are whole
*embedding dimensions* -- the same dimensions at every position of one input -- and it scales
the kept ones by ``1 / (1 - rate)``; despite the class name no word is removed. FewNLU turns
it on for the students only (``fewnlu/cli.py:261-262``: generation > 0) and it acts only in
training mode. :class:`EmbeddingDropout` does the same to the output of the model's input
embedding module (for P-tuning that output includes the prompt tokens' rows, as in FewNLU,
where the prompt encoder's output is part of the embeddings dropped).

``tokens`` works on the tokens of a filled prompt (:class:`TokenNoise`): each token outside
the answer slot that is not a special token is, with probability ``probability``, replaced by
the mask token (half of the time) or dropped (the other half). The draws for one example are
made once, by distance from the slot, and applied to every option's filling, so all options
of an example see the same corrupted context.

Every draw comes from the ``torch.Generator`` given, so a seed fixes the noise. Noise is for
training only: scoring for checkpoint selection and evaluation sees clean prompts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ._masked import Filled

__all__ = ["EmbeddingDropout", "InputNoise", "Noise", "NoiseKind", "TokenNoise", "as_noise"]

NoiseKind = Literal["embedding-dropout", "tokens"]
NOISE_KINDS: tuple[NoiseKind, ...] = ("embedding-dropout", "tokens")


@dataclass(frozen=True)
class Noise:
    """A student's input noise: its kind (see the module docstring) and rate in [0, 1);
    rate 0 is no noise. FewNLU's setting is ``Noise("embedding-dropout", 0.05)``."""

    kind: NoiseKind = "embedding-dropout"
    rate: float = 0.05

    def __post_init__(self) -> None:
        if self.kind not in NOISE_KINDS:
            raise ValueError(
                f"noise kind must be one of {', '.join(NOISE_KINDS)}, got {self.kind!r}"
            )
        if not 0 <= self.rate < 1:
            raise ValueError(f"noise must be in [0, 1), got {self.rate}")


def as_noise(noise: float | Noise) -> Noise:
    """``noise`` as a :class:`Noise`; a bare number is a ``tokens`` rate (the trainers'
    ``noise=`` argument before :class:`Noise` existed)."""
    return noise if isinstance(noise, Noise) else Noise("tokens", float(noise))


class InputNoise(Protocol):
    """What a scorer asks of a noise while it scores a training batch: the fillings of one
    example's options, noised (:meth:`apply`), and a context in which the model's forward
    passes are noised (:meth:`active`). Each may do nothing."""

    def apply(self, filled: Sequence[Filled]) -> list[Filled]: ...

    def active(self, model: Any) -> contextlib.AbstractContextManager[None]: ...


class EmbeddingDropout:
    """FewNLU's ``DropoutWords`` (see the module docstring): while ``active`` and the model
    is training, each input row's embedding dimensions are zeroed with probability ``rate``
    (the same dimensions at every position) and the others scaled by ``1 / (1 - rate)``.

    Parameters
    ----------
    rate : float
        Chance that an embedding dimension is zeroed, in (0, 1).
    generator : torch.Generator
        The source of every draw (a CPU generator; masks are moved to the model's device).
    """

    def __init__(self, rate: float, generator: Any) -> None:
        if not 0.0 < rate < 1.0:
            raise ValueError(f"noise must be in (0, 1), got {rate}")
        self.rate = rate
        self.generator = generator

    def apply(self, filled: Sequence[Filled]) -> list[Filled]:
        """The fillings unchanged (this noise acts on the embeddings)."""
        return list(filled)

    def mask(self, rows: int, dim: int) -> Any:
        """A ``[rows, 1, dim]`` float mask: 0 for a dropped dimension, ``1 / (1 - rate)``
        for a kept one."""
        import torch

        keep = torch.rand((rows, dim), generator=self.generator) >= self.rate
        return (keep.float() / (1.0 - self.rate)).unsqueeze(1)

    @contextlib.contextmanager
    def active(self, model: Any) -> Iterator[None]:
        """Noise the output of ``model``'s input embedding module while in this context
        (in training mode only, like ``Dropout2d``)."""
        embedding = model.get_input_embeddings()

        def hook(module: Any, args: Any, out: Any) -> Any:
            if not module.training:
                return None
            mask = self.mask(out.shape[0], out.shape[-1])
            return out * mask.to(device=out.device, dtype=out.dtype)

        handle = embedding.register_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()


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

    @contextlib.contextmanager
    def active(self, model: Any) -> Iterator[None]:
        """Nothing to do around the forward passes (this noise acts on the tokens)."""
        yield

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
