"""The sample-disparity corpora: mixture sizes and shares (hand-computed), determinism,
nesting, repeats, overlap sentences and the general corpus reader."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from steadyeval._errors import ConfigError, DataError
from steadyeval.studies.disparity import (
    build_mixtures,
    mixture_counts,
    overlap_sentences,
    read_corpus,
    split_sentences,
)

OVERLAP = [f"o{i}" for i in range(30)]
GENERAL = [f"g{i}" for i in range(500)]


@pytest.mark.parametrize(
    ("size", "gamma", "expected"),
    [
        (1000, 0, (0, 1000)),
        (1000, 20, (200, 800)),
        (1000, 100, (1000, 0)),
        (7, 50, (4, 3)),  # 3.5 rounds half up
        (5, 10, (1, 4)),  # 0.5 rounds half up
        (3, 20, (1, 2)),  # 0.6
        (3, 40, (1, 2)),  # 1.2
        (9, 95, (9, 0)),  # 8.55
    ],
)
def test_mixture_counts_by_hand(size: int, gamma: int, expected: tuple[int, int]) -> None:
    assert mixture_counts(size, gamma) == expected


@pytest.mark.parametrize(("size", "gamma"), [(0, 20), (10, -1), (10, 101), (10, 2.5)])
def test_mixture_counts_rejects(size: int, gamma: int) -> None:
    with pytest.raises(ConfigError):
        mixture_counts(size, gamma)


def test_mixtures_have_the_exact_size_and_share() -> None:
    mixtures = build_mixtures(OVERLAP, GENERAL, gammas=[0, 20, 40, 60, 80, 100], size=50, seed=3)
    assert [m.gamma for m in mixtures] == [0, 20, 40, 60, 80, 100]
    for m, n_overlap in zip(mixtures, [0, 10, 20, 30, 40, 50], strict=True):
        assert m.size == 50
        assert (m.n_overlap, m.n_general) == (n_overlap, 50 - n_overlap)
        assert sum(s.startswith("o") for s in m.sentences) == n_overlap
        assert sum(s.startswith("g") for s in m.sentences) == 50 - n_overlap


def test_mixtures_are_deterministic_and_seeded() -> None:
    a = build_mixtures(OVERLAP, GENERAL, gammas=[0, 40, 100], size=40, seed=1)
    b = build_mixtures(OVERLAP, GENERAL, gammas=[0, 40, 100], size=40, seed=1)
    c = build_mixtures(OVERLAP, GENERAL, gammas=[0, 40, 100], size=40, seed=2)
    assert a == b
    assert [m.sentences for m in a] != [m.sentences for m in c]


def test_mixtures_are_nested_across_gammas() -> None:
    low, high = build_mixtures(OVERLAP, GENERAL, gammas=[20, 60], size=40, seed=0)
    over_low = {s for s in low.sentences if s.startswith("o")}
    over_high = {s for s in high.sentences if s.startswith("o")}
    gen_low = {s for s in low.sentences if s.startswith("g")}
    gen_high = {s for s in high.sentences if s.startswith("g")}
    assert len(over_low) == 8 and len(over_high) == 24
    assert over_low < over_high
    assert gen_high < gen_low  # fewer general sentences: a prefix of the same draw


def test_a_small_pool_repeats_evenly() -> None:
    # 100 sentences at 100% from a pool of 30: each 3 or 4 times (100 = 3·30 + 10).
    (m,) = build_mixtures(OVERLAP, GENERAL, gammas=[100], size=100, seed=0)
    counts = Counter(m.sentences)
    assert set(counts) == set(OVERLAP)
    assert sorted(Counter(counts.values()).items()) == [(3, 20), (4, 10)]


def test_mixtures_reject_what_cannot_be_built() -> None:
    with pytest.raises(ConfigError, match="overlap corpus is empty"):
        build_mixtures([], GENERAL, gammas=[0, 20], size=10, seed=0)
    with pytest.raises(ConfigError, match="general corpus is empty"):
        build_mixtures(OVERLAP, [], gammas=[100, 80], size=10, seed=0)
    with pytest.raises(ConfigError, match="distinct"):
        build_mixtures(OVERLAP, GENERAL, gammas=[20, 20], size=10, seed=0)
    # Empty pools a mixture does not need are fine.
    (m,) = build_mixtures([], GENERAL, gammas=[0], size=10, seed=0)
    assert m.n_general == 10


def test_overlap_sentences_by_hand() -> None:
    templates = {
        "born": [
            "[X] was born in [Y] .",
            "[X] is a native of [Y] .",
            "[Y] is where [X] was born .",
        ],
        "capital": ["The capital of [X] is [Y] ."],
    }
    facts = [
        ("born", "Dante", "Florence"),
        ("capital", "France", "Paris"),
        ("born", "Ada", "London"),
    ]
    others, per_rel = overlap_sentences(templates, facts, "other-templates")
    assert others == [
        "Dante is a native of Florence .",
        "Florence is where Dante was born .",
        "Ada is a native of London .",
        "London is where Ada was born .",
    ]
    assert per_rel == {"born": 4, "capital": 0}
    probed, per_rel = overlap_sentences(templates, facts, "probe-template")
    assert probed == [
        "Dante was born in Florence .",
        "The capital of France is Paris .",
        "Ada was born in London .",
    ]
    assert per_rel == {"born": 2, "capital": 1}
    with pytest.raises(ConfigError, match="no templates"):
        overlap_sentences(templates, [("died", "X", "Y")], "probe-template")


def test_split_sentences_and_read_corpus(tmp_path: Path) -> None:
    assert split_sentences('The Rhine flows north. It is long! "Is it?" Yes, 3 times. e.g. no') == [
        "The Rhine flows north.",
        "It is long!",
        '"Is it?"',
        "Yes, 3 times. e.g. no",
    ]
    path = tmp_path / "general.txt"
    path.write_text("First one. Second one.\n\n  Third line  \n", encoding="utf-8")
    assert read_corpus(path) == ["First one. Second one.", "Third line"]
    assert read_corpus(path, split="sentence") == ["First one.", "Second one.", "Third line"]
    (tmp_path / "blank.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(DataError, match=r"blank\.txt"):
        read_corpus(tmp_path / "blank.txt")
