"""One model load at a time in a process.

``transformers`` builds a model on the meta device under process-wide switches (torch's
default device, its parameter initialisers) and then fills it from the checkpoint. Two
threads loading at once switch them under each other: a load fails with "Cannot copy out
of meta tensor", or worse, parameters stay at their random initialisation and the model
answers anyway. Every ``from_pretrained`` of model weights in steadyeval (the ``hf``
backends, training, the tiny-model builder) holds this lock, with any seeding of torch's
global generator it needs (a new head's initialisation).

The first ``import transformers`` of a process is made under the lock too: two threads
importing it at once give the second a half-initialised package ("cannot import name
'AutoConfig' from 'transformers'")."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["import_transformers", "loading_weights"]

_LOCK = threading.RLock()


@contextmanager
def loading_weights() -> Iterator[None]:
    """Hold the process's model-loading lock (re-entrant)."""
    with _LOCK:
        yield


def import_transformers() -> ModuleType:
    """The ``transformers`` package, its first import made under the lock. Once it is
    imported (by anyone), no call waits on a load another thread holds the lock for."""
    done = sys.modules.get("transformers")
    if done is not None and not getattr(done.__spec__, "_initializing", False):
        return done
    with _LOCK:
        import transformers

        return transformers
