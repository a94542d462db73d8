"""The correctness tensor (model × template × name × fact, per unit) and the pure
computations on it: template scores, the backdoor adjustment (exact and sampled), and the
three rank-consistency regimes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..._errors import ConfigError
from ...stats import RankConsistencyResult, rank_consistency
from ._tensor_table import (
    READS,
    cell_means,
    cell_predictions,
    check_rows,
    fact_ranks,
    template_and_alias,
)
from ._types import Regime, SensitivityDesign

if TYPE_CHECKING:
    from ...results import ResultsFrame

__all__ = [
    "Correctness",
    "Regime",
    "adjusted_scores",
    "draw_subsets",
    "rank_consistency_regimes",
    "sampled_adjusted_scores",
    "template_scores",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Correctness:
    """Per-fact correctness of every model under every (template, name), unit by unit.

    Attributes
    ----------
    models, units, templates : tuple of str
        Axes; ``templates[0]`` is the original template.
    n_names : int
        Name axis length (name 0 is the canonical name).
    cells : tuple of ndarray, shape (n_models, n_templates, n_names, n_facts_u)
        One array per unit: 1.0 correct, 0.0 wrong, NaN not asked (the fact's subject has
        no such name, or the unit has no such template: with every template kept, units
        may have fewer templates than the axis; template 0 is always asked).
    facts : tuple of tuple of str
        The fact (item) ids of each unit, in the order of the last axis.
    predictions : tuple of ndarray of int, optional
        Same shapes as ``cells``: a code per distinct prediction, -1 where not asked.
    prediction_texts : tuple of str, optional
        The text of each prediction code (``prediction_texts[code]``).
    """

    models: tuple[str, ...]
    units: tuple[str, ...]
    templates: tuple[str, ...]
    n_names: int
    cells: tuple[FloatArray, ...]
    facts: tuple[tuple[str, ...], ...]
    predictions: tuple[IntArray, ...] | None = None
    prediction_texts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        shape = (len(self.models), len(self.templates), self.n_names)
        if len(self.cells) != len(self.units) or len(self.facts) != len(self.units):
            raise ValueError("cells, facts and units must have one entry per unit")
        for u, c in zip(self.units, self.cells, strict=True):
            if c.ndim != 4 or c.shape[:3] != shape or c.shape[3] == 0:
                raise ValueError(f"unit {u!r}: cells must have shape {shape} + (n_facts >= 1,)")
            asked = ~np.all(np.isnan(c[:, :, 0, :]), axis=(0, 2))  # templates of the unit
            if not asked[0] or bool(np.any(np.isnan(c[:, asked, 0, :]))):
                raise ValueError(
                    f"unit {u!r}: every fact must be asked with its name 0 under template 0 "
                    "and under every other template of the unit"
                )

    def templates_available(self, u: int) -> IntArray:
        """Indices of the templates unit ``u`` was asked under (all, unless the design kept
        every template of relations with different template counts)."""
        asked = ~np.all(np.isnan(self.cells[u][:, :, 0, :]), axis=(0, 2))
        return np.flatnonzero(asked).astype(np.int64)

    @property
    def rectangular(self) -> bool:
        """Whether every unit was asked under every template."""
        n = len(self.templates)
        return all(self.templates_available(u).size == n for u in range(len(self.units)))

    def names_available(self, u: int) -> IntArray:
        """Number of names of each fact of unit ``u`` (names are 0..n-1)."""
        asked = ~np.isnan(self.cells[u][0, 0])  # (n_names, n_facts)
        counts: IntArray = asked.sum(axis=0).astype(np.int64)
        return counts

    def pooled(self, name: str = "all") -> Correctness:
        """The same tensor with every unit's facts pooled into one unit."""
        return Correctness(
            models=self.models,
            units=(name,),
            templates=self.templates,
            n_names=self.n_names,
            cells=(np.concatenate(self.cells, axis=3),),
            facts=(tuple(f for fs in self.facts for f in fs),),
            predictions=None
            if self.predictions is None
            else (np.concatenate(self.predictions, axis=3),),
            prediction_texts=self.prediction_texts,
        )

    @classmethod
    def from_results(
        cls, results: ResultsFrame, design: SensitivityDesign | Mapping[str, Any]
    ) -> Correctness:
        """Build the tensor from the results and the design facts (a
        :class:`SensitivityDesign`, or ``summary.json["design"]``)."""
        return _from_results(results, SensitivityDesign.from_json(design, source="design"))


