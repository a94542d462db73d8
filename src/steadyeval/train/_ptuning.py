"""P-tuning: continuous prompts from a prompt encoder, trained with the model.

P-tuning (Liu et al., 2021, "GPT Understands, Too") puts trainable prompt vectors into the
pattern. They are not free parameters: a prompt encoder (a two-layer bidirectional LSTM over
``n`` learned input vectors, then a two-layer MLP with a ReLU) produces them, which the paper
found to train more stably. As in FewNLU's comparison, the whole model is fine-tuned together
with the encoder, with PET's loss over the options' scores at the slot.

Here the prompt positions are real tokens, ``[P0]``, ``[P1]``, ..., added to the tokenizer
(as special tokens, so no normaliser or pre-tokeniser touches them) and placed in the pattern
by :func:`ptuning_pattern`. While training, the model's input embedding is wrapped so that
those ids read the encoder's current outputs. The encoder's outputs do not depend on the
input, so at save time they are constants: they are written into the embedding matrix as
the new tokens' rows and the wrapper is removed. The saved folder is an ordinary
``save_pretrained`` model whose tokenizer knows ``[Pi]``, served unchanged by
``hf-masked:`` or ``hf-causal:``. The rows are also kept equal to the encoder's outputs
during training (for models whose output layer shares the input embedding, the prompt
tokens' output logits then match the saved model's), so training's scores are the served
checkpoint's scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigError
from .._extras import HF_MODEL_MODULES, require
from ..models import SLOT
from ._base import load_lm, require_kind
from ._causal import CausalPrompts
from ._checkpoint import TrainOutcome
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MaskedPrompts, PromptExample
from ._noise import Noise, as_noise
from ._pet import (
    SemiTerms,
    check_semi_args,
    dev_accuracy,
    effective_max_length,
    pet_loss,
    save_checkpoint,
)

__all__ = [
    "attach_prompt_encoder",
    "fold_prompt_encoder",
    "prompt_token",
    "ptuning_pattern",
    "train_ptuning",
]


def prompt_token(i: int) -> str:
    """The text of the ``i``-th prompt token: ``[P0]``, ``[P1]``, ..."""
    return f"[P{i}]"


def ptuning_pattern(pattern: str, n_prompt_tokens: int) -> str:
    """``pattern`` (one ``[Y]`` slot) with ``n_prompt_tokens`` prompt tokens placed in it.

    The first ``ceil(n / 2)`` go at the start of the pattern, the other ``floor(n / 2)``
    right before the slot (after the text that precedes it, keeping the whitespace that
    separated that text from the slot), so the prompts frame the input as the original's
    templates do, and a causal LM, which reads the text before the slot only, sees them all::

        ptuning_pattern("{{ a }} ? [Y] , {{ b }}", 4)
        == "[P0] [P1] {{ a }} ? [P2] [P3] [Y] , {{ b }}"

    Use the same string for training examples and for the evaluation condition.
    """
    if n_prompt_tokens < 1:
        raise ValueError(f"n_prompt_tokens must be >= 1, got {n_prompt_tokens}")
    if pattern.count(SLOT) != 1:
        raise ValueError(f"pattern must contain the slot {SLOT} exactly once: {pattern!r:.120}")
    tokens = [prompt_token(i) for i in range(n_prompt_tokens)]
    n_front = (n_prompt_tokens + 1) // 2
    front, near = " ".join(tokens[:n_front]), " ".join(tokens[n_front:])
    before, _, after = pattern.partition(SLOT)
    body = before.rstrip()
    gap = before[len(body) :]
    return " ".join(p for p in (front, body, near) if p) + gap + SLOT + after


def _prompt_encoder(n: int, dim: int) -> Any:
    import torch

    class PromptEncoder(torch.nn.Module):
        """P-tuning's prompt encoder: learned inputs -> 2-layer BiLSTM -> 2-layer MLP."""

        def __init__(self) -> None:
            super().__init__()
            half = max(1, dim // 2)
            self.inputs = torch.nn.Embedding(n, dim)
            self.lstm = torch.nn.LSTM(dim, half, num_layers=2, bidirectional=True, batch_first=True)
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(2 * half, dim), torch.nn.ReLU(), torch.nn.Linear(dim, dim)
            )

        def forward(self) -> Any:
            out, _ = self.lstm(self.inputs.weight.unsqueeze(0))
            return self.mlp(out[0])

    return PromptEncoder()


