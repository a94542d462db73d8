"""The format grammar: distinct renders, every dimension varied, deterministic."""

from __future__ import annotations

from collections import Counter

import pytest

from steadyeval.conditions import expand
from steadyeval.items import Item
from steadyeval.studies.spread import DIMENSIONS, generate_formats
from steadyeval.studies.spread._grammar import roman

MMLU = Item(
    id="m1",
    question="What is 2 + 2?",
    options=("3", "4", "5", "22"),
    answer="4",
    metadata={"subject": "elementary_mathematics"},
)
SQUAD = Item(
    id="s1",
    question="Which river does Harnwick lie on?",
    context="The town of Harnwick lies on the Velm river.",
    options=("Velm", "Lunn", "Tave"),
    answer="Velm",
)
SQUAD_FREE = Item(
    id="s2",
    question="Who founded it?",
    context="Abbot Cedric founded it.",
    answers=("Abbot Cedric",),
)


@pytest.mark.parametrize("item", [MMLU, SQUAD], ids=["mmlu", "squad"])
def test_100_formats_render_pairwise_distinct(item: Item) -> None:
    formats = generate_formats(120, seed=3)
    trials = expand([item], [f.condition("option-logprob") for f in formats]).trials
    prompts = [t.prompt + "\x00" + "|".join(t.labels) for t in trials]
    assert len(trials) == 120
    assert len(set(prompts)) == 120
    assert all(item.question in p for p in prompts)
    if item.context:
        assert all(item.context in p for p in prompts)


def test_free_form_items_render_distinct_too() -> None:
    from steadyeval.conditions import Condition

    formats = generate_formats(100, seed=0)
    conds = [Condition(name=f.name, template=f.template(), format="free") for f in formats]
    trials = expand([SQUAD_FREE], conds).trials
    assert len({t.prompt for t in trials}) > 20  # options-only dimensions cannot show here


def test_every_dimension_varied_in_at_least_10_percent() -> None:
    formats = generate_formats(100, seed=0)
    for d, dim in enumerate(DIMENSIONS):
        off_default = sum(f.choices[d] != 0 for f in formats)
        assert off_default >= 10, dim
        assert len(Counter(f.choices[d] for f in formats)) == len(DIMENSIONS[dim])


def test_deterministic_default_first_and_seeded() -> None:
    a, b = generate_formats(50, seed=7), generate_formats(50, seed=7)
    assert a == b
    assert a[0].choices == (0,) * len(DIMENSIONS)
    assert generate_formats(50, seed=8) != a
    assert len({f.choices for f in a}) == 50


def test_roman_enumeration_labels_reach_the_prompt() -> None:
    assert [roman(i) for i in (1, 4, 9, 14, 26)] == ["I", "IV", "IX", "XIV", "XXVI"]
    fmt = next(f for f in generate_formats(200, seed=1) if f.choice("enumeration") == "i")
    trial = expand([MMLU], [fmt.condition("option-logprob")]).trials[0]
    assert trial.labels == ("i", "ii", "iii", "iv")
    assert "iv" in trial.prompt


def test_covariates_are_one_hot_without_the_default() -> None:
    f = generate_formats(30, seed=2)
    assert f[0].covariates() == [0.0] * sum(len(v) - 1 for v in DIMENSIONS.values())
    for g in f[1:]:
        assert sum(g.covariates()) == sum(c != 0 for c in g.choices)


def test_too_many_formats_is_an_error() -> None:
    with pytest.raises(ValueError, match="grammar has"):
        generate_formats(10**9, seed=0)
