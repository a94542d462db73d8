from __future__ import annotations

from collections.abc import Sequence

from steadyeval import FORMATS, TEMPLATES, Condition, Generation, Item, expand
from steadyeval.conditions import Trial
from steadyeval.requests import GenerateRequest, Request, ScoreRequest, request_key
from steadyeval.run import build_plan
from steadyeval.scoring import requests_for

ITEMS = [
    Item(id=f"q{i}", question=f"Q{i}?", options=("x", "y"), gold_options=(0,)) for i in range(5)
]


def _units(
    trials: Sequence[Trial], fingerprints: dict[str, str]
) -> list[tuple[str, str, Trial, tuple[Request, ...]]]:
    return [(m, fp, t, requests_for(t)) for m, fp in fingerprints.items() for t in trials]


def test_identical_requests_are_sent_once_across_conditions() -> None:
    # Two differently named conditions that render the same prompts: option scoring under
    # "mc" and the same under a second name with another option order seed (original order).
    a = Condition(
        name="a", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="option-logprob"
    )
    b = Condition(
        name="b",
        template=TEMPLATES["qa"],
        format=FORMATS["mc"],
        scoring="option-logprob",
        order_seed=99,
    )
    plan = build_plan(_units(expand(ITEMS, [a, b]).trials, {"m": "fp"}))
    assert plan.n_requests == 20 and plan.n_unique == 10
    # Another model never shares keys.
    plan2 = build_plan(_units(expand(ITEMS, [a]).trials, {"m": "fp", "n": "fp2"}))
    assert plan2.n_unique == 20


def test_key_covers_output_settings_only() -> None:
    r1 = GenerateRequest(prompt="p", max_new_tokens=5)
    r2 = GenerateRequest(prompt="p", max_new_tokens=6)
    assert request_key("fp", r1) != request_key("fp", r2)
    assert request_key("fp", r1) != request_key("fp2", r1)
    assert request_key("fp", r1) == request_key("fp", GenerateRequest(prompt="p", max_new_tokens=5))
    # Greedy decoding ignores sample index and seed, so they are normalised away.
    assert GenerateRequest(prompt="p", sample_index=3, seed=9) == GenerateRequest(prompt="p")
    s1 = GenerateRequest(prompt="p", temperature=0.7, sample_index=0)
    s2 = GenerateRequest(prompt="p", temperature=0.7, sample_index=1)
    assert request_key("fp", s1) != request_key("fp", s2)
    assert request_key("fp", ScoreRequest("a", " b")) != request_key("fp", ScoreRequest("a ", "b"))


def test_only_generate_keys_carry_the_generated_text_rule() -> None:
    """Keys computed before the generated-text rule (docs/backends.md, "Generated text")
    entered generate requests' keys: score and top-k keys are unchanged (their cached
    responses stay valid); a generate key is new, so a response cached under the old rule is
    asked again instead of mixing with new ones."""
    from steadyeval.requests import GENERATED_TEXT_RULE, TopKRequest

    assert GENERATED_TEXT_RULE == 2
    before = {
        ScoreRequest("a", " b"): "ab2f9cbb38ad18457012edfca6ccd0ce9459f5197a89325ed74bceb7c7b8b627",
        TopKRequest("p", k=3): "a130c03035d7e27e8452880b07fcac75ffc9383ffb9510cdb41ce836385778be",
    }
    for request, key in before.items():
        assert request_key("fp", request) == key
    old = "b96b0cd9c15da8f05fad65107f0152bfb5aeefc5f1e95699006b107bf3b0f1e0"
    assert request_key("fp", GenerateRequest("p", max_new_tokens=5)) not in (old, "")


def test_requests_for_each_scoring() -> None:
    mc = Condition(
        name="l", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="letter-logprob"
    )
    t = expand(ITEMS[:1], [mc]).trials[0]
    assert [r.continuation for r in requests_for(t)] == [" A", " B"]  # type: ignore[union-attr]
    s = Condition(
        name="s",
        template=TEMPLATES["qa"],
        format=FORMATS["free"],
        generation=Generation(temperature=1.0, n_samples=3, seed=4),
    )
    reqs = requests_for(expand(ITEMS[:1], [s]).trials[0])
    assert [r.sample_index for r in reqs] == [0, 1, 2]  # type: ignore[union-attr]
