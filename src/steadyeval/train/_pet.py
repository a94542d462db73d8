"""PET: prompt-based fine-tuning of a masked LM over pattern–verbalizer pairs."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from .._extras import HF_MODEL_MODULES, require
from ..models import import_transformers, loading_weights
from ._base import load_lm, require_kind
from ._checkpoint import TrainOutcome
from ._lm_loss import text_mlm_loss
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MASK_SLOT, MaskedPrompts, PromptExample
from ._noise import EmbeddingDropout, InputNoise, Noise, TokenNoise, as_noise

__all__ = [
    "SemiTerms",
    "check_semi_args",
    "dev_accuracy",
    "effective_max_length",
    "pet_loss",
    "quiet_transformers",
    "save_checkpoint",
    "score_masked",
    "slot_mlm_loss",
    "train_pet",
]


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load/save chatter (restoring its verbosity afterwards)."""
    import_transformers()  # its first import under the loading lock
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)  # type: ignore[no-untyped-call]


def effective_max_length(tokenizer: Any, config: Any, wanted: int) -> int:
    """``wanted``, capped by the tokenizer's limit and the model's position embeddings (the
    same caps the ``hf-masked`` backend applies)."""
    limits = [wanted]
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < 1 << 30:
        limits.append(tok_limit)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits)


def pet_loss(scores: Sequence[Any], examples: Sequence[PromptExample]) -> Any:
    """PET's loss, averaged over ``examples``: the cross-entropy of the softmax over each
    example's option scores against its gold option, or against its ``soft`` distribution
    when it has one (``-sum(p * log_softmax(scores))``)."""
    import torch

    losses = []
    for s, ex in zip(scores, examples, strict=True):
        logp = torch.log_softmax(s, dim=0)
        if ex.soft is None:
            losses.append(-logp[ex.gold])
        else:
            target = torch.tensor(ex.soft, dtype=logp.dtype, device=logp.device)
            losses.append(-(target * logp).sum())
    return torch.stack(losses).mean()


def seeded_generator(seed: int, salt: int) -> Any:
    """A CPU ``torch.Generator`` for one purpose (``salt``) of a training run's ``seed``."""
    import torch

    return torch.Generator().manual_seed(seed * 1_000_003 + salt)


class TextBatches:
    """Endless batches of texts from a seeded reshuffle of ``texts`` (one pass per epoch)."""

    def __init__(self, texts: Sequence[str], size: int, generator: Any) -> None:
        if not texts:
            raise ValueError("no unlabelled texts")
        self.texts, self.size, self.generator = list(texts), size, generator
        self._queue: list[int] = []

    def next(self) -> list[str]:
        import torch

        batch: list[str] = []
        while len(batch) < min(self.size, len(self.texts)):
            if not self._queue:
                self._queue = torch.randperm(len(self.texts), generator=self.generator).tolist()
            batch.append(self.texts[self._queue.pop(0)])
        return batch


def slot_mlm_loss(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    *,
    probability: float,
    generator: Any,
    max_length: int,
    protected: Collection[int] = (),
) -> Any:
    """The shared masked-LM loss on ``texts`` in which a ``[Y]`` slot, if any, stands for
    the mask token (a pattern applied to an unlabelled input, as PET's auxiliary task sees
    it); that mask, the special tokens and the ids in ``protected`` (P-tuning's prompt
    tokens) are never prediction targets."""
    mask = tokenizer.mask_token
    return text_mlm_loss(
        model,
        tokenizer,
        [t.replace(MASK_SLOT, mask) for t in texts],
        probability=probability,
        generator=generator,
        max_length=max_length,
        protected=protected,
    )


def save_checkpoint(
    model: Any, tokenizer: Any, out_dir: str | Path, fitted: TrainOutcome, max_length: int
) -> TrainOutcome:
    """Write ``model`` (moved to the CPU) and ``tokenizer`` as a ``save_pretrained`` folder;
    ``fitted`` (what :func:`~steadyeval.train._loop.fit` kept) with the ``max_length`` to
    serve the checkpoint with."""
    with quiet_transformers():
        model.to("cpu").save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    return TrainOutcome(
        fitted.best_step, fitted.best_dev, fitted.history, {"max_length": max_length}
    )


