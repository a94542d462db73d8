"""A condition is defined once (the dataclasses of ``steadyeval.conditions``): the YAML models
are built from them, so the two surfaces take the same keys and refuse the same values."""

from __future__ import annotations

import dataclasses
from typing import Any

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
