from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from steadyeval import (
    FORMATS,
    TEMPLATES,
    Condition,
    ConfigError,
    Item,
    RunOptions,
    SteadyevalDeprecationWarning,
    expand,
    parse_model_spec,
    run,
)
from steadyeval.conditions import Trial
from steadyeval.requests import (
    GenerateResponse,
    Request,
    Response,
    ScoreRequest,
    ScoreResponse,
    TopKResponse,
)
from steadyeval.scoring import (
    ScoredTrial,
    ScoringMode,
    exact_match,
    get_scoring,
    is_refusal,
    match_option,
    normalize_answer,
    option_scores,
    register_scoring,
    score_trial,
    scoring_names,
    softmax,
    token_f1,
)


def test_squad_normalisation_em_f1() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert exact_match("the Paris.", "Paris") == 1.0
    assert token_f1("Paris France", "Paris") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    assert token_f1("a an the", "Paris") == 0.0


def test_match_option_order_of_tests() -> None:
    opts, labels = ("the harbour board", "the navy", "none of the above"), ("a", "b", "c")
    assert match_option("Harbour board.", opts, labels).kind == "option"
    assert match_option("(b)", opts, labels).position == 1
    assert match_option("B.", opts, labels).method == "label"
    assert (
        match_option("no answer>", opts, labels, refusal_phrases=("no answer>",)).kind == "refusal"
    )
    esc = match_option("None of the above", opts, labels, escape_index=2)
    assert esc.kind == "refusal" and esc.position == 2
    assert match_option("the harbour", opts, labels).method == "f1"
    assert match_option("a lighthouse keeper", opts, labels).kind == "unmatched"
    assert match_option("", opts, labels).kind == "unmatched"


def test_is_refusal_with_punctuation_phrase() -> None:
    assert is_refusal("no answer> ", ["no answer>"])
    assert not is_refusal("Paris", ["no answer>"])
    assert not is_refusal("Paris", [])


def test_option_scores_normalisations_and_ties() -> None:
    s = option_scores([-4.0, -3.0, -3.0], [4, 1, 2], ["abcd", "b", "cc"])
    assert s.choice == 1  # tie broken towards the first
    assert s.per_token == [-1.0, -3.0, -1.5]
    assert s.per_char == [-1.0, -3.0, -1.5]
    t = option_scores([-4.0, -3.0, -3.0], [4, 1, 2], ["abcd", "b", "cc"], normalization="token")
    assert t.choice == 0
    assert sum(s.probs) == pytest.approx(1.0)
    assert softmax([1000.0, 1000.0]) == [0.5, 0.5]
    with pytest.raises(ValueError):
        option_scores([], [], [])


def _trial(fmt: str, scoring: str = "generate", **item_kw: object):  # type: ignore[no-untyped-def]
    kw = {
        "id": "i",
        "question": "Who built it?",
        "options": ("the board", "the navy", "a man"),
        "gold_options": (0,),
    }
    kw.update(item_kw)
    item = Item(**kw)  # type: ignore[arg-type]
    c = Condition(name="c", template=TEMPLATES["qa"], format=FORMATS[fmt], scoring=scoring)  # type: ignore[arg-type]
    return expand([item], [c]).trials[0]


def test_score_trial_generation_mc_and_free() -> None:
    r = score_trial(_trial("mc"), [GenerateResponse(text=" The board")])
    assert r.correct and r.parsed_option == 0 and r.parsed_kind == "option"
    r = score_trial(_trial("mc"), [GenerateResponse(text="xyz")])
    assert r.parsed_kind == "unmatched" and r.correct is False and not r.refused
    r = score_trial(
        _trial("mc-nota", answerable=False, gold_options=()),
        [GenerateResponse(text="none of the above")],
    )
    assert r.refused and r.correct and r.parsed_option is None
    free = _trial("free", options=None, gold_options=(), answers=("the board",))
    r = score_trial(free, [GenerateResponse(text="The Board", truncated=True, n_input_tokens=7)])
    assert r.em == 1.0 and r.f1 == 1.0 and r.correct and r.truncated and r.n_input_tokens == 7
    un = _trial("free", options=None, gold_options=(), answerable=False)
    r = score_trial(un, [GenerateResponse(text="no answer>")])
    assert r.refused and r.correct and r.em is None