def _from_results(results: ResultsFrame, design: SensitivityDesign) -> Correctness:
    """The tensor from the frame's columns (every row is of a known condition): models and
    units in the order they first appear, a unit's facts in the order they first appear in
    it; a cell averages its rows (samples), its prediction is that of its first row."""
    roles = design.conditions
    templates = tuple(design.templates)
    n_names = design.max_names
    unit_key = design.unit
    units_read = [unit_key] if unit_key in ("relation", "subject") else []
    results.require([*READS, *units_read], reader="the sensitivity analysis")
    cond, cond_values = results.codes("condition")
    item, item_values = results.codes("item_id", nulls=False)
    u, unit_values = (item, item_values) if unit_key == "item" else results.codes(unit_key)
    correct = results.bools("correct")
    check_rows(roles, unit_key, cond, cond_values, u, correct, item, item_values)
    # Codes number values in order of first appearance, and every row is the study's (and
    # has a unit): a model's or unit's code is its index on the tensor's axis.
    m, model_values = results.codes("model", nulls=False)
    f, facts = fact_ranks(u, item, len(unit_values), item_values)
    p, x = template_and_alias(roles, templates, cond_values, cond)
    ok = (correct == 1).astype(np.float64)
    n_models, n_templates = len(model_values), len(templates)
    shape = (n_models, n_templates, n_names)
    # Every unit's cells laid end to end: unit u holds shape + (its facts,) from offset[u].
    n_facts = np.asarray([len(fs) for fs in facts], dtype=np.int64)
    sizes = n_models * n_templates * n_names * n_facts
    offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = offset[u] + ((m * n_templates + p) * n_names + x) * n_facts[u] + f
    total = int(offset[-1])
    means = cell_means(flat, ok, total)
    pred, pred_texts = cell_predictions(*results.codes("parsed"), flat, total)
    cells = tuple(
        means[offset[k] : offset[k + 1]].reshape(*shape, int(n_facts[k])) for k in range(len(facts))
    )
    preds = tuple(
        pred[offset[k] : offset[k + 1]].reshape(*shape, int(n_facts[k])) for k in range(len(facts))
    )
    return Correctness(
        models=tuple(model_values),
        units=tuple(unit_values),
        templates=templates,
        n_names=n_names,
        cells=cells,
        facts=tuple(facts),
        predictions=preds,
        prediction_texts=pred_texts,
    )


# -- scores ------------------------------------------------------------------------------------


def template_scores(c: Correctness) -> FloatArray:
    """Score of each model on each unit under each template, canonical name:
    shape (n_models, n_units, n_templates)."""
    return np.stack([cell[:, :, 0, :].mean(axis=2) for cell in c.cells], axis=1)


def _weights(c: Correctness, weights: Mapping[str, Sequence[float]] | None, u: int) -> FloatArray:
    """P(template) over the template axis; 0 for templates the unit was not asked under."""
    n = len(c.templates)
    avail = c.templates_available(u)
    if weights is None:
        if avail.size == n:
            return np.full(n, 1.0 / n)
        uniform = np.zeros(n)
        uniform[avail] = 1.0 / avail.size
        return uniform
    w = np.asarray(weights[c.units[u]], dtype=np.float64)
    if w.shape not in ((n,), avail.shape) or bool(np.any(w < 0)) or w.sum() <= 0:
        raise ConfigError(f"unit {c.units[u]!r}: weights must be {avail.size} non-negative numbers")
    full = np.zeros(n)
    full[avail] = w[avail] if w.shape == (n,) and avail.size < n else w
    normalised: FloatArray = full / full.sum()
    return normalised


def adjusted_scores(
    c: Correctness, weights: Mapping[str, Sequence[float]] | None = None
) -> FloatArray:
    """The backdoor-adjusted score of each model on each unit, shape (n_models, n_units).

    ``sum_p sum_x P(p) P(x | fact) score(m, u, p, x)`` averaged over the unit's facts, with
    P(p) uniform (or ``weights[unit]``, normalised) and P(x | fact) uniform over the fact's
    names.
    """
    out = np.empty((len(c.models), len(c.units)))
    for u, cell in enumerate(c.cells):
        w = _weights(c, weights, u)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # templates the unit lacks
            per_name = np.nanmean(cell, axis=2)  # (M, P, F): mean over the fact's names
        out[:, u] = np.einsum("p,mpf->mf", w, np.nan_to_num(per_name)).mean(axis=1)
    return out


