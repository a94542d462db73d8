"""Crossed variance components (item, condition, interaction, sampling) and projections."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from steadyeval import stats

TRUTH = np.array([1.0, 0.5, 0.5, 0.8]) ** 2  # item, condition, interaction, sampling


def _grid(n_i: int, n_j: int, n_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.meshgrid(np.arange(n_i), np.arange(n_j), np.arange(n_k), indexing="ij")


def _gaussian(seed: int, n_i: int = 60, n_j: int = 8, n_k: int = 6) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    i, j, _ = _grid(n_i, n_j, n_k)
    sa, sb, sab, se = np.sqrt(TRUTH)
    y = (
        rng.normal(0, sa, n_i)[i]
        + rng.normal(0, sb, n_j)[j]
        + rng.normal(0, sab, (n_i, n_j))[i, j]
        + rng.normal(0, se, (n_i, n_j, n_k))
    )
    return y.ravel(), i.ravel(), j.ravel()


def _raw(vc: stats.VarianceComponents) -> np.ndarray:
    return np.array([c.raw for c in vc.components])


def _anova(y: np.ndarray) -> tuple[float, float, float, float]:
    """Two-way random-effects ANOVA (expected mean squares) of a balanced I × J × K array."""
    n_i, n_j, n_k = y.shape
    m, mi, mj, mij = y.mean(), y.mean((1, 2)), y.mean((0, 2)), y.mean(2)
    ms_a = n_j * n_k * np.sum((mi - m) ** 2) / (n_i - 1)
    ms_b = n_i * n_k * np.sum((mj - m) ** 2) / (n_j - 1)
    ms_ab = n_k * np.sum((mij - mi[:, None] - mj[None, :] + m) ** 2) / ((n_i - 1) * (n_j - 1))
    ms_e = np.sum((y - mij[..., None]) ** 2) / (n_i * n_j * (n_k - 1)) if n_k > 1 else np.nan
    return (
        (ms_a - ms_ab) / (n_j * n_k),
        (ms_b - ms_ab) / (n_i * n_k),
        (ms_ab - ms_e) / n_k,
        ms_e,
    )


def test_balanced_design_equals_two_way_anova_expected_mean_squares() -> None:
    y, i, j = _gaussian(1)
    vc = stats.variance_components(y, i, j, n_resamples=50)
    np.testing.assert_allclose(_raw(vc), _anova(y.reshape(60, 8, 6)), rtol=1e-10)
    assert (vc.n_items, vc.n_conditions, vc.n_cells, vc.n_observations) == (60, 8, 480, 2880)
    assert vc.samples_per_cell == 6.0 and vc.identified


def test_balanced_design_equals_statsmodels_anova_table() -> None:
    sm = pytest.importorskip("statsmodels.formula.api")
    anova_lm = pytest.importorskip("statsmodels.stats.anova").anova_lm
    pd = pytest.importorskip("pandas")
    y, i, j = _gaussian(2, n_i=12, n_j=5, n_k=3)
    frame = pd.DataFrame({"y": y, "i": i, "j": j})
    table = anova_lm(sm.ols("y ~ C(i) * C(j)", data=frame).fit())
    ms = table["sum_sq"] / table["df"]
    ms_a, ms_b, ms_ab, ms_e = ms["C(i)"], ms["C(j)"], ms["C(i):C(j)"], ms["Residual"]
    want = [(ms_a - ms_ab) / 15, (ms_b - ms_ab) / 36, (ms_ab - ms_e) / 3, ms_e]
    vc = stats.variance_components(y, i, j, n_resamples=20)
    np.testing.assert_allclose(_raw(vc), want, rtol=1e-9)


def _brute_force(y: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Solve the moment equations from an explicit loop over all ordered pairs."""
    sums = {key: [0.0, 0] for key in ("none", "item", "cond", "cell")}
    for r, s in itertools.permutations(range(y.size), 2):
        key = {(False, False): "none", (True, False): "item", (False, True): "cond"}.get(
            (bool(i[r] == i[s]), bool(j[r] == j[s])), "cell"
        )
        sums[key][0] += (y[r] - y[s]) ** 2 / 2
        sums[key][1] += 1
    u = {k: v[0] / v[1] for k, v in sums.items()}
    return np.array(
        [
            u["none"] - u["item"],
            u["none"] - u["cond"],
            u["item"] + u["cond"] - u["none"] - u["cell"],
            u["cell"],
        ]
    )


