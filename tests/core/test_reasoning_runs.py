"""A reasoning model behind an OpenAI-compatible chat server, run end to end (issue 43): the
server is the FAKE one of tests/models with a SCRIPTED reasoner (it adds two numbers and
answers as reasoning models do), so what is tested is steadyeval's side: the trace set
aside (inline ``<think>`` or the server's ``reasoning_content``), the answer extracted, the
row's columns, and the cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from steadyeval import Condition, Item, RunOptions, read_results, run
from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

FAST = "max_concurrency=2&backoff_base=0.01&backoff_max=0.02&timeout=5"


def _reasoner(separate: bool):  # type: ignore[no-untyped-def]
    """Adds the two numbers of 'What is A plus B?', thinking first (a trace that itself
    holds other numbers, so the whole output never parses as the answer)."""

    def answer(prompt: str) -> tuple[str | None, str]:
        a, b = map(int, re.findall(r"What is (\d+) plus (\d+)\?", prompt)[-1])
        trace = f"{a} plus {b}: first {a} + 1 = {a + 1}, then on to {a + b}."
        reply = f"{a} plus {b} is {a + b}. The answer is {a + b}.\n#### {a + b}"
        return (trace, reply) if separate else (None, f"<think>{trace}</think>{reply}")

    return answer


ITEMS = [
    Item(id=f"q{i}", question=f"What is {i} plus {2 * i + 1}?", answers=(str(3 * i + 1),))
    for i in range(8)
]


@pytest.mark.parametrize("separate", [False, True], ids=["inline-think", "reasoning_content"])
def test_a_reasoning_models_answers_are_scored_on_the_answer_not_the_trace(
    tmp_path: Path, separate: bool
) -> None:
    conditions = [
        Condition(name=name, template="qa-cot", format="free", chat=True, extract=extract)
        for name, extract in (("strict", "strict"), ("flexible", "flexible"), ("auto", "auto"))
    ]
    with FakeOpenAIServer(ServerConfig(reasoner=_reasoner(separate))) as srv:
        model = f"openai:toy?base_url={srv.url}&{FAST}"
        result = run(ITEMS, conditions, model, options=RunOptions(out=tmp_path / "r"))
        calls = srv.record.n_requests
    rows = read_results(tmp_path / "r").to_pylist()
    assert calls == len(ITEMS)  # one request per item: the three extractors share it
    by = {(r["condition"], r["item_id"]): r for r in rows}
    for item in ITEMS:
        strict, flexible, auto = (by[(c, item.id)] for c in ("strict", "flexible", "auto"))
        assert strict["correct"] and flexible["correct"], strict["output"]
        assert strict["extractor"] == "strict:####" and flexible["extractor"] == "flexible:number"
        assert strict["parsed"] == item.answers[0]
        assert "first" in strict["reasoning"] and "<think>" not in strict["reasoning"]
        assert strict["reasoning_chars"] == len(strict["reasoning"])
        # auto takes the whole answer, trace excluded; numbers compare as lm-eval's GSM8K
        # metric compares them, which drops everything up to "#### " (so it is right here)
        assert "first" not in auto["parsed"] and auto["parsed"].endswith("#### " + item.answers[0])
        assert auto["correct"] and auto["extractor"] == "whole"
        assert ("<think>" in strict["output"]) is not separate
    assert result.table.num_rows == 3 * len(ITEMS)


def test_the_issues_case_eight_of_eight_right_after_the_fix(tmp_path: Path) -> None:
    """Before: the whole output, trace included, was the parsed answer (0 of 8 right)."""
    cond = Condition(name="cot", template="qa-cot", format="free", chat=True, extract="strict")
    with FakeOpenAIServer(ServerConfig(reasoner=_reasoner(False))) as srv:
        result = run(ITEMS, [cond], f"openai:toy?base_url={srv.url}&{FAST}")
    assert result.table.column("correct").to_pylist() == [True] * 8
