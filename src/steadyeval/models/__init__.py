"""Model backends: the protocol, specs and a lazy registry (one module per backend)."""

from ._answers import AnswerSink, answer_sink, answers_to
from ._backend import (
    Backend,
    BackendFactory,
    BackendStats,
    BaseBackend,
    Capabilities,
    StatsCounter,
    check_backend,
    check_kinds,
    load_backend,
    register_backend,
    registered_backends,
    spec_identity,
)
from ._causal_text import CausalText
from ._chat import chat_messages
from ._generated_text import PromptTail, cut_at_stop, generated_text
from ._hf_classifier import classifier_logits
from ._hf_options import HF_BACKENDS, model_folder
from ._hf_options import RUN_ONLY as HF_RUN_OPTIONS
from ._prefix import shares_long_prefix
from ._slots import SLOT, FilledSlot, SlotReader, fill_slot, fit_slot, split_slot, with_slots
from ._spec import ModelSpec, lmeval_model_spec, parse_model_spec
from ._tiny import TINY_ARCHS, build_tiny_model
from ._weights import import_transformers, loading_weights

__all__ = [
    "HF_BACKENDS",
    "HF_RUN_OPTIONS",
    "SLOT",
    "TINY_ARCHS",
    "AnswerSink",
    "Backend",
    "BackendFactory",
    "BackendStats",
    "BaseBackend",
    "Capabilities",
    "CausalText",
    "FilledSlot",
    "ModelSpec",
    "PromptTail",
    "SlotReader",
    "StatsCounter",
    "answer_sink",
    "answers_to",
    "build_tiny_model",
    "chat_messages",
    "check_backend",
    "check_kinds",
    "classifier_logits",
    "cut_at_stop",
    "fill_slot",
    "fit_slot",
    "generated_text",
    "import_transformers",
    "lmeval_model_spec",
    "load_backend",
    "loading_weights",
    "model_folder",
    "parse_model_spec",
    "register_backend",
    "registered_backends",
    "shares_long_prefix",
    "spec_identity",
    "split_slot",
    "with_slots",
]
