"""The backend protocol and the registry that resolves specs to backends lazily."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlencode

from .._errors import ModelSpecError, UnsupportedRequestError
from .._extras import HF_MODEL_MODULES, require
from .._lazy import load_entry, load_plugins
from .._log import duration
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
    "BackendStats",
    "BaseBackend",
    "Capabilities",
    "StatsCounter",
    "check_backend",
    "check_kinds",
    "load_backend",
    "register_backend",
    "registered_backends",
    "spec_identity",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackendStats:
    """What a backend had to do again, counted for a run's ``summary.json`` (``retries``);
    never part of a result.

    Attributes
    ----------
    retries : int
        Requests sent again after a failure that another try can fix (HTTP 408/409/429/5xx,
        timeouts, dropped connections, truncated bodies).
    backoff_waits : int
        Pauses before a retry, or while the server asked every request to wait (429
        ``Retry-After``).
    backoff_seconds : float
        The length of those pauses, summed.
    oom_backoffs : int
        Batches halved after running out of memory (and run again).
    """

    retries: int = 0
    backoff_waits: int = 0
    backoff_seconds: float = 0.0
    oom_backoffs: int = 0

    def __add__(self, other: BackendStats) -> BackendStats:
        return BackendStats(
            self.retries + other.retries,
            self.backoff_waits + other.backoff_waits,
            self.backoff_seconds + other.backoff_seconds,
            self.oom_backoffs + other.oom_backoffs,
        )

    def __sub__(self, other: BackendStats) -> BackendStats:
        return BackendStats(
            self.retries - other.retries,
            self.backoff_waits - other.backoff_waits,
            self.backoff_seconds - other.backoff_seconds,
            self.oom_backoffs - other.oom_backoffs,
        )

    def to_dict(self) -> dict[str, int | float]:
        out: dict[str, int | float] = asdict(self)
        out["backoff_seconds"] = round(self.backoff_seconds, 3)
        return out


class StatsCounter:
    """A thread-safe running :class:`BackendStats` (HTTP workers count from their threads);
    a backend that retries holds one and returns ``snapshot()`` from ``stats()``. It pickles
    (a backend is shipped to an executor's workers), without its lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = BackendStats()

    def add(self, *, retries: int = 0, waits: int = 0, seconds: float = 0.0, oom: int = 0) -> None:
        with self._lock:
            s = self._stats
            self._stats = BackendStats(
                s.retries + retries,
                s.backoff_waits + waits,
                s.backoff_seconds + seconds,
                s.oom_backoffs + oom,
            )

    def snapshot(self) -> BackendStats:
        with self._lock:
            return self._stats

    def __getstate__(self) -> dict[str, Any]:
        return {"stats": self.snapshot()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._stats = state["stats"]


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

    def precheck(self, requests: Sequence[Request]) -> None:
        """Check, sending nothing and contacting no server, what the spec and ``requests``
        alone decide (e.g. a server profile named in the spec that gives no prompt
        log-probabilities, asked to score); raise as :meth:`preflight` would. A dry run
        calls it, so it refuses what the run refuses; ``preflight`` includes it."""
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

    def stats(self) -> BackendStats:
        """What the backend has had to do again so far (retries, back-off waits, batches
        halved on out-of-memory), counted from its construction; a run reports the
        difference over its dispatch in ``summary.json``. Default: nothing counted. A
        backend that wraps another returns the inner one's."""
        ...

    # Optional members (not checked by ``isinstance``; :class:`BaseBackend` has defaults):
    # ``joint_prefill`` (bool) and ``score_and_generate(scores, generates)``. A backend
    # whose ``joint_prefill`` is true gets a model's score and greedy generate requests
    # together, prefix-sorted, through ``score_and_generate`` (it shares the prefill of an
    # item's option and free-form prompts); any other gets one call per kind.
    # ``fingerprint_pending`` (bool): computing ``fingerprint()`` would first download
    # something large (a hub model's weights); a dry run then leaves the model's cache
    # unread instead.


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

    def precheck(self, requests: Sequence[Request]) -> None:
        return None

    def preflight(self, requests: Sequence[Request]) -> None:
        self.precheck(requests)  # what the dry run refuses, the run refuses first

    def release(self) -> None:
        return None

    def stats(self) -> BackendStats:
        return BackendStats()

    @property
    def fingerprint_pending(self) -> bool:
        """Whether :meth:`fingerprint` would first download something large (a hub model's
        weights not in the local cache yet). A dry run then does not call it: the model's
        requests are counted as to send, and the count says their cache was not read.
        Default: false."""
        return False

    @property
    def joint_prefill(self) -> bool:
        """Whether :meth:`score_and_generate` does better than ``score`` then ``generate``
        (prefills the prompts the two kinds share once): the runner then sends a model's
        score and greedy generate requests together. Default: false (one call per kind)."""
        return False

    def score_and_generate(
        self, scores: Sequence[ScoreRequest], generates: Sequence[GenerateRequest]
    ) -> tuple[list[ScoreResponse], list[GenerateResponse]]:
        """Answer score and generate requests in one call: the responses of ``scores`` and
        of ``generates``, each in request order, as ``score`` and ``generate`` give them.
        Default: ``score`` then ``generate`` (each skipped when it has no requests)."""
        scored = self.score(scores) if scores else []
        generated = self.generate(generates) if generates else []
        return scored, generated

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
# The optional packages a built-in backend needs (checked before it is imported, so a core
# install says which extra to add instead of failing deep inside a loader).
_NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    **dict.fromkeys(
        ("hf", "hf-causal", "hf-seq2seq", "hf-masked", "hf-classifier"), ("hf", HF_MODEL_MODULES)
    ),
    "vllm": ("vllm", ("transformers", "huggingface_hub")),  # vllm itself: on first batch
}


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
        if entry == _BUILTIN.get(name) and name in _NEEDS:
            extra, modules = _NEEDS[name]
            require(f"{name}: models", *modules, extra=extra)
        factory: BackendFactory = load_entry(entry, f"backend {name!r}", ModelSpecError)
        return factory
    return entry


_MEMBERS = (
    "spec", "supported_kinds", "capabilities", "identity", "fingerprint", "count_tokens",
    "precheck", "preflight", "score", "generate", "top_k", "classify", "release", "stats",
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
    """Resolve a spec to a backend. Cheap: model weights are loaded on first use (a hub
    model's files may be downloaded here; that is logged at INFO when it takes a second or
    more)."""
    if isinstance(spec, str):
        spec = parse_model_spec(spec)
    log.debug("opening model %s", spec)
    start = time.perf_counter()
    backend = check_backend(_factory(spec.backend)(spec), f"backend {spec.backend!r} made a")
    took = time.perf_counter() - start
    log.log(logging.INFO if took >= 1.0 else logging.DEBUG, "opened model %s in %s",
            spec, duration(took))  # fmt: skip
    return backend


def check_kinds(backend: Backend, kinds: Iterable[RequestKind]) -> None:
    """Raise :class:`UnsupportedRequestError` naming the backend and the first missing kind."""
    missing = sorted(set(kinds) - set(backend.supported_kinds))
    if missing:
        raise UnsupportedRequestError(
            f"backend {backend.spec} does not support {', '.join(missing)} requests "
            f"(it supports: {', '.join(sorted(backend.supported_kinds))}); "
            "choose a scoring that uses a supported kind or another model"
        )
