"""``estimate_spread`` (issue 41): its validation, its draws and the fit check that says when
not to trust the estimate (``SpreadDiagnostic``)."""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from steadyeval import stats
from steadyeval.stats._irt import IrtCells
from steadyeval.stats._irt_check import _MAX_PAIRS, _level, _Pairs


def _cells(
    seed: int,
    shape: tuple[int, int],
    per_format: int,
    *,
    item_sd: float = 1.5,
    reversed_share: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``per_format`` distinct cells of each format, drawn from σ(0.3 + θ_f ± β_i) with θ ~
    N(0, 1), β ~ N(0, item_sd²): the last ``reversed_share`` of the formats take −β (they
    find the easy items hard), the others +β (additive when the share is 0)."""
    rng = np.random.default_rng(seed)
    n_f, n_i = shape
    theta, beta = rng.normal(0, 1.0, n_f), rng.normal(0, item_sd, n_i)
    sign = np.where(np.arange(n_f) < round((1 - reversed_share) * n_f), 1.0, -1.0)
    truth = rng.random(shape) < expit(0.3 + theta[:, None] + sign[:, None] * beta[None, :])
    rows = np.repeat(np.arange(n_f), per_format)
    cols = np.concatenate([rng.choice(n_i, per_format, replace=False) for _ in range(n_f)])
    return rows, cols, truth[rows, cols].astype(float)


@functools.cache
def _small() -> stats.SpreadEstimate:
    rows, cols, y = _cells(0, (10, 12), 4)
    return stats.estimate_spread(rows, cols, y, (10, 12), seed=1, draws=120)


# -- validation ----------------------------------------------------------------------------

ROWS, COLS, Y = [0, 0, 1, 2], [0, 1, 1, 2], [1, 0, 1, 1]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((ROWS[:3], COLS, Y, (3, 3)), {}, "one entry per observed cell.*3, 4, 4"),
        ((ROWS, COLS, Y[:2], (3, 3)), {}, "one entry per observed cell.*4, 4, 2"),
        (([0, 0, 1, 3], COLS, Y, (3, 3)), {}, r"rows must be in \[0, 3\)"),
        ((ROWS, [0, 1, 1, -1], Y, (3, 3)), {}, r"cols must be in \[0, 3\)"),
        (([0, 0.5, 1, 2], COLS, Y, (3, 3)), {}, "rows must hold integer indices"),
        (
            (ROWS, COLS, [1, 0, 2, 1], (3, 3)),
            {},
            "correct must hold only 0 and 1.*2.0 at position 2",
        ),
        ((ROWS, COLS, [1, 0, np.nan, 1], (3, 3)), {}, "correct must hold only 0 and 1"),
        ((ROWS, COLS, ["yes", "no", "no", "yes"], (3, 3)), {}, "correct must hold only 0 and 1"),
        ((ROWS, COLS, [[1, 0], [1, 1]], (3, 3)), {}, "correct .* 1-D array"),
        # read as 1 by numpy: the text '1', the imaginary part of 1+1j, a masked entry
        ((ROWS, COLS, ["1", "0", "0", "1"], (3, 3)), {}, "correct must hold only 0 and 1.*text"),
        (
            (ROWS, COLS, np.array([1, 0, 0, 1], dtype=object).astype(str).astype(object), (3, 3)),
            {},
            "correct must hold .* str values",
        ),
        ((ROWS, COLS, [1, 0, 1j, 1], (3, 3)), {}, "correct must hold .* complex numbers"),
        ((ROWS, COLS, np.ones(4, dtype="timedelta64[s]"), (3, 3)), {}, "got durations"),
        ((ROWS, COLS, np.zeros(4, dtype=[("a", "f8")]), (3, 3)), {}, "correct .* got void"),
        # in an object array (a DataFrame's column): a duration, a date, text
        (
            (ROWS, COLS, np.array([np.timedelta64(1, "D")] * 4, dtype=object), (3, 3)),
            {},
            "correct .* got timedelta64 values",
        ),
        (
            (ROWS, COLS, Y, (3, 3), np.array([["1"], ["0"], ["1"]], dtype=object)),
            {},
            "covariates must be real numbers; got str values",
        ),
        ((ROWS, COLS, np.ma.array(Y, mask=[0, 0, 1, 0]), (3, 3)), {}, "correct has masked"),
        ((np.ma.array(ROWS, mask=[1, 0, 0, 0]), COLS, Y, (3, 3)), {}, "rows has masked"),
        (
            (ROWS, COLS, Y, (3, 3), np.ma.array(np.eye(3), mask=np.eye(3))),
            {},
            "covariates has masked entries; give every format's covariates",
        ),
        (
            (ROWS, COLS, Y, (3, 3), np.eye(3) + 1j),
            {},
            "covariates must be real numbers; got complex",
        ),
        (
            (ROWS, COLS, Y, (3, 3), np.eye(3).astype(str)),
            {},
            "covariates must be real numbers; got text",
        ),
        ((ROWS, [0, 1, 7, 2], Y, (3, 3)), {}, r"cols must be in \[0, 3\); got 7 at position 2"),
        (([[0, 0], [1, 2]], COLS, Y, (3, 3)), {}, r"rows must be a 1-D array.*shape \(2, 2\)"),
        ((ROWS, np.array(COLS)[None], Y, (3, 3)), {}, r"cols must be a 1-D array.*\(1, 4\)"),
        ((None, COLS, Y, (3, 3)), {}, r"rows must be a 1-D array.*shape \(\)"),
        ((ROWS, (c for c in COLS), Y, (3, 3)), {}, r"cols must be a 1-D array.*shape \(\)"),
        (([[0, 0], [1]], COLS, Y, (3, 3)), {}, "rows must be a 1-D array.*could not read"),
        (([], [], [], (3, 3)), {}, "no observed cells"),
        ((ROWS, COLS, Y, (3, 0)), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, (3,)), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, (3, 3, 3)), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, (3.0, 3)), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, 9), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, {3, 40}), {}, "shape must be a pair .* in that order"),
        ((ROWS, COLS, Y, {40: 1, 3: 1}), {}, "shape must be a pair .* in that order"),
        ((ROWS, COLS, Y, (True, 3)), {}, "shape must be a pair of positive integers"),
        ((ROWS, COLS, Y, (100_000, 100_000)), {}, "over the estimator's limit"),
        (
            (ROWS, COLS, Y, (100, 19_901)),
            {},
            "100 formats \\+ 19,901 items is over the estimator's",
        ),
        ((ROWS, COLS, Y, (6_001, 10)), {}, "6,001 formats is over the estimator's limit of 6,000"),
        ((ROWS, COLS, Y, (3_001, 3_001)), {}, "3,001 items = 9,006,001 cells is over .* 9,000,000"),
        ((ROWS, COLS, Y, (3, 3)), {"confidence": 1.0}, "confidence must lie in"),
        ((ROWS, COLS, Y, (3, 3)), {"confidence": 0}, "confidence must lie in"),
        ((ROWS, COLS, Y, (3, 3)), {"draws": 0}, "draws must be an integer >= 1"),
        ((ROWS, COLS, Y, (3, 3)), {"draws": 2.5}, "draws must be an integer >= 1"),
        ((ROWS, COLS, Y, (3, 3)), {"seed": -1}, "seed must be a non-negative int"),
        ((ROWS, COLS, Y, (3, 3)), {"seed": None}, "seed must be a non-negative int"),
        ((ROWS, COLS, Y, (3, 3)), {"progress": 5}, "progress must be None or a callable.*int 5"),
        ((ROWS, COLS, Y, (3, 3)), {"progress": lambda: None}, "two arguments, \\(done, total\\)"),
        ((ROWS, COLS, Y, (3, 3)), {"progress": lambda d: d}, "<lambda> cannot be called so"),
        ((ROWS, COLS, Y, (3, 3), [[1.0], [0.0]]), {}, r"covariates must have shape \(n_rows=3"),
        ((ROWS, COLS, Y, (10, 5_000)), {"draws": 10_000}, "draws × .* is over the limit"),
        (
            (ROWS, COLS, Y, (3, 3), np.eye(3, 5_998)),
            {},
            r"3 rows \(formats\) \+ 5,998 covariate columns is over the estimator's limit of 6,000 .* "
            "fewer covariate columns",
        ),
    ],
)
def test_bad_input_is_an_error_naming_the_argument(
    args: tuple[object, ...], kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(stats.StatsInputError, match=match):
        stats.estimate_spread(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0, 5], [0, 1], [1.0, 0.0], 2, 2), r"rows must be in \[0, 2\)"),
        (([0, 1], [0, 1], [1.0, 2.0], 2, 2), "y must hold only 0 and 1"),
        (([0, 1], [0], [1.0, 0.0], 2, 2), "equal lengths; got 2, 1, 2"),
        (([], [], [], 2, 2), "no observed cells"),
        (([0], [0], [1.0], 0, 2), "n_rows must be an integer >= 1"),
        (([0], [0], [1.0], 7_000, 2), "over the estimator's limit"),
        (([[0], [1]], [0, 1], [1.0, 0.0], 2, 2), r"rows must be a 1-D array.*\(2, 1\)"),
        (([0, 1], [0, 1], [[1.0, 0.0]], 2, 2), r"y must be a 1-D array.*\(1, 2\)"),
    ],
)
def test_cells_built_directly_are_checked_as_of_checks_them(
    args: tuple[object, ...], match: str
) -> None:
    """``IrtCells(...)`` used to take anything (only ``IrtCells.of`` checked): a fit then
    failed deep inside, or ran on indices out of range."""
    for build in (IrtCells, IrtCells.of):
        with pytest.raises(stats.StatsInputError, match=match):
            build(*[np.asarray(a) if isinstance(a, list) else a for a in args])  # type: ignore[arg-type]
    rows = np.array([0, 1], dtype=np.intp)
    cells = IrtCells(rows, np.array([1, 0]), np.array([1, 0]), 2, 2)
    assert cells.y.dtype == np.float64 and cells.rows.dtype == np.intp
    rows[0] = 1  # the caller's array changes; the checked cells do not
    assert cells.rows[0] == 0
    with pytest.raises(ValueError, match="read-only"):
        cells.rows[0] = 99
    with pytest.raises(ValueError):
        cells.rows.setflags(write=True)


@pytest.mark.parametrize("q", [-0.1, 100.5, float("nan"), "50", None, True])
def test_quantile_outside_0_100_is_an_error(q: object) -> None:
    with pytest.raises(stats.StatsInputError, match=r"q must be a percentile in \[0, 100\]"):
        _small().quantile(q)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, "0.9"])
def test_quantile_with_a_bad_confidence_is_an_error(confidence: object) -> None:
    with pytest.raises(stats.StatsInputError, match="confidence must"):
        _small().quantile(50, confidence)  # type: ignore[arg-type]


# -- the estimate and its draws ------------------------------------------------------------


def test_the_estimate_is_its_draws_summarised() -> None:
    est = _small()
    dist = est.distribution
    assert est.shape == (10, 12) and est.confidence == 0.9
    assert est.draws.shape == (120, 10) and np.all((est.draws >= 0) & (est.draws <= 1))
    np.testing.assert_allclose(est.accuracy, est.draws.mean(axis=0))
    spread = est.draws.max(axis=1) - est.draws.min(axis=1)
    assert est.spread == pytest.approx(
        (spread.mean(), np.quantile(spread, 0.05), np.quantile(spread, 0.95))
    )
    # the default sampler's intervals are the posterior's own: .quantile gives the same
    for k, level in enumerate(dist.levels):
        assert est.quantile(level) == pytest.approx(
            (dist.quantiles[k], dist.quantile_low[k], dist.quantile_high[k])
        )
    np.testing.assert_allclose(dist.format_sd_draws.mean(), dist.effect_sd[0])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.floats(0, 100), st.floats(0.01, 0.99))
def test_quantile_agrees_with_the_draws(q: float, confidence: float) -> None:
    est = _small()
    per_draw = np.percentile(est.draws, q, axis=1)
    estimate, low, high = est.quantile(q, confidence)
    alpha = (1 - confidence) / 2
    assert estimate == pytest.approx(per_draw.mean())
    assert (low, high) == pytest.approx(
        (np.quantile(per_draw, alpha), np.quantile(per_draw, 1 - alpha))
    )
    assert 0 <= low <= high <= 1
    assert est.quantile(q).low == pytest.approx(np.quantile(per_draw, 0.05))  # the default


def test_a_cell_observed_twice_counts_as_the_mean_of_its_observations() -> None:
    """Every cell of a 2 × 2 matrix observed, format 0's first cell twice (right, then
    wrong): nothing is left to draw, and that cell is worth half a correct answer (it was
    the last observation, wrong, whatever came before)."""
    rows, cols, y = [0, 0, 0, 1, 1], [0, 0, 1, 0, 1], [1, 0, 1, 0, 1]
    est = stats.estimate_spread(rows, cols, y, (2, 2), draws=20)
    np.testing.assert_allclose(est.draws, np.tile([0.75, 0.5], (20, 1)))
    again = stats.estimate_spread(rows[::-1], cols[::-1], y[::-1], (2, 2), draws=20)
    np.testing.assert_array_equal(again.draws, est.draws)


def test_same_seed_same_estimate_and_warnings_point_at_the_caller() -> None:
    rows, cols, y = _cells(3, (6, 8), 3)
    a = stats.estimate_spread(rows, cols, y, (6, 8), seed=4, draws=30)
    b = stats.estimate_spread(rows, cols, y, (6, 8), seed=4, draws=30)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert a.diagnostic == b.diagnostic
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats.estimate_spread(rows, cols, np.ones_like(y), (6, 8), draws=20)
    (w,) = [w for w in caught if w.category is stats.StatsWarning]
    assert "is correct" in str(w.message) and w.filename == __file__


def test_progress_is_told_every_sweep_and_changes_nothing() -> None:
    from steadyeval.stats._irt_gibbs import BURN_IN, THIN

    rows, cols, y = _cells(3, (6, 8), 3)
    told: list[tuple[int, int]] = []
    a = stats.estimate_spread(rows, cols, y, (6, 8), seed=4, draws=30)
    b = stats.estimate_spread(
        rows, cols, y, (6, 8), seed=4, draws=30, progress=lambda *a: told.append(a)
    )
    np.testing.assert_array_equal(a.draws, b.draws)
    total = BURN_IN + THIN * 30
    assert told == [(k, total) for k in range(1, total + 1)]


def test_a_progress_callback_that_stops_the_estimate_keeps_its_warnings() -> None:
    """Ctrl-C (or any error) from the callback propagates, and what the cells cannot tell
    is still said."""

    def stop(done: int, total: int) -> None:
        if done == 5:
            raise KeyboardInterrupt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            stats.estimate_spread([0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1], (2, 2), progress=stop)
    assert any("every cell" in str(w.message) for w in caught)


# -- the fit check -------------------------------------------------------------------------


def test_dense_additive_cells_are_not_flagged() -> None:
    """40 formats × 30 items, 24 cells per format, from the additive model: the width is
    set by the data and the cells look like the model's. (With 16 formats of 12 cells the
    formats' s.d., 0.6 logit there, is not pinned down: its 90% interval spans a factor 11
    under the estimator's weak prior, and the check rightly flags it.)"""
    rows, cols, y = _cells(1, (40, 30), 24)
    d = stats.estimate_spread(rows, cols, y, (40, 30), draws=150).diagnostic
    assert d.cells_per_format == 24 and d.share_two_cells == 1
    assert 0 < d.format_sd_low < d.format_sd < d.format_sd_high
    assert d.width_ratio == pytest.approx(d.format_sd_high / d.format_sd_low)
    assert d.width_ratio < 3 and not d.prior_driven
    for p in (d.ppc_format_p, d.ppc_item_p, d.ppc_interaction_p):
        assert 0.05 <= p <= 0.95
    assert not d.misfit and not d.flagged and d.message == ""


