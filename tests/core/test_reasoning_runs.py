"""A reasoning model behind an OpenAI-compatible chat server, run end to end (issue 43): the
server is the FAKE one of tests/models with a SCRIPTED reasoner (it adds two numbers and
answers as reasoning models do), so what is tested is steadyeval's side: the trace set
aside (inline ``<think>`` or the server's ``reasoning_content``), the answer extracted, the
row's columns, and the cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from steadyeval import Condition, Item, RunOptions, read_results, run
from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

# fast retries, and a per-request timeout no busy machine reaches (the fake server answers
# at once)
FAST = "max_concurrency=2&backoff_base=0.01&backoff_max=0.02&timeout=300"


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
        # auto takes the whole answer (trace excluded) and compares it as before extractors
        # existed (SQuAD exact match): a sentence is not the answer "4"
        assert "first" not in auto["parsed"] and auto["parsed"].endswith("#### " + item.answers[0])
        assert auto["correct"] is False and auto["extractor"] == "whole"
        assert ("<think>" in strict["output"]) is not separate
    assert result.table.num_rows == 3 * len(ITEMS)


def test_the_issues_case_eight_of_eight_right_after_the_fix(tmp_path: Path) -> None:
    """Before: the whole output, trace included, was the parsed answer (0 of 8 right)."""
    cond = Condition(name="cot", template="qa-cot", format="free", chat=True, extract="strict")
    with FakeOpenAIServer(ServerConfig(reasoner=_reasoner(False))) as srv:
        result = run(ITEMS, [cond], f"openai:toy?base_url={srv.url}&{FAST}")
    assert result.table.column("correct").to_pylist() == [True] * 8


def test_shots_as_chat_turns(tmp_path: Path) -> None:
    """fewshot_as_multiturn: each shot is a user turn and an assistant turn; the prompt is
    the last user turn; the row's prompt shows every turn; a plain condition's request is
    unchanged."""
    from steadyeval import ConfigError, expand
    from steadyeval.models import chat_messages

    multi = Condition(
        name="multi",
        format="free",
        chat=True,
        fewshot_as_multiturn=True,
        system="Be brief.",
        shots={"n": 2, "selection": "first"},
    )
    plain = Condition(name="plain", format="free", chat=True, shots={"n": 2, "selection": "first"})
    trials = expand(ITEMS[:3], [multi, plain]).trials
    t = trials[2]
    assert t.prompt == "Question: What is 2 plus 5?\nAnswer:"
    assert t.turns == (
        ("Question: What is 0 plus 1?\nAnswer:", "1"),
        ("Question: What is 1 plus 3?\nAnswer:", "4"),
    )
    assert t.transcript.startswith("<user>\nQuestion: What is 0 plus 1?\nAnswer:\n<assistant>\n1\n")
    assert trials[5].turns == () and "What is 0 plus 1?" in trials[5].prompt
    roles = [m["role"] for m in chat_messages(t.prompt, "Be brief.", t.turns)]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    with pytest.raises(ConfigError, match="set chat: true"):
        Condition(name="x", fewshot_as_multiturn=True)
    with FakeOpenAIServer(ServerConfig()) as srv:
        result = run(ITEMS[:3], [multi], f"openai:toy?base_url={srv.url}&{FAST}")
        bodies = list(srv.record.bodies.values())
    sent = [b for b in bodies if "Question: What is 2 plus 5?" in json.dumps(b)]
    assert [m["role"] for m in sent[0]["messages"]] == roles
    row = result.table.to_pylist()[2]
    assert row["prompt"] == t.transcript


def test_shots_as_turns_through_a_chat_template(tmp_path: Path) -> None:
    """The hf backend renders the turns with the tokenizer's chat template (the tiny GPT-2
    has one): every shot's answer is an assistant turn before the question."""
    from transformers import AutoTokenizer

    from steadyeval.models import CausalText, build_tiny_model

    folder = build_tiny_model(tmp_path / "tiny", "gpt2")
    text = CausalText(AutoTokenizer.from_pretrained(folder), "tiny")
    rendered = text.chat("Q3", None, (("Q1", "A1"), ("Q2", "A2")))
    assert rendered.index("Q1") < rendered.index("A1") < rendered.index("Q2") < rendered.index("Q3")
    assert rendered.count("<|assistant|>") == 3  # two answered turns and the open one
    multi = Condition(
        name="m",
        format="free",
        chat=True,
        fewshot_as_multiturn=True,
        shots={"n": 1, "selection": "first"},
        generation={"max_new_tokens": 4},
    )
    result = run(ITEMS[:2], [multi], f"hf:{folder}")
    assert result.table.column("prompt").to_pylist()[1].startswith("<user>\nQuestion: What is 0")
