"""Planning from variance components: the SE of a design, and the samples a target needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ._errors import StatsInputError
from ._validate import as_positive_int, warn
from ._variance import VarianceComponents

__all__ = ["ProjectedSE", "SamplesNeeded", "projected_se", "samples_needed"]


@dataclass(frozen=True, slots=True)
class ProjectedSE:
    """Result of :func:`projected_se`.

    Attributes
    ----------
    se : float
        Standard error of the mean over a fresh draw of items, conditions and samples.
    se_sampling : float
        Standard error from sampling alone: rerunning the same items and conditions.
    se_floor : float
        What ``se`` tends to with unlimited samples (items, conditions and interaction).
    n_items, n_conditions, n_samples : int
        The design projected to.
    """

    se: float
    se_sampling: float
    se_floor: float
    n_items: int
    n_conditions: int
    n_samples: int


def _parts(components: VarianceComponents) -> tuple[float, float, float, float]:
    if not isinstance(components, VarianceComponents):
        raise StatsInputError(
            "components must be the result of variance_components; got "
            f"{type(components).__name__}."
        )
    return (
        components.item.estimate,
        components.condition.estimate,
        components.interaction.estimate,
        components.sampling.estimate,
    )


def projected_se(
    components: VarianceComponents, n_items: int, n_conditions: int, n_samples: int
) -> ProjectedSE:
    """Standard error of a mean accuracy for a design of a given size.

    Parameters
    ----------
    components : VarianceComponents
        From :func:`variance_components` (the truncated estimates are used).
    n_items, n_conditions, n_samples : int
        Items, conditions and samples per item × condition cell of the design.

    Returns
    -------
    ProjectedSE
        ``se`` (fresh items, conditions and samples), ``se_sampling`` (same items and
        conditions, new samples), ``se_floor`` (unlimited samples).

    Raises
    ------
    StatsInputError
        If a size is not a positive integer or ``components`` is of the wrong type.

    Warns
    -----
    StatsWarning
        If ``components`` came from one sample per cell: ``se_sampling`` and
        ``se_floor`` are NaN, and ``se`` too unless ``n_samples == 1``.

    Notes
    -----
    For a balanced design of ``I`` items, ``J`` conditions and ``K`` samples per cell, the
    mean of all observations has

    ``se^2 = s2_item/I + s2_condition/J + s2_interaction/(I J) + s2_sampling/(I J K)``

    over fresh items and conditions drawn from the same populations, and
    ``se_sampling^2 = s2_sampling / (I J K)`` when only the samples are redrawn: the
    run-to-run noise that decides whether a ranking survives another sampling run. The
    components are taken as known (their own uncertainty is not propagated; use the
    interval bounds for a pessimistic projection).

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(0)
    >>> i, j, k = np.meshgrid(np.arange(40), np.arange(5), np.arange(4), indexing="ij")
    >>> p = 1 / (1 + np.exp(-(rng.normal(0, 1.5, 40)[i] + rng.normal(0, 0.5, 5)[j])))
    >>> y = (rng.uniform(size=p.shape) < p).astype(float)
    >>> vc = stats.variance_components(y.ravel(), i.ravel(), j.ravel(), n_resamples=200)
    >>> r = stats.projected_se(vc, n_items=400, n_conditions=5, n_samples=8)
    >>> r.se_sampling < r.se
    True
    """
    s_a, s_b, s_ab, s_e = _parts(components)
    n_i = as_positive_int(n_items, "n_items")
    n_j = as_positive_int(n_conditions, "n_conditions")
    n_k = as_positive_int(n_samples, "n_samples")
    cells = n_i * n_j
    if not components.identified:
        warn(
            "projected_se: the components come from one sample per cell, so the sampling "
            "part is not identified; se_sampling and se_floor are NaN (se too unless "
            "n_samples == 1). Estimate them from two or more samples per cell."
        )
        both = components.interaction_plus_sampling.estimate
        se = math.sqrt(s_a / n_i + s_b / n_j + both / cells) if n_k == 1 else math.nan
        return ProjectedSE(se, math.nan, math.nan, n_i, n_j, n_k)
    floor = s_a / n_i + s_b / n_j + s_ab / cells
    sampling = s_e / (cells * n_k)
    return ProjectedSE(
        math.sqrt(floor + sampling), math.sqrt(sampling), math.sqrt(floor), n_i, n_j, n_k
    )


@dataclass(frozen=True, slots=True)
class SamplesNeeded:
    """Result of :func:`samples_needed`.

    Attributes
    ----------
    n_samples : int or None
        Smallest samples per cell reaching ``target_se``; ``None`` when no number can.
    target_se : float
        The target.
    floor_se : float
        The standard error with unlimited samples (0 for ``scope="rerun"``).
    limiting : str or None
        When ``n_samples`` is None: the largest part of the floor (``"item"``,
        ``"condition"`` or ``"item:condition"``).
    message : str
        One sentence saying what the number means or what to change instead.
    """

    n_samples: int | None
    target_se: float
    floor_se: float
    limiting: str | None
    message: str


def samples_needed(
    components: VarianceComponents,
    n_items: int,
    n_conditions: int,
    target_se: float,
    *,
    scope: Literal["fresh", "rerun"] = "fresh",
) -> SamplesNeeded:
    """Smallest number of samples per item × condition cell that reaches a target SE.

    Parameters
    ----------
    components : VarianceComponents
        From :func:`variance_components` with two or more samples in some cells.
    n_items, n_conditions : int
        Items and conditions of the planned design.
    target_se : float
        The standard error to reach, > 0 (e.g. half the difference you want to resolve
        divided by 1.96).
    scope : {"fresh", "rerun"}
        ``"fresh"``: the SE over new items, conditions and samples (generalising beyond
        the benchmark). ``"rerun"``: the SE from sampling alone (same items and
        conditions; would the number, or a ranking, survive another sampling run?).

    Returns
    -------
    SamplesNeeded
        ``n_samples`` (None when unreachable), ``floor_se``, ``limiting`` and a
        ``message``.

    Raises
    ------
    StatsInputError
        If a size or the target is invalid, ``scope`` is unknown, or the components do not
        separate sampling from interaction (one sample per cell).

    Notes
    -----
    With the formula of :func:`projected_se`, ``K`` samples give
    ``se^2 = floor^2 + s2_sampling / (I J K)`` where
    ``floor^2 = s2_item/I + s2_condition/J + s2_interaction/(I J)`` (``floor = 0`` for
    ``"rerun"``), so the answer is ``K = ceil(s2_sampling / (I J (target^2 - floor^2)))``,
    at least 1. When ``floor >= target`` no number of samples reaches it: more items (or
    conditions, whichever part ``limiting`` names) are needed instead. Components are
    taken as known.

    Examples
    --------
    >>> import numpy as np
    >>> from steadyeval import stats
    >>> rng = np.random.default_rng(0)
    >>> i, j, k = np.meshgrid(np.arange(40), np.arange(5), np.arange(4), indexing="ij")
    >>> p = 1 / (1 + np.exp(-(rng.normal(0, 1.5, 40)[i] + rng.normal(0, 0.5, 5)[j])))
    >>> y = (rng.uniform(size=p.shape) < p).astype(float)
    >>> vc = stats.variance_components(y.ravel(), i.ravel(), j.ravel(), n_resamples=200)
    >>> stats.samples_needed(vc, 40, 5, 0.01, scope="rerun").n_samples
    11
    """
    s_a, s_b, s_ab, s_e = _parts(components)
    n_i = as_positive_int(n_items, "n_items")
    n_j = as_positive_int(n_conditions, "n_conditions")
    if isinstance(target_se, bool) or not isinstance(target_se, int | float):
        raise StatsInputError(f"target_se must be a positive number; got {target_se!r}.")
    target = float(target_se)
    if not (math.isfinite(target) and target > 0):
        raise StatsInputError(f"target_se must be a positive number; got {target_se!r}.")
    if scope not in ("fresh", "rerun"):
        raise StatsInputError(f'scope must be "fresh" or "rerun"; got {scope!r}.')
    if not components.identified:
        raise StatsInputError(
            "samples_needed: the components come from one sample per cell, so the sampling "
            "part is not identified. Estimate them from two or more samples per cell."
        )
    cells = n_i * n_j
    parts = {"item": s_a / n_i, "condition": s_b / n_j, "item:condition": s_ab / cells}
    floor2 = sum(parts.values()) if scope == "fresh" else 0.0
    floor = math.sqrt(floor2)
    if floor2 >= target * target:
        limiting = max(parts, key=lambda name: parts[name])
        return SamplesNeeded(
            None,
            target,
            floor,
            limiting,
            f"even unlimited samples leave se {floor:.4g} >= {target:.4g}: the {limiting} "
            f"part dominates; add {'items' if limiting != 'condition' else 'conditions'} "
            "instead.",
        )
    k = max(1, math.ceil(s_e / (cells * (target * target - floor2)) - 1e-9))
    return SamplesNeeded(
        k,
        target,
        floor,
        None,
        f"{k} sample(s) per item x condition cell give se <= {target:.4g} ({scope}).",
    )
