"""Runs for the report and compare tests: a scripted run (outputs carry script payloads)
and real runs of the tiny GPT-2."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from steadyeval import FORMATS, TEMPLATES, Condition, Generation, Item, RunOptions, Shots, run
from steadyeval.models import parse_model_spec
from steadyeval.requests import ScoreRequest, ScoreResponse
from tests.scripted_backend import ScriptedBackend, _unit

from ._chromium import Browser, find_chromium, launch
from ._studies import StudyRuns

#: Outputs that would set ``window.__pwned`` if they ever became markup or script.
PAYLOADS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "</script><script>window.__pwned=1</script>",
    "<!--<script>window.__pwned=1</script>-->",
    "\"><svg onload='window.__pwned=1'>",
    "\u2028</script\u2029><script>window.__pwned=1</script>",
]
PAYLOAD_ID = 'x"><img src=x onerror="window.__pwned=2">'
PAYLOAD_CONDITION = "<img src=x onerror=window.__pwned=3>"

ITEMS = [
    Item(
        id=f"q{i}",
        question=f"Question number {i}?",
        options=("alpha", "beta", "gamma"),
        gold_options=(i % 3,),
        answerable=i % 5 != 0,
        metadata={"subject": f"s{i % 3}", "paragraph": f"p{i // 2}"},
    )
    for i in range(12)
] + [
    Item(
        id=PAYLOAD_ID,
        question="Question with a payload id?",
        options=("alpha", "<b>beta</b>", "gamma"),
        gold_options=(1,),
        metadata={"subject": "s0", "paragraph": "p9"},
    )
]

ANSWERS = {f"Question number {i}?": p for i, p in enumerate(PAYLOADS)} | {
    "Question number 6?": "no answer>",
    "Question number 7?": "beta",
    "Question number 8?": "gamma",
}


def conditions() -> list[Condition]:
    qa = TEMPLATES["qa"]
    return [
        Condition(name="free", template=qa, format=FORMATS["free"]),
        Condition(name="mc", template=qa, format=FORMATS["mc"], scoring="option-logprob"),
        Condition(
            name="mc-nota",
            template=qa,
            format=FORMATS["mc-nota"],
            scoring="option-logprob",
            option_order="shuffled",
            order_seed=3,
        ),
        Condition(
            name="letters-1shot",
            template=qa,
            format=FORMATS["mc"],
            scoring="letter-logprob",
            shots=Shots(n=1, seed=5),
        ),
        Condition(
            name=PAYLOAD_CONDITION,
            template=qa,
            format=FORMATS["mc"],
            scoring="option-logprob",
            option_order="shuffled",
            order_seed=9,
        ),
    ]


class NamedScriptedBackend(ScriptedBackend):
    """The scripted test backend, with log-probabilities that also depend on the model's
    name, so two scripted models disagree on some items (still no model involved)."""

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        out = super().score(requests)
        return [
            dataclasses.replace(
                r, logprob=-10 * _unit(self.spec.name + "\x00" + q.context + q.continuation)
            )
            for q, r in zip(requests, out, strict=True)
        ]


def scripted(name: str) -> ScriptedBackend:
    backend = NamedScriptedBackend if name != "a" else ScriptedBackend
    return backend(spec=parse_model_spec(f"scripted:{name}"), answers=ANSWERS)


@pytest.fixture(scope="session")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two scripted models whose free-form outputs are script payloads."""
    out = tmp_path_factory.mktemp("scripted") / "run"
    cache = out.parent / "cache.sqlite"
    run(
        ITEMS,
        conditions(),
        [scripted("a"), scripted("b")],
        options=RunOptions(out=out, cache=cache, progress=False),
    )
    return out


TINY_ITEMS = [
    Item(
        id="geo-1",
        question="What is the capital of France?",
        options=("Paris", "Lyon", "Marseille"),
        gold_options=(0,),
        metadata={"subject": "geography"},
    ),
    Item(
        id="geo-2",
        question="Which river flows through Cairo?",
        options=("Nile", "Danube", "Amazon"),
        gold_options=(0,),
        metadata={"subject": "geography"},
    ),
    Item(
        id="geo-3",
        question="On which continent is Kenya?",
        options=("Asia", "Africa", "Europe"),
        gold_options=(1,),
        metadata={"subject": "geography"},
    ),
    Item(
        id="sci-1",
        question="What gas do plants take in to make sugar?",
        options=("oxygen", "carbon dioxide", "helium"),
        gold_options=(1,),
        metadata={"subject": "science"},
    ),
    Item(
        id="sci-2",
        question="How many legs does an insect have?",
        options=("four", "six", "eight"),
        gold_options=(1,),
        metadata={"subject": "science"},
    ),
    Item(
        id="sci-3",
        question="What is frozen water called?",
        options=("steam", "ice", "dew"),
        gold_options=(1,),
        metadata={"subject": "science"},
    ),
    Item(
        id="read-1",
        question="Who painted the lighthouse red?",
        context="The lighthouse was built in 1874 by the harbour board.",
        options=("the harbour board", "the navy", "a fisherman"),
        answerable=False,
        metadata={"subject": "reading"},
    ),
]


def tiny_conditions() -> list[Condition]:
    qa = TEMPLATES["qa"]
    return [
        Condition(
            name="free",
            template=qa,
            format=FORMATS["free"],
            generation=Generation(max_new_tokens=8),
        ),
        Condition(name="mc", template=qa, format=FORMATS["mc"], scoring="option-logprob"),
        Condition(
            name="mc-nota",
            template=qa,
            format=FORMATS["mc-nota"],
            scoring="option-logprob",
            option_order="shuffled",
            order_seed=1,
        ),
        Condition(
            name="letters-2shot",
            template=qa,
            format=FORMATS["mc"],
            scoring="letter-logprob",
            shots=Shots(n=2, seed=0),
        ),
    ]


@pytest.fixture(scope="session")
def tiny_runs(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same items and conditions on two tiny GPT-2 models (seeds 0 and 1)."""
    from steadyeval.models._tiny import build_tiny_model

    base = tmp_path_factory.mktemp("tiny")
    other = build_tiny_model(base / "gpt2-seed1", "gpt2", seed=1)
    outs = []
    for i, model in enumerate((tiny_gpt2, other)):
        out = base / f"run{i}"
        run(
            TINY_ITEMS,
            tiny_conditions(),
            [f"hf:{model}"],
            options=RunOptions(out=out, cache=base / "cache.sqlite", progress=False),
        )
        outs.append(out)
    return outs[0], outs[1]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """Headless Chromium. Required in CI (``CI`` set): the test fails there when it is
    missing, and skips only on a machine without Chromium and without ``CI``."""
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (apt-get install -y chromium)")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    with launch(binary, tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


@pytest.fixture(scope="session")
def study_runs(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> StudyRuns:
    """Small runs of the built-in studies on the tiny GPT-2 (``study_runs["formats"]`` is
    the run directory, made on first use)."""
    return StudyRuns(tiny_gpt2, tmp_path_factory.mktemp("studies"))
