"""Continued pre-training: a masked LM (encoders) or a causal LM (decoders) trained further on
plain sentences, saved as an ordinary ``save_pretrained`` checkpoint.

The losses are the package's one implementation (:mod:`steadyeval.train._lm_loss`): BERT's
masked-LM corruption and loss (:func:`text_mlm_loss`) for a masked LM, next-token
cross-entropy (:func:`causal_lm_loss`) for a causal LM. Steps, batch size, learning rate and
the batch order come from a :class:`TrainConfig` and a seed (:func:`fit`), so the same
sentences, settings and seed give the same weights. :func:`pretrained_model` wraps a run as a
:class:`TrainedModel`: content-addressed by its recipe (base model fingerprint, sentences'
hash, settings, seed), trained on first use and served as ``hf-masked:CHECKPOINT`` or
``hf-causal:CHECKPOINT``, so a rerun finds the checkpoint (or the cached answers) and trains
nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigError
from .._extras import HF_MODEL_MODULES, require
from ..models import import_transformers, loading_weights
from ._checkpoint import CheckpointStore, TrainOutcome
from ._lm_loss import causal_lm_loss, encode_texts, text_mlm_loss
from ._loop import TrainConfig, fit, resolve_device
from ._pet import effective_max_length, quiet_transformers
from ._trained import TrainedModel

if TYPE_CHECKING:
    from ..models import Backend

__all__ = ["OBJECTIVES", "Objective", "pretrain", "pretrained_model", "texts_digest"]

Objective = Literal["masked", "causal"]
#: The objectives and the backend that serves each one's checkpoint.
OBJECTIVES: dict[str, str] = {"masked": "hf-masked", "causal": "hf-causal"}
_AUTO = {"masked": "AutoModelForMaskedLM", "causal": "AutoModelForCausalLM"}


def texts_digest(texts: Sequence[str]) -> str:
    """SHA-256 of the sentences in order (each length-prefixed, so no two lists collide)."""
    h = hashlib.sha256()
    for t in texts:
        raw = t.encode("utf-8")
        h.update(len(raw).to_bytes(8, "little") + raw)
    return h.hexdigest()


def _check(texts: Sequence[str], objective: str, mlm_probability: float) -> list[str]:
    if objective not in OBJECTIVES:
        raise ConfigError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if not 0.0 < mlm_probability <= 1.0:
        raise ConfigError(f"mlm_probability must be in (0, 1]; got {mlm_probability}")
    out = list(texts)
    if not out:
        raise ConfigError("no sentences to pre-train on")
    blank = [i for i, t in enumerate(out) if not isinstance(t, str) or not t.strip()]
    if blank:
        raise ConfigError(f"sentence {blank[0]} is empty or not text; every sentence needs text")
    return out


def _load(base: str | Path, objective: str, seed: int) -> tuple[Any, Any]:
    import torch

    import_transformers()  # its first import under the loading lock
    import transformers

    auto = getattr(transformers, _AUTO[objective])
    with quiet_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(base)
        with loading_weights(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            try:
                model = auto.from_pretrained(base, dtype=torch.float32)
            except ValueError as exc:
                raise ConfigError(
                    f"{base}: not a {objective} language model ({_AUTO[objective]} cannot load "
                    f"it: {str(exc).splitlines()[0]})"
                ) from None
    return tokenizer, model


def pretrain(
    base: str | Path,
    texts: Sequence[str],
    config: TrainConfig,
    *,
    objective: Objective,
    seed: int,
    out_dir: str | Path,
    mlm_probability: float = 0.15,
) -> TrainOutcome:
    """Train the model in ``base`` further on ``texts`` and save it to ``out_dir``.

    Parameters
    ----------
    base
        A local ``transformers`` model folder (a masked LM for ``"masked"``, a causal LM for
        ``"causal"``).
    texts
        The training sentences (one example each; longer ones are cut at
        ``config.max_length`` tokens, capped by the model's own limit).
    config
        Steps, batch size, learning rate and the rest (:class:`TrainConfig`; no dev set, so
        the last step's weights are kept).
    objective
        ``"masked"``: BERT's masked-LM loss (:func:`text_mlm_loss`, corruption drawn from a
        generator seeded with ``seed``); ``"causal"``: next-token loss (:func:`causal_lm_loss`).
    seed
        Seeds the batch order, dropout and masking (the global RNG state is left as it was).
    out_dir
        Folder to write (``save_pretrained`` layout: weights, config, the base's tokenizer).
    mlm_probability
        Share of tokens chosen for corruption (masked objective only).

    Returns
    -------
    TrainOutcome
        ``best_step`` is the last step; ``extra`` holds the mean training loss of the first and
        last tenth of the steps and the ``max_length`` used.
    """
    texts = _check(texts, objective, mlm_probability)
    require("continued pre-training", *HF_MODEL_MODULES)
    import torch

    tokenizer, model = _load(base, objective, seed)
    with quiet_transformers():
        tokenizer.save_pretrained(out_dir)  # as given: the padding set below is for training
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    model.to(resolve_device(config.device))
    max_length = effective_max_length(tokenizer, model.config, config.max_length)
    generator = torch.Generator().manual_seed(seed)
    losses: list[float] = []

    def loss_fn(indices: list[int]) -> Any:
        batch = [texts[i] for i in indices]
        if objective == "masked":
            loss = text_mlm_loss(
                model,
                tokenizer,
                batch,
                probability=mlm_probability,
                generator=generator,
                max_length=max_length,
            )
        else:
            enc = encode_texts(tokenizer, batch, max_length)
            device = next(model.parameters()).device
            loss = causal_lm_loss(
                model, enc["input_ids"].to(device), enc["attention_mask"].to(device)
            )
        losses.append(float(loss.detach()))
        return loss

    outcome = fit(model, loss_fn, len(texts), None, config, seed=seed)
    with quiet_transformers():
        model.to("cpu").save_pretrained(out_dir)
    tenth = max(1, len(losses) // 10)
    extra = {
        "objective": objective,
        "train_max_length": max_length,
        "loss_first": sum(losses[:tenth]) / tenth,
        "loss_last": sum(losses[-tenth:]) / tenth,
        "sentences": len(texts),
    }
    return TrainOutcome(outcome.best_step, None, (), extra)


def pretrained_model(
    base: Backend,
    texts: Sequence[str],
    config: TrainConfig,
    *,
    objective: Objective,
    seed: int,
    store: CheckpointStore,
    base_dir: Callable[[], str | Path],
    mlm_probability: float = 0.15,
    name: str = "pretrain",
    keep: bool = True,
    run_options: dict[str, str] | None = None,
) -> TrainedModel:
    """``base`` (a :class:`~steadyeval.models.Backend`) pre-trained further on ``texts``,
    as a :class:`TrainedModel`: trained on first use into ``store`` (or found there) and
    served by ``hf-masked`` or ``hf-causal``.

    ``base_dir`` is a callable returning the base model's local folder (called only when
    training starts). The recipe (the checkpoint's key and the model's fingerprint) holds
    the base model's fingerprint, the sentences' digest, every weight-changing setting, the
    objective, the masking probability and the seed.
    """
    from ..models import HF_RUN_OPTIONS

    texts = _check(texts, objective, mlm_probability)
    recipe = {
        "version": 1,
        "method": "pretrain",
        "objective": objective,
        "texts": texts_digest(texts),
        "n_texts": len(texts),
        "config": config.fingerprint(),
        "mlm_probability": mlm_probability if objective == "masked" else None,
        "seed": seed,
        "base": base.fingerprint(),
    }

    def train(folder: Path) -> TrainOutcome:
        return pretrain(
            base_dir(),
            texts,
            config,
            objective=objective,
            seed=seed,
            out_dir=folder,
            mlm_probability=mlm_probability,
        )

    spec_options = dict(base.spec.options)
    return TrainedModel(
        recipe=recipe,
        train=train,
        store=store,
        backend=OBJECTIVES[objective],
        options={k: v for k, v in spec_options.items() if k not in HF_RUN_OPTIONS},
        run_options={
            **{k: v for k, v in spec_options.items() if k in HF_RUN_OPTIONS},
            **(run_options or {}),
        },
        kinds=base.supported_kinds,
        name=name,
        capabilities=base.capabilities,
        keep=keep,
    )