def check_semi_args(
    unlabeled: Sequence[str], mlm_weight: float, mlm_probability: float, noise: float | Noise
) -> None:
    """Validate :class:`SemiTerms`' arguments (before any model is loaded)."""
    if not (math.isfinite(mlm_weight) and mlm_weight >= 0):
        raise ValueError(f"mlm_weight must be a finite number >= 0, got {mlm_weight}")
    if mlm_weight > 0 and not unlabeled:
        raise ValueError("mlm_weight > 0 needs unlabelled texts (unlabeled=...)")
    if not 0 < mlm_probability <= 1:
        raise ValueError(f"mlm_probability must be in (0, 1], got {mlm_probability}")
    as_noise(noise)  # a kind and a rate in [0, 1), or a ValueError that says so


class SemiTerms:
    """The semi-supervised additions one training run of PET, ADAPET or P-tuning (masked)
    shares: Noisy Student's input noise (:attr:`noise`, for the labelled prompts' scoring)
    and PET's auxiliary masked-LM loss on unlabelled texts (:meth:`add_mlm`), each drawn
    from its own generator of ``seed`` (see :func:`train_pet` for the arguments).
    ``protected`` ids (P-tuning's prompt tokens) are never noised nor MLM targets."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        seed: int,
        batch_size: int,
        max_length: int,
        unlabeled: Sequence[str] = (),
        mlm_weight: float = 0.0,
        mlm_probability: float = 0.15,
        noise: float | Noise = 0.0,
        protected: Collection[int] = (),
    ) -> None:
        check_semi_args(unlabeled, mlm_weight, mlm_probability, noise)
        self.tokenizer, self.max_length = tokenizer, max_length
        self.mlm_weight, self.mlm_probability = mlm_weight, mlm_probability
        self.protected = frozenset(protected)
        self.noise: InputNoise | None = None
        spec = as_noise(noise)
        if spec.rate > 0 and spec.kind == "tokens":
            ids = {*tokenizer.all_special_ids, *self.protected}
            self.noise = TokenNoise(
                spec.rate, tokenizer.mask_token_id, ids, seeded_generator(seed, 1)
            )
        elif spec.rate > 0:
            self.noise = EmbeddingDropout(spec.rate, seeded_generator(seed, 1))
        self._texts = (
            TextBatches(unlabeled, batch_size, seeded_generator(seed, 2)) if mlm_weight else None
        )
        self._generator = seeded_generator(seed, 3)

    def add_mlm(self, model: Any, loss: Any) -> Any:
        """``loss`` + ``mlm_weight`` times the masked-LM loss on the next unlabelled batch
        (``loss`` itself when ``mlm_weight`` is 0)."""
        if self._texts is None:
            return loss
        aux = slot_mlm_loss(
            model, self.tokenizer, self._texts.next(), probability=self.mlm_probability,
            generator=self._generator, max_length=self.max_length, protected=self.protected,
        )  # fmt: skip
        return loss + self.mlm_weight * aux


def train_pet(
    base: str | Path,
    train: Sequence[PromptExample],
    dev: Sequence[PromptExample],
    config: TrainConfig,
    *,
    seed: int,
    out_dir: str | Path,
    unlabeled: Sequence[str] = (),
    mlm_weight: float = 0.0,
    mlm_probability: float = 0.15,
    noise: float | Noise = 0.0,
) -> TrainOutcome:
    """Fine-tune the masked LM in ``base`` on ``[Y]`` prompts and save it to ``out_dir``.

    PET (Schick & Schütze, 2021, "Exploiting Cloze Questions for Few Shot Text
    Classification and Natural Language Inference"). Loss: cross-entropy over the options'
    scores (the log-probabilities of each option's tokens at the masks, see
    :class:`MaskedPrompts`), i.e. PET's loss over verbalizer tokens at the mask position;
    against an example's ``soft`` distribution when it has one (:func:`pet_loss`). With a
    ``dev`` set, the model is evaluated (accuracy) every ``config.eval_every`` steps and the
    best-dev weights are saved.

    Parameters
    ----------
    base
        A local ``transformers`` masked-LM folder (a causal LM is refused with a
        :class:`~steadyeval.ConfigError`).
    train, dev
        Training examples and checkpoint-selection examples (``dev`` may be empty).
    config
        Optimisation settings.
    seed
        Seeds dropout, batch order, the unlabelled batches, their masking and the noise
        (global RNG state is left as it was).
    out_dir
        Folder to write (``save_pretrained`` layout: weights, config, tokenizer).
    unlabeled, mlm_weight, mlm_probability
        PET's auxiliary language modelling: each step adds ``mlm_weight`` times the
        masked-LM loss (BERT's corruption of a share ``mlm_probability`` of the tokens, the
        one implementation in :mod:`steadyeval.train._lm_loss`) on the next
        ``config.batch_size`` texts of a seeded reshuffle of ``unlabeled``. A ``[Y]`` in a
        text stands for the mask token (the pattern applied to an unlabelled input) and is
        never a target. The paper minimises ``(1 - a) * L_CE + a * L_MLM`` with ``a = 1e-4``
        because the MLM loss is much larger than the task loss; ``L_PET + mlm_weight * L_MLM``
        is the same objective for ``mlm_weight = a / (1 - a)`` up to a factor ``1 - a`` on
        the learning rate, so **1e-4 is the recommended value** for a pretrained model.
        0 (the default) turns it off.
    noise
        Noisy Student's input noise for a student (Xie et al., 2020), while training only:
        a :class:`~steadyeval.train.Noise` -- ``Noise("embedding-dropout", 0.05)`` is
        FewNLU's dropout of embedding dimensions, ``Noise("tokens", p)`` masks or drops
        each non-special token outside the ``[Y]`` slot with probability ``p`` -- or a
        bare number, a ``tokens`` rate (see :mod:`steadyeval.train._noise`). Dropout is
        on as always in training. Dev scoring sees clean prompts. 0 (the default): no
        noise.

    Returns
    -------
    TrainOutcome
        The kept step, its dev accuracy and the evaluation history.
    """
    require("fine-tuning runs", *HF_MODEL_MODULES)
    check_semi_args(unlabeled, mlm_weight, mlm_probability, noise)
    require_kind(base, "masked", "PET")
    tokenizer, model = load_lm(base, "masked", seed)
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    prompts = MaskedPrompts(tokenizer, max_length)
    train_list = list(train)
    semi = SemiTerms(
        tokenizer, seed=seed, batch_size=config.batch_size, max_length=max_length,
        unlabeled=unlabeled, mlm_weight=mlm_weight, mlm_probability=mlm_probability,
        noise=noise,
    )  # fmt: skip

    def loss_fn(indices: list[int]) -> Any:
        batch = [train_list[i] for i in indices]
        return semi.add_mlm(model, pet_loss(prompts.scores(model, batch, noise=semi.noise), batch))

    outcome = fit(
        model, loss_fn, len(train_list), dev_accuracy(prompts, model, dev), config, seed=seed
    )
    return save_checkpoint(model, tokenizer, out_dir, outcome, max_length)


class OptionScorer(Protocol):
    """Scores the options of ``[Y]`` prompts (:class:`MaskedPrompts`, ``CausalPrompts``)."""

    def scores(self, model: Any, examples: Sequence[PromptExample]) -> list[Any]: ...


def dev_accuracy(
    prompts: OptionScorer, model: Any, dev: Sequence[PromptExample]
) -> Callable[[], float] | None:
    """The accuracy of ``model``'s option scores on ``dev`` (None without dev examples)."""
    dev_list = list(dev)
    if not dev_list:
        return None

    def evaluate() -> float:
        scores = prompts.scores(model, dev_list)
        hits = [int(s.argmax()) == ex.gold for s, ex in zip(scores, dev_list, strict=True)]
        return sum(hits) / len(hits)

    return evaluate


def score_masked(
    model_dir: str | Path,
    examples: Sequence[PromptExample],
    *,
    max_length: int = 512,
    device: str = "auto",
) -> list[list[float]]:
    """Option scores of ``examples`` under the masked LM in ``model_dir`` (no gradients).

    The same encoding and scores as training uses; the pipeline scores checkpoints through
    the ``hf-masked`` backend instead, and this function is what tests compare it with.
    """
    import torch

    import_transformers()  # its first import under the loading lock
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        with loading_weights():
            model: Any = AutoModelForMaskedLM.from_pretrained(model_dir, dtype=torch.float32)
    model.to(resolve_device(device)).eval()
    prompts = MaskedPrompts(tokenizer, effective_max_length(tokenizer, model.config, max_length))
    with torch.no_grad():
        return [[float(x) for x in s] for s in prompts.scores(model, list(examples))]