def test_score_trial_logprob_and_topk() -> None:
    t = _trial("mc-nota", "option-logprob")
    resp = [ScoreResponse(logprob=x, n_tokens=1, is_greedy=False) for x in (-1.0, -2.0, -3.0, -0.5)]
    r = score_trial(t, resp)
    assert r.refused and r.parsed_kind == "refusal" and not r.correct
    assert r.confidence == pytest.approx(softmax([-1.0, -2.0, -3.0, -0.5])[3])
    top = _trial("free", "top-k", options=None, gold_options=(), answers=("Paris",))
    r = score_trial(top, [TopKResponse(tokens=(" Paris", "Rome"), logprobs=(-0.1, -2.0))])
    assert r.correct and r.parsed == "Paris" and r.confidence == pytest.approx(math.exp(-0.1))


# -- the scoring registry -----------------------------------------------------------------------
class _GoldRank(ScoringMode):
    """A test mode: scores the options like option-logprob but records the gold option's
    rank among them as the output (0 = best)."""

    name = "test-gold-rank"
    needs_options = True

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        assert trial.options is not None
        return tuple(
            ScoreRequest(context=trial.prompt, continuation=" " + o) for o in trial.options
        )

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        lps = [r.logprob for r in responses if isinstance(r, ScoreResponse)]
        gold = trial.gold_displayed[0]
        rank = sum(lp > lps[gold] for lp in lps)
        return ScoredTrial(
            output=str(rank),
            parsed=str(rank),
            parsed_kind="free",
            correct=rank == 0,
            truncated=False,
            n_input_tokens=0,
            option_logprobs=lps,
        )


def test_a_registered_mode_runs_through_the_pipeline(tmp_path: Path) -> None:
    from tests.scripted_backend import ScriptedBackend

    mode = register_scoring(_GoldRank(), replace=True)
    assert get_scoring("test-gold-rank") is mode and "test-gold-rank" in scoring_names()
    items = [
        Item(id=f"q{i}", question=f"Q{i}?", options=("a", "b", "c"), gold_options=(i % 3,))
        for i in range(4)
    ]
    cond = Condition(
        name="rank", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="test-gold-rank"
    )
    with pytest.raises(ConfigError, match="needs a multiple-choice format"):
        Condition(name="x", template=TEMPLATES["qa"], format=FORMATS["free"], scoring=mode.name)
    backend = ScriptedBackend(spec=parse_model_spec("scripted:m"))
    result = run(items, [cond], [backend], options=RunOptions(progress=False))
    rows = result.table.to_pylist()
    assert [r["scoring"] for r in rows] == ["test-gold-rank"] * 4
    for r in rows:
        lps = r["option_logprobs"]
        gold = r["gold_options"][0]
        assert r["output"] == str(sum(lp > lps[gold] for lp in lps))
        assert r["correct"] == (r["output"] == "0")
    assert backend.calls["score"] == 12


def test_unknown_and_deprecated_scoring_names() -> None:
    with pytest.raises(ConfigError, match=r"condition 'x': unknown scoring 'beam'; choose from"):
        Condition(name="x", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="beam")
    with pytest.warns(SteadyevalDeprecationWarning, match="use 'option-logprob'"):
        cond = Condition(
            name="x", template=TEMPLATES["qa"], format=FORMATS["mc"], scoring="logprob"
        )
    assert cond.scoring == "option-logprob"
    with pytest.raises(TypeError):
        register_scoring("generate")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        register_scoring(type(get_scoring("generate"))())  # a second Generate


def test_a_mode_registered_before_the_built_ins_load_keeps_its_place() -> None:
    """In a fresh interpreter, a user's mode that replaces a built-in before anything imported
    steadyeval.scoring stays registered, and the other built-ins still load."""
    import subprocess
    import sys

    code = """
from steadyeval.conditions import Condition, ScoringMode, get_scoring, register_scoring
class Mine(ScoringMode):
    name = "generate"
    def requests(self, trial): return ()
    def score(self, trial, responses): raise AssertionError('this test scores nothing')
mine = register_scoring(Mine(), replace=True)
Condition(name="c", format="mc", scoring="option-logprob")
import steadyeval.scoring
assert get_scoring("generate") is mine
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize(
    ("name", "said"),
    [(5, "must be a non-empty string"), ("", "must be a non-empty string"),
     ("logprob", "deprecated name of 'option-logprob'")],
)  # fmt: skip
def test_a_mode_needs_a_usable_name(name: object, said: str) -> None:
    from steadyeval.scoring import ScoringMode, register_scoring

    class Bad(ScoringMode):
        def requests(self, trial: Any) -> tuple[Any, ...]:
            return ()

        def score(self, trial: Any, responses: Any) -> Any:
            raise AssertionError("this test scores nothing")

    Bad.name = name  # type: ignore[assignment]
    with pytest.raises(ValueError, match=said):
        register_scoring(Bad())
