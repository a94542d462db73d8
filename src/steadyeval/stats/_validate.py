"""Input validation shared by the statistics modules (private)."""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._errors import StatsInputError, StatsWarning

SeedLike = int | np.random.Generator
#: Told ``(steps done, steps in all)`` as a long computation goes (a sampler's sweeps).
Progress = Callable[[int, int], None]


def warn(message: str, stacklevel: int = 3) -> None:
    """Emit a :class:`StatsWarning` pointing at the caller's caller by default."""
    warnings.warn(message, StatsWarning, stacklevel=stacklevel)


def as_float_1d(values: ArrayLike, name: str, *, allow_empty: bool = False) -> NDArray[np.float64]:
    """Return ``values`` as a finite 1-D float array or raise :class:`StatsInputError`."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(
            f"{name} must be a 1-D array of numbers; could not convert it ({exc})."
        ) from exc
    if arr.ndim != 1:
        raise StatsInputError(
            f"{name} must be 1-D (one value per item); got an array of shape {arr.shape}."
        )
    if arr.size == 0 and not allow_empty:
        raise StatsInputError(f"{name} is empty; pass at least one item.")
    if not np.all(np.isfinite(arr)):
        raise StatsInputError(
            f"{name} contains NaN or infinite values; drop or impute missing items first."
        )
    return arr


def as_float_2d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return ``values`` as a finite, non-empty 2-D float array."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(
            f"{name} must be a 2-D array of numbers; could not convert it ({exc})."
        ) from exc
    if arr.ndim != 2:
        raise StatsInputError(f"{name} must be 2-D; got an array of shape {arr.shape}.")
    if arr.size == 0:
        raise StatsInputError(f"{name} is empty (shape {arr.shape}); pass at least one row.")
    if not np.all(np.isfinite(arr)):
        raise StatsInputError(
            f"{name} contains NaN or infinite values; drop or impute missing entries first."
        )
    return arr


def as_binary(values: ArrayLike, name: str, *, ndim: int = 1) -> NDArray[np.bool_]:
    """Return ``values`` (bool or 0/1) as a boolean array of the given dimension."""
    arr = np.asarray(values)
    if arr.ndim != ndim:
        raise StatsInputError(
            f"{name} must be a {ndim}-D array of booleans or 0/1; got shape {arr.shape}."
        )
    if arr.size == 0:
        raise StatsInputError(f"{name} is empty; pass at least one item.")
    if arr.dtype == np.bool_:
        return arr
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise StatsInputError(
            f"{name} must hold booleans or 0/1; got dtype {arr.dtype}. "
            "Convert outcomes with e.g. `column == 'correct'` first."
        )
    ok = (arr == 0) | (arr == 1)
    if not np.all(ok):
        bad = arr[~ok][0]
        raise StatsInputError(
            f"{name} must hold only booleans or 0/1; found {bad!r}. "
            "Missing outcomes (NaN) must be dropped or decided before testing."
        )
    return arr.astype(np.bool_)


def as_count(value: Any, name: str) -> int:
    """Return a non-negative integer count or raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise StatsInputError(f"{name} must be a non-negative integer count; got {value!r}.")
    v = float(value)
    if not math.isfinite(v) or v != math.floor(v) or v < 0:
        raise StatsInputError(f"{name} must be a non-negative integer count; got {value!r}.")
    return int(v)


def as_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """Return an integer >= ``minimum`` or raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise StatsInputError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_probability(value: Any, name: str, *, closed: bool = False) -> float:
    """Return a float in (0, 1) (or [0, 1] when ``closed``) or raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise StatsInputError(f"{name} must be a number between 0 and 1; got {value!r}.")
    v = float(value)
    inside = 0.0 <= v <= 1.0 if closed else 0.0 < v < 1.0
    if not inside:
        bounds = "[0, 1]" if closed else "(0, 1), exclusive"
        raise StatsInputError(f"{name} must lie in {bounds}; got {value!r}.")
    return v


def check_confidence(confidence: Any) -> float:
    """Validate a confidence level such as 0.95."""
    return check_probability(confidence, "confidence")


def make_rng(seed: Any, name: str = "seed") -> np.random.Generator:
    """Build a Generator from an int seed, or pass a Generator through.

    ``None`` is refused: results must be reproducible, so the caller chooses the seed.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise StatsInputError(
            f"{name} must be a non-negative int or a numpy.random.Generator; got {seed!r}. "
            "Pass e.g. seed=0 so that the result can be reproduced."
        )
    if int(seed) < 0:
        raise StatsInputError(f"{name} must be a non-negative int; got {seed!r}.")
    return np.random.default_rng(int(seed))


def check_seed(seed: Any, name: str = "seed") -> None:
    """Validate ``seed`` without consuming randomness from a Generator."""
    if isinstance(seed, np.random.Generator):
        return
    make_rng(seed, name)


def check_progress(progress: Any) -> Progress | None:
    """``progress``: None or a callable taking (done, total) (checked before any work, so a
    wrong one fails at once, not after a fit of minutes)."""
    if progress is None:
        return None
    if not callable(progress):
        text = repr(progress)
        shown = type(progress).__name__ + (f" {text}" if len(text) <= 40 else "")
        raise StatsInputError(f"progress must be None or a callable; got {shown}")
    try:
        inspect.signature(progress).bind(0, 0)
    except TypeError:
        name = getattr(progress, "__qualname__", type(progress).__name__)
        raise StatsInputError(
            f"progress must take two arguments, (done, total); {name} cannot be called so"
        ) from None
    except ValueError:  # no signature to read (some builtins): trust it
        pass
    return cast("Progress", progress)


def check_same_length(a: NDArray[Any], b: NDArray[Any], name_a: str, name_b: str) -> None:
    """Raise unless two per-item arrays have the same length."""
    if a.shape[0] != b.shape[0]:
        raise StatsInputError(
            f"{name_a} and {name_b} must have one entry per item each; got lengths "
            f"{a.shape[0]} and {b.shape[0]}. Align them on item id first."
        )


def group_codes(
    labels: ArrayLike, n: int, name: str, *, unit: str = "item"
) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """Return ``(distinct labels in sorted order, code per entry)`` for a 1-D label array.

    ``n`` is the required length; ``unit`` names what one entry is (an item, a sample) in
    the messages.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise StatsInputError(f"{name} must be 1-D (one label per {unit}); got shape {arr.shape}.")
    if arr.shape[0] != n:
        raise StatsInputError(
            f"{name} must have one label per {unit}; got {arr.shape[0]} labels for {n} {unit}s."
        )
    if n == 0:
        raise StatsInputError(f"{name} is empty; pass at least one {unit}.")
    if arr.dtype.kind == "f" and bool(np.any(np.isnan(arr))):
        raise StatsInputError(
            f"{name} contains NaN; give every {unit} a label (its own id if ungrouped)."
        )
    try:
        uniques, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise StatsInputError(
            f"{name} labels must be mutually comparable (all str or all int): {exc}"
        ) from exc
    return uniques, codes.reshape(-1).astype(np.intp)
