"""Comparisons over the population of formats: runs of the spread study compared with the
crossed model of :func:`steadyeval.stats.compare_formats` (``steadyeval compare --over
formats``)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from .._errors import ConfigError, DataError, show_path
from ..results import ResultsFrame

__all__ = ["FormatDifference", "FormatsArm", "FormatsPair", "OverFormats", "compare_over_formats"]


@dataclass(frozen=True)
class FormatsArm:
    """One model of one spread run, with its mean accuracy over the formats."""

    label: str
    run: str
    model: str
    cells: int
    accuracy: float
    low: float
    high: float


@dataclass(frozen=True)
class FormatDifference:
    """B − A on one format: the model's estimate with its interval, and what the cells both
    models answered on that format showed (``shared`` cells, ``observed`` their mean
    difference; NaN with none)."""

    format: str
    estimate: float
    low: float
    high: float
    shared: int
    observed: float


@dataclass(frozen=True)
class FormatsPair:
    """B against the baseline A over the formats: B − A's expected difference, the share of
    formats on which B is better (the probability that it is on a format drawn at random),
    the share on which the ranking flips, P(B − A > 0), and each format's difference."""

    a: str
    b: str
    difference: tuple[float, float, float]
    p_better: tuple[float, float, float]
    flip_share: tuple[float, float, float]
    prob_positive: float
    formats: tuple[FormatDifference, ...]


@dataclass(frozen=True)
class OverFormats:
    """:func:`compare_over_formats`'s result."""

    arms: tuple[FormatsArm, ...]
    pairs: tuple[FormatsPair, ...]
    rankings: tuple[tuple[tuple[str, ...], float], ...]
    n_formats: int
    n_items: int
    interaction_sd: tuple[tuple[float, float, float], tuple[float, float, float]]
    confidence: float
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None)."""
        data: dict[str, Any] = _clean(asdict(self))
        return data


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) else x
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _spread_run(path: Path) -> tuple[Any, ResultsFrame]:
    """A spread run's design and results table."""
    from ..studies import read_design

    name, design = read_design(path)
    if name == "decide":  # the same formats, items and covariates
        design = design.spread_design()
    elif name != "spread":
        raise DataError(
            f"{path}: a run of study {name!r}; --over formats compares runs of the spread "
            "or decide study, whose formats are a sample of a population"
        )
    return design, ResultsFrame.read(path / "results.parquet")


def _same_formats(first: Any, design: Any, where: str, origin: str) -> None:
    a = [(f.name, f.choices) for f in first.formats]
    b = [(f.name, f.choices) for f in design.formats]
    if a == b and first.covariates == design.covariates:
        return
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            raise DataError(
                f"{where}: format {k} is {y[0]!r} {y[1]}, in {origin} {x[0]!r} {x[1]}: runs "
                "compared over formats must share one population of formats (the same "
                "grammar and --n-formats/--grammar-seed, or the same --formats file)"
            )
    if len(a) == len(b):  # the same formats, not the same covariates
        raise DataError(
            f"{where}: the same formats as {origin} but other format covariates (one run "
            "with --no-covariates?): runs compared over formats must use the same covariates"
        )
    raise DataError(
        f"{where}: {len(b)} formats, {origin} {len(a)}: runs compared over formats must share "
        "one population of formats"
    )


def _item_hashes(frame: ResultsFrame) -> dict[str, str]:
    """Each item id's ``item_hash`` (its first non-null one) in a run's table."""
    if not frame.has("item_hash"):
        return {}
    out: dict[str, str] = {}
    for item, h in zip(frame.values("item_id"), frame.values("item_hash"), strict=True):
        if h is not None:
            out.setdefault(str(item), str(h))
    return out


def _content_note(arms: list[tuple[str, str, Any, ResultsFrame]], shared: set[str]) -> str | None:
    """A note when shared item ids have different content (``item_hash``) in two runs."""
    first_run, _, _, first = arms[0]
    base = _item_hashes(first)
    for run, _, _, frame in arms[1:]:
        if run == first_run:
            continue
        other = _item_hashes(frame)
        differ = sorted(i for i in shared if i in base and i in other and base[i] != other[i])
        if differ:
            return (
                f"items differ: {len(differ)} of {len(shared)} shared item ids have different "
                f"content (item_hash) in {first_run} and {run}, e.g. {differ[0]!r}: the runs "
                "did not ask the same questions"
            )
    return None


