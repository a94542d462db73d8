"""The study on a tiny local model: scores equal a direct forward pass; reruns are identical."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from steadyeval import RunOptions
from steadyeval.studies import StudyResult, read_analysis, reanalyze, run_study

CONFIG = {"shots": [0, 1], "scorings": ["letter-logprob", "option-logprob"], "memorisation": True}


@pytest.fixture(scope="module")
def study(
    mini_mmlu: Path, tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[StudyResult, Path]:
    tmp = tmp_path_factory.mktemp("knowledge_run")
    result = run_study(
        "knowledge",
        {"models": [f"hf:{tiny_gpt2}"], "data": str(mini_mmlu), **CONFIG},
        options=RunOptions(out=tmp / "run", cache=tmp / "cache.sqlite", progress=False),
    )
    assert isinstance(result, StudyResult)
    return result, tmp


@pytest.fixture(scope="module")
def hf(tiny_gpt2: Path) -> tuple[Any, Any]:
    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval()
    return tok, model


def _logprobs(model: Any, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    return torch.log_softmax(logits.double(), dim=-1)


def _continuation(tok: Any, model: Any, context: str, continuation: str) -> tuple[float, int]:
    ctx = tok(context)["input_ids"]
    whole = tok(context + continuation)["input_ids"]
    assert whole[: len(ctx)] == ctx
    lp = _logprobs(model, whole)
    cont = whole[len(ctx) :]
    total = sum(float(lp[len(ctx) - 1 + i, t]) for i, t in enumerate(cont))
    return total, len(cont)


def _rows(result: StudyResult, condition: str) -> list[dict[str, Any]]:
    rows = [r for r in result.table.to_pylist() if r["condition"] == condition]
    assert rows
    return rows


def test_letter_scoring_equals_a_direct_forward_pass(
    study: tuple[StudyResult, Path], hf: tuple[Any, Any]
) -> None:
    result, _ = study
    tok, model = hf
    letters = [tok(" " + x)["input_ids"] for x in "ABCD"]
    assert all(len(t) == 1 for t in letters)
    for row in _rows(result, "letter-reference-1shot"):
        lp = _logprobs(model, tok(row["prompt"])["input_ids"])[-1]
        expected = [float(lp[t[0]]) for t in letters]
        assert row["option_logprobs"] == pytest.approx(expected, abs=1e-4)
        probs = torch.softmax(torch.tensor(expected), dim=0)
        choice = int(torch.argmax(probs))
        assert row["confidence"] == pytest.approx(float(probs[choice]), abs=1e-5)
        assert row["parsed_option"] == row["option_source"][choice]
        assert row["correct"] == (row["parsed_option"] == row["gold_options"][0])
        assert row["output"] == "ABCD"[choice]
        assert row["truncated"] is False


def test_option_scoring_equals_a_direct_forward_pass(
    study: tuple[StudyResult, Path], hf: tuple[Any, Any]
) -> None:
    result, _ = study
    tok, model = hf
    for row in _rows(result, "option-reference-0shot")[:3]:
        got = [_continuation(tok, model, row["prompt"], " " + o) for o in row["options"]]
        assert row["option_logprobs"] == pytest.approx([g[0] for g in got], abs=1e-4)
        assert row["option_logprobs_per_token"] == pytest.approx(
            [g[0] / g[1] for g in got], abs=1e-4
        )
        assert row["option_logprobs_per_char"] == pytest.approx(
            [g[0] / len(o) for g, o in zip(got, row["options"], strict=True)], abs=1e-4
        )


def test_question_logprob_is_scored_with_an_empty_context(
    study: tuple[StudyResult, Path], hf: tuple[Any, Any]
) -> None:
    result, _ = study
    tok, model = hf
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    for row in _rows(result, "question-logprob")[:3]:
        ids = [prefix, *tok(row["prompt"])["input_ids"]]
        lp = _logprobs(model, ids)
        expected = sum(float(lp[i, t]) for i, t in enumerate(ids[1:]))
        assert row["option_logprobs"] is None
        assert row["sequence_logprob"] == pytest.approx(expected, abs=1e-4)
        assert row["correct"] is None


def test_run_directory_and_row_count(study: tuple[StudyResult, Path]) -> None:
    result, tmp = study
    n_items, n_conditions = 7, 2 * 2 + 1
    assert result.table.num_rows == n_items * n_conditions
    summary = json.loads((tmp / "run" / "summary.json").read_text())
    assert summary["study"] == "knowledge"
    assert summary["design"]["config"]["shots"] == [0, 1]
    assert {a["condition"] for a in summary["analysis"]["accuracy"]} == {
        "letter-reference-0shot",
        "letter-reference-1shot",
        "option-reference-0shot",
        "option-reference-1shot",
    }
    md = (tmp / "run" / "summary.md").read_text()
    assert "## Knowledge study (MMLU)" in md and "### Accuracy per category" in md
    assert summary["analysis"] == result.analysis.to_json()
    # summary.json reads back as the same typed analysis, and reanalyze recomputes it
    assert read_analysis(tmp / "run") == result.analysis
    assert reanalyze(tmp / "run") == result.analysis  # from results.parquet alone


def test_warm_cache_rerun_is_byte_identical(
    study: tuple[StudyResult, Path], mini_mmlu: Path, tiny_gpt2: Path
) -> None:
    _, tmp = study
    again = run_study(
        "knowledge",
        {"models": [f"hf:{tiny_gpt2}"], "data": str(mini_mmlu), **CONFIG},
        options=RunOptions(out=tmp / "run2", cache=tmp / "cache.sqlite", progress=False),
    )
    assert isinstance(again, StudyResult)
    assert again.summary["plan"]["model_calls"] == 0
    assert (tmp / "run2" / "results.parquet").read_bytes() == (
        tmp / "run" / "results.parquet"
    ).read_bytes()