def test_one_cell_per_format_is_prior_driven() -> None:
    rows, cols, y = _cells(2, (30, 30), 1)
    d = stats.estimate_spread(rows, cols, y, (30, 30), draws=100).diagnostic
    assert d.cells_per_format == 1 and d.share_two_cells == 0
    assert d.prior_driven and d.flagged
    # nothing to check per format, nor in 2 × 2 blocks: not computed, never a flag
    assert np.isnan(d.ppc_format_p) and np.isnan(d.ppc_interaction_p)
    assert not d.misfit
    assert "none of the 30 formats has two or more observed cells" in d.message
    assert "at least 2-3 cells per format" in d.message


def test_repeats_of_one_cell_are_not_more_cells_per_format() -> None:
    """One distinct cell per format, each asked 50 times (review of issue 41): the prior and
    the fit check see one cell per format, as without the repeats: a repeat says nothing
    about how far formats differ (the prior's mean grows with the cells per format)."""
    from steadyeval.stats._irt import fit_irt
    from steadyeval.stats._irt_gibbs import _Chain, format_sd_mean

    rows, cols, y = _cells(2, (30, 30), 1)
    many = [np.repeat(a, 50) for a in (rows, cols, y)]
    d = stats.estimate_spread(*many, (30, 30), draws=30).diagnostic
    assert d.cells_per_format == 1 and d.share_two_cells == 0 and d.prior_driven
    assert "none of the 30 formats has two or more observed cells" in d.message
    chain = _Chain(fit_irt(IrtCells.of(*many, 30, 30)))
    assert chain.sd_mean == format_sd_mean(1.0)


