"""Fine-tuning (PET, CLS). A trained checkpoint becomes an ordinary model spec.

Training writes a ``save_pretrained`` folder into a content-addressed
:class:`CheckpointStore`; a :class:`TrainedModel` trains one on first use and serves it as an
ordinary model (for example ``hf-masked:/runs/x/checkpoints/<key>``), so its answers go
through the same pipeline and response cache as any other model's.
"""

from ._checkpoint import (
    MANIFEST,
    CheckpointInfo,
    CheckpointStore,
    TrainOutcome,
    checkpoint_key,
    stamp_weights,
)
from ._cls import ClsExample, train_cls
from ._loop import TrainConfig, fit, resolve_device
from ._masked import MASK_SLOT, MaskedPrompts, PromptExample
from ._pet import effective_max_length, quiet_transformers, score_masked, train_pet
from ._trained import TrainedModel

__all__ = [
    "MANIFEST",
    "MASK_SLOT",
    "CheckpointInfo",
    "CheckpointStore",
    "ClsExample",
    "MaskedPrompts",
    "PromptExample",
    "TrainConfig",
    "TrainOutcome",
    "TrainedModel",
    "checkpoint_key",
    "effective_max_length",
    "fit",
    "quiet_transformers",
    "resolve_device",
    "score_masked",
    "stamp_weights",
    "train_cls",
    "train_pet",
]