def test_unbalanced_design_equals_explicit_pairwise_moments() -> None:
    rng = np.random.default_rng(3)
    rows = [
        (a, b, float(rng.integers(0, 2)))
        for a in range(7)
        for b in range(4)
        if rng.uniform() > 0.25  # missing cells
        for _ in range(int(rng.integers(1, 5)))  # 1 to 4 samples per cell
    ]
    i, j, y = (np.array(c) for c in zip(*rows, strict=True))
    vc = stats.variance_components(y, i, j, n_resamples=20)
    np.testing.assert_allclose(_raw(vc), _brute_force(y, i, j), rtol=1e-9, atol=1e-12)
    assert vc.n_cells < 28


def test_gaussian_simulation_recovers_components_within_intervals() -> None:
    y, i, j = _gaussian(4)
    vc = stats.variance_components(y, i, j, n_resamples=500, seed=1)
    for comp, truth in zip(vc.components, TRUTH, strict=True):
        assert comp.low <= truth <= comp.high, comp
        assert comp.low <= comp.estimate <= comp.high
    assert sum(c.share for c in vc.components) == pytest.approx(1.0)
    assert vc.interaction_plus_sampling.estimate == pytest.approx(
        vc.interaction.estimate + vc.sampling.estimate
    )


def test_coverage_and_bias_over_replications() -> None:
    """40 replications of 60 items × 8 conditions × 6 samples. The moment estimates are
    unbiased (mean within 3 Monte Carlo s.e. of the truth) and the intervals cover near or
    above nominal. The bands fail for a wrong method: counting a level drawn twice as two
    levels gives interaction coverage 0.80; a bootstrap over items only gives condition
    coverage 0.33."""
    reps = 40
    raw = np.empty((reps, 4))
    covered = np.zeros(4)
    for r in range(reps):
        vc = stats.variance_components(*_gaussian(100 + r), n_resamples=300, seed=r)
        raw[r] = _raw(vc)
        covered += [c.low <= t <= c.high for c, t in zip(vc.components, TRUTH, strict=True)]
    mc_se = raw.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(raw.mean(axis=0) - TRUTH) < 3 * mc_se)
    coverage = covered / reps
    assert coverage[0] >= 0.85 and coverage[2] >= 0.85 and coverage[3] >= 0.85, coverage
    assert coverage[1] >= 0.75, coverage  # 8 conditions: the interval rests on 8 values


def _population_truth(p: np.ndarray) -> np.ndarray:
    """Components of a finite population of cell probabilities (items × conditions)."""
    m, mi, mj = p.mean(), p.mean(axis=1), p.mean(axis=0)
    inter = p - mi[:, None] - mj[None, :] + m
    return np.array([np.var(mi), np.var(mj), np.mean(inter**2), np.mean(p * (1 - p))])


def test_bernoulli_components_match_the_cell_probabilities() -> None:
    rng = np.random.default_rng(5)
    logit = (
        rng.normal(0, 1.2, 2000)[:, None]
        + rng.normal(0, 0.5, 200)[None, :]
        + rng.normal(0, 0.6, (2000, 200))
    )
    population = 1 / (1 + np.exp(-logit))
    truth = _population_truth(population)
    items = rng.choice(2000, 60, replace=False)
    conds = rng.choice(200, 8, replace=False)
    p = population[np.ix_(items, conds)]
    i, j, _ = _grid(60, 8, 6)
    # conditional on these cells the estimates target the cells' own pair moments
    cell_truth = _brute_force_cells(p)
    raw = []
    for r in range(40):
        y = (np.random.default_rng(r).uniform(size=(60, 8, 6)) < p[..., None]).astype(float)
        vc = stats.variance_components(y.ravel(), i.ravel(), j.ravel(), n_resamples=300, seed=r)
        raw.append(_raw(vc))
        if r == 0:
            for comp, t in zip(vc.components, truth, strict=True):
                assert comp.low <= t <= comp.high, (comp, t)
            assert 0 <= vc.grand_mean <= 1
    raw_arr = np.array(raw)
    mc_se = raw_arr.std(axis=0, ddof=1) / np.sqrt(len(raw))
    assert np.all(np.abs(raw_arr.mean(axis=0) - cell_truth) < 3 * mc_se + 1e-12)