def test_too_few_draws_check_nothing() -> None:
    """One to a few draws give p-values of 0 or 1 by chance: they are left empty, never a
    misfit (review of issue 41: draws=2 on additive cells was flagged)."""
    rows, cols, y = _cells(1, (20, 30), 6)
    for draws in (1, 2, 3, 19):
        d = stats.estimate_spread(rows, cols, y, (20, 30), draws=draws).diagnostic
        assert np.isnan([d.ppc_format_p, d.ppc_item_p, d.ppc_interaction_p]).all()
        assert not d.misfit
    d = stats.estimate_spread(rows, cols, y, (20, 30), draws=20).diagnostic
    assert np.isfinite(d.ppc_format_p)


def test_formats_that_barely_differ_are_not_called_prior_driven() -> None:
    """At 6 cells per format with no format effects the s.d.'s interval reaches near 0, so
    its ratio is large; but the data, not the prior, set it (the interval holds little of
    the prior's mass): not flagged. The flag once fired here whatever the cells."""
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(20), 6)
    cols = np.concatenate([rng.choice(30, 6, replace=False) for _ in range(20)])
    y = (rng.random(len(rows)) < 0.6).astype(float)
    d = stats.estimate_spread(rows, cols, y, (20, 30), draws=60).diagnostic
    assert d.width_ratio > 3 and d.prior_mass < 0.25
    assert not d.prior_driven and d.message == ""


