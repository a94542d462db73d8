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

__all__ = [
    "Backend",
    "BackendFactory",
    "ModelSpec",
    "check_kinds",
    "load_backend",
    "parse_model_spec",
    "register_backend",
    "registered_backends",
]