def _brute_force_cells(p: np.ndarray) -> np.ndarray:
    """E[estimates | p]: pair moments of the cell probabilities plus the mean Bernoulli
    variance, each pair of cells weighted as the estimator weights it (balanced)."""
    n_i, n_j = p.shape
    d = (p.reshape(-1, 1) - p.reshape(1, -1)) ** 2 / 2
    same_i = np.repeat(np.arange(n_i), n_j)[:, None] == np.repeat(np.arange(n_i), n_j)[None, :]
    same_j = np.tile(np.arange(n_j), n_i)[:, None] == np.tile(np.arange(n_j), n_i)[None, :]
    v = np.mean(p * (1 - p))
    u_item = d[same_i & ~same_j].mean() + v
    u_cond = d[~same_i & same_j].mean() + v
    u_none = d[~same_i & ~same_j].mean() + v
    return np.array([u_none - u_item, u_none - u_cond, u_item + u_cond - u_none - v, v])


def test_missing_cells_and_unequal_samples_stay_unbiased() -> None:
    reps = 30
    raw = np.empty((reps, 4))
    for r in range(reps):
        y, i, j = _gaussian(200 + r, n_i=40, n_j=8, n_k=5)
        rng = np.random.default_rng(r)
        cell_kept = rng.uniform(size=(40, 8)) > 0.3
        sample_kept = rng.uniform(size=y.size) > 0.35  # 1 to 5 samples per kept cell
        keep = cell_kept[i, j] & sample_kept
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            vc = stats.variance_components(y[keep], i[keep], j[keep], n_resamples=100, seed=r)
        raw[r] = _raw(vc)
    mc_se = raw.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(raw.mean(axis=0) - TRUTH) < 3 * mc_se)


def test_one_sample_per_cell_reports_only_the_sum() -> None:
    y, i, j = _gaussian(6, n_i=30, n_j=6, n_k=1)
    with pytest.warns(stats.StatsWarning, match="not separately identified"):
        vc = stats.variance_components(y, i, j, n_resamples=100)
    assert not vc.identified
    assert np.isnan(vc.interaction.estimate) and np.isnan(vc.sampling.estimate)
    assert np.isnan(vc.interaction.low) and np.isnan(vc.sampling.share)
    s_a, s_b, _, _ = _anova(y.reshape(30, 6, 1))
    y2 = y.reshape(30, 6)
    resid = y2 - y2.mean(1, keepdims=True) - y2.mean(0, keepdims=True) + y2.mean()
    ms_ab = np.sum(resid**2) / (29 * 5)
    np.testing.assert_allclose(
        [vc.item.raw, vc.condition.raw, vc.interaction_plus_sampling.raw],
        [s_a, s_b, ms_ab],
        rtol=1e-10,
    )
    assert vc.interaction_plus_sampling.low <= vc.interaction_plus_sampling.high
    with pytest.warns(stats.StatsWarning, match="not identified"):
        proj = stats.projected_se(vc, 30, 6, 1)
    assert np.isfinite(proj.se) and np.isnan(proj.se_sampling)
    with pytest.raises(stats.StatsInputError, match="one sample per cell"):
        stats.samples_needed(vc, 30, 6, 0.05)


def test_negative_estimates_are_truncated_and_raw_kept() -> None:
    rng = np.random.default_rng(7)
    i, j, _ = _grid(30, 5, 4)
    y = rng.normal(size=i.shape).ravel() + rng.normal(0, 1, 30)[i.ravel()]  # no condition part
    vc = stats.variance_components(y, i.ravel(), j.ravel(), n_resamples=200)
    negative = [c for c in vc.components if c.raw < 0]
    assert negative, "seed chosen so that a component estimate is negative"
    for c in negative:
        assert c.estimate == 0.0 and c.share == 0.0 and c.low == 0.0


def test_bootstrap_is_reproducible_from_the_seed() -> None:
    y, i, j = _gaussian(8, n_i=20, n_j=6, n_k=3)
    a = stats.variance_components(y, i, j, n_resamples=100, seed=3)
    b = stats.variance_components(y, i, j, n_resamples=100, seed=3)
    c = stats.variance_components(y, i, j, n_resamples=100, seed=4)
    assert a == b and a.item.low != c.item.low


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"values": [1.0, np.nan, 0.0, 1.0]}, "NaN"),
        ({"item": [0, 0, 1]}, "one label per observation"),
        ({"item": [0, 0, 0, 0]}, "at least 2 items and 2 conditions"),
        ({"condition": ["a", "a", "a", "a"]}, "at least 2 items and 2 conditions"),
        ({"condition": [0, 0, 1, 1], "item": [0, 0, 1, 1]}, "not identified"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"seed": None}, "seed"),
        ({"confidence": 1.5}, "confidence"),
    ],
)
def test_input_validation(change: dict[str, object], match: str) -> None:
    kwargs: dict[str, object] = {
        "values": [1.0, 0.0, 0.0, 1.0],
        "item": [0, 0, 1, 1],
        "condition": [0, 1, 0, 1],
    }
    kwargs.update(change)
    with pytest.raises(stats.StatsInputError, match=match):
        stats.variance_components(**kwargs)  # type: ignore[arg-type]