def test_the_advice_counts_the_cells_already_observed() -> None:
    """Four formats of 3 cells that differ by about one logit: the s.d.'s interval spans
    a factor over 3 and holds half the prior's mass. Flagged, and the advice does not ask
    for the 2-3 cells per format already there."""
    rng = np.random.default_rng(0)
    theta, beta = rng.normal(0, 1.0, 4), rng.normal(0, 1.0, 12)
    rows = np.repeat(np.arange(4), 3)
    cols = np.concatenate([rng.choice(12, 3, replace=False) for _ in range(4)])
    y = (rng.random(len(rows)) < 1 / (1 + np.exp(-(theta[rows] + beta[cols])))).astype(float)
    d = stats.estimate_spread(rows, cols, y, (4, 12), draws=100).diagnostic
    assert d.prior_driven and d.width_ratio > 3 and d.prior_mass >= 0.25
    assert "2-3 cells" not in d.message
    assert "of the prior's mass" in d.message
    assert "observe more cells per format (3.0 now)" in d.message


def test_formats_that_reverse_the_items_order_are_a_misfit() -> None:
    """Half the formats find the easy items hard (a format × item interaction the additive
    model cannot hold), at 12 cells per format: the format × item check rejects it."""
    rows, cols, y = _cells(0, (20, 20), 12, item_sd=2.5, reversed_share=0.5)
    d = stats.estimate_spread(rows, cols, y, (20, 20), draws=150).diagnostic
    assert d.ppc_interaction_p < 0.05
    assert d.misfit  # (the width may be flagged too: 20 formats of 12 cells)
    assert "additive assumption" in d.message and "too narrow" in d.message


