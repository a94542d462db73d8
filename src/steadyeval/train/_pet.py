"""PET: prompt-based fine-tuning of a masked LM over pattern–verbalizer pairs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._extras import HF_MODEL_MODULES, require
from ._checkpoint import TrainOutcome
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MaskedPrompts, PromptExample

__all__ = ["effective_max_length", "quiet_transformers", "score_masked", "train_pet"]


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load/save chatter (restoring its verbosity afterwards)."""
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


def train_pet(
    base: str | Path,
    train: Sequence[PromptExample],
    dev: Sequence[PromptExample],
    config: TrainConfig,
    *,
    seed: int,
    out_dir: str | Path,
) -> TrainOutcome:
    """Fine-tune the masked LM in ``base`` on ``[Y]`` prompts and save it to ``out_dir``.

    Loss: cross-entropy over the options' scores (the log-probabilities of each option's
    tokens at the masks, see :class:`MaskedPrompts`), i.e. PET's loss over verbalizer
    tokens at the mask position. With a ``dev`` set, the model is evaluated (accuracy)
    every ``config.eval_every`` steps and the best-dev weights are saved.

    Parameters
    ----------
    base
        A local ``transformers`` masked-LM folder.
    train, dev
        Training examples and checkpoint-selection examples (``dev`` may be empty).
    config
        Optimisation settings.
    seed
        Seeds dropout and batch order (global RNG state is left as it was).
    out_dir
        Folder to write (``save_pretrained`` layout: weights, config, tokenizer).

    Returns
    -------
    TrainOutcome
        The kept step, its dev accuracy and the evaluation history.
    """
    require("fine-tuning runs", *HF_MODEL_MODULES)
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(base)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model: Any = AutoModelForMaskedLM.from_pretrained(base, dtype=torch.float32)
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    prompts = MaskedPrompts(tokenizer, max_length)
    train_list, dev_list = list(train), list(dev)

    def loss_fn(indices: list[int]) -> Any:
        scores = prompts.scores(model, [train_list[i] for i in indices])
        losses = [
            -torch.log_softmax(s, dim=0)[train_list[i].gold]
            for s, i in zip(scores, indices, strict=True)
        ]
        return torch.stack(losses).mean()

    def evaluate() -> float:
        scores = prompts.scores(model, dev_list)
        hits = [int(s.argmax()) == ex.gold for s, ex in zip(scores, dev_list, strict=True)]
        return sum(hits) / len(hits)

    outcome = fit(
        model, loss_fn, len(train_list), evaluate if dev_list else None, config, seed=seed
    )
    with quiet_transformers():
        model.to("cpu").save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    return TrainOutcome(
        outcome.best_step, outcome.best_dev, outcome.history, {"max_length": max_length}
    )


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
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model: Any = AutoModelForMaskedLM.from_pretrained(model_dir, dtype=torch.float32)
    model.to(resolve_device(device)).eval()
    prompts = MaskedPrompts(tokenizer, effective_max_length(tokenizer, model.config, max_length))
    with torch.no_grad():
        return [[float(x) for x in s] for s in prompts.scores(model, list(examples))]
