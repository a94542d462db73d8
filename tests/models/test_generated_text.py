"""One rule for a generation's text in every backend: the characters the new tokens add after
the prompt, leading whitespace included (``steadyeval.models._generated_text``), on byte-level
BPE, SentencePiece-style (Llama-2's decoder, Metaspace) and T5 tokenizers, and through the
``hf``, ``hf-seq2seq`` and ``vllm`` (stand-in engine) backends."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from steadyeval import load_backend
from steadyeval.models import parse_model_spec
from steadyeval.models._generated_text import PromptTail, cut_at_stop, generated_text
from steadyeval.models._tiny_tokenizers import TOKENIZERS
from steadyeval.models._vllm import VLLMBackend
from steadyeval.requests import GenerateRequest
from tests.models import vllm_standin
from tests.models.successor_llama import WRITES, build_successor_llama, llama_tokenizer

CORPUS = ["Question: What is the capital of France?\nAnswer: Paris.", "café 中国 Zürich"] * 5


def _reference(tok: Any, prompt: Sequence[int], new: Sequence[int]) -> str:
    """decode(prompt + new) minus decode(prompt), the slow way (the whole prompt)."""
    before = tok.decode(list(prompt), skip_special_tokens=True)
    whole = tok.decode([*prompt, *new], skip_special_tokens=True)
    assert whole.startswith(before)
    return str(whole[len(before) :])


def _split(tok: Any, prompt: str, continuation: str) -> tuple[list[int], list[int]]:
    """Token ids of ``prompt`` and of what ``continuation`` adds to it, encoded whole."""
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    w = tok(prompt + continuation, add_special_tokens=False)["input_ids"]
    assert w[: len(p)] == p
    return p, w[len(p) :]


def _metaspace_first() -> Any:
    """The Llama-style tokenizer with the newer Llama decoder: Metaspace with
    ``prepend_scheme="first"`` (the first token's "▁" is no space), then byte fallback."""
    from tokenizers import decoders

    tok = llama_tokenizer()
    tok.backend_tokenizer.decoder = decoders.Sequence(
        [decoders.Metaspace(prepend_scheme="first"), decoders.ByteFallback(), decoders.Fuse()]
    )
    return tok


def test_byte_level_text_keeps_the_space_and_whole_characters() -> None:
    tok = TOKENIZERS["gpt2"](CORPUS, 300)
    p, new = _split(tok, "Question: What?\nAnswer:", " 中国 café")
    assert any("\ufffd" in tok.decode(new[:k]) for k in range(len(new)))  # a split character
    assert generated_text(tok, p, new) == " 中国 café"
    for k in range(len(new) + 1):  # every cut, mid-character ones included
        assert generated_text(tok, p, new[:k]) == _reference(tok, p, new[:k])


@pytest.mark.parametrize("make", [llama_tokenizer, _metaspace_first], ids=["llama2", "metaspace"])
def test_sentencepiece_text_starts_with_the_first_tokens_space(make: Any) -> None:
    tok = make()
    p, new = _split(tok, "Question: What?\nAnswer:", " Paris")
    assert tok.convert_ids_to_tokens(new) == ["▁", "P", "a", "r", "i", "s"]
    assert tok.decode(new, skip_special_tokens=True) == "Paris"  # what hf: used to return
    assert generated_text(tok, p, new) == " Paris"
    with_bos = tok("Question: What?\nAnswer:")["input_ids"]
    assert with_bos[0] == tok.bos_token_id and generated_text(tok, with_bos, new) == " Paris"
    for k in range(len(new) + 1):
        assert generated_text(tok, p, new[:k]) == _reference(tok, p, new[:k])


@pytest.mark.parametrize("make", [llama_tokenizer, _metaspace_first], ids=["llama2", "metaspace"])
def test_a_byte_fallback_character_split_across_new_tokens(make: Any) -> None:
    tok = make()
    p = tok("Answer: 中", add_special_tokens=False)["input_ids"]
    guo = tok.convert_tokens_to_ids(["<0xE5>", "<0x9B>", "<0xBD>"])  # 国
    assert tok.convert_ids_to_tokens(p[-3:]) == ["<0xE4>", "<0xB8>", "<0xAD>"]  # 中
    # Unfinished, the bytes are U+FFFDs of their own (the prompt's 中 stays in the prompt);
    # finished, the character.
    assert [generated_text(tok, p, guo[:k]) for k in range(4)] == ["", "\ufffd", "\ufffd" * 2, "国"]
    # A four-token tail would start inside the prompt's 中国: the whole prompt is used.
    p2 = [*p, *guo]
    tail = PromptTail(tok, p2)
    assert tail.tail == p2
    dot = tok.convert_tokens_to_ids(["▁", "P"])
    assert tail.text(dot) == _reference(tok, p2, dot) == " P"


@pytest.mark.parametrize(
    "make",
    [lambda: TOKENIZERS["gpt2"](CORPUS, 300), llama_tokenizer, _metaspace_first],
    ids=["byte-level", "llama2", "metaspace"],
)
def test_every_split_of_a_text_agrees_with_decoding_the_whole_prompt(make: Any) -> None:
    """Prompt = the first j tokens of a text, new = the next 1-5 (short prompts, tails that
    start inside a character, cuts inside one): the text equals decode(prompt + new) minus
    decode(prompt) wherever that difference is defined."""
    tok = make()
    ids = tok("Zürich: 中国 café, Paris.\nAnswer: 中国 Rome", add_special_tokens=False)["input_ids"]
    checked = 0
    for j in range(len(ids)):
        for m in range(1, 6):
            p, new = ids[:j], ids[j : j + m]
            before = tok.decode(p, skip_special_tokens=True)
            whole = tok.decode(p + new, skip_special_tokens=True)
            if whole.startswith(before):
                assert generated_text(tok, p, new) == whole[len(before) :], (j, m)
                checked += 1
    assert checked > 3 * len(ids)


def test_a_prompt_ending_in_special_tokens_is_decoded_whole() -> None:
    """Llama-2's decoder strips a text's first space: a tail of special tokens only (no
    text) would strip the new text's, so the whole prompt is decoded."""
    tok = llama_tokenizer()
    p, new = _split(tok, "Answer:", " Paris")
    eos = tok.eos_token_id
    assert PromptTail(tok, [*p, eos, eos, eos, eos]).tail == [*p, eos, eos, eos, eos]
    assert generated_text(tok, [*p, eos, eos, eos, eos], new) == " Paris"
    # A prompt of BOS only writes no text: the answer starts a text (as an encoder-decoder's).
    assert generated_text(tok, [tok.bos_token_id], new) == "Paris"
    assert generated_text(tok, [], new) == "Paris" and generated_text(tok, p, []) == ""


def test_encoder_decoder_text_after_the_start_token_is_a_new_text() -> None:
    """T5's decoder starts with <pad>, which writes nothing: "▁Paris" is "Paris", the text a
    server returns for the same model; the decoded-alone text is unchanged."""
    tok = TOKENIZERS["t5"](CORPUS, 200)
    new = tok("Paris.", add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(new)[0].startswith("▁")
    start = [tok.pad_token_id]
    assert generated_text(tok, start, new) == "Paris." == tok.decode(new, skip_special_tokens=True)


def test_stop_strings_cut_at_the_earliest() -> None:
    assert cut_at_stop(" Paris. Rome.", (".", " R", "")) == (" Paris", True)
    assert cut_at_stop(" Paris", ("x", "")) == (" Paris", False)
    assert cut_at_stop(" Paris", (" ",)) == ("", True)


@pytest.fixture(scope="module")
def successor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_successor_llama(tmp_path_factory.mktemp("models") / "successor-llama")


@pytest.mark.parametrize("packing", ["true", "false"])
def test_hf_writes_the_leading_space_and_stops_on_the_same_text(
    successor: Path, packing: str
) -> None:
    """Through the hf backend (packed greedy decoding, and transformers' generate): the
    text starts with the first new token's space, an unfinished character is U+FFFDs, and
    a stop string is looked for in that same text (" P" is met at the second token; in the
    new tokens decoded alone, "P", it never would be)."""
    b = load_backend(f"hf:{successor}?packing={packing}")
    prompt = "Question: What is the capital of France?\nAnswer:"
    cases = [
        (GenerateRequest(prompt, max_new_tokens=2), " P", "length"),
        (GenerateRequest(prompt, max_new_tokens=7), " Paris\ufffd", "length"),
        (GenerateRequest(prompt, max_new_tokens=20), WRITES, "stop"),
        (GenerateRequest(prompt, max_new_tokens=20, stop=(" P",)), "", "stop"),
        (GenerateRequest(prompt, max_new_tokens=20, stop=("中", "s")), " Pari", "stop"),
        (GenerateRequest(prompt, max_new_tokens=20, stop=("\ufffd",)), " Paris", "stop"),
    ]
    got = b.generate([r for r, _, _ in cases])
    assert [(g.text, g.finish_reason) for g in got] == [(t, f) for _, t, f in cases]
    assert [g.n_output_tokens for g in got[3:]] == [2, 6, 7]  # stopped where the stop was met


def test_seq2seq_and_vllm_follow_the_rule(successor: Path, tmp_path: Path) -> None:
    """vLLM's text is decoded from its token ids by the same rule (the stand-in engine's
    own text is the new tokens decoded alone: not used); T5's text is unchanged."""
    spec = parse_model_spec(f"vllm:{successor}")
    v = VLLMBackend(spec, engine_module=vllm_standin)
    prompt = "Question: What is the capital of France?\nAnswer:"
    reqs = [GenerateRequest(prompt, 20), GenerateRequest(prompt, 20, stop=("中",))]
    assert [g.text for g in v.generate(reqs)] == [WRITES, " Paris"]
    from steadyeval.models._tiny import build_tiny_model

    t5 = load_backend(f"hf:{build_tiny_model(tmp_path / 't5', 't5')}")
    (r,) = t5.generate([GenerateRequest("what is the capital of france?", 6)])
    assert not r.text.startswith(" ")