def test_one_format_has_no_width_to_check() -> None:
    d = stats.estimate_spread([0, 0, 0], [0, 1, 2], [1, 0, 1], (1, 3), draws=20).diagnostic
    assert d.format_sd == 0 and np.isnan(d.width_ratio) and not d.prior_driven
    assert np.isnan(d.ppc_interaction_p)


@pytest.mark.filterwarnings("ignore::steadyeval.stats.StatsWarning")  # all correct, ...
@pytest.mark.parametrize(
    ("shape", "per_format"),
    [((15, 10), 10), ((4, 1), 1), ((1, 1), 1), ((20, 2), 2)],
)
def test_every_cell_observed_is_never_flagged(shape: tuple[int, int], per_format: int) -> None:
    """The whole matrix observed: the draws are the data's own (no spread between them), so
    neither the prior nor the model can make them wrong, whatever the cells per format or
    the check's p-values."""
    rows, cols, y = _cells(5, shape, per_format)
    est = stats.estimate_spread(rows, cols, y, shape, draws=40)
    assert np.ptp(est.draws, axis=0).max() == 0
    d = est.diagnostic
    assert not d.prior_driven and not d.misfit and d.message == ""


@pytest.mark.filterwarnings("ignore::steadyeval.stats.StatsWarning")
def test_one_format_with_one_cell_is_not_prior_driven() -> None:
    d = stats.estimate_spread([0], [1], [1], (1, 3), draws=20).diagnostic
    assert d.format_sd == 0 and not d.prior_driven and d.message == ""


