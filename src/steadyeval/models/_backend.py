"""The backend protocol and the registry that resolves specs to backends lazily."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable
from urllib.parse import urlencode

from .._errors import ModelSpecError, UnsupportedRequestError
from .._lazy import load_entry, load_plugins
from ..requests import (
    ClassifyRequest,
    ClassifyResponse,
    GenerateRequest,
    GenerateResponse,
    Request,
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
    "BaseBackend",
    "Capabilities",
    "check_backend",
    "check_kinds",
    "load_backend",
    "register_backend",
    "registered_backends",
    "spec_identity",
]


@dataclass(frozen=True)
class Capabilities:
    """What a backend declares about the model it serves (defaults: a plain text model).

    Attributes
    ----------
    fills_slots : bool
        It fills a cloze slot ``[Y]`` itself (masked LMs). Other backends read cloze prompts
        through :class:`~steadyeval.models.SlotReader`, which the runner puts around them.
    max_length : int or None
        Tokens of context the model sees, when known (studies fit few-shot prompts to it).
    input_format : str or None
        An input encoding the model was trained on and expects, e.g. ``"unifiedqa"``
        (question, options and passage joined by ``\\n``, lowercased). Settable in a spec
        as ``?input_format=unifiedqa``; a study's ``template: auto`` follows it.
    """

    fills_slots: bool = False
    max_length: int | None = None
    input_format: str | None = None


def spec_identity(spec: ModelSpec, name: str, run_only: Iterable[str]) -> str:
    """``BACKEND:NAME[?options]`` with ``name`` for the spec's name and without the options
    that change how a run goes but never an output (``run_only``)."""
    kept = {k: v for k, v in spec.options.items() if k not in set(run_only)}
    tail = f"?{urlencode(kept, safe='/:')}" if kept else ""
    return f"{spec.backend}:{name}{tail}"


@runtime_checkable
class Backend(Protocol):
    """What a model backend provides. Constructing one must be cheap: read configs, not
    weights. Weights are loaded on the first request, so kinds and fingerprints can be
    checked before any model is loaded."""

    spec: ModelSpec

    @property
    def supported_kinds(self) -> frozenset[RequestKind]: ...

    @property
    def capabilities(self) -> Capabilities:
        """What the backend declares about its model (:class:`Capabilities`)."""
        ...

    def identity(self) -> str:
        """The ``model`` column: which model this is, without run-only options or absolute
        paths (a hub name and revision, or a folder's name and content fingerprint)."""
        ...

    def fingerprint(self) -> str:
        """A string that changes whenever the model's outputs could change."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        """Token counts for a dry run, or None if the backend cannot count cheaply."""
        ...

    def preflight(self, requests: Sequence[Request]) -> None:
        """Check up front, before any of a run's work is sent, that ``requests`` can be
        answered (e.g. an API server's log-probabilities); raise if not."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]: ...

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]: ...

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]: ...

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResponse]: ...

    def release(self) -> None:
        """Called by the runner once a run has sent this backend its last request: a
        backend may release what it can rebuild (a trained checkpoint's weights); it must
        still answer if used again. Most backends keep everything (the default)."""
        ...


class BaseBackend:
    """Defaults for the optional members of :class:`Backend`: a backend subclasses this and
    provides ``spec``, ``supported_kinds``, ``fingerprint()`` and the request kinds it serves.

    ``run_only_options`` names the spec options that never change an output (batch size,
    device, timeouts, concurrency); :meth:`identity` leaves them out.
    """

    spec: ModelSpec
    run_only_options: ClassVar[frozenset[str]] = frozenset()

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return frozenset()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    def identity(self) -> str:
        return spec_identity(self.spec, self.spec.name, self.run_only_options)

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return None

    def preflight(self, requests: Sequence[Request]) -> None:
        return None

    def release(self) -> None:
        return None

    def _unsupported(self, kind: RequestKind) -> UnsupportedRequestError:
        return UnsupportedRequestError(f"backend {self.spec} does not support {kind} requests")

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        raise self._unsupported("score")

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        raise self._unsupported("generate")

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        raise self._unsupported("top-k")

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResponse]:
        raise self._unsupported("classify")


BackendFactory = Callable[[ModelSpec], Backend]

# Built-in backends are named by import path so nothing heavy is imported until used.
_BUILTIN: dict[str, str] = {
    "hf": "steadyeval.models._hf:load_hf",
    "hf-causal": "steadyeval.models._hf:HFCausalBackend",
    "hf-seq2seq": "steadyeval.models._hf_seq2seq:HFSeq2SeqBackend",
    "hf-masked": "steadyeval.models._hf_masked:HFMaskedBackend",
    "hf-classifier": "steadyeval.models._hf_classifier:HFClassifierBackend",
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
    load_plugins()
    return sorted(_REGISTRY)


def _factory(name: str) -> BackendFactory:
    if name not in _REGISTRY:
        load_plugins()
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ModelSpecError(
            f"unknown backend {name!r}; known backends: {', '.join(registered_backends())}"
        )
    if isinstance(entry, str):
        factory: BackendFactory = load_entry(entry, f"backend {name!r}", ModelSpecError)
        return factory
    return entry


_MEMBERS = (
    "spec", "supported_kinds", "capabilities", "identity", "fingerprint", "count_tokens",
    "preflight", "score", "generate", "top_k", "classify", "release",
)  # fmt: skip


def check_backend(obj: object, where: str = "model") -> Backend:
    """``obj`` if it provides every member of :class:`Backend`, else a ``ModelSpecError``
    naming what it lacks."""
    if isinstance(obj, Backend):
        return obj
    missing = [m for m in _MEMBERS if not hasattr(obj, m)]
    advice = (
        "define them"
        if isinstance(obj, BaseBackend)
        else "subclass steadyeval.models.BaseBackend (defaults for the optional members) and "
        "define spec, supported_kinds, fingerprint() and the request methods it serves"
    )
    raise ModelSpecError(
        f"{where} {type(obj).__name__} is not a steadyeval backend: it lacks "
        f"{', '.join(missing)}; {advice}"
    )


def load_backend(spec: ModelSpec | str) -> Backend:
    """Resolve a spec to a backend. Cheap: model weights are loaded on first use."""
    if isinstance(spec, str):
        spec = parse_model_spec(spec)
    return check_backend(_factory(spec.backend)(spec), f"backend {spec.backend!r} made a")


def check_kinds(backend: Backend, kinds: Iterable[RequestKind]) -> None:
    """Raise :class:`UnsupportedRequestError` naming the backend and the first missing kind."""
    missing = sorted(set(kinds) - set(backend.supported_kinds))
    if missing:
        raise UnsupportedRequestError(
            f"backend {backend.spec} does not support {', '.join(missing)} requests "
            f"(it supports: {', '.join(sorted(backend.supported_kinds))}); "
            "choose a scoring that uses a supported kind or another model"
        )
