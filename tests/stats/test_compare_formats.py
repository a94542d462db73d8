"""stats.compare_formats: the crossed model of models × formats × items (issue 44)."""

from __future__ import annotations

import numpy as np
import pytest

from steadyeval import stats


def _pair(seed: int, shift: float, n_cells: int = 300, f: int = 40, i: int = 50) -> tuple:
    """Two models on the same cells: shared format and item effects, a model × format
    interaction, and B = A + ``shift`` logits. Returns the cells and the true accuracies
    (models, formats) of the completed 0/1 matrix."""
    rng = np.random.default_rng(seed)
    fmt, item = rng.normal(0, 1, f), rng.normal(0, 1.2, i)
    inter = rng.normal(0, 0.4, (2, f))
    logit = 0.3 + fmt[None, :, None] + item[None, None, :] + inter[:, :, None]
    logit[1] += shift
    truth = rng.random(logit.shape) < 1 / (1 + np.exp(-logit))
    rows, cols = np.divmod(rng.choice(f * i, n_cells, replace=False), i)
    models = np.repeat([0, 1], n_cells)
    r, c = np.tile(rows, 2), np.tile(cols, 2)
    return models, r, c, truth[models, r, c], (2, f, i), truth.mean(axis=2)


def test_a_large_difference_is_found_and_its_interval_covers_the_truth() -> None:
    models, r, c, y, shape, acc = _pair(1, 1.2)
    cmp = stats.compare_formats(models, r, c, y, shape, draws=150, seed=0)
    pair = cmp.pair(1, 0)
    truth = float((acc[1] - acc[0]).mean())
    assert pair.difference.low <= truth <= pair.difference.high
    assert pair.difference.low > 0 and pair.prob_positive > 0.99
    assert pair.p_better.estimate > 0.8
    assert cmp.rankings()[0] == ((1, 0), pytest.approx(cmp.rankings()[0][1]))
    assert cmp.rankings()[0][0] == (1, 0)
    # the reverse pair is the mirror image
    back = cmp.pair(0, 1)
    assert back.difference.estimate == pytest.approx(-pair.difference.estimate)
    assert back.p_better.estimate == pytest.approx(1 - pair.p_better.estimate)


def test_identical_models_are_not_told_apart() -> None:
    models, r, c, y, shape, _ = _pair(2, 0.0)
    y = np.tile(y[: len(y) // 2], 2)  # B answers exactly as A
    cmp = stats.compare_formats(models, r, c, y, shape, draws=150, seed=0)
    pair = cmp.pair(0, 1)
    assert pair.difference.low < 0 < pair.difference.high
    assert 0.05 < pair.prob_positive < 0.95
    assert pair.per_format.shape == (shape[1], 3)
    assert np.all(pair.per_format[:, 1] <= pair.per_format[:, 2])


def test_three_models_rank_probabilities_sum_to_one() -> None:
    rng = np.random.default_rng(3)
    f, i, n = 20, 30, 120
    rows, cols = np.divmod(rng.choice(f * i, n, replace=False), i)
    models = np.repeat([0, 1, 2], n)
    r, c = np.tile(rows, 3), np.tile(cols, 3)
    y = rng.random(3 * n) < np.array([0.3, 0.5, 0.8])[models]
    cmp = stats.compare_formats(models, r, c, y, (3, f, i), draws=100, seed=1)
    ranks = cmp.rankings()
    assert sum(p for _, p in ranks) == pytest.approx(1.0)
    assert ranks[0][0] == (2, 1, 0)
    assert cmp.draws.shape == (100, 3, f)
    assert cmp.accuracy.shape == (3, 3)


def test_same_seed_same_draws_whether_or_not_progress_is_told() -> None:
    from steadyeval.stats._irt_gibbs import BURN_IN, THIN

    models, r, c, y, shape, _ = _pair(4, 0.5, n_cells=100)
    told: list[tuple[int, int]] = []
    one = stats.compare_formats(models, r, c, y, shape, draws=60, seed=7)
    two = stats.compare_formats(
        models, r, c, y, shape, draws=60, seed=7, progress=lambda *a: told.append(a)
    )
    assert np.array_equal(one.draws, two.draws)
    total = BURN_IN + THIN * 60
    assert told == [(k, total) for k in range(1, total + 1)]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"shape": (2, 40)}, "three positive integers"),
        ({"shape": (0, 40, 50)}, "three positive integers"),
        ({"shape": {2, 40, 50}}, "in that order"),
        ({"shape": (1, 40, 50)}, r"models must be in \[0, 1\)"),
        ({"shape": (3, 40, 50)}, "model 2 has no observed cell"),
        ({"models": "short"}, "one entry per observed cell"),
        ({"models": "float"}, "integer indices"),
        ({"correct": "two"}, "only 0 and 1"),
        ({"draws": 0}, "draws"),
        ({"confidence": 1.5}, "confidence"),
        ({"progress": "yes"}, "progress must be None or a callable; got str 'yes'"),
        ({"shape": (2, 40, 19_961)}, "40 formats \\+ 19,961 items is over the estimator.s limit"),
        ({"shape": (3, 1_000, 3_001)}, "3 models × 1,000 formats × 3,001 items = 9,003,000 cells"),
        # as estimate_spread: what numpy would misread (an imaginary part, a masked value)
        ({"covariates": np.eye(40, 3) + 1j}, "covariates must be real numbers; got complex"),
        ({"covariates": np.eye(40, 3).astype(str)}, "covariates must be real numbers; got text"),
        ({"covariates": np.ma.array(np.eye(40, 3), mask=np.eye(40, 3))}, "covariates has masked"),
    ],
)
def test_bad_input_says_what_to_do(change: dict, match: str) -> None:
    models, r, c, y, shape, _ = _pair(5, 0.0, n_cells=50)
    kw = {"models": models, "rows": r, "cols": c, "correct": y, "shape": shape}
    kw.update(change)
    if change.get("models") == "short":
        kw["models"] = models[:-1]
    if change.get("models") == "float":
        kw["models"] = models + 0.5
    if change.get("correct") == "two":
        kw["correct"] = np.where(y, 2, 0)
    extra = {k: kw.pop(k) for k in ("draws", "confidence", "progress") if k in kw}
    with pytest.raises(stats.StatsInputError, match=match):
        stats.compare_formats(**kw, **extra)


def test_pair_checks_its_indices() -> None:
    models, r, c, y, shape, _ = _pair(6, 0.0, n_cells=60)
    cmp = stats.compare_formats(models, r, c, y, shape, draws=50, seed=0)
    for a, b in ((0, 0), (0, 2), (True, 1), (-1, 0)):
        with pytest.raises(stats.StatsInputError):
            cmp.pair(a, b)


def test_the_comparison_cannot_be_changed_after_the_fact() -> None:
    """Its draws were writable: ``fc.draws[:, 1] += 0.3`` turned a pair's difference from
    −0.11 to +0.19 (a review of issue 41's API)."""
    models, r, c, y, shape, _ = _pair(5, 0.0, n_cells=50)
    fc = stats.compare_formats(models, r, c, y, shape, draws=20)
    for array in (fc.draws, fc.accuracy):
        with pytest.raises(ValueError, match="read-only"):
            array[..., 0] = 0