def _brute_force_blocks(cells: IrtCells, e: np.ndarray) -> float:
    """4 × Σ over 2 × 2 blocks of observed cells of the product of their residuals."""
    at = {
        (r, c): k
        for k, (r, c) in enumerate(zip(cells.rows.tolist(), cells.cols.tolist(), strict=True))
    }
    total = 0.0
    for (r1, r2), (c1, c2) in itertools.product(
        itertools.combinations(range(cells.n_rows), 2),
        itertools.combinations(range(cells.n_cols), 2),
    ):
        block = [at.get(k) for k in ((r1, c1), (r1, c2), (r2, c1), (r2, c2))]
        if None not in block:
            total += 4 * float(np.prod(e[block]))
    return total


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.integers(1, 5).flatmap(
            lambda m: st.tuples(
                st.just((n, m)),
                st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1)), min_size=1),
                st.integers(0, 2**31),
            )
        )
    )
)
def test_the_checks_statistics_agree_with_a_brute_force(
    case: tuple[tuple[int, int], set[tuple[int, int]], int],
) -> None:
    (n, m), observed, seed = case
    rows, cols = (np.array(v) for v in zip(*sorted(observed), strict=True))
    cells = IrtCells.of(rows, cols, np.zeros(len(rows)), n, m)
    rng = np.random.default_rng(seed)
    e, w = rng.normal(size=(2, len(rows))), rng.uniform(0.05, 0.25, (2, len(rows)))
    pairs = _Pairs.of(cells, rng)
    expected = [_brute_force_blocks(cells, e[k]) for k in range(2)]
    got = [0.0, 0.0] if pairs is None else pairs.statistic(e)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    for unit, size in ((rows, n), (cols, m)):
        by_hand = [
            sum(
                e[k, unit == u].sum() ** 2 / w[k, unit == u].sum()
                for u in range(size)
                if (unit == u).sum() >= 2
            )
            for k in range(2)
        ]
        np.testing.assert_allclose(_level(e, w, unit, size), by_hand, atol=1e-9)


def test_many_pairs_are_checked_on_a_subset_of_the_items() -> None:
    n, m = 120, 80  # every cell observed: 80 × 120 × 119 ordered pairs, over the limit
    rows, cols = (a.ravel() for a in np.mgrid[0:n, 0:m])
    cells = IrtCells.of(rows, cols, np.zeros(n * m), n, m)
    pairs = _Pairs.of(cells, np.random.default_rng(0))
    assert pairs is not None and 0 < len(pairs.left) <= _MAX_PAIRS
    assert len(np.unique(cols[pairs.left])) < m


def test_the_message_gives_only_the_rule_that_fired() -> None:
    """12 formats of one cell and 8 of 20: flagged by the share of formats with two cells.
    The s.d.'s interval spans a factor over 3 but holds little of the prior's mass, so the
    message does not give the ratio as a reason (review: it did)."""
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.arange(12), np.repeat(np.arange(12, 20), 20)])
    cols = np.concatenate(
        [rng.choice(40, 12), *(rng.choice(40, 20, replace=False) for _ in range(8))]
    )
    y = (rng.random(len(rows)) < 0.6).astype(float)
    d = stats.estimate_spread(rows, cols, y, (20, 40), draws=60).diagnostic
    assert d.prior_driven and d.share_two_cells < 0.5
    assert d.prior_mass < 0.25
    assert "two or more observed cells" in d.message and "poorly determined" not in d.message