def _draw_templates(
    rng: np.random.Generator, n: int, k: int, w: FloatArray, uniform: bool
) -> IntArray:
    """``k`` template indices: uniform, without replacement among the templates of positive
    weight (all, unless the unit lacks some); else i.i.d. with probability ``w``."""
    if uniform:
        avail = np.flatnonzero(w > 0)
        if avail.size == n:
            return rng.choice(n, size=min(k, n), replace=False).astype(np.int64)
        return avail[rng.choice(avail.size, size=min(k, avail.size), replace=False)]
    return rng.choice(n, size=k, replace=True, p=w).astype(np.int64)


def _name_mask(rng: np.random.Generator, n_avail: IntArray, n_names: int, k: int) -> FloatArray:
    """(n_names, n_facts) 0/1: ``min(k, n_avail[f])`` names drawn per fact without
    replacement."""
    keys = rng.random((n_names, n_avail.size))
    keys[np.arange(n_names)[:, None] >= n_avail[None, :]] = np.inf
    ranks = np.argsort(np.argsort(keys, axis=0), axis=0)
    return (ranks < np.minimum(k, n_avail)[None, :]).astype(np.float64)


def _sampled_unit(
    cell: FloatArray,
    rng: np.random.Generator,
    m: int,
    k_templates: int,
    k_names: int,
    w: FloatArray,
    uniform: bool,
    n_avail: IntArray,
) -> float:
    t = _draw_templates(rng, cell.shape[1], k_templates, w, uniform)
    mask = _name_mask(rng, n_avail, cell.shape[2], k_names)
    sub = np.nan_to_num(cell[m][t])  # (k, X, F)
    per_fact = (sub * mask[None]).sum(axis=(0, 1)) / (len(t) * mask.sum(axis=0))
    return float(per_fact.mean())


def sampled_adjusted_scores(
    c: Correctness,
    *,
    k_templates: int | None,
    k_names: int | None,
    seed: int | np.random.Generator,
    weights: Mapping[str, Sequence[float]] | None = None,
) -> FloatArray:
    """The adjustment approximated by sampling, shape (n_models, n_units).

    Per unit, ``k_templates`` templates are drawn (uniform weights: without replacement, as
    in the paper; other weights: i.i.d. with probability P(p), an unbiased estimate) and, per
    fact, ``min(k_names, names)`` of its names without replacement; the model's unit score
    is the mean over facts of the mean over the drawn (template, name) cells. The draws are
    shared by all models. ``None`` means all templates / all names.
    """
    rng = np.random.default_rng(seed)
    out = np.empty((len(c.models), len(c.units)))
    kt = k_templates or len(c.templates)
    kn = k_names or c.n_names
    for u, cell in enumerate(c.cells):
        w = _weights(c, weights, u)
        uniform = weights is None
        state = rng.bit_generator.state
        for m in range(len(c.models)):
            rng.bit_generator.state = state  # the same draws for every model
            out[m, u] = _sampled_unit(cell, rng, m, kt, kn, w, uniform, c.names_available(u))
    return out


# -- rank consistency --------------------------------------------------------------------------


def draw_subsets(
    n_units: int, n_subsets: int, subset_size: int, seed: int | np.random.Generator
) -> list[IntArray]:
    """``n_subsets`` subsets of ``subset_size`` unit indices, each without replacement."""
    rng = np.random.default_rng(seed)
    return [
        rng.choice(n_units, size=subset_size, replace=False).astype(np.int64)
        for _ in range(n_subsets)
    ]


def _expanded(
    c: Correctness,
    subsets: Sequence[IntArray],
    value: Any,
) -> tuple[FloatArray, list[IntArray]]:
    rows: list[FloatArray] = []
    blocks: list[IntArray] = []
    for sub in subsets:
        start = len(rows)
        for u in sub:
            rows.append(np.array([value(int(u), m) for m in range(len(c.models))]))
        blocks.append(np.arange(start, len(rows), dtype=np.int64))
    return np.stack(rows), blocks


