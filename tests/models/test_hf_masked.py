"""The hf-masked backend on a tiny BERT: cloze top-k, candidate scoring, early failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch

from steadyeval import ConfigError, UnsupportedRequestError, load_backend
from steadyeval.conditions import FORMATS, TEMPLATES, Condition
from steadyeval.items import Item, load_jsonl
from steadyeval.models._hf_masked import HFMaskedBackend
from steadyeval.requests import GenerateRequest, ScoreRequest, TopKRequest
from steadyeval.run import RunOptions, run
from steadyeval.scoring import normalize_answer

ROOT = Path(__file__).resolve().parents[2]
CLOZE = TEMPLATES["cloze"]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "bert", "bert", seed=0)


@pytest.fixture(scope="module")
def backend(tiny_bert: Path) -> HFMaskedBackend:
    b = load_backend(f"hf-masked:{tiny_bert}?batch_size=4")
    assert isinstance(b, HFMaskedBackend)
    return b


@pytest.fixture(scope="module")
def reference(tiny_bert: Path) -> tuple[Any, Any]:
    """The model and tokenizer loaded straight from the folder, apart from the backend."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(tiny_bert).eval()
    return model, AutoTokenizer.from_pretrained(tiny_bert)


def _logp_at(reference: tuple[Any, Any], ids: list[int], pos: int) -> torch.Tensor:
    model, _ = reference
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, pos]
    return torch.log_softmax(logits.float(), -1)


def _pieces(tok: Any, word: str) -> list[int]:
    ids: list[int] = tok(word, add_special_tokens=False)["input_ids"]
    return ids


def test_hf_picks_the_masked_backend_without_loading_weights(tiny_bert: Path) -> None:
    b = load_backend(f"hf:{tiny_bert}")
    assert isinstance(b, HFMaskedBackend)
    assert b.supported_kinds == {"score", "top-k"}
    assert json.loads(b.fingerprint())["backend"] == "hf-masked"
    # [Y] is counted as the one mask token it becomes.
    assert b.count_tokens(["paris is in [Y] ."]) == [
        len(b.tokenizer("paris is in [MASK] .")["input_ids"])
    ]
    assert b._model is None
    assert load_backend(f"hf-masked:{tiny_bert}").fingerprint() == b.fingerprint()