def test_repeated_answers_are_noted() -> None:
    """The same cells read four times: every copy would count as a trial; the warning says
    so. Repeats whose answers vary (sampled answers) are not noted."""
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(20), 3)
    cols = np.concatenate([rng.choice(30, 3, replace=False) for _ in range(20)])
    y = (rng.random(len(rows)) < 0.6).astype(float)
    with pytest.warns(stats.StatsWarning, match="60 cells are observed more than once"):
        stats.estimate_spread(np.tile(rows, 4), np.tile(cols, 4), np.tile(y, 4), (20, 30), draws=20)
    varied = np.concatenate([y, 1 - y])
    with warnings.catch_warnings():
        warnings.simplefilter("error", stats.StatsWarning)
        stats.estimate_spread(np.tile(rows, 2), np.tile(cols, 2), varied, (20, 30), draws=20)


def test_fewer_cells_than_formats_do_not_narrow_the_prior() -> None:
    """Half a cell per format says less than one: the formats' prior keeps one cell's mean
    (its mean fell to 0.5 logit, and wide spreads came out too narrow off the benchmark's
    shapes: 400 formats × 60 items at 200 cells)."""
    from steadyeval.stats._irt import fit_irt
    from steadyeval.stats._irt_gibbs import _Chain, format_sd_mean

    rng = np.random.default_rng(3)
    rows = rng.permutation(40)[:20]
    cols = rng.integers(0, 30, 20)
    y = rng.integers(0, 2, 20).astype(float)
    chain = _Chain(fit_irt(IrtCells.of(rows, cols, y, 40, 30)))
    assert chain.sd_mean == format_sd_mean(1.0)
    rows2 = np.concatenate([np.arange(40), np.arange(40)])
    cols2 = np.concatenate([np.arange(40) % 30, (np.arange(40) + 7) % 30])
    y2 = rng.integers(0, 2, 80).astype(float)
    assert _Chain(fit_irt(IrtCells.of(rows2, cols2, y2, 40, 30))).sd_mean == format_sd_mean(2.0)


def test_the_estimate_cannot_be_changed_after_the_fact() -> None:
    """The estimate is frozen, and so are its arrays (``draws`` is the distribution's own:
    zeroing it changed ``quantile`` but not ``accuracy``)."""
    est = stats.estimate_spread(ROWS, COLS, Y, (3, 3), draws=20)
    for array in (est.draws, est.accuracy, est.distribution.sorted_accuracy):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    unmasked = stats.estimate_spread(ROWS, COLS, np.ma.array(Y), (3, 3), draws=20)
    np.testing.assert_array_equal(unmasked.draws, est.draws)  # a mask hiding nothing is fine


def test_every_cell_correct_warns_once_and_leaks_no_numpy_warning() -> None:
    """Nothing bounds the intercept when every cell is right: the chain wanders far out,
    where the block move's density overflowed (numpy's RuntimeWarning reached the caller)."""
    rng = np.random.default_rng(0)
    rows, cols = np.divmod(rng.choice(20 * 30, 120, replace=False), 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = stats.estimate_spread(rows, cols, np.ones(120), (20, 30), draws=400)
    assert [type(w.message) for w in caught] == [stats.StatsWarning]
    assert "every observed cell (120) is correct" in str(caught[0].message)
    assert np.all(est.accuracy > 0.99)


def test_cells_on_a_few_items_of_many_are_warned_about() -> None:
    """Every format on the same 3 of 300 items (a hostile review): the other items' spread
    is the prior's, and the intervals missed the truth with nothing said."""
    rows = np.repeat(np.arange(40), 3)
    cols = np.tile([4, 90, 201], 40)
    y = np.random.default_rng(2).integers(0, 2, len(rows))
    with pytest.warns(stats.StatsWarning, match="only 3 of the 300 items have observed cells"):
        stats.estimate_spread(rows, cols, y, (40, 300), draws=20)
    with warnings.catch_warnings():  # ten items say enough: no warning
        warnings.simplefilter("error")
        stats.estimate_spread(rows, np.tile(np.arange(10), 12), y, (40, 300), draws=20)
