from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from steadyeval import ConfigError, ModelSpecError, load_backend
from steadyeval.models._hf import HFCausalBackend
from steadyeval.requests import GenerateRequest, ScoreRequest, TopKRequest


@pytest.fixture(scope="module")
def backend(tiny_gpt2: Path) -> HFCausalBackend:
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    assert isinstance(b, HFCausalBackend)
    return b


def _direct(b: HFCausalBackend, context: str, continuation: str) -> float:
    """Reference: encode the pair, forward once, sum the continuation's log-probs."""
    tok, model = b.tokenizer, b.model
    n_sp = len(context) - len(context.rstrip())
    if n_sp:
        context, continuation = context[:-n_sp], context[-n_sp:] + continuation
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    n_ctx = len(tok(context, add_special_tokens=False)["input_ids"])
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([whole])).logits[0].float(), -1)
    return float(sum(logp[i - 1, whole[i]] for i in range(n_ctx, len(whole))))


PAIRS = [
    ("Paris is the", " capital of France"),
    ("Paris is the ", "capital"),
    ("Question: where?\nAnswer:", " a river"),
    ("Question: where?\n", "Answer: the city"),
    ("The river flows through the city.", " none of the above"),
    ("A", "B"),
]


def test_scores_equal_a_direct_forward_pass(backend: HFCausalBackend) -> None:
    got = backend.score([ScoreRequest(c, x) for c, x in PAIRS])
    for (c, x), r in zip(PAIRS, got, strict=True):
        assert r.logprob == pytest.approx(_direct(backend, c, x), abs=1e-4)
        assert r.n_tokens >= 1 and not r.truncated


def test_empty_context_conditions_on_bos(backend: HFCausalBackend) -> None:
    (r,) = backend.score([ScoreRequest("", "Paris is")])
    tok = backend.tokenizer
    ids = [
        tok.bos_token_id or tok.eos_token_id,
        *tok("Paris is", add_special_tokens=False)["input_ids"],
    ]
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(torch.tensor([ids])).logits[0], -1)
    assert r.logprob == pytest.approx(
        float(sum(logp[i - 1, ids[i]] for i in range(1, len(ids)))), abs=1e-4
    )


def test_left_truncation_is_flagged(tiny_gpt2: Path) -> None:
    b = load_backend(f"hf:{tiny_gpt2}?max_length=12")
    long_ctx = "The river flows through the city. " * 6
    (r, short) = b.score([ScoreRequest(long_ctx, " Paris"), ScoreRequest("The", " river")])
    assert r.truncated and r.n_input_tokens == 12 and not short.truncated
    (g,) = b.generate([GenerateRequest(long_ctx, max_new_tokens=4)])
    assert g.truncated and g.n_input_tokens == 8


