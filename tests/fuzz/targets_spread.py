"""Fuzz targets: the spread study's estimator (``steadyeval.stats.IrtCells.of`` →
``fit_irt`` → ``irt_distribution``, what ``studies/spread/_analysis.py`` calls) on random small
sets of observed cells: shapes from 1 × 1 up, degenerate ones (one item, one format, all
correct, all wrong, constant or huge covariates) and hostile ones (indices out of range,
non-integer indices, outcomes other than 0/1, NaN covariates). Draws are few, so it is cheap.
And ``study spread`` through the CLI on grids of a few formats and items.

The property: a result whose numbers are finite and in [0, 1], with no warning but the
statistics' own :class:`~steadyeval.stats.StatsWarning`; or the statistics' own
:class:`~steadyeval.stats.StatsInputError` with a short message. Never ``LinAlgError`` or
another exception."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from steadyeval import stats
from tests.fuzz._registry import MAX_MESSAGE, OUTCOMES, check_cli, target


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
    d = dist.diagnostic  # the fit check: p-values in [0, 1] or NaN (nothing to check)
    for p in (d.ppc_format_p, d.ppc_item_p, d.ppc_interaction_p):
        assert np.isnan(p) or 0 <= p <= 1, d
    assert 0 <= d.format_sd_low <= d.format_sd_high and 0 <= d.share_two_cells <= 1, d
    assert bool(d.message) == (d.prior_driven or d.misfit), d


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


@st.composite
def _study_flags(draw: st.DrawFn) -> dict[str, Any]:
    """Small studies: formats × items grids from 2 × 1 up, every method and sampler; budgets
    and batches mostly valid, sometimes around their limits (below two search steps, over
    the cells, under the formats)."""
    n_f, n_i = draw(st.integers(2, 5)), draw(st.integers(1, 4))
    method = draw(st.sampled_from(["estimate", "search"]))
    batch = draw(st.integers(1, 3))
    least = 2 * batch if method == "search" else n_f
    fits = least <= n_f * n_i and draw(st.integers(0, 3)) > 0
    budget = draw(st.integers(least, n_f * n_i) if fits else st.integers(1, 2 * n_f * n_i))
    flags: dict[str, Any] = {
        "--n-formats": n_f,
        "--limit": n_i,
        "--budget": budget,
        "--method": method,
        "--sampler": draw(st.sampled_from(["stratified", "adaptive"])),
        "--batch": batch,
        "--seed": draw(st.integers(0, 3)),
    }
    if draw(st.booleans()):
        flags["--no-covariates"] = ""
    if draw(st.integers(0, 4)) == 0:
        flags["--dry-run"] = ""
    return flags


@target("spread-study-small", "steadyeval study spread (small grids)", _study_flags())
def spread_study_small(flags: dict[str, Any], folder: Path) -> None:
    data = folder / "items.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"{i} + {i}?", "options": [str(2 * i), "x"], "answer": 0}
        for i in range(4)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["study", "spread", "--model", "scripted:m", "--data", str(data), "--draws", "50",
            "--out", str(folder / "out"), "-q"]  # fmt: skip
    for flag, value in flags.items():
        argv += [flag] if value == "" else [flag, str(value)]
    check_cli(argv)