def test_projected_se_follows_the_formula_and_matches_rerun_noise() -> None:
    rng = np.random.default_rng(9)
    p = 1 / (1 + np.exp(-(rng.normal(0, 1.5, 50)[:, None] + rng.normal(0, 0.5, (1, 6)))))
    i, j, _ = _grid(50, 6, 4)
    y = (rng.uniform(size=(50, 6, 4)) < p[..., None]).astype(float)
    vc = stats.variance_components(y.ravel(), i.ravel(), j.ravel(), n_resamples=100)
    s_a, s_b, s_ab, s_e = (c.estimate for c in vc.components)
    r = stats.projected_se(vc, 200, 10, 3)
    assert r.se**2 == pytest.approx(s_a / 200 + s_b / 10 + s_ab / 2000 + s_e / 6000)
    assert r.se_sampling**2 == pytest.approx(s_e / 6000)
    assert r.se_floor**2 == pytest.approx(r.se**2 - r.se_sampling**2)
    # rerunning the same cells: the spread of the mean is sqrt(mean p(1-p) / (I J K))
    same = stats.projected_se(vc, 50, 6, 4).se_sampling
    assert same == pytest.approx(np.sqrt(np.mean(p * (1 - p)) / 1200), rel=0.1)


def test_samples_needed_is_the_smallest_sufficient_k() -> None:
    y, i, j = _gaussian(10, n_i=30, n_j=6, n_k=4)
    vc = stats.variance_components(y, i, j, n_resamples=50)
    for scope in ("fresh", "rerun"):
        floor = 0.0 if scope == "rerun" else stats.projected_se(vc, 100, 10, 1).se_floor
        target = floor + (0.004 if scope == "rerun" else 0.0002)
        need = stats.samples_needed(vc, 100, 10, target, scope=scope)
        assert need.n_samples is not None and need.n_samples > 1

        def se(k: int, scope: str = scope) -> float:
            proj = stats.projected_se(vc, 100, 10, k)
            return proj.se if scope == "fresh" else proj.se_sampling

        assert se(need.n_samples) <= target < se(need.n_samples - 1)
    unreachable = stats.samples_needed(vc, 30, 6, 0.01)
    assert unreachable.n_samples is None and unreachable.limiting == "condition"
    assert "add conditions" in unreachable.message
    assert stats.samples_needed(vc, 30, 6, 10.0).n_samples == 1
    with pytest.raises(stats.StatsInputError, match="target_se"):
        stats.samples_needed(vc, 30, 6, 0.0)
    with pytest.raises(stats.StatsInputError, match="scope"):
        stats.samples_needed(vc, 30, 6, 0.1, scope="new")  # type: ignore[arg-type]
    with pytest.raises(stats.StatsInputError, match="variance_components"):
        stats.projected_se(object(), 1, 1, 1)  # type: ignore[arg-type]


def test_shares_of_the_four_parts_add_up_to_one_when_a_part_is_truncated() -> None:
    """A negative raw interaction is shown as 0: the total is the sum of the parts shown,
    so the shares add up to 1 (they did not when the total used the raw sum)."""
    rng = np.random.default_rng(3)
    n_items, n_conds, k = 30, 4, 4
    p = np.clip(0.5 + rng.normal(0, 0.2, (n_items, 1)), 0, 1) * np.ones((1, n_conds))
    y = (rng.random((n_items, n_conds, k)) < p[:, :, None]).astype(float).ravel()
    item = np.repeat(np.arange(n_items), n_conds * k)
    cond = np.tile(np.repeat(np.arange(n_conds), k), n_items)
    found = None
    for seed in range(20):
        y = (
            (np.random.default_rng(seed).random((n_items, n_conds, k)) < p[:, :, None])
            .astype(float)
            .ravel()
        )
        vc = stats.variance_components(y, item, cond, n_resamples=50)
        if vc.interaction.raw < 0:
            found = vc
            break
    assert found is not None
    assert sum(c.share for c in found.components) == pytest.approx(1.0)
    assert found.total == pytest.approx(sum(c.estimate for c in found.components))
