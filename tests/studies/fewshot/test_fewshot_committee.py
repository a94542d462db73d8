"""Issue 40: iPET's committees as FewNLU builds them (own predecessor left out, a seeded draw
of max(round(n*p), 1), unweighted mean; FewNLU's brother-fold set for cross-split) and PET's
rule as a setting (round(n*p) with no floor, weighted by accuracy before training)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steadyeval import ConfigError, load_backend
from steadyeval.items import Item
from steadyeval.studies.fewshot import get_method, get_task
from steadyeval.studies.fewshot._committee import (
    committee_candidates,
    committee_size,
    draw_committee,
    merge_scores,
)
from steadyeval.studies.fewshot._methods import MethodContext
from steadyeval.studies.fewshot._semi import Chain
from steadyeval.studies.fewshot._trainers import BASES
from steadyeval.train import CheckpointStore


def _split(tag: str) -> tuple[tuple[Item, ...], tuple[Item, ...]]:
    def items(part: str) -> tuple[Item, ...]:
        return tuple(
            Item(id=f"{tag}-{part}-{i}", question="it was good", context="the movie was good",
                 options=("entailment", "not_entailment"), gold_options=(i % 2,),
                 metadata={"premise": "the movie was good", "hypothesis": "it was good"})
            for i in range(2)
        )  # fmt: skip

    return items("train"), items("dev")


def _chain(
    tmp_path: Path, model: Path, task: str, splits: list[str], strategy: str, **h: Any
) -> Chain:
    ctx = MethodContext(
        base=load_backend(f"hf:{model}"), store=CheckpointStore(tmp_path), base_dir=lambda: model
    )
    t = get_task(task)
    members = tuple((p, 0) for p in t.patterns)
    hp = {
        "committee": "fewnlu",
        "committee_share": 1.0,
        "max_length": 32,
        "verbalizer": "yes-no",
        **h,
    }
    return Chain(
        "ipet", ctx, t, hp, BASES["pet"], strategy,  # type: ignore[arg-type]
        tuple(_split(s) for s in splits), (), members, 2,
    )  # fmt: skip


# -- the pure rules ----------------------------------------------------------------------------
def test_committee_sizes_follow_fewnlu_and_pet() -> None:
    # FewNLU (augmentation.py:179): max(round(n*p), 1); PET (modeling.py:714): round(n*p).
    # Python's round is half to even: round(2.5) = 2, round(0.5) = 0, round(1.5) = 2.
    cases = [(2, 1.0, 2, 2), (3, 0.5, 2, 2), (5, 0.5, 2, 2), (3, 0.25, 1, 1), (2, 0.25, 1, 0),
             (11, 0.25, 3, 3), (1, 0.5, 1, 0), (6, 0.25, 2, 2)]  # fmt: skip
    for n, p, fewnlu, pet in cases:
        assert committee_size(n, p, "fewnlu") == fewnlu, (n, p)
        assert committee_size(n, p, "pet") == pet, (n, p)
    with pytest.raises(ValueError, match="committee_share"):
        committee_size(3, 0.0, "fewnlu")


def test_candidates_leave_out_only_the_own_predecessor() -> None:
    # Single-split (FewNLU augmentation.py:132-137): the same split, every other member.
    assert committee_candidates((1, 0, 0), 1, 3, cross=False) == [(0, 0, 1), (0, 0, 2)]
    assert committee_candidates((2, 0, 1), 1, 3, cross=False) == [(1, 0, 0), (1, 0, 2)]
    assert committee_candidates((0, 0, 1), 1, 3, cross=False) == []
    # FewNLU's brother-fold set (augmentation.py:138-143) for 2 patterns x 3 splits: the own
    # split's other pattern is kept, every model of the two other splits too.
    assert committee_candidates((1, 1, 0), 3, 2, cross=True) == [
        (0, 0, 0), (0, 0, 1), (0, 1, 1), (0, 2, 0), (0, 2, 1),
    ]  # fmt: skip
    # Without the brother folds the same node has one candidate.
    assert committee_candidates((1, 1, 0), 3, 2, cross=False) == [(0, 1, 1)]


def test_draws_are_seeded_subsets_of_the_stated_size() -> None:
    cands = list("abcde")
    seen: set[str] = set()
    for seed in range(40):
        a = draw_committee(cands, 0.5, "fewnlu", np.random.default_rng(seed), "x")
        assert a == draw_committee(cands, 0.5, "fewnlu", np.random.default_rng(seed), "x")
        assert len(a) == 2 and len(set(a)) == 2 and set(a) <= set(cands)
        assert a == sorted(a)  # kept in the candidates' order
        seen |= set(a)
    assert seen == set(cands)  # every candidate can be drawn
    with pytest.raises(ConfigError, match=r"^m: PET's committee rule takes round\(2 x 0.25\) = 0"):
        draw_committee(["a", "b"], 0.25, "pet", np.random.default_rng(0), "m")
    with pytest.raises(ConfigError, match=r"^m: no generation g-1 model but its own predecessor"):
        draw_committee([], 1.0, "fewnlu", np.random.default_rng(0), "m")


def test_committee_labels_are_the_mean_and_pets_weighted_mean() -> None:
    a, b = np.array([[2.0, 0.0]]), np.array([[0.0, 0.0]])
    # Unweighted (FewNLU): softmax of the mean score [1, 0].
    s = 1 / (1 + math.exp(-1.0))
    assert merge_scores([a, b], None, 1.0)[0] == pytest.approx([s, 1 - s])
    # PET's wmean with weights 0.75 and 0.25: softmax of [1.5, 0]; weights need not sum to 1.
    w = 1 / (1 + math.exp(-1.5))
    assert merge_scores([a, b], [0.75, 0.25], 1.0)[0] == pytest.approx([w, 1 - w])
    assert merge_scores([a, b], [3.0, 1.0], 1.0)[0] == pytest.approx([w, 1 - w])
    with pytest.raises(ConfigError, match=r"not all 0.*use committee: fewnlu"):
        merge_scores([a, b], [0.0, 0.0], 1.0, fix="committee: fewnlu")


# -- the rules in a chain ----------------------------------------------------------------------
def test_three_pattern_two_generation_chain_committees(tmp_path: Path, tiny_bert: Path) -> None:
    chain = _chain(tmp_path, tiny_bert, "RTE", ["s0"], "single-split")
    # Members: 0 question, 1 based-on, 2 pet-quote. Share 1.0: every other member of g - 1.
    assert {m: set(chain.teachers((1, 0, m))) for m in range(3)} == {
        0: {(0, 0, 1), (0, 0, 2)}, 1: {(0, 0, 0), (0, 0, 2)}, 2: {(0, 0, 0), (0, 0, 1)},
    }  # fmt: skip
    assert set(chain.teachers((2, 0, 2))) == {(1, 0, 0), (1, 0, 1)}
    assert chain.teachers((0, 0, 0)) == []
    # Members no longer all see the same labels, and the keys hold each committee.
    keys = {m: chain.key((1, 0, m)) for m in range(3)}
    assert len(set(keys.values())) == 3
    # Share 0.5 (FewNLU's cross-split value): max(round(2 * 0.5), 1) = 1 model, never the own
    # predecessor; another committee gives another key.
    half = _chain(tmp_path, tiny_bert, "RTE", ["s0"], "single-split", committee_share=0.5)
    for g, m in [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]:
        (t,) = half.teachers((g, 0, m))
        assert t[0] == g - 1 and t[2] != m
    assert all(half.key((1, 0, m)) != keys[m] for m in range(3))
    # PET's rule at its default share 0.25: round(2 * 0.25) = 0 models, an error.
    pet = _chain(
        tmp_path, tiny_bert, "RTE", ["s0"], "single-split", committee="pet", committee_share=0.25
    )
    with pytest.raises(ConfigError, match=r"round\(2 x 0.25\) = 0 .* above 0.25"):
        pet.teachers((1, 0, 0))


def test_cross_split_brother_folds_and_unit_independent_draws(
    tmp_path: Path, tiny_bert: Path
) -> None:
    # COPA: 2 patterns; 3 splits. Share 1.0: the whole brother-fold set of 5 models.
    chain = _chain(tmp_path, tiny_bert, "COPA", ["a", "b", "c"], "cross-split")
    assert set(chain.teachers((1, 0, 1))) == {(0, 0, 0), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1)}
    # Share 0.5: round(2.5) = 2 models. The same split is split 0 in one unit and split 1 in
    # another: the committee (by split content and member) and its key are the same.
    one = _chain(tmp_path, tiny_bert, "COPA", ["a", "b", "c"], "cross-split", committee_share=0.5)
    two = _chain(tmp_path, tiny_bert, "COPA", ["b", "a", "c"], "cross-split", committee_share=0.5)

    def named(c: Chain, node: tuple[int, int, int]) -> set[tuple[str, str]]:
        return {(c.split_id(s), c.members[m][0]) for _, s, m in c.teachers(node)}

    for m in range(2):
        assert len(one.teachers((1, 0, m))) == 2
        assert named(one, (1, 0, m)) == named(two, (1, 1, m))
        assert one.key((1, 0, m)) == two.key((1, 1, m))
        assert one.key((2, 0, m)) == two.key((2, 1, m))


def test_pets_rule_weights_members_by_their_accuracy_before_training(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = _chain(
        tmp_path, tiny_bert, "RTE", ["s0"], "single-split", committee="pet", committee_share=1.0
    )
    scores = {1: np.array([[2.0, 0.0]]), 2: np.array([[0.0, 0.0]])}
    weight = {1: 0.75, 2: 0.25}
    monkeypatch.setattr(chain, "pool_scores", lambda node: scores[node[2]])
    monkeypatch.setattr(chain, "_before_training", lambda node: weight[node[2]])
    w = 1 / (1 + math.exp(-1.5))
    assert chain.label_probs((1, 0, 0))[0] == pytest.approx([w, 1 - w])
    fewnlu = _chain(tmp_path, tiny_bert, "RTE", ["s0"], "single-split")
    monkeypatch.setattr(fewnlu, "pool_scores", lambda node: scores[node[2]])
    s = 1 / (1 + math.exp(-1.0))
    assert fewnlu.label_probs((1, 0, 0))[0] == pytest.approx([s, 1 - s])
    # The weight itself: the untrained base's accuracy with the member's pattern, in [0, 1].
    acc = Chain._before_training(chain, (0, 0, 1))
    assert acc in (0.0, 0.5, 1.0)  # two train items


def test_committee_defaults_follow_fewnlus_scripts() -> None:
    task = get_task("RTE")
    for spelling, share in [("ipet", 1.0), ("ipet/cross-split", 0.5), ("noisy", 1.0),
                            ("noisy/cross-split", 0.5), ("ipet+adapet/cross-split", 0.5)]:  # fmt: skip
        params = get_method(spelling).params
        assert params["committee"].default(task) == ["fewnlu"]
        assert params["committee_share"].default(task) == [share], spelling
    noisy = get_method("noisy").params
    assert noisy["noise"].default(task) == [0.05]
    assert noisy["noise_kind"].default(task) == ["embedding-dropout"]