def compare_over_formats(
    runs: Sequence[str | Path],
    *,
    models: Sequence[str] | None = None,
    confidence: float = 0.9,
    draws: int | None = None,
    seed: int | None = None,
) -> OverFormats:
    """Compare models over the population of formats of spread-study runs.

    Parameters
    ----------
    runs : sequence of path
        Spread-study run folders sharing one population of formats (the same grammar and
        number of formats, or the same formats file). Every model of every run is an arm;
        the first arm is the baseline A.
    models : sequence of str, optional
        Keep only these models.
    confidence : float
        Level of the intervals.
    draws, seed : int, optional
        Posterior draws and seed; default the first run's.

    Returns
    -------
    OverFormats
        Each arm's mean accuracy over the formats; for every other arm against A the
        expected difference over the formats, the probability it is better on a format
        drawn at random, the share of formats where the ranking flips and each format's
        difference; the probability of each ranking of the arms.

    Notes
    -----
    One crossed model (:func:`steadyeval.stats.compare_formats`) is fitted to every arm's
    cells: the formats' and the items' effects are shared, so cells two arms both answered
    are paired through them. The items are those every run has (runs that sampled different
    items are compared on the ones they share, with a note); the same run given twice is an
    error. What the cells cannot tell (e.g. every cell correct) is said in ``notes``.
    """
    if not runs:
        raise ConfigError("no runs given; pass spread- or decide-study run folders")
    firsts: list[Any] = []
    arms: list[tuple[str, str, Any, ResultsFrame]] = []
    seen: dict[Path, str] = {}
    available: list[str] = []
    for run in runs:
        path = Path(run)
        if path.resolve() in seen:
            raise ConfigError(
                f"{show_path(path)}: the same run as {show_path(seen[path.resolve()])}; a run "
                "compared with itself "
                "has nothing to compare (one run with two models compares those)"
            )
        seen[path.resolve()] = str(path)
        design, frame = _spread_run(path)
        if firsts:
            _same_formats(firsts[0], design, str(path), f"{runs[0]}")
        firsts.append(design)
        names = frame.codes("model", order="sorted", nulls=False)[1]
        for model in names:
            available.append(str(model))
            if models and model not in set(models):
                continue
            arms.append((str(path), str(model), design, frame))
    if len(arms) < 2:
        kept = (
            f" (--model kept {len(arms)} of {', '.join(repr(m) for m in available)})"
            if models
            else ""
        )
        raise ConfigError(
            f"found {len(arms)} (run, model) arm(s){kept}; a comparison over formats needs "
            "two: two spread runs, or one spread or decide run with two models"
        )
    shared = set(firsts[0].items).intersection(*(d.items for d in firsts[1:]))
    items = [i for i in firsts[0].items if i in shared]
    if not items:
        raise DataError(
            f"{runs[0]} and the other runs share no item: a comparison over formats needs the "
            "same items (the same --data and --sample/--limit/--seed)"
        )
    index = {i: k for k, i in enumerate(items)}
    notes = [n for n in (_content_note(arms, shared),) if n]
    names = [model for _, model, _, _ in arms]
    for model in dict.fromkeys(n for n in names if names.count(n) > 1):
        notes.append(
            f"model {model!r} is in {names.count(model)} arms (the same model in several "
            "runs): its arms differ only by the cells their runs drew"
        )
    union = {i for d in firsts for i in d.items}
    if len(union) > len(items):
        notes.append(
            f"the runs sampled different items: the comparison is over the {len(items)} items "
            f"every run has (of {len(union)}); cells of the others are left out"
        )
    return _fit(arms, items, index, firsts[0], confidence, draws, seed, notes)


def _fit(
    arms: list[tuple[str, str, Any, ResultsFrame]],
    items: list[str],
    index: dict[str, int],
    first: Any,
    confidence: float,
    draws: int | None,
    seed: int | None,
    notes: list[str],
) -> OverFormats:
    from ..studies.spread import model_cells

    cells = []
    for k, (run, model, design, frame) in enumerate(arms):
        rows, cols, y, _ = model_cells(frame, design, model)
        if len(y) == 0:
            raise DataError(f"{run}: model {model!r} has no scored cells")
        mapped = np.array([index.get(design.items[c], -1) for c in cols], dtype=np.intp)
        keep = mapped >= 0
        if not keep.any():
            raise DataError(f"{run}: model {model!r} has no scored cell on the shared items")
        rows, cols, y = rows[keep], mapped[keep], y[keep]
        cells.append((np.full(len(y), k), rows, cols, y))
    m, r, c, y = (np.concatenate(v) for v in zip(*cells, strict=True))
    n_formats = len(first.formats)
    x = np.asarray(first.covariates) if first.covariates else None
    labels = [chr(ord("A") + k) if k < 26 else f"arm{k + 1}" for k in range(len(arms))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", stats.StatsWarning)
        result = stats.compare_formats(
            m,
            r,
            c,
            y,
            (len(arms), n_formats, len(items)),
            x,
            seed=first.seed if seed is None else seed,
            draws=first.draws if draws is None else draws,
            confidence=confidence,
            labels=labels,
        )
    notes += list(dict.fromkeys(str(w.message) for w in caught))
    out_arms = tuple(
        FormatsArm(labels[k], run, model, len(cells[k][3]), *map(float, result.accuracy[k]))
        for k, (run, model, _, _) in enumerate(arms)
    )
    names = [f.name for f in first.formats]
    pairs = tuple(_pair(result, 0, k, labels, names) for k in range(1, len(arms)))
    rankings = tuple((tuple(labels[i] for i in order), p) for order, p in result.rankings())
    sd_f, sd_i = result.interaction_sd
    return OverFormats(
        arms=out_arms,
        pairs=pairs,
        rankings=rankings,
        n_formats=n_formats,
        n_items=len(items),
        interaction_sd=(tuple(sd_f), tuple(sd_i)),  # type: ignore[arg-type]
        confidence=confidence,
        notes=tuple(notes),
    )


def _pair(
    result: stats.FormatComparison, a: int, b: int, labels: list[str], names: list[str]
) -> FormatsPair:
    pair = result.pair(b, a)  # B − A
    formats = tuple(
        FormatDifference(
            names[f],
            float(pair.per_format[f, 0]),
            float(pair.per_format[f, 1]),
            float(pair.per_format[f, 2]),
            int(pair.shared[f]),
            float(pair.observed[f]),
        )
        for f in range(len(names))
    )
    return FormatsPair(
        a=labels[a],
        b=labels[b],
        difference=tuple(pair.difference),  # type: ignore[arg-type]
        p_better=tuple(pair.p_better),  # type: ignore[arg-type]
        flip_share=tuple(pair.flip_share),  # type: ignore[arg-type]
        prob_positive=pair.prob_positive,
        formats=formats,
    )
