"""The backend protocol and the registry that resolves specs to backends lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from .._errors import ModelSpecError, UnsupportedRequestError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._spec import ModelSpec, parse_model_spec

__all__ = [
    "Backend",
    "BackendFactory",
    "check_kinds",
    "load_backend",
    "register_backend",
    "registered_backends",
]


@runtime_checkable
class Backend(Protocol):
    """What a model backend provides. Constructing one must be cheap: read configs, not
    weights. Weights are loaded on the first request, so kinds and fingerprints can be
    checked before any model is loaded."""

    spec: ModelSpec

    @property
    def supported_kinds(self) -> frozenset[RequestKind]: ...

    def fingerprint(self) -> str:
        """A string that changes whenever the model's outputs could change."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        """Token counts for a dry run, or None if the backend cannot count cheaply."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]: ...

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]: ...

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]: ...


BackendFactory = Callable[[ModelSpec], Backend]

# Built-in backends are named by import path so nothing heavy is imported until used.
_BUILTIN: dict[str, str] = {
    "hf": "steadyeval.models._hf:load_hf",
    "hf-causal": "steadyeval.models._hf:HFCausalBackend",
    "hf-seq2seq": "steadyeval.models._hf_seq2seq:HFSeq2SeqBackend",
    "hf-masked": "steadyeval.models._hf_masked:HFMaskedBackend",
    "openai": "steadyeval.models._openai:OpenAIBackend",
    "vllm": "steadyeval.models._vllm:VLLMBackend",
}
_REGISTRY: dict[str, BackendFactory | str] = dict(_BUILTIN)


def register_backend(name: str, factory: BackendFactory | str, *, replace: bool = False) -> None:
    """Register a backend factory (or ``"module:attr"`` import path) under ``name``."""
    key = name.lower()
    if key in _REGISTRY and not replace and _REGISTRY[key] != factory:
        raise ValueError(f"backend {name!r} is already registered; pass replace=True")
    _REGISTRY[key] = factory


def registered_backends() -> list[str]:
    return sorted(_REGISTRY)


def _factory(name: str) -> BackendFactory:
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ModelSpecError(
            f"unknown backend {name!r}; known backends: {', '.join(registered_backends())}"
        )
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        try:
            factory: BackendFactory = getattr(importlib.import_module(module), attr)
        except (ModuleNotFoundError, AttributeError) as exc:
            raise ModelSpecError(
                f"backend {name!r} is not available in this installation ({exc})"
            ) from None
        return factory
    return entry


def load_backend(spec: ModelSpec | str) -> Backend:
    """Resolve a spec to a backend. Cheap: model weights are loaded on first use."""
    if isinstance(spec, str):
        spec = parse_model_spec(spec)
    return _factory(spec.backend)(spec)


def check_kinds(backend: Backend, kinds: Iterable[RequestKind]) -> None:
    """Raise :class:`UnsupportedRequestError` naming the backend and the first missing kind."""
    missing = sorted(set(kinds) - set(backend.supported_kinds))
    if missing:
        raise UnsupportedRequestError(
            f"backend {backend.spec} does not support {', '.join(missing)} requests "
            f"(it supports: {', '.join(sorted(backend.supported_kinds))}); "
            "choose a scoring that uses a supported kind or another model"
        )
