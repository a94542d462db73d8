"""The analysis on hand-made correctness tensors: values checkable by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from steadyeval.studies.sensitivity import (
    Correctness,
    NotApplicable,
    PooledStability,
    PromptPreference,
    Rankings,
    UnitStability,
    Verbalization,
    adjusted_scores,
    analyze_tensor,
    draw_subsets,
    rank_consistency_regimes,
    sampled_adjusted_scores,
    template_scores,
)

OPTS = {
    "n_subsets": 200,
    "subset_size": 10,
    "seed": 3,
    "k_templates": None,
    "k_names": None,
    "weights": "uniform",
    "gap": 0.10,
    "n_resamples": 200,
}
NAN = math.nan


def _tensor(
    cells: list[np.ndarray], models: tuple[str, ...] = ("A", "B", "C"), **kw: object
) -> Correctness:
    m, p, x = cells[0].shape[:3]
    return Correctness(
        models=models[:m],
        units=tuple(f"u{u}" for u in range(len(cells))),
        templates=tuple(f"t{k}" for k in range(p)),
        n_names=x,
        cells=tuple(cells),
        facts=tuple(tuple(f"f{i}" for i in range(c.shape[3])) for c in cells),
        **kw,  # type: ignore[arg-type]
    )


def _one_template_winner(seed: int = 0, n_units: int = 60, n_templates: int = 8) -> Correctness:
    """Abilities C > B > A; under template 0 every (unit, model) gets a large idiosyncratic
    effect and A a boost, so A wins only under template 0 and the ranking under it depends
    on which units a subset holds."""
    rng = np.random.default_rng(seed)
    base = np.array([0.45, 0.55, 0.65])
    cells = []
    for _ in range(n_units):
        mean = base[:, None] + rng.normal(0, 0.05, (3, n_templates))
        mean[:, 0] = base + rng.normal(0, 0.3, 3)
        mean[0, 0] += 0.25
        prob = np.clip(mean, 0, 1)
        cells.append((rng.random((3, n_templates, 1, 20)) < prob[:, :, None, None]).astype(float))
    return _tensor(cells)


def test_intervention_raises_rank_consistency() -> None:
    c = _one_template_winner()
    subsets = draw_subsets(len(c.units), 300, 10, seed=0)
    r = rank_consistency_regimes(
        c,
        subsets=subsets,
        seed=0,
        k_templates=3,
        regimes=("original", "random", "intervention", "intervention_sampled"),
    )
    assert r["original"].modal_rank[0] == 1  # A wins under the original template
    assert r["intervention"].modal_ranking.tolist() == [3, 2, 1]  # the abilities' order
    assert r["intervention"].overall > r["original"].overall + 0.3
    assert r["intervention"].overall > r["random"].overall + 0.2
    assert r["intervention_sampled"].overall > r["original"].overall + 0.2
    assert all(v.n_subsets == 300 for v in r.values())


def test_rank_consistency_hand_example() -> None:
    """4 subsets × 3 models. Unit scores (A, B, C): u0 .9 .5 .1, u1 .8 .6 .2, u2 .7 .4 .3,
    u3 .5 .6 .1. Subsets {u0,u1}, {u1,u2}, {u0,u2} rank A>B>C; {u3} ranks B>A>C. A is first in
    3 of 4 (75%), B second in 3 of 4 (75%), C third in 4 of 4 (100%); the ranking A>B>C holds
    in 3 of 4 (75%)."""
    scores = [[0.9, 0.5, 0.1], [0.8, 0.6, 0.2], [0.7, 0.4, 0.3], [0.5, 0.6, 0.1]]
    cells = []
    for row in scores:
        c = np.zeros((3, 1, 1, 10))
        for m, s in enumerate(row):
            c[m, 0, 0, : round(10 * s)] = 1.0
        cells.append(c)
    r = rank_consistency_regimes(
        _tensor(cells), subsets=[[0, 1], [1, 2], [0, 2], [3]], seed=0, regimes=("original",)
    )["original"]
    assert (100 * r.per_model).tolist() == [75.0, 75.0, 100.0]
    assert 100 * r.overall == 75.0
    assert r.ranks.tolist() == [[1, 2, 3], [1, 2, 3], [1, 2, 3], [2, 1, 3]]


def _two_name_unit() -> np.ndarray:
    """1 model, 2 templates, 2 names, 2 facts; fact 1 has one name."""
    c = np.empty((1, 2, 2, 2))
    c[0, 0] = [[1, 0], [0, NAN]]
    c[0, 1] = [[1, 1], [1, NAN]]
    return c


def test_adjusted_exact_by_hand() -> None:
    c = _tensor([_two_name_unit()])
    # fact 0: .5·mean(1, 0) + .5·mean(1, 1) = .75; fact 1: .5·0 + .5·1 = .5 → .625
    assert adjusted_scores(c).tolist() == [[0.625]]
    # weights (.25, .75): fact 0 .25·.5 + .75·1 = .875; fact 1 .75 → .8125
    assert adjusted_scores(c, {"u0": [1, 3]}).tolist() == [[0.8125]]
    assert template_scores(c).tolist() == [[[0.5, 1.0]]]


def test_sampled_with_everything_equals_exact_and_is_seeded() -> None:
    c = _one_template_winner(n_units=5)
    exact = adjusted_scores(c)
    full = sampled_adjusted_scores(c, k_templates=None, k_names=None, seed=1)
    np.testing.assert_allclose(full, exact, rtol=0, atol=1e-12)
    a = sampled_adjusted_scores(c, k_templates=2, k_names=1, seed=7)
    b = sampled_adjusted_scores(c, k_templates=2, k_names=1, seed=7)
    assert a.tolist() == b.tolist()
    assert not np.allclose(a, exact)


def test_verbalization_stability_by_hand() -> None:
    """Unit u0: fact 0 has 3 names, fact 1 has 1 (not counted); unit u1: one fact, 2 names.
    Model A keeps its prediction on u0/f0 under t0 only, and on u1/f0 under both templates:
    3 of 4 (fact, template) pairs stable, 2 of 2 under the original template."""
    c0 = np.zeros((1, 2, 3, 2))
    c0[0, :, :, 1] = [[0, NAN, NAN], [0, NAN, NAN]]
    p0 = np.full((1, 2, 3, 2), -1)
    p0[0, 0, :, 0] = [5, 5, 5]
    p0[0, 1, :, 0] = [5, 6, 5]
    p0[0, :, 0, 1] = [1, 2]
    c1 = np.zeros((1, 2, 3, 1))
    c1[0, :, 2, 0] = NAN
    p1 = np.full((1, 2, 3, 1), -1)
    p1[0, :, :2, 0] = [[3, 3], [4, 4]]
    c = _tensor([c0, c1], models=("A",), predictions=(p0, p1))
    out = analyze_tensor(c, OPTS)
    verb = out.verbalization
    assert isinstance(verb, Verbalization)
    v = verb.per_model["A"]
    # Per unit under the original template: u0 1/1, u1 1/1; over all templates: u0 1/2
    # (f0 changes under t1), u1 2/2. The headline is the mean over units.
    assert verb.per_unit["A"]["u0"] == UnitStability(
        stability=1.0, n=1, stability_all_templates=0.5, n_all_templates=2, skipped_stop_words=0
    )
    assert (v.stability, v.n_units, v.stability_all_templates) == (1.0, 2, 0.75)
    assert v.pooled == PooledStability(
        stability=0.75, n=4, stability_original_template=1.0, n_original_template=2
    )
    assert out.rankings.applicable is False  # one model
    assert out.rank_consistency.applicable is False
    assert any("one model" in n for n in out.notes)


def test_verbalization_per_relation_skips_stop_words() -> None:
    """One template, two relations. Codes: 0 "the", 1 "Paris", 2 "Rome", 3 "Lyon", 4 "The".

    u0: f0 Paris/Paris (stable), f1 Paris/Rome (not), f2 the/Paris/Paris (stable once "the"
    is skipped), f3 the/Paris (one prediction left: skipped). u1: f0 Lyon/Lyon (stable),
    f1 one name (not counted), f2 The/Lyon (not stable: "The" is no stop word, matching is
    case-sensitive as in the authors' code).
    """
    texts = ("the", "Paris", "Rome", "Lyon", "The")
    p0 = np.full((1, 1, 3, 4), -1)
    p0[0, 0, :2, 0] = [1, 1]
    p0[0, 0, :2, 1] = [1, 2]
    p0[0, 0, :, 2] = [0, 1, 1]
    p0[0, 0, :2, 3] = [0, 1]
    p1 = np.full((1, 1, 3, 3), -1)
    p1[0, 0, :2, 0] = [3, 3]
    p1[0, 0, 0, 1] = 3
    p1[0, 0, :2, 2] = [4, 3]
    cells = [np.where(p >= 0, 0.0, NAN) for p in (p0, p1)]
    c = _tensor(cells, models=("A",), predictions=(p0, p1), prediction_texts=texts)
    stops = ["the", "a", "of"]
    out = analyze_tensor(c, {**OPTS, "stop_words": stops}).verbalization
    assert isinstance(out, Verbalization)
    units = out.per_unit["A"]
    assert (units["u0"].stability, units["u0"].n) == (2 / 3, 3)
    assert units["u0"].skipped_stop_words == 1
    assert (units["u1"].stability, units["u1"].n) == (0.5, 2)
    v = out.per_model["A"]
    assert v.stability == pytest.approx((2 / 3 + 1 / 2) / 2)  # the mean over relations
    assert v.pooled.stability == pytest.approx(3 / 5)  # stable facts / facts
    assert (v.skipped_stop_words, out.n_stop_words) == (1, 3)
    # Without the rule: u0 1/4 (only f0), u1 1/2; pooled 2/6.
    verb = analyze_tensor(c, {**OPTS, "stop_words": []}).verbalization
    assert isinstance(verb, Verbalization)
    plain = verb.per_model["A"]
    assert plain.stability == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert plain.pooled.stability == pytest.approx(2 / 6)
    assert plain.skipped_stop_words == 0


def test_prompt_preference_and_rankings() -> None:
    """Two models, two units, three templates; the ranking flips with the template on u1."""
    u0 = np.zeros((2, 3, 1, 10))
    u0[0, :, 0, :6] = 1  # A: .6 .6 .6
    u0[1, :, 0, :2] = 1  # B: .2 .2 .2
    u1 = np.zeros((2, 3, 1, 10))
    u1[0, 0, 0, :9] = 1  # A: .9 .1 .5
    u1[0, 1, 0, :1] = 1
    u1[0, 2, 0, :5] = 1
    u1[1, :, 0, :4] = 1  # B: .4 .4 .4
    c = _tensor([u0, u1], models=("A", "B"))
    out = analyze_tensor(c, {**OPTS, "subset_size": 1})
    pp = out.prompt_preference
    assert isinstance(pp, PromptPreference)
    a1 = pp.per_unit["A"]["u1"]
    assert a1.scores == pytest.approx([0.9, 0.1, 0.5])
    assert (a1.best, a1.worst, a1.best_template) == (0.9, 0.1, "t0")
    assert a1.gap == pytest.approx(0.8)
    # std across templates of (.9, .1, .5): ddof 0 by default (the authors' np.std)
    assert pp.std_ddof == 0
    assert a1.std == pytest.approx(math.sqrt(0.32 / 3))
    sample = analyze_tensor(c, {**OPTS, "subset_size": 1, "ddof": 1}).prompt_preference
    assert isinstance(sample, PromptPreference)
    assert (sample.std_ddof, sample.per_unit["A"]["u1"].std) == (1, pytest.approx(0.4))
    assert sample.per_model["A"].mean_std == pytest.approx(0.2)  # (0 + .4) / 2
    assert pp.per_model["A"].share_gap_above == 0.5
    assert pp.per_model["B"].share_gap_above == 0.0
    assert a1.max_p.estimate == pytest.approx(0.9)
    assert a1.cps.estimate == pytest.approx((1 - (0.9 - 0.5)) * 0.9)
    rk = out.rankings
    assert isinstance(rk, Rankings)
    assert (rk.units_ranking_changes, rk.share_units_ranking_changes) == (1, 0.5)
    assert rk.per_unit["u0"].kendall_w == pytest.approx(1.0)
    assert rk.per_unit["u1"].n_rankings == 2
    assert out.verbalization == NotApplicable(reason="no aliases in the data (K_x = 1)")
    adj = out.adjusted.per_model["A"]
    assert adj.original == pytest.approx(0.75)
    assert adj.exact == pytest.approx((0.6 + 0.5) / 2)


def test_tensor_shape_errors() -> None:
    with pytest.raises(ValueError, match="name 0"):
        _tensor([np.full((1, 1, 1, 1), NAN)])
    with pytest.raises(ValueError, match="shape"):
        Correctness(("A",), ("u",), ("t0",), 1, (np.zeros((1, 2, 1, 1)),), (("f",),))


def test_random_regime_draws_a_template_per_model_and_a_name_per_fact() -> None:
    """One unit per subset. Unit 0 (one name per fact): A is right under template 0 only, B
    on half the facts under both templates, so A ranks first exactly when it draws template
    0 (half the subsets). Unit 1 (two names per fact, templates alike): A is right under name 0
    only, so its score is the share of facts that drew name 0 (about a half, never 0 or 1)."""
    from steadyeval.studies.sensitivity._tensor import _random_regime

    one = np.full((2, 2, 2, 40), NAN)  # name 1 never asked
    one[:, :, 0] = 0.0
    one[0, 0, 0] = 1.0
    one[1, :, 0, :20] = 1.0
    two = np.zeros((2, 2, 2, 40))
    two[0, :, 0] = 1.0
    two[1] = 0.5
    c = _tensor([one, two], models=("A", "B"))
    subsets = [np.array([k % 2]) for k in range(2000)]
    avail = [c.names_available(u) for u in range(2)]
    scores, blocks = _random_regime(c, subsets, np.random.default_rng(0), avail)
    assert scores.shape == (2000, 2) and [b.tolist() for b in blocks[:2]] == [[0], [1]]
    a0 = scores[0::2, 0]
    assert set(a0.tolist()) == {0.0, 1.0} and abs(a0.mean() - 0.5) < 0.05
    assert (scores[0::2, 1] == 0.5).all()
    a1 = scores[1::2, 0]
    assert a1.min() > 0.0 and a1.max() < 1.0 and abs(a1.mean() - 0.5) < 0.02
    r = rank_consistency_regimes(c, subsets=subsets[0::2], seed=0, regimes=("random",))["random"]
    assert abs(r.per_model[0] - 0.5) < 0.05
