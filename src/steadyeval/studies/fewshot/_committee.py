"""iPET's committees: which models of generation ``g - 1`` label the training set of one
model of generation ``g``, and how their scores are merged.

A chain model is a node ``(generation, split, member)`` (see :mod:`._semi`). Its
*candidates* are the generation ``g - 1`` models of its source splits less its own
predecessor ``(g - 1, split, member)``:

- single-split: the same split's models (THUDM/FewNLU ``fewnlu/augmentation.py:132-137``,
  commit 669fc05e: the same fold, every pattern, the model's own directory left out; PET's
  ``pet/modeling.py:677-678``, commit 21d32de9, leaves out the same directory);
- cross-split: every split's models (FewNLU's ``use_brother_fold_logits``,
  ``augmentation.py:138-143``: the own split's other models are kept, only the model's own
  predecessor is left out).

From the candidates a seeded draw takes the *committee*: ``max(round(n * share), 1)`` of them
under FewNLU's rule (``augmentation.py:179-180``), ``round(n * share)`` under PET's
(``pet/modeling.py:714-715``, no floor); ``round`` is Python's (half to even), as in both.
The committee's label distribution is the softmax of the mean of its members' option scores
(FewNLU ``augmentation.py:184-186``, which always passes ``reduction="mean"``,
``fewnlu/cli.py:278``), or under PET's rule of their mean weighted by each member's accuracy
on its training set *before* training (PET's ``wmean``: ``pet/modeling.py:434, 662-664,
717, 722-724``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

import numpy as np

from ..._errors import ConfigError

__all__ = [
    "COMMITTEES",
    "Committee",
    "Node",
    "committee_candidates",
    "committee_size",
    "draw_committee",
    "merge_scores",
]

Committee = Literal["fewnlu", "pet"]
COMMITTEES: tuple[Committee, ...] = ("fewnlu", "pet")
#: A chain model: (generation, split index, member index).
Node = tuple[int, int, int]
T = TypeVar("T")


def committee_candidates(node: Node, n_splits: int, n_members: int, cross: bool) -> list[Node]:
    """The generation ``g - 1`` models that may label ``node``'s training set: those of its
    own split (``cross=False``) or of every split (``cross=True``), its own predecessor
    left out (see the module docstring). Generation 0 has none."""
    g, j, m = node
    if g == 0:
        return []
    splits = range(n_splits) if cross else [j]
    return [(g - 1, s, k) for s in splits for k in range(n_members) if (s, k) != (j, m)]


def committee_size(n: int, share: float, rule: Committee) -> int:
    """How many of ``n`` candidates a committee takes: FewNLU's ``max(round(n * share), 1)``
    or PET's ``round(n * share)`` (Python's rounding, half to even, as both)."""
    if not 0 < share <= 1:
        raise ValueError(f"committee_share must be in (0, 1], got {share}")
    k = round(n * share)
    return max(k, 1) if rule == "fewnlu" else k


def draw_committee(
    candidates: Sequence[T], share: float, rule: Committee, rng: np.random.Generator, where: str
) -> list[T]:
    """A seeded draw of :func:`committee_size` of ``candidates`` without replacement, kept in
    the candidates' order. A committee of no model is a :class:`ConfigError` naming
    ``where`` (FewNLU's and PET's code fail there too)."""
    n = len(candidates)
    if n == 0:
        raise ConfigError(
            f"{where}: no generation g-1 model but its own predecessor, which the committee "
            "leaves out (as FewNLU and PET do); give the ensemble two members or more "
            "(ensemble_seeds: 2, or ensemble: all-patterns on a task with two patterns) or "
            "use /cross-split"
        )
    k = committee_size(n, share, rule)
    if k == 0:
        raise ConfigError(
            f"{where}: PET's committee rule takes round({n} x {share:g}) = 0 of the {n} other "
            f"models (PET's code fails there); set committee_share above {0.5 / n:g} or "
            "committee: fewnlu"
        )
    picked = rng.choice(n, size=k, replace=False)
    return [candidates[int(i)] for i in sorted(picked)]


def merge_scores(
    scores: Sequence[np.ndarray] | Sequence[Sequence[Sequence[float]]],
    weights: Sequence[float] | None,
    temperature: float,
    *,
    fix: str = "reduction: mean",
) -> np.ndarray:
    """The ensemble's soft labels: ``softmax(merged / temperature)`` per example, where
    ``merged`` is the members' scores (members × examples × options) averaged with
    ``weights`` (None: unweighted). iPET's committees (temperature 1) and PET's final
    distillation (``pet-full``, iPET's ``final: classifier``) both merge this way; ``fix`` is
    the setting an all-zero weighting error suggests.

    As timoschick/pet does it: ``merge_logits_lists`` (``pet/modeling.py``, lines 579-600)
    averages the members' *logits* (``np.average(..., weights=...)``), and
    ``distillation_loss`` (``pet/utils.py``, line 341) takes ``softmax(targets / T)`` of the
    result: the scores are averaged before the softmax, not the members' probabilities.
    A member's score per option may be shifted by a constant per example (a log-probability
    instead of a logit) without changing the result.

    Raises
    ------
    ConfigError
        Weights that sum to 0 (every member wrong on every train example before training:
        PET's ``np.average`` fails there too), or members of different shapes.
    """
    arr = np.asarray([np.asarray(s, dtype=float) for s in scores])
    if arr.ndim != 3 or not arr.size:
        raise ConfigError(
            f"merge_scores: expected members x examples x options scores; got shape {arr.shape}"
        )
    if weights is None:
        merged = arr.mean(axis=0)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (arr.shape[0],) or not np.all(w >= 0) or not w.sum() > 0:
            raise ConfigError(
                f"PET's weighted mean (reduction wmean) needs one weight >= 0 per model, "
                f"not all 0; got {w.tolist()} (every model scored 0 on the train part before "
                f"training): use {fix}"
            )
        merged = np.average(arr, axis=0, weights=w)
    from scipy.special import softmax

    probs: np.ndarray = softmax(merged / float(temperature), axis=1)
    return probs
