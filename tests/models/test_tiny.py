"""build_tiny_model: folders that load with the real transformers classes, byte-for-byte repeatable."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

from steadyeval._errors import ConfigError
from steadyeval.models._tiny import TINY_ARCHS, build_tiny_model

AUTO = {
    "gpt2": AutoModelForCausalLM,
    "t5": AutoModelForSeq2SeqLM,
    "bert": AutoModelForMaskedLM,
    "roberta": AutoModelForMaskedLM,
    "albert": AutoModelForMaskedLM,
    "deberta-v2": AutoModelForMaskedLM,
}
MASKED = ("bert", "roberta", "albert", "deberta-v2")
TEXT = " Paris is\n the capital"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {arch: build_tiny_model(root / arch, arch) for arch in TINY_ARCHS}  # type: ignore[arg-type]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_folder_loads_with_auto_classes_and_runs(built: dict[str, Path], arch: str) -> None:
    folder = built[arch]
    names = set(_files(folder))
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= names
    assert not {"pytorch_model.bin", "model.safetensors.index.json"} & names
    assert (folder / "model.safetensors").stat().st_size < 5_000_000
    assert "NOT a real model" in (folder / "README.md").read_text(encoding="utf-8")

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AUTO[arch].from_pretrained(folder)
    assert model.dtype == torch.float32
    assert model.config.vocab_size == len(tokenizer)
    assert sum(p.numel() for p in model.parameters()) < 500_000

    # GPT-2 style: no pad token, so one text; the others pad a batch of two.
    texts = [TEXT] if arch == "gpt2" else [TEXT, "The river flows."]
    batch = tokenizer(texts, return_tensors="pt", padding=arch != "gpt2")
    n, length = batch["input_ids"].shape
    with torch.no_grad():
        if arch == "t5":
            out = model(**batch, decoder_input_ids=torch.zeros((n, 3), dtype=torch.long))
            assert out.logits.shape == (n, 3, len(tokenizer))
        else:
            out = model(**batch)
            assert out.logits.shape == (n, length, len(tokenizer))
    assert torch.isfinite(out.logits).all()


def test_gpt2_tokenizer_is_byte_level_with_chat_template(built: dict[str, Path]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(built["gpt2"])
    assert tokenizer.eos_token == tokenizer.bos_token == tokenizer.unk_token == "<|endoftext|>"
    assert tokenizer.pad_token is None
    for text in (TEXT, "\tZürich 東京 <b>{x}</b>\n\n", "  two  spaces"):
        ids = tokenizer(text)["input_ids"]
        assert tokenizer.unk_token_id not in ids
        assert tokenizer.decode(ids) == text
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert rendered == "<|user|>\nHi<|endoftext|>\n<|assistant|>\n"


def test_gpt2_generates(built: dict[str, Path]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(built["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(built["gpt2"])
    batch = tokenizer(["Paris is"], return_tensors="pt")
    out = model.generate(**batch, max_new_tokens=3, do_sample=False)
    assert out.shape[1] <= batch["input_ids"].shape[1] + 3


def test_t5_appends_eos_and_generates(built: dict[str, Path]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(built["t5"])
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    ids = tokenizer(TEXT)["input_ids"]
    assert ids[-1] == tokenizer.eos_token_id
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Paris is the capital"

    model = AutoModelForSeq2SeqLM.from_pretrained(built["t5"])
    assert model.config.decoder_start_token_id == tokenizer.pad_token_id
    out = model.generate(**tokenizer(["Paris is"], return_tensors="pt"), max_new_tokens=3)
    assert out[0, 0].item() == tokenizer.pad_token_id


def test_bert_has_mask_token_and_cls_sep(built: dict[str, Path]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(built["bert"])
    assert tokenizer.mask_token == "[MASK]"
    assert tokenizer.mask_token_id is not None
    enc = tokenizer(f"Paris is the {tokenizer.mask_token} of France.")
    assert enc["input_ids"][0] == tokenizer.cls_token_id
    assert enc["input_ids"][-1] == tokenizer.sep_token_id
    assert tokenizer.mask_token_id in enc["input_ids"]
    assert "token_type_ids" in enc
    assert tokenizer.unk_token_id not in tokenizer(TEXT)["input_ids"]
    assert tokenizer.decode(tokenizer(TEXT)["input_ids"], skip_special_tokens=True) == (
        "paris is the capital"
    )


@pytest.mark.parametrize(
    ("arch", "specials", "first", "last", "mask"),
    [
        ("roberta", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "<s>", "</s>", "<mask>"),
        ("albert", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "[CLS]", "[SEP]", "[MASK]"),
        ("deberta-v2", ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], "[CLS]", "[SEP]", "[MASK]"),
    ],
)
def test_masked_families_have_their_own_special_tokens(
    built: dict[str, Path], arch: str, specials: list[str], first: str, last: str, mask: str
) -> None:
    tokenizer = AutoTokenizer.from_pretrained(built[arch])
    assert tokenizer.convert_ids_to_tokens(list(range(5))) == specials
    assert tokenizer.mask_token == mask and tokenizer.pad_token_id is not None
    ids = tokenizer(TEXT)["input_ids"]
    assert tokenizer.convert_ids_to_tokens([ids[0], ids[-1]]) == [first, last]
    assert tokenizer.unk_token_id not in ids
    decoded = str(tokenizer.decode(ids, skip_special_tokens=True)).strip()
    assert decoded.split() == (TEXT.lower() if arch == "albert" else TEXT).split()


@pytest.mark.parametrize("arch", MASKED)
def test_masked_models_load_through_hf_masked(built: dict[str, Path], arch: str) -> None:
    from steadyeval.models import load_backend
    from steadyeval.requests import ScoreRequest, TopKRequest

    backend = load_backend(f"hf-masked:{built[arch]}")
    one, two = backend.score(
        [ScoreRequest("Paris is the [Y] of France.", c) for c in ("capital", "capital city")]
    )
    assert one.logprob < 0 and two.logprob < one.logprob and two.approximate
    (top,) = backend.top_k([TopKRequest("Paris is the [Y] of France.", k=3)])
    assert len(top.tokens) == 3
    tokenizer = AutoTokenizer.from_pretrained(built[arch])
    assert not set(top.tokens) & set(tokenizer.all_special_tokens)


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_same_seed_same_bytes(built: dict[str, Path], tmp_path: Path, arch: str) -> None:
    again = build_tiny_model(tmp_path / "again", arch)  # type: ignore[arg-type]
    assert _files(again) == _files(built[arch])


def test_other_seed_other_weights_same_tokenizer(built: dict[str, Path], tmp_path: Path) -> None:
    other = _files(build_tiny_model(tmp_path / "s1", "gpt2", seed=1))
    base = _files(built["gpt2"])
    assert other["model.safetensors"] != base["model.safetensors"]
    assert other["tokenizer.json"] == base["tokenizer.json"]


def test_global_rng_untouched(tmp_path: Path) -> None:
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    build_tiny_model(tmp_path / "m", "bert", seed=7)
    assert torch.equal(torch.rand(3), expected)


def test_custom_corpus_and_vocab_size(tmp_path: Path) -> None:
    corpus = ["alpha beta gamma", "beta gamma delta", "gamma delta epsilon"] * 5
    folder = build_tiny_model(tmp_path / "m", "t5", vocab_size=120, corpus=corpus)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert len(tokenizer) <= 120
    assert "caller" in (folder / "README.md").read_text(encoding="utf-8")


def test_unknown_arch_names_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError,
        match="unknown arch 'llama'; expected one of gpt2, t5, bert, roberta, albert, deberta-v2",
    ):
        build_tiny_model(tmp_path / "m", "llama")  # type: ignore[arg-type]
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"vocab_size": 100}, ConfigError, "vocab_size=100 is too small for gpt2"),
        ({"vocab_size": 512.0}, TypeError, "vocab_size must be an integer"),
        ({"corpus": "one string"}, TypeError, "not one string"),
        ({"corpus": []}, ConfigError, "corpus is empty"),
        ({"corpus": ["ok", 3]}, TypeError, r"corpus\[1\] is int"),
        ({"seed": -1}, ConfigError, r"seed must be an integer in 0\.\.4,294,967,295; got -1"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        build_tiny_model(tmp_path / "m", "gpt2", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "m").exists()


def test_refuses_non_empty_dir_unless_overwrite(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not empty.*overwrite=True"):
        build_tiny_model(folder, "gpt2")
    assert _files(folder) == {"notes.txt": b"keep me"}

    # overwrite=True replaces only a tiny model steadyeval wrote: this folder holds none.
    with pytest.raises(ConfigError, match="holds no tiny model written by steadyeval"):
        build_tiny_model(folder, "gpt2", overwrite=True)
    assert _files(folder) == {"notes.txt": b"keep me"}

    tiny = build_tiny_model(tmp_path / "tiny", "gpt2")
    before = _files(tiny)
    # A failed build with overwrite=True still loses nothing.
    with pytest.raises(ConfigError, match="too small"):
        build_tiny_model(tiny, "gpt2", vocab_size=10, overwrite=True)
    assert _files(tiny) == before
    build_tiny_model(tiny, "bert", overwrite=True)
    assert AutoTokenizer.from_pretrained(tiny).mask_token == "[MASK]"
    assert "merges.txt" not in _files(tiny)  # the gpt2 files it wrote are gone


def test_empty_existing_dir_is_fine(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    assert build_tiny_model(tmp_path / "m", "bert") == tmp_path / "m"
    assert (tmp_path / "m" / "model.safetensors").is_file()


def test_refuses_a_file_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a directory"):
        build_tiny_model(tmp_path / "f", "gpt2", overwrite=True)


@pytest.mark.parametrize("seed", [2**32, 2**70, 10**5000], ids=["2**32", "2**70", "10**5000"])
def test_seed_beyond_the_bound_is_a_config_error(tmp_path: Path, seed: int) -> None:
    # torch refuses seeds beyond 64 bits with a bare ValueError; the bound is MAX_SEED
    with pytest.raises(ConfigError, match=r"seed must be an integer in 0\.\.4,294,967,295; got "):
        build_tiny_model(tmp_path / "m", "gpt2", seed=seed)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("seed", ["99999999999999999999999", "-1", "4294967296"])
def test_cli_seed_out_of_range_names_the_flag(tmp_path: Path, seed: str) -> None:
    from click.testing import CliRunner

    from steadyeval.cli import main

    result = CliRunner().invoke(main, ["tiny-model", str(tmp_path / "m"), "--seed", seed])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "'--seed'" in result.output and "0<=x<=4294967295" in result.output
    assert not (tmp_path / "m").exists()
