"""Fine-tuning (PET, PET+MLM, ADAPET, P-tuning, CLS) and the language-model losses. A trained
checkpoint becomes an ordinary model spec.

Training writes a ``save_pretrained`` folder into a content-addressed
:class:`CheckpointStore`; a :class:`TrainedModel` trains one on first use and serves it as an
ordinary model (for example ``hf-masked:/runs/x/checkpoints/<key>``), so its answers go
through the same pipeline and response cache as any other model's.
"""

from ._adapet import train_adapet
from ._causal import CausalPrompts, causal_option_request
from ._checkpoint import (
    MANIFEST,
    CheckpointInfo,
    CheckpointStore,
    TrainOutcome,
    checkpoint_key,
    stamp_weights,
)
from ._cls import ClsExample, train_cls
from ._lm_loss import causal_lm_loss, mask_tokens, masked_lm_loss, text_mlm_loss
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MASK_SLOT, MaskedPrompts, PromptExample
from ._noise import EmbeddingDropout, Noise, NoiseKind, TokenNoise
from ._pet import effective_max_length, pet_loss, quiet_transformers, score_masked, train_pet
from ._pretrain import OBJECTIVES, Objective, pretrain, pretrained_model, texts_digest
from ._ptuning import ptuning_pattern, train_ptuning
from ._trained import TrainedModel

__all__ = [
    "MANIFEST",
    "MASK_SLOT",
    "OBJECTIVES",
    "CausalPrompts",
    "CheckpointInfo",
    "CheckpointStore",
    "ClsExample",
    "EmbeddingDropout",
    "MaskedPrompts",
    "Noise",
    "NoiseKind",
    "Objective",
    "PromptExample",
    "TokenNoise",
    "TrainConfig",
    "TrainOutcome",
    "TrainedModel",
    "causal_lm_loss",
    "causal_option_request",
    "checkpoint_key",
    "effective_max_length",
    "fit",
    "mask_tokens",
    "masked_lm_loss",
    "pet_loss",
    "pretrain",
    "pretrained_model",
    "ptuning_pattern",
    "quiet_transformers",
    "resolve_device",
    "score_masked",
    "stamp_weights",
    "text_mlm_loss",
    "texts_digest",
    "train_adapet",
    "train_cls",
    "train_pet",
    "train_ptuning",
]
