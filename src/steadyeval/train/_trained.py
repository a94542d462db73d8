"""A model that is trained on first use: a fine-tuned checkpoint handed to the runner.

:class:`TrainedModel` is an ordinary backend whose fingerprint is its training recipe's key.
Planning, dry runs and cache hits never train it; the first request that reaches it trains
the checkpoint into a content-addressed :class:`CheckpointStore` (or finds it there) and then
loads it as a plain model (``hf-masked:FOLDER?max_length=N``, ``hf-classifier:...``).
Responses are cached under the recipe, so a rerun from a warm cache needs neither the
training nor the checkpoint.
"""

from __future__ import annotations

import gc
import logging
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..items import canonical_json
from ..models import (
    Backend,
    BackendStats,
    BaseBackend,
    Capabilities,
    ModelSpec,
    load_backend,
)
from ..requests import (
    ClassifyRequest,
    ClassifyResponse,
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._checkpoint import CheckpointInfo, CheckpointStore, TrainOutcome, checkpoint_key

__all__ = ["TrainedModel"]

log = logging.getLogger(__name__)


class TrainedModel(BaseBackend):
    """A checkpoint trained on first use (see the module docstring).

    Parameters
    ----------
    recipe : mapping
        Everything that decides the checkpoint (task, method, settings, the training and
        selection examples' hashes, seed, the base model's fingerprint); its key names the
        checkpoint and is the model's fingerprint.
    train : callable
        ``train(folder) -> TrainOutcome``: trains into an empty folder.
    store : CheckpointStore
        Where checkpoints live.
    backend : str
        The backend that serves the checkpoint (``hf-masked``, ``hf-classifier``, ...).
    options : mapping of str to str
        That backend's spec options that can change an output (e.g. ``max_length``,
        ``dtype``); a trainer's reported ``max_length`` replaces the requested one.
    run_options : mapping of str to str
        Its options that never change an output (``device``, ``batch_size``): in the spec,
        not in the fingerprint or the identity.
    kinds : frozenset of str
        The request kinds the served checkpoint answers (declared before training).
    name : str
        The identity's name part, e.g. ``pet`` (the identity adds the recipe key).
    capabilities : Capabilities, optional
        What the served checkpoint declares (e.g. ``fills_slots`` for a masked LM).
    keep : bool
        Keep the checkpoint once the run is done with it (False: delete it, saving disk).
    """

    def __init__(
        self,
        *,
        recipe: Mapping[str, Any],
        train: Callable[[Path], TrainOutcome],
        store: CheckpointStore,
        backend: str,
        options: Mapping[str, str],
        kinds: frozenset[RequestKind],
        run_options: Mapping[str, str] | None = None,
        name: str,
        capabilities: Capabilities | None = None,
        keep: bool = True,
    ) -> None:
        self.recipe = dict(recipe)
        self.key = checkpoint_key(self.recipe)
        self.store, self._train, self.keep = store, train, keep
        self.backend, self.options = backend, dict(sorted(options.items()))
        self.run_options = dict(run_options or {})
        self._kinds, self._name = kinds, name
        self._capabilities = capabilities or Capabilities()
        self.spec = self._spec(store.path_for(self.key), self.options)
        self.info: CheckpointInfo | None = None
        self._inner: Backend | None = None
        self._released = BackendStats()  # what served checkpoints counted before release

    def _spec(self, folder: Path, options: Mapping[str, str]) -> ModelSpec:
        return ModelSpec(self.backend, str(folder), {**self.run_options, **options})

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        return self._kinds

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def identity(self) -> str:
        tail = f"?{urlencode(self.options, safe='/:')}" if self.options else ""
        return f"{self.backend}:{self._name}-{self.key[:12]}{tail}"

    def fingerprint(self) -> str:
        return canonical_json(
            {"trained": self.key, "backend": self.backend, "options": self.options}
        )

    @property
    def trained(self) -> Backend:
        """The served checkpoint, trained (or found in the store) on first use."""
        if self._inner is None:
            t0 = time.perf_counter()
            self.info = self.store.get_or_train(self.key, self.recipe, self._train)
            how = "found" if self.info.reused else f"trained in {time.perf_counter() - t0:.1f}s"
            log.info("%s: checkpoint %s %s", self.identity(), self.key[:12], how)
            options = dict(self.options)
            if "max_length" in self.info.extra:
                options["max_length"] = str(self.info.extra["max_length"])
            self._inner = load_backend(self._spec(self.info.path, options))
        return self._inner

    def stats(self) -> BackendStats:
        now = self._inner.stats() if self._inner is not None else BackendStats()
        return self._released + now

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        return self.trained.score(requests)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        return self.trained.generate(requests)

    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        return self.trained.top_k(requests)

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResponse]:
        return self.trained.classify(requests)

    def release(self) -> None:
        """Once the run has all its answers: free the served checkpoint's weights (it is
        loaded again if needed) and delete the checkpoint unless it is kept."""
        if self._inner is not None:
            self._released = self._released + self._inner.stats()
            self._inner.release()
            self._inner = None
            gc.collect()
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available():
                torch.cuda.empty_cache()
        if not self.keep and self.info is not None:
            shutil.rmtree(self.info.path, ignore_errors=True)
            self.info = None
