"""A condition is defined once (the dataclasses of ``steadyeval.conditions``): the YAML models
are built from them, so the two surfaces take the same keys and refuse the same values."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from steadyeval import ConfigError
from steadyeval.conditions import Condition, Format, Generation, Shots, Template
from steadyeval.run import ConditionConfig, RunConfig


def _model(field: str) -> type[BaseModel]:
    annotation = ConditionConfig.model_fields[field].annotation
    for member in getattr(annotation, "__args__", (annotation,)):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    raise AssertionError(f"no model for {field}")


def test_the_yaml_keys_are_the_dataclass_fields() -> None:
    names = [f.name for f in dataclasses.fields(Condition)]
    names.remove("verbalizer_name")  # YAML gives it as verbalizer: {name, words}
    assert list(ConditionConfig.model_fields) == names
    for field, cls in [
        ("template", Template),
        ("format", Format),
        ("shots", Shots),
        ("generation", Generation),
    ]:
        assert list(_model(field).model_fields) == [f.name for f in dataclasses.fields(cls)]


def _accepts_yaml(model: type[BaseModel], values: dict[str, Any]) -> bool:
    try:
        model.model_validate(values)
    except ValidationError:
        return False
    return True


def _accepts_python(cls: type, values: dict[str, Any]) -> bool:
    try:
        cls(**values)
    except ConfigError:
        return False
    return True


_INTS = st.one_of(
    st.integers(-3, 3), st.sampled_from([10_000, 10_001, 2**32 - 1, 2**32, 1_048_576, 1_048_577])
)
_FLOATS = st.one_of(
    st.floats(-1, 2, allow_nan=False), st.sampled_from([0.0, 1.0, float("inf"), float("nan")])
)


@settings(max_examples=300, deadline=None)
@given(
    max_new_tokens=_INTS,
    n_samples=_INTS,
    seed=_INTS,
    temperature=_FLOATS,
    top_p=_FLOATS,
    stops=st.integers(0, 1_002),
)
def test_generation_bounds_agree(
    max_new_tokens: int, n_samples: int, seed: int, temperature: float, top_p: float, stops: int
) -> None:
    values = {
        "max_new_tokens": max_new_tokens,
        "n_samples": n_samples,
        "seed": seed,
        "temperature": temperature,
        "top_p": top_p,
        "stop": ["x"] * stops,
    }
    yaml_ok = _accepts_yaml(_model("generation"), values)
    assert yaml_ok == _accepts_python(Generation, {**values, "stop": tuple(values["stop"])})


@settings(max_examples=200, deadline=None)
@given(
    top_k=_INTS,
    order_seed=_INTS,
    alias=st.one_of(st.none(), _INTS),
    n=_INTS,
    option_order=st.sampled_from(["original", "shuffled", "rotated", "random"]),
)
def test_condition_bounds_agree(
    top_k: int, order_seed: int, alias: int | None, n: int, option_order: str
) -> None:
    values = {
        "name": "c",
        "top_k": top_k,
        "order_seed": order_seed,
        "alias": alias,
        "shots": {"n": n},
        "option_order": option_order,
    }
    try:
        ConditionConfig.model_validate(values)
        yaml_ok = True
    except ValidationError:
        yaml_ok = False
    assert yaml_ok == _accepts_python(Condition, values)


def test_a_yaml_condition_builds_the_python_condition_with_the_run_seed() -> None:
    cfg = RunConfig.model_validate(
        {
            "data": "items.jsonl",
            "models": ["hf:gpt2"],
            "seed": 9,
            "conditions": [
                {
                    "name": "a",
                    "shots": {"n": 2},
                    "verbalizer": {"name": "v", "words": {"yes": "Yes"}},
                    "generation": {"temperature": 0.5, "n_samples": 2, "seed": 4},
                }
            ],
        }
    )
    (built,) = cfg.build_conditions()
    expected = Condition(
        name="a",
        order_seed=9,
        shots=Shots(n=2, seed=9),
        verbalizer={"yes": "Yes"},
        verbalizer_name="v",
        generation=Generation(temperature=0.5, n_samples=2, seed=4),
    )
    assert built == expected
    assert built.id == expected.id


def test_unset_generation_limits_are_the_templates() -> None:
    """``stop`` and ``max_new_tokens`` left unset (or null) are the template's: a blank line
    and 32 tokens for a plain template, none and 1024 for a reasoning one."""
    plain = Condition(name="p", generation={"stop": None})
    assert plain.generation.limits == (32, ("\n\n",))
    cot = Condition(name="r", template="qa-cot", format="free")
    assert cot.generation.limits == (1024, ())
    assert Condition(
        name="r", template="qa-cot", generation={"max_new_tokens": 64}
    ).generation.limits == (64, ())


def _python_error(**values: Any) -> str:
    try:
        Condition(name="c", **values)
    except ConfigError as exc:
        return str(exc)
    raise AssertionError(f"Condition accepted {values!r}")


def test_python_refuses_what_yaml_refuses_by_type_with_a_config_error() -> None:
    """Text where a list of text goes is refused (not split into its characters: stop="END"
    stopped at any E, N or D), as are a non-boolean chat, a verbalizer that is not a mapping
    of text to text, and None for a list; each a ConfigError, never a TypeError."""
    expected = {
        "stop must be a list of text; got 'END'": {"generation": {"stop": "END"}},
        "refusal_phrases must be a list of text; got 'no answer'": {"refusal_phrases": "no answer"},
        "refusal_phrases must be a list of text; got None": {"refusal_phrases": None},
        "chat must be true or false; got 'no'": {"chat": "no"},
        "chat must be true or false; got None": {"chat": None},
        "verbalizer must map text to text; got ['yes', 'no']": {"verbalizer": ["yes", "no"]},
        "verbalizer must map text to text; got 'v'": {"verbalizer": "v"},
        "verbalizer must map text to text; got {'A': 1}": {"verbalizer": {"A": 1}},
        "generation: Generation.__init__() got an unexpected keyword argument": {
            "generation": {"max_tokens": 5}
        },
    }
    for message, values in expected.items():
        assert message in _python_error(**values)
    for values in expected.values():  # and YAML refuses each too
        try:
            ConditionConfig.model_validate({"name": "c", **values})
        except ValidationError:
            continue
        raise AssertionError(f"YAML accepted {values!r}")
    assert Generation(stop=["a", "b"]).stop == ("a", "b")  # a list is still a list
    assert Condition(name="c", refusal_phrases=["x"]).refusal_phrases == ("x",)


def test_yaml_does_not_convert_what_python_refuses() -> None:
    """YAML's numbers and booleans are strict, as the dataclasses' checks are: text or a
    float where an integer goes, text or 1 where a boolean goes, text where a number goes."""
    for values in (
        {"shots": {"n": "3"}},
        {"shots": {"n": 3.0}},
        {"top_k": 5.0},
        {"rotation": "2"},
        {"chat": "no"},
        {"chat": 1},
        {"generation": {"temperature": "0.5"}},
    ):
        _python_error(**values)
        try:
            ConditionConfig.model_validate({"name": "c", **values})
        except ValidationError:
            continue
        raise AssertionError(f"YAML accepted {values!r}")
    # an integer where a float goes is still a float, as in Python
    built = ConditionConfig.model_validate({"name": "c", "generation": {"temperature": 1}})
    assert built.build(0).generation.temperature == 1.0


def test_a_shot_count_alone_means_the_same_in_yaml_and_python() -> None:
    cfg = RunConfig.model_validate(
        {"data": "items.jsonl", "models": ["hf:gpt2"], "conditions": [{"name": "a", "shots": 3}]}
    )
    (built,) = cfg.build_conditions()
    assert built == Condition(name="a", shots=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"shots\.n"):
        ConditionConfig.model_validate({"name": "a", "shots": -1})
    with pytest.raises(ValidationError, match="shots"):
        ConditionConfig.model_validate({"name": "a", "shots": True})
