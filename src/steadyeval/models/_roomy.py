"""A key/value cache over preallocated buffers, for packed greedy decoding (issue 22): each
layer writes the new tokens' keys and values in place, where transformers' plain dynamic
layer concatenates (copying the whole cache at every step)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["BufferPool", "roomy_cache", "zero_buffers"]

_ROOMY: Any = None


def _roomy_layer() -> Any:
    """A dynamic cache layer over a buffer with room for the new tokens: ``update`` writes
    in place, where the plain layer concatenates (copying the whole cache at every step)."""
    global _ROOMY
    if _ROOMY is None:
        from transformers.cache_utils import DynamicLayer

        class RoomyLayer(DynamicLayer):  # type: ignore[misc,no-untyped-call]
            def __init__(self, keys: Any, values: Any, used: int) -> None:
                super().__init__()  # type: ignore[no-untyped-call]
                self._keys, self._values, self._n = keys, values, used
                self.device = keys.device
                self.is_initialized = True
                self._expose()

            def _expose(self) -> None:
                self.keys = self._keys[:, :, : self._n]
                self.values = self._values[:, :, : self._n]

            def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
                end = self._n + key_states.shape[-2]
                if end > self._keys.shape[-2]:
                    raise RuntimeError("packed decoding: the cache has no room left")
                self._keys[:, :, self._n : end] = key_states
                self._values[:, :, self._n : end] = value_states
                self._n = end
                self._expose()
                return self.keys, self.values

            def batch_select_indices(self, indices: Any) -> None:
                # The kept rows move to the front of the same buffer: a copy of one layer's
                # kept rows at a time, where a new cache beside the old one would add up to
                # the whole cache again at the peak.
                indices = indices.to(self._keys.device)
                kept = len(indices)
                self._keys[:kept] = self._keys[indices]
                self._values[:kept] = self._values[indices]
                self._keys, self._values = self._keys[:kept], self._values[:kept]
                self._expose()

        _ROOMY = RoomyLayer
    return _ROOMY


def roomy_cache(layers: Sequence[tuple[Any, Any]], used: int) -> Any:
    """A ``DynamicCache`` over preallocated (keys, values) buffers per layer, of which the
    first ``used`` positions are filled (decoding writes the rest in place)."""
    from transformers import DynamicCache

    roomy = _roomy_layer()
    cache = DynamicCache()
    cache.layers = [roomy(keys, values, used) for keys, values in layers]
    return cache


def zero_buffers(layers: Sequence[Any], rows: int, width: int) -> list[tuple[Any, Any]]:
    """Zeroed (keys, values) buffers of ``rows`` × ``width`` positions per layer, shaped
    (heads, head size, dtype, device) as ``layers``' keys and values: the zeros are the left
    padding of shorter prompts. A one-off :class:`BufferPool` loan, storage sized to fit."""
    return BufferPool(0).take(layers, rows, width)[0]


class BufferPool:
    """Left-padded (keys, values) buffers for decode groups that run one after another,
    carved from storage kept between them: a fresh buffer costs its pages' first touch
    (page faults) on top of the zeroing: 0.31 s of the paragraph-first benchmark's run
    under cProfile when each of its 7 groups had a new one (issue 22). A
    storage holds at least ``positions`` token positions (its pages are touched only as
    groups use them); :meth:`take` lends one that fits (dropping the free ones when none
    does) and :meth:`give` takes it back once its group is decoded."""

    def __init__(self, positions: int) -> None:
        self.positions = positions
        self._free: list[list[Any]] = []  # storages: per layer and side, one flat tensor

    def take(self, layers: Sequence[Any], rows: int, width: int) -> tuple[list[Any], list[Any]]:
        """Zeroed (keys, values) buffers of ``rows`` × ``width`` positions per layer, shaped
        (heads, head size, dtype, device) as ``layers``' keys and values, and the storage
        they are views of (for :meth:`give`)."""
        sides = [t for layer in layers for t in (layer.keys, layer.values)]
        shapes = [(rows, t.shape[1], width, t.shape[3]) for t in sides]
        need = [rows * t.shape[1] * width * t.shape[3] for t in sides]
        fits = [s for s in self._free if all(f.numel() >= n for f, n in zip(s, need, strict=True))]
        if fits:
            storage = fits[0]
            self._free.remove(storage)
        else:
            self._free.clear()  # none fits: freed before the new storage is made
            storage = [
                t.new_empty(max(n, self.positions * t.shape[1] * t.shape[3]))
                for t, n in zip(sides, need, strict=True)
            ]
        views = [
            f[:n].view(shape).zero_() for f, n, shape in zip(storage, need, shapes, strict=True)
        ]
        return list(zip(views[0::2], views[1::2], strict=True)), storage

    def give(self, storage: list[Any]) -> None:
        """A storage from :meth:`take`, free again (its group is decoded)."""
        self._free.append(storage)
