"""The hf-seq2seq backend on a tiny T5, and the UnifiedQA input encoding."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch

from steadyeval import ConfigError, DataError, ModelSpecError, load_backend
from steadyeval.conditions import FORMATS, TEMPLATES, Condition, Generation, expand
from steadyeval.items import Item
from steadyeval.models._hf_seq2seq import HFSeq2SeqBackend
from steadyeval.requests import GenerateRequest, ScoreRequest, TopKRequest
from steadyeval.run import RunOptions, run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "t5", "t5", seed=0)


@pytest.fixture(scope="module")
def backend(tiny_t5: Path) -> HFSeq2SeqBackend:
    b = load_backend(f"hf-seq2seq:{tiny_t5}?batch_size=4")
    assert isinstance(b, HFSeq2SeqBackend)
    return b


@pytest.fixture(scope="module")
def reference(tiny_t5: Path) -> tuple[Any, Any]:
    """The model and tokenizer loaded straight from the folder, apart from the backend."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_t5).eval()
    return model, AutoTokenizer.from_pretrained(tiny_t5)


def _direct(reference: tuple[Any, Any], source: list[int], target: list[int]) -> float:
    """Reference: one unbatched forward with ``labels`` (transformers shifts them itself)."""
    model, _ = reference
    with torch.no_grad():
        out = model(input_ids=torch.tensor([source]), labels=torch.tensor([target]))
    logp = torch.log_softmax(out.logits[0].float(), -1)
    return float(sum(logp[i, t] for i, t in enumerate(target)))


PAIRS = [
    ("what is the capital of france? \\n paris is the capital of france.", " paris"),
    ("what is the capital of france? \\n paris is the capital of france.", " rome"),
    ("what is the capital of france? \\n paris is the capital of france.", " none of the above"),
    ("how many days are in a week?", " seven"),
    ("a", "b"),
    ("the river flows through the city.", "no answer>"),
]


def test_hf_picks_the_seq2seq_backend_without_loading_weights(tiny_t5: Path) -> None:
    b = load_backend(f"hf:{tiny_t5}")
    assert isinstance(b, HFSeq2SeqBackend)
    assert b.supported_kinds == {"score", "generate", "top-k"}
    fp = json.loads(b.fingerprint())
    assert fp["backend"] == "hf-seq2seq" and fp["weights"]
    assert b.count_tokens(["paris is the capital"]) == [
        len(b.tokenizer("paris is the capital")["input_ids"])
    ]
    assert b._model is None
    assert load_backend(f"hf-seq2seq:{tiny_t5}").fingerprint() == b.fingerprint()
    assert load_backend(f"hf:{tiny_t5}?max_length=64").fingerprint() != b.fingerprint()


def test_scores_equal_a_direct_forward_pass(
    backend: HFSeq2SeqBackend, reference: tuple[Any, Any]
) -> None:
    _, tok = reference
    got = backend.score([ScoreRequest(c, x) for c, x in PAIRS])
    for (c, x), r in zip(PAIRS, got, strict=True):
        source = tok(c)["input_ids"]
        # The target is the answer without its leading space, EOS included.
        target = [*tok(x.strip(), add_special_tokens=False)["input_ids"], tok.eos_token_id]
        assert r.logprob == pytest.approx(_direct(reference, source, target), abs=1e-4)
        assert r.n_tokens == len(target) and r.n_input_tokens == len(source)
        assert not r.truncated and not r.approximate