def test_single_token_fillers_score_exactly(
    backend: HFMaskedBackend, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    context = "Paris is the capital of [Y] ."
    fillers = [" france", "italy", "Spain "]
    got = backend.score([ScoreRequest(context, f) for f in fillers])
    ids = tok("Paris is the capital of [MASK] .")["input_ids"]
    pos = ids.index(tok.mask_token_id)
    lp = _logp_at(reference, ids, pos)
    for f, r in zip(fillers, got, strict=True):
        (tid,) = _pieces(tok, f.strip())
        assert r.logprob == pytest.approx(float(lp[tid]), abs=1e-4)
        assert r.n_tokens == 1 and not r.approximate and not r.truncated
        assert r.n_input_tokens == len(ids)


def test_multi_token_fillers_are_pseudo_log_likelihood(
    backend: HFMaskedBackend, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    (r,) = backend.score([ScoreRequest("The capital of [Y] is Berlin.", " Germany")])
    pieces = _pieces(tok, "germany")
    assert len(pieces) > 1
    ids = tok("The capital of germany is Berlin.")["input_ids"]
    start = next(i for i in range(len(ids)) if ids[i : i + len(pieces)] == pieces)
    expected = 0.0
    for p in range(start, start + len(pieces)):
        # Only position p is masked; the other pieces keep their gold tokens.
        masked = [*ids[:p], tok.mask_token_id, *ids[p + 1 :]]
        expected += float(_logp_at(reference, masked, p)[ids[p]])
    assert r.logprob == pytest.approx(expected, abs=1e-4)
    assert r.n_tokens == len(pieces) and r.approximate


def test_empty_context_scores_the_whole_sentence(
    backend: HFMaskedBackend, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    (r,) = backend.score([ScoreRequest("", "Paris is the capital")])
    ids = tok("Paris is the capital")["input_ids"]
    expected = sum(
        float(_logp_at(reference, [*ids[:p], tok.mask_token_id, *ids[p + 1 :]], p)[ids[p]])
        for p in range(1, len(ids) - 1)
    )
    assert r.logprob == pytest.approx(expected, abs=1e-4) and r.n_tokens == len(ids) - 2


def test_top_k_over_the_vocabulary_equals_a_direct_computation(
    backend: HFMaskedBackend, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    (r,) = backend.top_k([TopKRequest("Rome is the capital of [Y] .", k=5)])
    ids = tok("Rome is the capital of [MASK] .")["input_ids"]
    lp = _logp_at(reference, ids, ids.index(tok.mask_token_id))
    lp[tok.all_special_ids] = float("-inf")  # [CLS], [SEP], [PAD], ... are never answers
    vals, toks = lp.topk(5)
    assert r.tokens == tuple(tok.decode([int(t)]) for t in toks)
    assert r.logprobs == pytest.approx([float(v) for v in vals], abs=1e-5)


def _p_at_1_items(reference: tuple[Any, Any]) -> list[Item]:
    """Probes whose gold is the model's own top-1 for half of them and a wrong word for the
    other half, so that P@1 is not trivially 0."""
    _, tok = reference
    subjects = ["Paris", "Rome", "Berlin", "Madrid", "the river", "the old bridge"]
    items = []
    for n, subject in enumerate(subjects):
        ids = tok(f"{subject} is near [MASK] .")["input_ids"]
        lp = _logp_at(reference, ids, ids.index(tok.mask_token_id))
        lp[tok.all_special_ids] = float("-inf")
        top = tok.decode([int(lp.argmax())])
        gold = top if n % 2 == 0 else "zzz"
        items.append(Item(f"i{n}", "[X] is near [Y] .", answers=(gold,), aliases=(subject,)))
    return items


def test_p_at_1_of_a_run_equals_a_direct_computation(
    tiny_bert: Path, reference: tuple[Any, Any], tmp_path: Path
) -> None:
    items = _p_at_1_items(reference)
    cond = Condition("p1", CLOZE, FORMATS["free"], scoring="top-k", top_k=3)
    result = run(items, [cond], [f"hf-masked:{tiny_bert}"], options=RunOptions(out=tmp_path))
    rows = result.table.to_pylist()
    _, tok = reference
    direct = []
    for item in items:
        ids = tok(item.question.replace("[X]", item.aliases[0]).replace("[Y]", "[MASK]"))[
            "input_ids"
        ]
        lp = _logp_at(reference, ids, ids.index(tok.mask_token_id))
        lp[tok.all_special_ids] = float("-inf")
        top = tok.decode([int(lp.argmax())])
        direct.append(normalize_answer(top) == normalize_answer(item.answers[0]))
    assert [r["correct"] for r in rows] == direct
    assert sum(direct) == 3  # P@1 = 0.5
    assert result.summary["by_condition"][0]["accuracy"] == pytest.approx(0.5)


def test_top_k_over_candidates(backend: HFMaskedBackend, reference: tuple[Any, Any]) -> None:
    _, tok = reference
    cands = ("paris", "Rome", "berlin", "madrid")
    (r,) = backend.top_k([TopKRequest("[Y] is the capital.", k=3, candidates=cands)])
    ids = tok("[MASK] is the capital.")["input_ids"]
    lp = _logp_at(reference, ids, ids.index(tok.mask_token_id))
    scored = sorted(((c, float(lp[_pieces(tok, c)[0]])) for c in cands), key=lambda x: -x[1])
    assert r.tokens == tuple(c for c, _ in scored[:3])
    assert r.logprobs == pytest.approx([v for _, v in scored[:3]], abs=1e-5)
    with pytest.raises(ConfigError, match=r"'Germany' is 2 tokens.*option-logprob"):
        backend.top_k([TopKRequest("[Y] is big.", candidates=("paris", "Germany"))])


def test_slot_errors_are_clear(backend: HFMaskedBackend) -> None:
    with pytest.raises(ConfigError, match=r"slot \[Y\] exactly once.*found 0 in 'Paris is big'"):
        backend.top_k([TopKRequest("Paris is big")])
    with pytest.raises(ConfigError, match="found 2"):
        backend.score([ScoreRequest("[Y] and [Y]", "paris")])
    with pytest.raises(ConfigError, match="found 0"):
        backend.score([ScoreRequest("Question: which city?\nAnswer:", " paris")])
    with pytest.raises(ConfigError, match="no chat format"):
        backend.top_k([TopKRequest("[Y] is big.", chat=True)])
    with pytest.raises(ConfigError, match="nothing to fill"):
        backend.score([ScoreRequest("[Y] is big.", " ")])


def test_truncation_keeps_the_slot_and_is_flagged(
    tiny_bert: Path, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    b = load_backend(f"hf-masked:{tiny_bert}?max_length=8")
    words = "one two three four five six seven"
    late, early, short = b.score(
        [
            ScoreRequest(f"{words} [Y] .", "paris"),  # cut on the left
            ScoreRequest(f"[Y] {words} .", "paris"),  # the slot comes first: cut on the right
            ScoreRequest("[Y] .", "paris"),
        ]
    )
    assert late.truncated and early.truncated and not short.truncated
    assert late.n_input_tokens == early.n_input_tokens == 8
    full = tok(f"{words} paris .")["input_ids"]
    kept = [full[0], *full[-7:-1], full[-1]]  # [CLS] + the last 6 body tokens + [SEP]
    pos = kept.index(_pieces(tok, "paris")[0])
    masked = [*kept[:pos], tok.mask_token_id, *kept[pos + 1 :]]
    assert late.logprob == pytest.approx(
        float(_logp_at(reference, masked, pos)[kept[pos]]), abs=1e-4
    )
    (k,) = b.top_k([TopKRequest(f"{words} [Y] .", k=2)])
    assert k.truncated and k.n_input_tokens == 8


def test_out_of_memory_halves_the_batch_and_retries(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = load_backend(f"hf-masked:{tiny_bert}?batch_size=8")
    assert isinstance(b, HFMaskedBackend)
    reqs = [ScoreRequest("The capital of [Y] is Berlin.", c) for c in ("germany", "france")]
    reqs += [ScoreRequest("[Y] is near the river.", c) for c in ("paris", "the old bridge")]
    expected = [r.logprob for r in b.score(reqs)]
    real = b._forward
    sizes: list[int] = []

    def flaky(ids: Any, mask: Any) -> Any:
        sizes.append(ids.shape[0])
        if ids.shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return real(ids, mask)

    monkeypatch.setattr(b, "_forward", flaky)
    assert [r.logprob for r in b.score(reqs)] == pytest.approx(expected, abs=1e-5)
    assert sizes[0] > 4 and sizes[1:3] == [4, 2] and max(sizes[3:]) <= 2 and b._batch_size == 2


def test_generate_fails_before_any_weights_are_loaded(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    def no_weights(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(transformers.AutoModelForMaskedLM, "from_pretrained", no_weights)
    b = load_backend(f"hf-masked:{tiny_bert}")
    items = [Item("q", "Paris is in [Y] .", answers=("France",))]
    generate = Condition("gen", CLOZE, FORMATS["free"], scoring="generate")
    with pytest.raises(UnsupportedRequestError, match=r"hf-masked:.*does not support generate"):
        run(items, [generate], [b], options=RunOptions(out=tmp_path / "out"))
    assert b._model is None and not (tmp_path / "out").exists()
    with pytest.raises(UnsupportedRequestError, match="does not support generate"):
        b.generate([GenerateRequest("Paris is in [Y] .")])


def test_wrong_model_kind(tiny_gpt2: Path) -> None:
    with pytest.raises(ConfigError, match="gpt2 model, which has no masked-LM head"):
        load_backend(f"hf-masked:{tiny_gpt2}")


def test_example_probes_are_lama_style() -> None:
    items = load_jsonl(ROOT / "examples" / "probes.jsonl")
    assert 8 <= len(items) <= 12
    for item in items:
        assert item.question.count("[X]") == 1 and item.question.count("[Y]") == 1
        assert len(item.aliases) >= 2 and item.metadata["relation"].startswith("P")
        assert item.answers[0] in (item.options or ())


@pytest.mark.slow
def test_cli_runs_the_probe_example_with_a_masked_model(tiny_bert: Path, tmp_path: Path) -> None:
    env = {**os.environ, "STEADYEVAL_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    spec = f"hf-masked:{tiny_bert}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "steadyeval",
            "run",
            str(ROOT / "examples" / "probes.yaml"),
            "--model",
            spec,
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    table = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    n_items = len((ROOT / "examples" / "probes.jsonl").read_text().splitlines())
    # The model column is the model's identity: its folder's name and content, no path.
    assert summary["models"] == [load_backend(spec).identity()] and summary["n_skipped"] == 0
    assert summary["models"][0].startswith("hf:bert#") and str(tmp_path) not in str(table)
    assert len(table) == n_items * len(summary["conditions"])
    assert all("[Y]" in r["prompt"] and "[X]" not in r["prompt"] for r in table)
    ranked = [r for r in table if r["scoring"] == "option-logprob"]
    assert ranked and all(len(r["option_logprobs"]) == len(r["options"]) for r in ranked)