def _prompt_embedding(base: Any, encoder: Any, first_id: int) -> Any:
    import torch

    class PromptEmbedding(torch.nn.Module):
        """The input embedding with the prompt tokens' rows read from the encoder."""

        def __init__(self) -> None:
            super().__init__()
            self.base, self.encoder, self.first_id = base, encoder, first_id

        @property
        def weight(self) -> Any:
            return self.base.weight

        @property
        def num_embeddings(self) -> int:
            return int(self.base.num_embeddings)

        def prompts(self) -> Any:
            """The encoder's outputs; the embedding rows are set to them (no gradient)."""
            out = self.encoder()
            rows = slice(self.first_id, self.first_id + out.shape[0])
            with torch.no_grad():
                if not torch.equal(self.base.weight[rows], out):
                    self.base.weight[rows] = out.detach().to(self.base.weight.dtype)
            return out

        def forward(self, input_ids: Any) -> Any:
            prompts = self.prompts()
            embedded = self.base(input_ids)
            offset = input_ids - self.first_id
            is_prompt = (offset >= 0) & (offset < prompts.shape[0])
            picked = prompts[offset.clamp(0, prompts.shape[0] - 1)].to(embedded.dtype)
            return torch.where(is_prompt.unsqueeze(-1), picked, embedded)

    return PromptEmbedding()


def _add_prompt_tokens(tokenizer: Any, model: Any, n: int, seed: int) -> int:
    """Add ``[P0]..[Pn-1]`` to the tokenizer and rows for them to the model; the first id."""
    import torch

    names = [prompt_token(i) for i in range(n)]
    taken = [t for t in names if t in tokenizer.get_vocab()]
    if taken:
        raise ConfigError(f"the base tokenizer already has the prompt token {taken[0]}")
    first = len(tokenizer)
    tokenizer.add_tokens(names, special_tokens=True)
    if [tokenizer.convert_tokens_to_ids(t) for t in names] != list(range(first, first + n)):
        raise ConfigError("the prompt tokens did not get consecutive ids at the vocabulary's end")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    return first


def attach_prompt_encoder(model: Any, tokenizer: Any, n: int, seed: int) -> Any:
    """Add the prompt tokens to ``tokenizer`` and ``model`` and wrap the model's input
    embedding so that they read a new prompt encoder (initialised from ``seed``); returns
    the wrapper (undo with :func:`fold_prompt_encoder`)."""
    import torch

    first = _add_prompt_tokens(tokenizer, model, n, seed)
    plain = model.get_input_embeddings()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = _prompt_encoder(n, plain.embedding_dim)
    wrapped = _prompt_embedding(plain, encoder, first)
    model.set_input_embeddings(wrapped)
    return wrapped


def fold_prompt_encoder(model: Any, wrapped: Any) -> None:
    """Write the encoder's (constant) outputs into the prompt tokens' embedding rows and
    give ``model`` back its plain input embedding: an ordinary model again."""
    import torch

    wrapped.eval()
    with torch.no_grad():
        wrapped.prompts()
    model.set_input_embeddings(wrapped.base)


def _check_examples(examples: Sequence[PromptExample], n: int, where: str) -> None:
    names = [prompt_token(i) for i in range(n)]
    for i, ex in enumerate(examples):
        missing = [t for t in names if t not in ex.prompt]
        if missing:
            raise ValueError(
                f"{where} example {i}: the prompt lacks the prompt token {missing[0]}; build "
                f"prompts from ptuning_pattern(pattern, {n}): {ex.prompt[:80]!r}"
            )


