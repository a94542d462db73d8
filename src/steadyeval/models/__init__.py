"""Model backends: the protocol, specs and a lazy registry (one module per backend)."""

from ._backend import (
    Backend,
    BackendFactory,
    check_kinds,
    load_backend,
    register_backend,
    registered_backends,
)
from ._spec import ModelSpec, parse_model_spec
from ._tiny import TINY_ARCHS, build_tiny_model

__all__ = [
    "TINY_ARCHS",
    "Backend",
    "BackendFactory",
    "ModelSpec",
    "build_tiny_model",
    "check_kinds",
    "load_backend",
    "parse_model_spec",
    "register_backend",
    "registered_backends",
]