def _random_regime(
    c: Correctness, subsets: Sequence[IntArray], rng: np.random.Generator, avail: list[IntArray]
) -> tuple[FloatArray, list[IntArray]]:
    """Unit scores of the ``random`` regime, one row per (subset, unit): per subset, every
    model draws one template per unit; on units whose facts have several names, one name
    per fact as well."""
    n_models = len(c.models)
    models = np.arange(n_models)
    # Units whose facts have one name each score a template by the mean over facts.
    by_template = np.stack([cell[:, :, 0, :].mean(axis=2) for cell in c.cells])  # (U, M, T)
    multi = [bool(np.any(a > 1)) for a in avail]
    columns = [np.arange(cell.shape[3]) for cell in c.cells]
    n_templates = len(c.templates)
    rectangular = c.rectangular
    avail_t = [c.templates_available(u) for u in range(len(c.units))]
    rows: list[FloatArray] = []
    blocks: list[IntArray] = []
    start = 0
    for sub in subsets:
        if rectangular:
            picks = rng.integers(n_templates, size=(len(sub), n_models))
        else:  # a template among each unit's own
            draw = rng.random((len(sub), n_models))
            picks = np.stack(
                [
                    avail_t[u][(draw[j] * avail_t[u].size).astype(np.int64)]
                    for j, u in enumerate(sub)
                ]
            )
        values = by_template[sub[:, None], models[None, :], picks]
        for j, u in enumerate(sub):
            if multi[u]:
                cell = c.cells[u]
                names = np.floor(rng.random((n_models, cell.shape[3])) * avail[u]).astype(np.int64)
                values[j] = [cell[m, picks[j, m], names[m], columns[u]].mean() for m in models]
        rows.append(values)
        blocks.append(np.arange(start, start + len(sub), dtype=np.int64))
        start += len(sub)
    return np.concatenate(rows), blocks


def rank_consistency_regimes(
    c: Correctness,
    *,
    subsets: Sequence[Sequence[int]] | Sequence[IntArray],
    seed: int | np.random.Generator,
    k_templates: int | None = None,
    k_names: int | None = None,
    weights: Mapping[str, Sequence[float]] | None = None,
    regimes: Sequence[Regime] = ("original", "random", "intervention"),
    reference: bool = False,
    decimals: int | None = None,
) -> dict[Regime, RankConsistencyResult]:
    """Rank consistency of the model ranking over ``subsets`` of units, per regime.

    Regimes: ``original`` — every unit scored under its original template and the canonical
    names; ``random`` — on every subset, each model gets, per unit, one template drawn
    uniformly and, per fact, one of the subject's names; ``intervention`` — the exact
    backdoor-adjusted scores; ``intervention_sampled`` — on every subset, each model's unit
    scores are the sampled adjustment (``k_templates``, ``k_names``, drawn per model).
    Ranking and consistency follow :func:`steadyeval.stats.rank_consistency` (rank 1 is the
    best mean over the subset's units; ties, up to floating noise, go to the earlier model);
    ``reference=True`` (with ``decimals``) ranks every regime in its reference mode instead,
    the authors' rounding and tie order — for a tensor on their percentage scale, e.g.
    :meth:`ScoreTable.correctness` of their published tables.
    """
    if len(c.models) < 2:
        raise ConfigError("rank consistency needs at least 2 models")
    subs = [np.asarray(s, dtype=np.int64) for s in subsets]
    rng = np.random.default_rng(seed)
    out: dict[Regime, RankConsistencyResult] = {}
    base = template_scores(c)[:, :, 0].T  # (U, M)
    adjusted = adjusted_scores(c, weights).T
    avail = [c.names_available(u) for u in range(len(c.units))]
    kt = k_templates or len(c.templates)
    kn = k_names or c.n_names
    mode: dict[str, Any] = {"reference": reference, "decimals": decimals}
    for regime in regimes:
        if regime == "original":
            out[regime] = rank_consistency(base, subsets=subs, **mode)
        elif regime == "intervention":
            out[regime] = rank_consistency(adjusted, subsets=subs, **mode)
        elif regime == "random":
            scores, blocks = _random_regime(c, subs, rng, avail)
            out[regime] = rank_consistency(scores, subsets=blocks, **mode)
        elif regime == "intervention_sampled":

            def sampled_value(u: int, m: int) -> float:
                w = _weights(c, weights, u)
                return _sampled_unit(c.cells[u], rng, m, kt, kn, w, weights is None, avail[u])

            scores, blocks = _expanded(c, subs, sampled_value)
            out[regime] = rank_consistency(scores, subsets=blocks, **mode)
        else:
            raise ConfigError(f"unknown regime {regime!r}")
    return out
