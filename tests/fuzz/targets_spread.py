"""Fuzz targets: the spread study's estimator (``steadyeval.stats.IrtCells.of`` →
``fit_irt`` → ``irt_distribution``, what ``studies/spread/_analysis.py`` calls) on random small
sets of observed cells: shapes from 1 × 1 up, degenerate ones (one item, one format, all
correct, all wrong, constant or huge covariates) and hostile ones (indices out of range,
non-integer indices, outcomes other than 0/1, NaN covariates). Draws are few, so it is cheap.

The property: a result whose numbers are finite and in [0, 1], with no warning but the
statistics' own :class:`~steadyeval.stats.StatsWarning`; or the statistics' own
:class:`~steadyeval.stats.StatsInputError` with a short message. Never ``LinAlgError`` or
another exception."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from steadyeval import stats
from tests.fuzz._registry import MAX_MESSAGE, OUTCOMES, target


@st.composite
def _cells(draw: st.DrawFn) -> dict[str, Any]:
    n_rows = draw(st.integers(1, 6))
    n_cols = draw(st.integers(1, 6))
    hostile = draw(st.integers(0, 9)) == 0  # one example in ten
    row = st.integers(-1, 7) if hostile else st.integers(0, n_rows - 1)
    col = st.integers(-1, 7) if hostile else st.integers(0, n_cols - 1)
    pairs = draw(
        st.lists(
            st.tuples(row, col),
            min_size=0 if hostile else 1,
            max_size=n_rows * n_cols,
            unique=not hostile,
        )
    )
    outcome = st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5, float("nan")]) if hostile else None
    kind = draw(st.sampled_from(["mixed", "all correct", "all wrong"]))
    if outcome is not None:
        y = [draw(outcome) for _ in pairs]
    elif kind == "mixed":
        y = [float(draw(st.integers(0, 1))) for _ in pairs]
    else:
        y = [1.0 if kind == "all correct" else 0.0] * len(pairs)
    rows = [p[0] for p in pairs]
    if hostile and pairs and draw(st.booleans()):
        rows = [r + 0.5 for r in rows]  # not integer indices
    return {
        "rows": rows,
        "cols": [p[1] for p in pairs],
        "y": y,
        "shape": (n_rows, n_cols),
        "covariates": draw(_covariates(n_rows)),
        "sampler": draw(st.sampled_from(["gibbs", "gibbs", "laplace"])),
        "n_draws": draw(st.integers(1, 8)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def _covariates(n_rows: int) -> st.SearchStrategy[Any]:
    values = st.floats(-3, 3) | st.sampled_from([0.0, 1.0, 1e5, -1e7, 1e200, float("nan")])
    return st.one_of(
        st.none(),
        st.just(np.ones((n_rows, 2))),  # constant: it moves the intercept only
        st.integers(1, 4).map(lambda k: np.eye(k)[np.arange(n_rows) % k]),  # one-hot choices
        st.integers(0, 3).flatmap(
            lambda k: st.lists(
                st.lists(values, min_size=k, max_size=k), min_size=n_rows, max_size=n_rows
            ).map(lambda v: np.asarray(v, dtype=np.float64).reshape(n_rows, k))
        ),
    )


def _check(dist: stats.IrtDistribution) -> None:
    for name in ("accuracy", "accuracy_low", "accuracy_high", "sorted_accuracy", "quantiles",
                 "quantile_low", "quantile_high"):  # fmt: skip
        values = np.asarray(getattr(dist, name))
        assert np.all(np.isfinite(values)), (name, values)
        assert np.all((values >= 0) & (values <= 1)), (name, values)
    assert np.all(dist.quantile_low <= dist.quantile_high)
    assert all(np.isfinite(v) for v in (*dist.spread, *dist.effect_sd))


@target("spread-estimator", "steadyeval.stats.fit_irt / irt_distribution", _cells())
def spread_estimator(example: dict[str, Any], folder: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cells = stats.IrtCells.of(example["rows"], example["cols"], example["y"],
                                      *example["shape"])  # fmt: skip
            fit = stats.fit_irt(cells, example["covariates"])
            dist = stats.irt_distribution(
                fit, n_draws=example["n_draws"], sampler=example["sampler"], seed=example["seed"]
            )
        except stats.StatsInputError as exc:  # the statistics' own error: one located line
            text = str(exc)
            assert text.strip() and len(text) <= MAX_MESSAGE and "\n" not in text, text
            OUTCOMES["error"] += 1
            return
    others = [f"{w.category.__name__}: {w.message}" for w in caught
              if w.category is not stats.StatsWarning]  # fmt: skip
    assert not others, others  # e.g. an overflow RuntimeWarning: a number went bad
    _check(dist)
    OUTCOMES["ok"] += 1