def test_special_tokens_off_sends_the_input_as_written(
    tiny_t5: Path, backend: HFSeq2SeqBackend, reference: tuple[Any, Any], tiny_gpt2: Path
) -> None:
    """``?special_tokens=false``: the encoder input is the text's own tokens (T5 adds no
    </s>), so "x</s>" without special tokens is "x" with them (UnifiedQA's end marker)."""
    _, tok = reference
    bare = load_backend(f"hf-seq2seq:{tiny_t5}?batch_size=4&special_tokens=false")
    context, answer = PAIRS[0]
    got = bare.score([ScoreRequest(context, answer), ScoreRequest(context + "</s>", answer)])
    source = tok(context, add_special_tokens=False)["input_ids"]
    assert tok.eos_token_id not in source
    target = [*tok(answer.strip(), add_special_tokens=False)["input_ids"], tok.eos_token_id]
    assert got[0].logprob == pytest.approx(_direct(reference, source, target), abs=1e-4)
    assert got[0].n_input_tokens == len(source)
    (marked,) = backend.score([ScoreRequest(context, answer)])  # default: </s> added
    assert got[1].logprob == pytest.approx(marked.logprob, abs=1e-5)
    assert bare.count_tokens([context]) == [len(source)]
    assert bare.fingerprint() != backend.fingerprint()  # its responses are cached apart
    assert "special_tokens=false" in bare.identity()
    default = load_backend(f"hf-seq2seq:{tiny_t5}?batch_size=4&special_tokens=true")
    assert default.identity() == backend.identity()  # the default spelled out: one model
    assert default.fingerprint() == backend.fingerprint()
    with pytest.raises(ModelSpecError, match="special_tokens applies to encoder-decoder"):
        load_backend(f"hf-causal:{tiny_gpt2}?special_tokens=false")
    with pytest.raises(ModelSpecError, match="special_tokens"):
        load_backend(f"hf-seq2seq:{tiny_t5}?special_tokens=maybe")


def test_special_tokens_any_case_is_one_identity_and_empty_input_refused(
    tiny_t5: Path, backend: HFSeq2SeqBackend
) -> None:
    """``special_tokens`` is read as true/false in any case; each spelling of one value is
    one model (one ``model`` column). Without special tokens an empty prompt has no encoder
    token at all: a clear error, not a failure inside the model."""
    for spelled in ("TRUE", "True"):
        same = load_backend(f"hf-seq2seq:{tiny_t5}?special_tokens={spelled}")
        assert same.identity() == backend.identity()
    off = {
        load_backend(f"hf-seq2seq:{tiny_t5}?special_tokens={v}").identity()
        for v in ("false", "False", "FALSE")
    }
    assert len(off) == 1 and next(iter(off)).endswith("?special_tokens=false")
    bare = load_backend(f"hf-seq2seq:{tiny_t5}?special_tokens=false")
    with pytest.raises(DataError, match="the prompt '' has no tokens and special_tokens=false"):
        bare.score([ScoreRequest("", " paris")])
    with pytest.raises(DataError, match="has no tokens"):
        bare.generate([GenerateRequest("   ", max_new_tokens=2)])
    (ok,) = backend.score([ScoreRequest("", " paris")])  # default: the input is </s>
    assert ok.n_input_tokens == 1


def test_leading_space_is_ignored_and_eos_is_scored(backend: HFSeq2SeqBackend) -> None:
    spaced, bare, empty = backend.score(
        [ScoreRequest("a b", " paris"), ScoreRequest("a b", "paris"), ScoreRequest("a b", "")]
    )
    assert spaced == bare
    assert empty.n_tokens == 1  # only </s>: the probability of an empty answer
    assert empty.logprob < 0


def test_is_greedy_means_every_target_token_is_the_argmax(
    backend: HFSeq2SeqBackend, reference: tuple[Any, Any]
) -> None:
    model, tok = reference
    source = tok("what is two plus two?")["input_ids"]
    with torch.no_grad():
        out = model.generate(torch.tensor([source]), max_new_tokens=3, do_sample=False)
    answer = [int(t) for t in out[0, 1:]]
    greedy_text = tok.decode(answer, skip_special_tokens=True)
    for text in (greedy_text, "four", "no answer>"):
        target = [*tok(text, add_special_tokens=False)["input_ids"], tok.eos_token_id]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([source]), labels=torch.tensor([target])).logits
        expected = bool((logits[0].argmax(-1) == torch.tensor(target)).all())
        (r,) = backend.score([ScoreRequest("what is two plus two?", text)])
        assert r.is_greedy == expected


