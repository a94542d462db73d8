"""Loading the base model a training method starts from, and refusing the wrong kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigError
from ..models import import_transformers, loading_weights

__all__ = ["LMKind", "base_kind", "load_lm", "require_kind"]

LMKind = Literal["masked", "causal", "other"]


def base_kind(base: str | Path) -> LMKind:
    """``masked`` when ``base``'s architecture has a masked-LM head in ``transformers``,
    else ``causal`` when it has a causal-LM head, else ``other`` (e.g. T5)."""
    import_transformers()  # its first import under the loading lock
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    config = AutoConfig.from_pretrained(base)
    if getattr(config, "is_encoder_decoder", False):
        return "other"
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    return "other"


def require_kind(base: str | Path, wanted: Literal["masked", "causal"], method: str) -> None:
    """Raise a one-line :class:`ConfigError` unless ``base`` is a ``wanted`` LM."""
    kind = base_kind(base)
    if kind == wanted:
        return
    what = {"masked": "a masked LM", "causal": "a causal LM", "other": "not a masked or causal LM"}
    raise ConfigError(f"{method} needs {what[wanted]}; {base} is {what[kind]}")


def load_lm(base: str | Path, kind: Literal["masked", "causal"], seed: int) -> tuple[Any, Any]:
    """``(tokenizer, model)`` from ``base`` (float32, on CPU); any newly initialised weights
    are drawn from ``seed`` without touching the global RNG state."""
    import torch

    import_transformers()  # its first import under the loading lock
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    from ._pet import quiet_transformers

    auto = AutoModelForMaskedLM if kind == "masked" else AutoModelForCausalLM
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(base)
        with loading_weights(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = auto.from_pretrained(base, dtype=torch.float32)
    return tokenizer, model
