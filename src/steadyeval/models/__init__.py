"""Model backends: the protocol, specs and a lazy registry (one module per backend)."""

from ._backend import (
    Backend,
    BackendFactory,
    BaseBackend,
    Capabilities,
    check_kinds,
    load_backend,
    register_backend,
    registered_backends,
    spec_identity,
)
from ._slots import SLOT, SlotReader, split_slot, with_slots
from ._spec import ModelSpec, parse_model_spec
from ._tiny import TINY_ARCHS, build_tiny_model

__all__ = [
    "SLOT",
    "TINY_ARCHS",
    "Backend",
    "BackendFactory",
    "BaseBackend",
    "Capabilities",
    "ModelSpec",
    "SlotReader",
    "build_tiny_model",
    "check_kinds",
    "load_backend",
    "parse_model_spec",
    "register_backend",
    "registered_backends",
    "spec_identity",
    "split_slot",
    "with_slots",
]