def test_right_truncation_is_flagged(tiny_t5: Path, reference: tuple[Any, Any]) -> None:
    _, tok = reference
    b = load_backend(f"hf-seq2seq:{tiny_t5}?max_length=8")
    long_ctx = "what flows? \\n the river flows through the city near the old bridge."
    (r, short) = b.score([ScoreRequest(long_ctx, " river"), ScoreRequest("a b", " river")])
    assert r.truncated and r.n_input_tokens == 8 and not short.truncated
    # The beginning is kept (the question), the end is cut, and </s> still closes the input.
    kept = [*tok(long_ctx)["input_ids"][:7], tok.eos_token_id]
    target = [*tok("river", add_special_tokens=False)["input_ids"], tok.eos_token_id]
    assert r.logprob == pytest.approx(_direct(reference, kept, target), abs=1e-4)
    (g,) = b.generate([GenerateRequest(long_ctx, max_new_tokens=3)])
    assert g.truncated and g.n_input_tokens == 8
    (k,) = b.top_k([TopKRequest(long_ctx, k=2)])
    assert k.truncated


def test_greedy_generation_equals_transformers_generate(
    backend: HFSeq2SeqBackend, reference: tuple[Any, Any]
) -> None:
    model, tok = reference
    prompts = ["what is the capital of france?", "a", "how many sides does a triangle have?"]
    got = backend.generate([GenerateRequest(p, max_new_tokens=6) for p in prompts])
    for p, r in zip(prompts, got, strict=True):
        with torch.no_grad():
            out = model.generate(torch.tensor([tok(p)["input_ids"]]), max_new_tokens=6)
        assert r.text == tok.decode(out[0], skip_special_tokens=True)
        assert r.n_input_tokens == len(tok(p)["input_ids"])
    text = got[0].text
    if len(text) > 2:
        stop = text[1:3]
        (s,) = backend.generate([GenerateRequest(prompts[0], max_new_tokens=6, stop=(stop,))])
        assert stop not in s.text and text.startswith(s.text) and s.finish_reason == "stop"


def test_sampling_is_seeded_per_request(backend: HFSeq2SeqBackend) -> None:
    def sample(i: int, seed: int) -> str:
        req = GenerateRequest("paris", max_new_tokens=8, temperature=1.0, sample_index=i, seed=seed)
        return backend.generate([req])[0].text

    assert sample(0, 1) == sample(0, 1)
    assert len({sample(i, 1) for i in range(3)}) > 1
    state = torch.random.get_rng_state()
    sample(0, 3)
    assert torch.equal(state, torch.random.get_rng_state())


def test_top_k_is_the_first_decoder_token(
    backend: HFSeq2SeqBackend, reference: tuple[Any, Any]
) -> None:
    model, tok = reference
    (r,) = backend.top_k([TopKRequest("what is the capital of italy?", k=3)])
    source = torch.tensor([tok("what is the capital of italy?")["input_ids"]])
    with torch.no_grad():
        logits = model(input_ids=source, decoder_input_ids=torch.tensor([[0]])).logits
    vals, toks = torch.log_softmax(logits[0, 0], -1).topk(3)
    assert r.logprobs == pytest.approx([float(v) for v in vals], abs=1e-5)
    assert r.tokens == tuple(tok.decode([int(t)]) for t in toks)


def test_top_k_over_candidates_ranks_whole_answers(backend: HFSeq2SeqBackend) -> None:
    cands = ("paris", "rome", "berlin", "none of the above")
    (r,) = backend.top_k([TopKRequest("capital of france?", k=2, candidates=cands)])
    scores = backend.score([ScoreRequest("capital of france?", c) for c in cands])
    best = sorted(zip(cands, scores, strict=True), key=lambda cs: -cs[1].logprob)[:2]
    assert r.tokens == tuple(c for c, _ in best)
    assert r.logprobs == pytest.approx([s.logprob for _, s in best])


