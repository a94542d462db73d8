from __future__ import annotations

import pytest

from steadyeval import FORMATS, TEMPLATES, Condition, ConfigError, Format, Item, Shots, expand
from steadyeval.conditions import Template

ITEMS = [
    Item(
        id="mc1",
        question="Capital of France?",
        options=("Paris", "Lyon", "Nice"),
        gold_options=(0,),
    ),
    Item(id="mc2", question="2+2?", options=("3", "4", "5"), gold_options=(1,)),
    Item(id="free", question="Who wrote [X]?", answers=("Homer",), aliases=("the Iliad", "Iliad")),
    Item(id="un", question="Unknown?", options=("a", "b", "c"), answerable=False),
]


def cond(name: str, **kw: object) -> Condition:
    kw.setdefault("template", TEMPLATES["qa"])
    kw.setdefault("format", FORMATS["mc"])
    return Condition(name=name, **kw)  # type: ignore[arg-type]


def test_expand_is_deterministic_and_counts_skips() -> None:
    conds = [
        cond("mc"),
        cond("free", format=FORMATS["free"]),
        cond("alias1", format=FORMATS["free"], alias=1),
    ]
    a = expand(ITEMS, conds)
    b = expand(ITEMS, conds)
    assert a == b
    # mc skips the free item; alias1 skips the three items without a second alias.
    assert a.skipped == {
        ("mc", "multiple-choice format on an item without options"): 1,
        ("alias1", "item has no alias #1"): 3,
    }
    assert len(a.trials) + a.n_skipped == len(ITEMS) * len(conds)
    alias_trial = next(t for t in a.trials if t.condition.name == "alias1")
    assert "Who wrote Iliad?" in alias_trial.prompt and alias_trial.alias == "Iliad"


def test_rendered_prompt_and_escape_option_is_last() -> None:
    t = expand(ITEMS[:1], [cond("nota", format=FORMATS["mc-nota"])]).trials[0]
    assert (
        t.prompt
        == "Question: Capital of France?\nA. Paris\nB. Lyon\nC. Nice\nD. none of the above\nAnswer:"
    )
    assert t.escape_index == 3 and t.option_source == (0, 1, 2, -1)
    un = expand(ITEMS[3:], [cond("nota", format=FORMATS["mc-nota"])]).trials[0]
    assert un.gold_displayed == (3,)


def test_shuffled_order_is_seeded_per_item() -> None:
    items = [
        Item(id=f"i{k}", question="q", options=tuple("abcdef"), gold_options=(2,)) for k in range(8)
    ]
    s1 = expand(items, [cond("s", option_order="shuffled", order_seed=1)]).trials
    s1b = expand(items, [cond("s", option_order="shuffled", order_seed=1)]).trials
    s2 = expand(items, [cond("s", option_order="shuffled", order_seed=2)]).trials
    assert [t.option_source for t in s1] == [t.option_source for t in s1b]
    assert [t.option_source for t in s1] != [t.option_source for t in s2]
    for t in s1:
        assert sorted(t.option_source) == list(range(6))
        assert t.options is not None and t.options[t.gold_displayed[0]] == "c"


def test_shots_never_include_the_item_and_are_reproducible() -> None:
    items = [
        Item(id=f"i{k}", question=f"q{k}", options=("x", "y"), gold_options=(k % 2,))
        for k in range(6)
    ]
    c = cond("shots", shots=Shots(n=3, seed=7), scoring="letter-logprob")
    trials = expand(items, [c]).trials
    assert trials == expand(items, [c]).trials
    for t in trials:
        assert t.n_shots_used == 3
        assert t.prompt.count("Question:") == 4
        assert f"Question: {t.item.question}\n" in t.prompt.split("\n\n")[-1]
        assert t.prompt.count(f"Question: {t.item.question}\n") == 1
    first = expand(items, [cond("f", shots=Shots(n=2, selection="first"))]).trials
    assert first[0].prompt.startswith("Question: q1\nA. x\nB. y\nAnswer: B\n\nQuestion: q2")


def test_shots_from_a_named_pool_and_missing_pool() -> None:
    dev = [Item(id="d1", question="dev q", answers=("dev a",))]
    c = cond("fs", format=FORMATS["free"], shots=Shots(n=1, source="dev"))
    t = expand(ITEMS[2:3], [c], shot_pools={"dev": dev}).trials[0]
    assert t.prompt.startswith("Question: dev q\nAnswer: dev a\n\n")
    with pytest.raises(ConfigError, match="shot source 'dev' is not loaded"):
        expand(ITEMS, [c])


def test_verbalizer_and_unifiedqa_template() -> None:
    item = Item(
        id="nli",
        question="A man sleeps. Question: he is awake?",
        options=("entailment", "contradiction"),
        gold_options=(1,),
    )
    c = cond("v", verbalizer={"entailment": "Yes", "contradiction": "No"}, verbalizer_name="yn")
    t = expand([item], [c]).trials[0]
    assert t.options == ("Yes", "No") and "A. Yes\nB. No" in t.prompt
    skip = expand([item], [cond("v2", verbalizer={"entailment": "Yes"})])
    assert skip.n_skipped == 1
    uqa = Condition(name="u", template=TEMPLATES["unifiedqa"], format=FORMATS["unifiedqa-nota"])
    ctx = Item(
        id="c",
        question="Who Built It?",
        context="The Board Built It.",
        options=("the board", "the navy"),
        gold_options=(0,),
    )
    t = expand([ctx], [uqa]).trials[0]
    assert (
        t.prompt
        == "who built it? \\n (a) the board (b) the navy (c) none of the above \\n the board built it."
    )


def test_template_errors_are_config_errors() -> None:
    bad = cond("bad", template=Template(name="broken", body="{{ nope }}"))
    with pytest.raises(ConfigError, match="template 'broken' body"):
        expand(ITEMS[:1], [bad])
    with pytest.raises(ConfigError, match="unique"):
        expand(ITEMS, [cond("a"), cond("a")])


def test_template_keeps_trailing_newline_and_is_sandboxed() -> None:
    t = expand(
        ITEMS[:1], [cond("n", template=Template(name="nl", body="{{ question }}\n"))]
    ).trials[0]
    assert t.prompt.endswith("?\n")
    evil = cond("e", template=Template(name="e", body="{{ question.__class__.__mro__ }}"))
    with pytest.raises(ConfigError):
        expand(ITEMS[:1], [evil])


def test_letter_scoring_needs_mc_format() -> None:
    with pytest.raises(ValueError, match="needs a multiple-choice format"):
        Condition(
            name="x",
            template=TEMPLATES["qa"],
            format=Format(name="f", kind="free"),
            scoring="letter-logprob",
        )


def test_generation_settings_are_checked() -> None:
    from steadyeval import Generation

    for bad in (
        {"max_new_tokens": 0},
        {"n_samples": 0},
        {"temperature": -0.5},
        {"top_p": 0.0},
        {"top_p": 1.5},
    ):
        with pytest.raises(ValueError, match="generation:"):
            Generation(**bad)
    assert Generation(max_new_tokens=1, temperature=0.7, top_p=0.9, n_samples=3).n_samples == 3