def test_out_of_memory_halves_the_batch_and_retries(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=8&packing=false")
    assert isinstance(b, HFCausalBackend)
    expected = [r.logprob for r in b.score([ScoreRequest(c, x) for c, x in PAIRS])]
    real = b._forward
    sizes: list[int] = []

    def flaky(ids: Any, mask: Any, pos: Any = None, **kw: Any) -> Any:
        sizes.append(ids.shape[0])
        if ids.shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return real(ids, mask, pos, **kw)

    monkeypatch.setattr(b, "_forward", flaky)
    got = [r.logprob for r in b.score([ScoreRequest(c, x) for c, x in PAIRS])]
    assert got == pytest.approx(expected, abs=1e-5)
    assert sizes[:3] == [6, 4, 2] and b._batch_size == 2
    monkeypatch.setattr(
        b, "_forward", lambda ids, mask, **kw: (_ for _ in ()).throw(RuntimeError("boom"))
    )
    with pytest.raises(RuntimeError, match="boom"):
        b.score([ScoreRequest("a", "b")])


def test_greedy_generation_is_deterministic_and_stops(backend: HFCausalBackend) -> None:
    reqs = [
        GenerateRequest("Question: where?\nAnswer:", max_new_tokens=12),
        GenerateRequest("Paris", max_new_tokens=5),
    ]
    a = backend.generate(reqs)
    assert a == backend.generate(reqs)
    # Batched and one-at-a-time greedy outputs agree.
    assert [backend.generate([r])[0].text for r in reqs] == [x.text for x in a]
    text = a[0].text
    if len(text) > 2:
        stop = text[1:3]
        (s,) = backend.generate([GenerateRequest(reqs[0].prompt, max_new_tokens=12, stop=(stop,))])
        assert stop not in s.text and text.startswith(s.text) and s.finish_reason == "stop"


def test_sampling_is_seeded_per_request(backend: HFCausalBackend) -> None:
    def sample(i: int, seed: int) -> str:
        req = GenerateRequest("Paris", max_new_tokens=8, temperature=1.0, sample_index=i, seed=seed)
        return backend.generate([req])[0].text

    assert sample(0, 1) == sample(0, 1)
    assert len({sample(i, 1) for i in range(4)}) > 1
    state = torch.random.get_rng_state()
    sample(0, 3)
    assert torch.equal(state, torch.random.get_rng_state())


def test_top_k_matches_the_next_token_distribution(backend: HFCausalBackend) -> None:
    (r,) = backend.top_k([TopKRequest("Paris is the", k=3)])
    ids = backend.tokenizer("Paris is the", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        lp = torch.log_softmax(backend.model(torch.tensor([ids])).logits[0, -1], -1)
    vals, toks = lp.topk(3)
    assert r.logprobs == pytest.approx([float(v) for v in vals], abs=1e-5)
    assert r.tokens == tuple(backend.tokenizer.decode([int(t)]) for t in toks)


def test_chat_template_is_applied_when_asked(backend: HFCausalBackend) -> None:
    plain, chat = backend.score(
        [ScoreRequest("Hi", " there"), ScoreRequest("Hi", " there", chat=True)]
    )
    assert plain.logprob != chat.logprob and chat.n_input_tokens > plain.n_input_tokens


def test_fingerprint_is_cheap_and_tracks_files(tiny_gpt2: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(tiny_gpt2, copy)
    b = load_backend(f"hf:{copy}")
    fp = json.loads(b.fingerprint())
    assert b._model is None  # type: ignore[attr-defined]
    assert fp["backend"] == "hf-causal" and fp["dtype"] == "float32"
    assert load_backend(f"hf:{copy}").fingerprint() == b.fingerprint()
    cfg = json.loads((copy / "tokenizer_config.json").read_text())
    cfg["steadyeval_test_marker"] = 1
    (copy / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert load_backend(f"hf:{copy}").fingerprint() != b.fingerprint()
    assert load_backend(f"hf:{copy}?dtype=bfloat16").fingerprint() != b.fingerprint()


def test_spec_errors(tiny_gpt2: Path) -> None:
    with pytest.raises(ModelSpecError, match=r"unknown option 'dtyp'.*allowed: batch_size"):
        load_backend(f"hf:{tiny_gpt2}?dtyp=float16")
    with pytest.raises(ModelSpecError, match=r"dtype must be one of .*got 'fp8'"):
        load_backend(f"hf:{tiny_gpt2}?dtype=fp8")
    with pytest.raises(ModelSpecError, match="does not exist"):
        load_backend("hf:./no/such/model")
    with pytest.raises(ModelSpecError, match=r"not reachable.*local directory"):
        load_backend("hf:someone/not-a-real-model-xyz")
    with pytest.raises(ModelSpecError, match="unknown backend 'nope'"):
        load_backend("nope:x")
    with pytest.raises(ModelSpecError, match="has no backend"):
        load_backend("just-a-name")


def test_chat_without_template_is_a_clear_error(tiny_gpt2: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(tiny_gpt2, copy)
    cfg = json.loads((copy / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (copy / "tokenizer_config.json").write_text(json.dumps(cfg))
    for extra in copy.glob("chat_template.*"):
        extra.unlink()
    b = load_backend(f"hf:{copy}")
    with pytest.raises(ConfigError, match="has none; set chat: false"):
        b.score([ScoreRequest("Hi", " there", chat=True)])


def test_packed_scoring_equals_unshared_scoring(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Options sharing a prompt are forwarded once; scores equal the padded computation."""
    packed = load_backend(f"hf:{tiny_gpt2}?packing=true&batch_size=64")
    plain = load_backend(f"hf:{tiny_gpt2}?packing=false")
    assert isinstance(packed, HFCausalBackend) and isinstance(plain, HFCausalBackend)
    reqs = [ScoreRequest(c, x) for c, x in PAIRS]
    for k in range(40):
        ctx = f"Paragraph {k}: the river flows through the city number {k}.\nQuestion: which?\nAnswer:"
        reqs += [
            ScoreRequest(ctx, opt) for opt in (" the river", " the city", " none of the above")
        ]
    a, b = packed.score(reqs), plain.score(reqs)
    for x, y in zip(a, b, strict=True):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-4)
        assert (x.n_tokens, x.is_greedy, x.truncated) == (y.n_tokens, y.is_greedy, y.truncated)
    assert packed.tokens_forwarded < 0.5 * plain.tokens_forwarded
    # Out-of-memory while packing halves the number of rows per forward pass.
    real = packed._forward
    sizes: list[int] = []

    def flaky(ids: Any, mask: Any, pos: Any = None, **kw: Any) -> Any:
        sizes.append(ids.shape[0])
        if ids.shape[0] > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return real(ids, mask, pos, **kw)

    monkeypatch.setattr(packed, "_forward", flaky)
    again = packed.score(reqs)
    assert [r.logprob for r in again] == pytest.approx([r.logprob for r in a], abs=1e-5)
    assert sizes[0] > 1 and sizes[-1] == 1


def test_packing_check_runs_once_and_agrees(backend: HFCausalBackend) -> None:
    backend.score([ScoreRequest("Paris is the", " capital")])
    assert backend._packing is True


def _shared_prompts(b: HFCausalBackend) -> list[GenerateRequest]:
    """Prompts sharing paragraphs, with stop strings taken from each prompt's own greedy
    output (so some rows stop early and some run to the length limit), and a one-token
    prompt beside the long ones."""
    prompts = ["A"]
    for k in range(6):
        paragraph = f"Paragraph {k}: the river flows through the city number {k} and the hills."
        for q in ("which river?", "where is the city?", "how many hills are there in all?"):
            prompts.append(f"{paragraph}\nQuestion: {q}\nAnswer:")
    free = b.generate([GenerateRequest(p, 10) for p in prompts])
    reqs = []
    for p, r in zip(prompts, free, strict=True):
        reqs.append(GenerateRequest(p, 10))
        if len(r.text) > 4:
            reqs.append(GenerateRequest(p, 10, stop=(r.text[2:4],)))
            reqs.append(GenerateRequest(p, 10, stop=(r.text[2:4], "\n")))
    return reqs


@pytest.mark.parametrize("positions_per_row", [256, 10])
def test_packed_generation_equals_generate(
    tiny_gpt2: Path, positions_per_row: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Greedy prompts sharing a paragraph are prefilled once; the decoded text, token counts
    and finish reasons equal transformers' generate() on the unshared prompts (with a small
    cache budget, one batch's prompts decode in several groups)."""
    monkeypatch.setattr("steadyeval.models._hf.DECODE_POSITIONS_PER_ROW", positions_per_row)
    packed = load_backend(f"hf:{tiny_gpt2}?packing=true&batch_size=64")
    plain = load_backend(f"hf:{tiny_gpt2}?packing=false&batch_size=1")
    assert isinstance(plain, HFCausalBackend)
    reqs = _shared_prompts(plain)
    a, b = packed.generate(reqs), plain.generate(reqs)
    assert a == b
    assert {r.finish_reason for r in a} == {"stop", "length"}
    assert any(r.n_output_tokens < 10 for r in a)  # some stopped before the limit


def test_decode_groups_respect_the_budget() -> None:
    from steadyeval.models._packed_decode import decode_groups

    prompts = [[1] * 30, [2] * 5, [1] * 12 + [3], [1] * 30 + [4], [2] * 7, [5] * 200]
    groups = decode_groups(prompts, room=10, budget=100)
    assert sorted(i for g in groups for i in g) == list(range(6))
    for g in groups:
        assert len(g) == 1 or len(g) * (max(len(prompts[i]) for i in g) + 10) <= 100
    # prefix order: 0 and its extension 3 together; 200 tokens exceed the budget alone
    assert groups == [[0, 3], [2, 1, 4], [5]]


def test_packed_generation_check_and_fallback(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=8")
    assert isinstance(b, HFCausalBackend)
    reqs = _shared_prompts(b)[:9]
    b._packed_generation = None
    expected = b.generate(reqs)
    assert b._packed_generation is True  # the one-time check passed
    # A model whose cache cannot be gathered decodes with generate(), same answers.
    b2 = load_backend(f"hf:{tiny_gpt2}?batch_size=8")
    assert isinstance(b2, HFCausalBackend)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("no plain cache")

    monkeypatch.setattr("steadyeval.models._hf.packed_greedy", broken)
    assert b2.generate(reqs) == expected
    assert b2._packed_generation is False


def _ignores_the_trie(real: Any) -> Any:
    """``row_tensors`` of a model that ignores custom masks and position ids: a plain causal
    mask over the packed row, positions 0..n-1."""

    def fake(rows: Any, dtype: Any) -> Any:
        ids, pos, mask = real(rows, dtype)
        width = ids.shape[1]
        if dtype == torch.bool:
            causal = torch.ones((width, width), dtype=torch.bool).tril()
        else:
            causal = torch.full((width, width), torch.finfo(dtype).min).triu(1)
        return ids, torch.arange(width).expand_as(pos), causal.expand_as(mask).clone()

    return fake


def test_packing_checks_catch_a_model_that_ignores_the_mask(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-time checks branch from the probe, so a model ignoring the trie fails them
    (a single chain would not) and both paths fall back to the unshared computation."""
    from steadyeval.models import _hf_causal_score, _packed_decode

    monkeypatch.setattr(
        _hf_causal_score, "row_tensors", _ignores_the_trie(_hf_causal_score.row_tensors)
    )
    monkeypatch.setattr(
        _packed_decode, "row_tensors", _ignores_the_trie(_packed_decode.row_tensors)
    )
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=8")
    assert isinstance(b, HFCausalBackend)
    prompt = "Paragraph 1: the river flows through the city.\nQuestion: which river?\nAnswer:"
    b.score([ScoreRequest(prompt, " the river"), ScoreRequest(prompt, " the city")])
    b.generate([GenerateRequest(prompt, 6), GenerateRequest(prompt + " no", 6)])
    assert b._packing is False and b._packed_generation is False


def test_packed_generation_rows_leave_the_batch_and_eos(tiny_gpt2: Path) -> None:
    """One stop string met by some rows only (the tiny model repeats its last token), and a
    prompt ending in the end-of-sequence token: rows leave the batch at different steps."""
    packed = load_backend(f"hf:{tiny_gpt2}?packing=true&batch_size=64")
    plain = load_backend(f"hf:{tiny_gpt2}?packing=false&batch_size=1")
    assert isinstance(packed, HFCausalBackend)
    eos = packed.tokenizer.eos_token
    reqs = [
        GenerateRequest(f"Paragraph {k}: the river flows.\nAnswer:{end}", 8, stop=("A",))
        for k in range(4)
        for end in (" A", " B", " B A", " C", eos)
    ]
    a, b = packed.generate(reqs), plain.generate(reqs)
    assert a == b
    assert {r.finish_reason for r in a} == {"stop", "length"}
    assert {r.n_output_tokens for r in a} >= {0, 8}  # eos at once; run to the limit


def _few_shot_requests(n_questions: int) -> list[ScoreRequest]:
    shots = "".join(
        f"Example {k}: the river {k} flows to the sea {k}. Answer: {k % 3}\n" for k in range(4)
    )
    return [
        ScoreRequest(f"{shots}Question {q}: where does river {q} go? Answer:", opt)
        for q in range(n_questions)
        for opt in (" A", " B", " the sea")
    ]


def test_packing_check_is_short_and_not_counted(tiny_gpt2: Path) -> None:
    """The one-time check forwards a short probe (and its branches), counted apart."""
    from steadyeval.models._hf_causal_score import PROBE_TOKENS

    b = load_backend(f"hf:{tiny_gpt2}")
    assert isinstance(b, HFCausalBackend)
    req = _few_shot_requests(1)[2]
    (p,) = b._prepare_scores([req])
    assert len(p.fed) > 3 * PROBE_TOKENS
    b.score([req])
    assert b._packing is True and b._prefix_cache is True
    assert b.tokens_forwarded == len(p.fed)  # the request alone
    # packed (probe + 3 branch nodes), padded (3 sequences), twice: once with a cached prefix
    assert 0 < b.check_tokens <= 2 * (PROBE_TOKENS + 3 + 3 * (PROBE_TOKENS + 1))


def test_few_shot_prefix_is_forwarded_once(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Questions sharing few-shot examples that do not fit in one row: the examples are
    forwarded once as a key/value cache; every score equals the unshared computation and
    the tokens forwarded are close to the prefix-trie bound."""
    from steadyeval.models._packing import trie_size

    monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: 96))
    packed = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    plain = load_backend(f"hf:{tiny_gpt2}?packing=false")
    assert isinstance(packed, HFCausalBackend) and isinstance(plain, HFCausalBackend)
    reqs = [*_few_shot_requests(12), ScoreRequest("Paris is the", " capital")]
    fed = [p.fed for p in plain._prepare_scores(reqs)]
    assert trie_size(fed) > 2 * 96 and max(len(f) for f in fed) < plain.max_length
    a, b = packed.score(reqs), plain.score(reqs)
    assert packed._prefix_cache is True
    for x, y in zip(a, b, strict=True):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-4)
        assert (x.n_tokens, x.is_greedy, x.n_input_tokens) == (
            y.n_tokens,
            y.is_greedy,
            y.n_input_tokens,
        )
    # the bound, up to a question's first tokens repeated where a row is cut
    assert trie_size(fed) <= packed.tokens_forwarded <= 1.05 * trie_size(fed)
    # Without the cached prefix, rows of 96 nodes forward the examples again in every row.
    no_cache = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    assert isinstance(no_cache, HFCausalBackend)
    monkeypatch.setattr(
        "steadyeval.models._hf_causal_score._check_plain_cache",
        lambda cache: (_ for _ in ()).throw(TypeError("not a plain cache")),
    )
    c = no_cache.score(reqs)
    assert no_cache._packing is True and no_cache._prefix_cache is False
    assert [r.logprob for r in c] == pytest.approx([r.logprob for r in b], abs=1e-4)
    assert no_cache.tokens_forwarded > 1.5 * packed.tokens_forwarded


def test_logits_only_at_scored_positions_and_fallback(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring asks the model for the scored positions' logits only; a model whose forward
    takes ``logits_to_keep`` but ignores it is detected and sliced here, same numbers."""
    import inspect

    reqs = [ScoreRequest(c, x) for c, x in PAIRS] + _few_shot_requests(3)
    b = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    assert isinstance(b, HFCausalBackend)
    expected = [r.logprob for r in b.score(reqs)]
    if "logits_to_keep" in inspect.signature(b.model.forward).parameters:
        assert b._keep_ok is True
    for packing in ("true", "false"):
        odd = load_backend(f"hf:{tiny_gpt2}?batch_size=4&packing={packing}")
        assert isinstance(odd, HFCausalBackend)
        real = odd.model.forward

        def ignores_keep(*args: Any, logits_to_keep: Any = 0, real: Any = real, **kw: Any) -> Any:
            return real(*args, **kw)

        monkeypatch.setattr(odd.model, "forward", ignores_keep)
        assert [r.logprob for r in odd.score(reqs)] == pytest.approx(expected, abs=1e-4)
        assert odd._keep_ok is False


def test_pairs_are_encoded_in_one_batch_each_context_once(
    backend: HFCausalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batched encoding equals encoding each pair alone (empty contexts and a text
    starting with the BOS text included), in one tokenizer call per special-token rule,
    each shared context once."""
    text = backend._text
    bos = backend.tokenizer.bos_token or "<|endoftext|>"
    reqs = [ScoreRequest(c, x) for c, x in PAIRS]
    reqs += [ScoreRequest("", "Paris is"), ScoreRequest(bos + "Paris is the", " capital")]
    alone = [text.encode_pair(r) for r in reqs]
    real, batches = text.tokenizer, []

    class Counting:
        bos_token = real.bos_token

        def __call__(self, texts: Any, **kwargs: Any) -> Any:
            if isinstance(texts, list):
                batches.append(list(texts))
            return real(texts, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    monkeypatch.setattr(text, "tokenizer", Counting())
    assert text.encode_pairs(reqs) == alone
    assert len(batches) == 2  # with the special tokens, and the text starting with BOS
    contexts = [t for b in batches for t in b if any(t == c.rstrip() for c, _ in PAIRS)]
    assert sorted(contexts) == sorted({c.rstrip() for c, _ in PAIRS})


def test_scoring_rows_are_narrow_only_when_that_keeps_the_sharing(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows of NARROW_ROWS nodes are used when they forward about the tokens of wide rows
    (a long shared prefix goes into a prefix group: paragraph-first, few-shot); when they
    cut shared parts that no prefix group takes (a short question shared by an item's
    option lists, forwarded once per list), the rows stay wide."""
    from steadyeval.models import _hf_causal_score
    from steadyeval.models._packing import forwarded

    monkeypatch.setattr(_hf_causal_score, "NARROW_ROWS", 48)
    monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: 192))
    b = load_backend(f"hf:{tiny_gpt2}")
    assert isinstance(b, HFCausalBackend)
    b._prefix_cache = True
    # paragraph-first: a 60-token paragraph, then 4 questions x 3 options each
    para = [[*range(100, 160), 200 + q, 300 + q, 400 + o] for q in range(4) for o in range(3)]
    # question-first: an 8-token question, 3 option lists of 40 tokens, 2 options each
    qfirst = [
        [*range(q * 10, q * 10 + 8), *range(1000 + 50 * li, 1040 + 50 * li), 900 + o]
        for q in range(3)
        for li in range(3)
        for o in range(2)
    ]
    # long sequences sharing nothing: as many tokens either way, but a narrow row would
    # still hold a whole one
    unique = [[*range(1000 * k, 1000 * k + 100), 7] for k in range(4)]
    real_pack, packs = _hf_causal_score.pack_with_prefixes, []

    def counted(*args: Any, **kwargs: Any) -> Any:
        packs.append(kwargs["max_nodes"])
        return real_pack(*args, **kwargs)

    monkeypatch.setattr(_hf_causal_score, "pack_with_prefixes", counted)
    # Narrow rows at the trie bound need no wide packing to compare with.
    for seqs, width, widths in (
        (para, 48, [48]),
        (qfirst, 192, [48, 192]),
        (unique, 192, [48, 192]),
    ):
        limits = [len(s) - 1 for s in seqs]
        packs.clear()
        rows, _, chosen = b._pack(seqs, limits)
        assert chosen == width and packs == widths
        assert all(len(r.tokens) <= width for r in rows)
    monkeypatch.setattr(_hf_causal_score, "pack_with_prefixes", real_pack)
    narrow = _hf_causal_score.pack_with_prefixes(
        qfirst, max_nodes=48, limits=[len(s) - 1 for s in qfirst], min_shared=12
    )
    wide = _hf_causal_score.pack_with_prefixes(
        qfirst, max_nodes=192, limits=[len(s) - 1 for s in qfirst], min_shared=48
    )
    assert forwarded(*narrow) > 1.01 * forwarded(*wide)  # the question once per list


def test_narrow_rows_score_as_the_unshared_computation(
    tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring through narrow rows (the shots in a prefix group, the questions in rows of
    48 nodes) equals unshared scoring and forwards about the trie bound."""
    from steadyeval.models import _hf_causal_score
    from steadyeval.models._packing import trie_size

    monkeypatch.setattr(_hf_causal_score, "NARROW_ROWS", 48)
    monkeypatch.setattr(HFCausalBackend, "_row_nodes", property(lambda self: 192))
    packed = load_backend(f"hf:{tiny_gpt2}?batch_size=4")
    plain = load_backend(f"hf:{tiny_gpt2}?packing=false")
    assert isinstance(packed, HFCausalBackend) and isinstance(plain, HFCausalBackend)
    reqs = _few_shot_requests(12)
    packed.score(reqs[:1])  # the one-time checks
    prepared = packed._prepare_scores(reqs)
    _, groups, width = packed._pack([p.fed for p in prepared], [len(p.fed) - 1 for p in prepared])
    assert width == 48 and groups
    packed.tokens_forwarded = 0
    a, b = packed.score(reqs), plain.score(reqs)
    assert [x.logprob for x in a] == pytest.approx([y.logprob for y in b], abs=1e-4)
    fed = [p.fed for p in prepared]
    assert packed.tokens_forwarded <= 1.05 * trie_size(fed)


def test_fused_gelu_swaps_the_python_gelu_and_scores_the_same(tiny_gpt2: Path) -> None:
    from transformers.activations import NewGELUActivation

    fused = load_backend(f"hf:{tiny_gpt2}")
    python = load_backend(f"hf:{tiny_gpt2}?fused_gelu=false")
    assert isinstance(fused, HFCausalBackend) and isinstance(python, HFCausalBackend)
    kinds = [{type(m) for m in b.model.modules()} for b in (fused, python)]
    assert NewGELUActivation not in kinds[0] and NewGELUActivation in kinds[1]
    reqs = [ScoreRequest(c, x) for c, x in PAIRS]
    for a, b in zip(fused.score(reqs), python.score(reqs), strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-5)
    # Run-only: the same model identity and cache key either way.
    assert fused.identity() == python.identity()
    assert fused.fingerprint() == python.fingerprint()
    with pytest.raises(ModelSpecError, match="fused_gelu must be true or false"):
        load_backend(f"hf:{tiny_gpt2}?fused_gelu=maybe")