def test_out_of_memory_halves_the_batch_and_retries(
    tiny_t5: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = load_backend(f"hf-seq2seq:{tiny_t5}?batch_size=8")
    assert isinstance(b, HFSeq2SeqBackend)
    reqs = [ScoreRequest(c, x) for c, x in PAIRS]
    expected = [r.logprob for r in b.score(reqs)]
    real = b._decoder_logits
    sizes: list[int] = []

    def flaky(pairs: Any) -> Any:
        sizes.append(len(pairs))
        if len(pairs) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return real(pairs)

    monkeypatch.setattr(b, "_decoder_logits", flaky)
    assert [r.logprob for r in b.score(reqs)] == pytest.approx(expected, abs=1e-5)
    assert sizes[:3] == [6, 4, 2] and b._batch_size == 2


def test_wrong_model_kind_and_chat_without_template(tiny_gpt2: Path, backend: Any) -> None:
    with pytest.raises(ConfigError, match="not an encoder-decoder"):
        load_backend(f"hf-seq2seq:{tiny_gpt2}")
    with pytest.raises(ConfigError, match="set chat: false"):
        backend.score([ScoreRequest("a", "b", chat=True)])


@pytest.fixture(scope="module")
def tiny_bart(tiny_t5: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BART-shaped model: decoding starts from </s> then a forced BOS, and its
    generation_config asks for beam search, a minimum length and n-gram blocking."""
    from transformers import (
        AutoTokenizer,
        BartConfig,
        BartForConditionalGeneration,
        GenerationConfig,
    )

    tok = AutoTokenizer.from_pretrained(tiny_t5)  # </s> 1, <pad> 0; <unk> 2 plays <s>
    ids = {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "decoder_start_token_id": 1}
    config = BartConfig(
        vocab_size=len(tok),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        **ids,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = BartForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        forced_bos_token_id=2, num_beams=4, min_length=10, no_repeat_ngram_size=2, **ids
    )
    out = tmp_path_factory.mktemp("models") / "bart"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_forced_bos_and_model_generation_defaults(tiny_bart: Path) -> None:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    b = load_backend(f"hf:{tiny_bart}")
    assert isinstance(b, HFSeq2SeqBackend) and b.max_length == 64
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart).eval()
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    source = torch.tensor([tok("paris is the capital")["input_ids"]])
    # score: the decoder starts from </s> and the forced <s>; only the answer is scored.
    target = tok("paris")["input_ids"]
    with torch.no_grad():
        dec = torch.tensor([[1, 2, *target[:-1]]])
        logp = torch.log_softmax(model(input_ids=source, decoder_input_ids=dec).logits[0], -1)
    (r,) = b.score([ScoreRequest("paris is the capital", " paris")])
    assert r.n_tokens == len(target)
    assert r.logprob == pytest.approx(sum(float(logp[i + 1, t]) for i, t in enumerate(target)))
    # generate: plain greedy steps, not the beams, minimum length or n-gram blocking that the
    # model's generation_config asks for.
    steps = [1, 2]
    with torch.no_grad():
        for _ in range(5):
            logits = model(input_ids=source, decoder_input_ids=torch.tensor([steps])).logits
            steps.append(int(logits[0, -1].argmax()))
    (g,) = b.generate([GenerateRequest("paris is the capital", max_new_tokens=6)])
    answer = steps[2:]
    if 1 in answer:
        answer = answer[: answer.index(1)]
    assert g.text == tok.decode(answer, skip_special_tokens=True)
    assert g.n_output_tokens == len(answer)
    assert b.model.generation_config.num_beams == 4  # the model's own config is left as it was


# -- UnifiedQA's input encoding --------------------------------------------------------------


def _render(item: Item, fmt: str) -> str:
    cond = Condition(name="u", template=TEMPLATES["unifiedqa"], format=FORMATS[fmt])
    (trial,) = expand([item], [cond]).trials
    return trial.prompt


def test_unifiedqa_template_literals() -> None:
    mc = Item("mc", "Which is best conductor?", options=("Iron", "Feather"), gold_options=(0,))
    assert _render(mc, "unifiedqa-mc") == "which is best conductor? \\n (a) iron (b) feather"
    assert (
        _render(mc, "unifiedqa-nota")
        == "which is best conductor? \\n (a) iron (b) feather (c) none of the above"
    )
    extractive = Item(
        "sq",
        "At what speed did the turbine operate?",
        context="(Nikola_Tesla) On his 50th birthday in 1906, Tesla demonstrated a turbine.",
        answers=("16,000 rpm",),
    )
    assert _render(extractive, "free") == (
        "at what speed did the turbine operate? \\n "
        "(nikola_tesla) on his 50th birthday in 1906, tesla demonstrated a turbine."
    )
    with_paragraph = Item(
        "mct",
        "Who was Billy?",
        context="Billy was like a king.",
        options=("The skinny kid", "The big kid"),
        gold_options=(1,),
    )
    assert _render(with_paragraph, "unifiedqa-mc") == (
        "who was billy? \\n (a) the skinny kid (b) the big kid \\n billy was like a king."
    )
    # Closed book: the question alone, no dangling separator.
    assert _render(Item("cb", "Who wrote Hamlet?", answers=("Shakespeare",)), "free") == (
        "who wrote hamlet?"
    )
    # The two characters backslash and n, never a newline.
    assert "\n" not in _render(with_paragraph, "unifiedqa-mc")


def _tsv(path: Path) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        inp, _, target = line.partition("\t")
        rows.append((inp, target))
    return rows


@pytest.mark.shared
def test_unifiedqa_template_matches_real_squad2_lines(shared_data: Path) -> None:
    """SQuAD 2.0 source questions, rendered by the core, equal UnifiedQA's encoded lines
    (lowercased, as UnifiedQA's preprocessing lowercases every input)."""
    squad = json.loads((shared_data / "squad2" / "dev-v2.0.controlled_subset.json").read_text())
    encoded = _tsv(shared_data / "unifiedqa" / "squad2_dev_subset.unifiedqa.tsv")
    article = squad["data"][0]
    items = [
        (article["title"], p["context"], qa) for p in article["paragraphs"][:2] for qa in p["qas"]
    ]
    assert len(items) >= 8
    for n, (title, context, qa) in enumerate(items):
        question = qa["question"] if "?" in qa["question"] else qa["question"] + "?"
        item = Item(
            qa["id"],
            question,
            context=f"({title}) {context}",
            answers=tuple(a["text"] for a in qa["answers"]),
            answerable=not qa.get("is_impossible", False),
        )
        inp, target = encoded[n]
        assert _render(item, "free") == inp.lower()
        assert target == (item.answers[0] if item.answerable else "<No Answer>")


@pytest.mark.shared
def test_unifiedqa_mc_format_matches_real_mmlu_lines(shared_data: Path) -> None:
    encoded = _tsv(shared_data / "unifiedqa" / "mmlu_dev.unifiedqa_mc.tsv")
    src = shared_data / "mmlu" / "hendrycks_format" / "dev" / "abstract_algebra_dev.csv"
    with src.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 5
    for n, row in enumerate(rows):
        gold = "ABCD".index(row[5])
        item = Item(f"aa-{n}", row[0], options=tuple(row[1:5]), gold_options=(gold,))
        inp, target = encoded[n]
        assert _render(item, "unifiedqa-mc") == inp.lower()
        assert target == row[1 + gold]


@pytest.mark.shared
def test_unifiedqa_template_matches_the_readme_examples(shared_data: Path) -> None:
    rows = list(
        csv.DictReader(
            (shared_data / "unifiedqa" / "readme_examples.tsv").open(encoding="utf-8"),
            delimiter="\t",
        )
    )
    by_name = {r["dataset"].split(" (")[0]: r for r in rows}
    arc = by_name["ARC-challenge"]
    item = Item(
        "arc",
        "What does photosynthesis produce that helps plants grow?",
        options=("water", "oxygen", "protein", "sugar"),
        gold_options=(3,),
    )
    assert _render(item, "unifiedqa-mc") == arc["input"].lower()
    mctest = by_name["MCTest"]
    paragraph = mctest["input"].split(" \\n ")[2]
    item = Item(
        "mctest",
        "Who was Billy?",
        context=paragraph,
        options=("The skinny kid", "A teacher", "A little kid", "The big kid"),
        gold_options=(3,),
    )
    assert _render(item, "unifiedqa-mc") == mctest["input"].lower()
    squad = by_name["SQuAD 1.1"]
    question, context = squad["input"].split(" \\n ")
    item = Item("sq", question, context=context, answers=(squad["output"],))
    assert _render(item, "free") == squad["input"].lower()


# -- end to end --------------------------------------------------------------------------------


def test_unifiedqa_conditions_run_end_to_end(tiny_t5: Path, tmp_path: Path) -> None:
    items = [
        Item(
            "q1",
            "What is the capital of France?",
            context="Paris is the capital of France. " * 40,
            options=("Paris", "Rome", "Berlin"),
            gold_options=(0,),
        ),
        Item(
            "q2",
            "Who lives on the moon?",
            context="The moon goes around the earth.",
            answerable=False,
            options=("cats", "dogs", "birds"),
            gold_options=(),
        ),
    ]
    uqa = TEMPLATES["unifiedqa"]
    conditions = [
        Condition("free", uqa, FORMATS["free"], generation=Generation(max_new_tokens=8, stop=())),
        Condition("mc", uqa, FORMATS["unifiedqa-mc"], scoring="option-logprob"),
        Condition("nota", uqa, FORMATS["unifiedqa-nota"], generation=Generation(max_new_tokens=8)),
    ]
    spec = f"hf-seq2seq:{tiny_t5}?max_length=128"
    result = run(items, conditions, [spec], options=RunOptions(out=tmp_path / "run"))
    rows = result.table.to_pylist()
    assert len(rows) == 6
    assert {r["model"] for r in rows} == {load_backend(spec).identity()}
    assert rows[0]["model"].startswith("hf:t5#") and rows[0]["model"].endswith("?max_length=128")
    long = [r for r in rows if r["item_id"] == "q1"]
    assert all(r["truncated"] and r["n_input_tokens"] == 128 for r in long)
    assert all(not r["truncated"] for r in rows if r["item_id"] == "q2")
    assert all(" \\n " in r["prompt"] and r["prompt"] == r["prompt"].lower() for r in rows)
    again = run(items, conditions, [spec], options=RunOptions(out=tmp_path / "again"))
    assert again.summary["plan"]["model_calls"] == 0
    assert (tmp_path / "run" / "results.parquet").read_bytes() == (
        tmp_path / "again" / "results.parquet"
    ).read_bytes()


@pytest.mark.slow
def test_cli_runs_the_example_config_with_a_seq2seq_model(tiny_t5: Path, tmp_path: Path) -> None:
    env = {**os.environ, "STEADYEVAL_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    spec = f"hf-seq2seq:{tiny_t5}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "steadyeval",
            "run",
            str(ROOT / "examples" / "run.yaml"),
            "--model",
            spec,
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
            "--limit",
            "6",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["models"] == [load_backend(spec).identity()] and summary["n_items"] == 6
    table = pq.read_table(tmp_path / "out" / "results.parquet")
    n_items = 6
    assert (
        table.num_rows
        == summary["n_rows"]
        == n_items * len(summary["conditions"]) - summary["n_skipped"]
    )
    assert set(table.column("model").to_pylist()) == set(summary["models"])
    assert set(table.column("condition").to_pylist()) == set(summary["conditions"])