def train_ptuning(
    base: str | Path,
    train: Sequence[PromptExample],
    dev: Sequence[PromptExample],
    config: TrainConfig,
    *,
    seed: int,
    out_dir: str | Path,
    n_prompt_tokens: int = 4,
    kind: Literal["masked", "causal"],
    unlabeled: Sequence[str] = (),
    mlm_weight: float = 0.0,
    mlm_probability: float = 0.15,
    noise: float | Noise = 0.0,
) -> TrainOutcome:
    """P-tuning (Liu et al., 2021) of the masked or causal LM in ``base``; saved to ``out_dir``.

    Parameters
    ----------
    base
        A local ``transformers`` folder: a masked LM for ``kind="masked"``, a causal LM for
        ``kind="causal"`` (another kind is a :class:`~steadyeval.ConfigError`).
    train, dev
        Examples whose prompts hold the prompt tokens: render them from
        ``ptuning_pattern(pattern, n_prompt_tokens)``. ``dev`` (may be empty) selects the
        best-dev weights every ``config.eval_every`` steps, by accuracy.
    config, seed, out_dir
        As :func:`~steadyeval.train.train_pet`; ``seed`` also initialises the encoder.
    n_prompt_tokens
        Prompt tokens ``[P0]..[Pn-1]`` (4 by default).
    kind
        ``masked``: options scored at the slot as :class:`MaskedPrompts` (the ``hf-masked``
        backend's score). ``causal``: each option's log-likelihood after the text before the
        slot (:class:`~steadyeval.train._causal.CausalPrompts`, the ``hf-causal`` backend's
        score of :func:`~steadyeval.train._causal.causal_option_request`).
    unlabeled, mlm_weight, mlm_probability, noise
        As :func:`~steadyeval.train.train_pet` (the same implementation): the auxiliary
        masked-LM loss on unlabelled texts and Noisy Student's input noise (a
        :class:`~steadyeval.train.Noise` or a ``tokens`` rate); the prompt tokens are
        never token-noised nor MLM targets (FewNLU's embedding dropout covers their rows).
        Masked LMs only: with ``kind="causal"``, ``mlm_weight > 0`` or a noise rate > 0 is
        a :class:`~steadyeval.ConfigError`.

    Notes
    -----
    Loss: PET's cross-entropy over the options' scores (the soft cross-entropy of
    :func:`~steadyeval.train.pet_loss` when examples carry ``soft`` targets), plus
    ``mlm_weight`` times the auxiliary masked-LM loss. The saved folder is the fine-tuned model with the encoder's outputs folded in as
    the prompt tokens' embeddings (module docstring); serve it as
    ``hf-masked:FOLDER?max_length=N`` or ``hf-causal:FOLDER?max_length=N`` with the
    returned ``max_length``.
    """
    require("fine-tuning runs", *HF_MODEL_MODULES)
    if kind not in ("masked", "causal"):
        raise ValueError(f"kind must be 'masked' or 'causal', got {kind!r}")
    check_semi_args(unlabeled, mlm_weight, mlm_probability, noise)
    if kind == "causal" and (mlm_weight > 0 or as_noise(noise).rate > 0):
        what = "mlm_weight > 0" if mlm_weight > 0 else "noise > 0"
        raise ConfigError(f"P-tuning with {what} needs a masked LM; kind is causal")
    train_list, dev_list = list(train), list(dev)
    _check_examples(train_list, n_prompt_tokens, "train")
    _check_examples(dev_list, n_prompt_tokens, "dev")
    require_kind(base, kind, f"P-tuning ({kind})")
    tokenizer, model = load_lm(base, kind, seed)
    wrapped = attach_prompt_encoder(model, tokenizer, n_prompt_tokens, seed)
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    scorer: MaskedPrompts | CausalPrompts = (
        MaskedPrompts(tokenizer, max_length)
        if kind == "masked"
        else CausalPrompts(tokenizer, max_length)
    )
    prompt_ids = range(wrapped.first_id, wrapped.first_id + n_prompt_tokens)
    semi = SemiTerms(
        tokenizer, seed=seed, batch_size=config.batch_size, max_length=max_length,
        unlabeled=unlabeled, mlm_weight=mlm_weight, mlm_probability=mlm_probability,
        noise=noise, protected=prompt_ids,
    )  # fmt: skip

    def loss_fn(indices: list[int]) -> Any:
        batch = [train_list[i] for i in indices]
        if isinstance(scorer, MaskedPrompts):
            scores = scorer.scores(model, batch, noise=semi.noise)
        else:
            scores = scorer.scores(model, batch)
        return semi.add_mlm(model, pet_loss(scores, batch))

    evaluate = dev_accuracy(scorer, model, dev_list)
    outcome = fit(model, loss_fn, len(train_list), evaluate, config, seed=seed)
    fold_prompt_encoder(model, wrapped)
    return save_checkpoint(model, tokenizer, out_dir, outcome, max_length)
