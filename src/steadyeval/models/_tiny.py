"""Tiny, randomly initialised models for pipeline smoke tests (never for real evaluation).

``build_tiny_model`` writes a model folder that the matching ``transformers`` Auto class and
``AutoTokenizer`` load like any downloaded checkpoint: a config, ``model.safetensors`` with
random float32 weights, a tokenizer trained on the spot with the ``tokenizers`` library, and a
README saying what the folder is. Same arguments, same bytes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from .._errors import ConfigError
from .._extras import require
from .._limits import MAX_SEED
from ._tiny_tokenizers import MAX_POSITIONS, TOKENIZERS
from ._weights import loading_weights

__all__ = ["DEFAULT_CORPUS", "TINY_ARCHS", "TinyArch", "build_tiny_model"]

TinyArch = Literal["gpt2", "t5", "bert", "roberta", "albert", "deberta-v2"]
TINY_ARCHS: tuple[str, ...] = get_args(TinyArch)

# Written for this module (not taken from any dataset): short facts, question/answer lines and
# the refusal-like answers that scoring code has to recognise.
DEFAULT_CORPUS: tuple[str, ...] = (
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Rome is the capital of Italy.",
    "Madrid is the capital of Spain.",
    "Tokyo is the capital of Japan.",
    "The river flows through the city.",
    "The old bridge crosses the river near the market.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Ice melts when the air gets warm.",
    "The sun rises in the east and sets in the west.",
    "A week has seven days.",
    "A year has twelve months.",
    "Cats and dogs are common pets.",
    "Birds build nests in the spring.",
    "The library opens at nine in the morning.",
    "She reads a book every evening.",
    "He walked to the station in the rain.",
    "The children played in the park after school.",
    "Mountains are higher than hills.",
    "The ocean is deep and salty.",
    "Bread is made from flour, water and yeast.",
    "Two plus two equals four.",
    "Ten is greater than three.",
    "The moon goes around the earth.",
    "The earth goes around the sun.",
    "Green plants need light to grow.",
    "The train leaves at half past six.",
    "Copper is a good conductor of electricity.",
    "A triangle has three sides.",
    "A square has four equal sides.",
    "Question: What is the capital of France? Answer: Paris",
    "Question: What is the capital of Italy? Answer: Rome",
    "Question: How many days are in a week? Answer: seven",
    "Question: How many sides does a triangle have? Answer: three",
    "Question: What does the moon go around? Answer: the earth",
    "Question: Where does the sun rise? Answer: in the east",
    "Question: What is two plus two? Answer: four",
    "Question: Which is larger, ten or three? Answer: ten",
    "Question: Who lives on the moon? Answer: no answer",
    "Question: What colour is the number seven? Answer: none of the above",
    "Question: Is the ocean salty? Answer: yes",
    "Question: Do fish climb trees? Answer: no",
    "Choose one option: A, B, C or D.",
    "A. Paris B. Berlin C. Rome D. Madrid",
    "The correct option is A.",
    "The answer is B.",
    "True or false: ice is cold. Answer: true",
    "True or false: fire is cold. Answer: false",
    "none of the above",
    "no answer",
    "I do not know.",
    "I cannot answer that question.",
    "Let us think step by step.",
    "First add the numbers, then divide by two.",
    "The result is 42, so the answer is 42.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000",
    "Punctuation: (a), [b], {c}; \"d\" 'e' - f / g? h!",
    "Translate to French: the cat. Translation: le chat",
    "Summary: the river, the city and the bridge.",
    "The end.",
)

_MAX_POSITIONS = MAX_POSITIONS
_HIDDEN = 64
_LAYERS = 2
_HEADS = 2
_FFN = 128

_AUTO_CLASS = {
    "gpt2": "AutoModelForCausalLM",
    "t5": "AutoModelForSeq2SeqLM",
    "bert": "AutoModelForMaskedLM",
    "roberta": "AutoModelForMaskedLM",
    "albert": "AutoModelForMaskedLM",
    "deberta-v2": "AutoModelForMaskedLM",
}


def build_tiny_model(
    out_dir: str | Path,
    arch: TinyArch,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    corpus: Sequence[str] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a tiny, randomly initialised model and a freshly trained tokenizer to ``out_dir``.

    The folder is a pipeline smoke tool, never a real model: its outputs are noise. It loads
    with ``AutoModelForCausalLM`` (``gpt2``), ``AutoModelForSeq2SeqLM`` (``t5``) or
    ``AutoModelForMaskedLM`` (``bert``, ``roberta``, ``albert``, ``deberta-v2``) and with
    ``AutoTokenizer.from_pretrained(out_dir)``.

    Parameters
    ----------
    out_dir
        Folder to write. Created if missing; must be empty unless ``overwrite`` is true.
    arch
        ``"gpt2"`` (byte-level BPE, ``<|endoftext|>``, a chat template), ``"t5"``
        (SentencePiece-style BPE with Metaspace; ``<pad>`` 0, ``</s>`` 1 appended, ``<unk>`` 2)
        ``"bert"`` (lower-cased WordPiece, ``[CLS] ... [SEP]``, ``[MASK]``), ``"roberta"``
        (byte-level BPE, ``<s> ... </s>``, ``<mask>``), ``"albert"`` (lower-cased
        SentencePiece-style BPE, ``[CLS] ... [SEP]``, ``[MASK]``, factorised embeddings) or
        ``"deberta-v2"`` (cased SentencePiece-style BPE, ``[CLS] ... [SEP]``, ``[MASK]``,
        DeBERTa-v3's relative-position attention).
    seed
        Seeds the weight initialisation. The global torch RNG state is left as it was.
    vocab_size
        Upper bound on the tokenizer's vocabulary; a small corpus may yield fewer tokens. It
        must hold the special tokens and the alphabet (257 for gpt2, 261 for roberta, about
        100 for t5 and deberta-v2, 75 for albert and 150 for bert on an ASCII corpus). The model's vocabulary is ``len(tokenizer)``.
    corpus
        Sentences to train the tokenizer on; defaults to :data:`DEFAULT_CORPUS`.
    overwrite
        Replace a tiny model this function wrote before: the files its marker
        (``.steadyeval-tiny``) lists are deleted, only after the new model has been built
        successfully; other files stay. A non-empty folder without the marker (a real model,
        anything else) is never cleared.

    Returns
    -------
    Path
        ``out_dir``.

    Raises
    ------
    ConfigError
        (a ``ValueError``) for an unknown ``arch``, a ``seed`` outside ``0..2**32-1``, a
        ``vocab_size`` too small for the alphabet, an empty corpus, or an ``out_dir`` that is
        a file, is not empty without ``overwrite``, or is not empty and holds no tiny model of
        ours. Nothing is written then.
    TypeError
        For arguments of the wrong type.

    Notes
    -----
    Deterministic: the same arguments give byte-identical ``model.safetensors`` and tokenizer
    files, in any process and from any thread (builds in several threads take turns; the
    tokenizer trainers are used only in ways whose output does not depend on hash-map
    order, see ``_bert_tokenizer``). Weights are float32 on CPU. Building
    takes well under a second once ``torch`` and ``transformers`` are imported. The t5, bert,
    albert and deberta-v2 alphabets hold all printable ASCII; other characters not in the
    corpus become ``<unk>`` there (gpt2 and roberta are byte-level). gpt2, like GPT-2, has no
    pad token.
    """
    if arch not in TINY_ARCHS:
        raise ConfigError(f"unknown arch {arch!r}; expected one of {', '.join(TINY_ARCHS)}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed <= MAX_SEED:  # torch takes no seed beyond 64 bits (a bare ValueError)
        shown = str(seed) if abs(seed) < 10**30 else f"an integer of {seed.bit_length()} bits"
        raise ConfigError(f"seed must be an integer in 0..{MAX_SEED:,}; got {shown}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an integer, got {vocab_size!r}")
    texts = _check_corpus(corpus)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory; choose a folder path")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ConfigError(
            f"{out} is not empty; choose an empty or new folder, or pass overwrite=True "
            "(--overwrite on the command line) to replace the tiny model it holds"
        )
    owned = _owned_tiny_files(out)

    require("tiny models", "torch", "transformers", "tokenizers", "safetensors")
    with tempfile.TemporaryDirectory(prefix="steadyeval-tiny-") as staging_name:
        staging = Path(staging_name)
        # seeds torch's global generator (and may import transformers first): one at a time
        with loading_weights():
            _write_model(staging, arch, seed=seed, vocab_size=vocab_size, corpus=texts)
        names = sorted(p.name for p in staging.iterdir())
        (staging / TINY_MARKER).write_text(json.dumps({"files": names}) + "\n", "utf-8")
        out.mkdir(parents=True, exist_ok=True)
        for name in sorted(owned | {TINY_MARKER}):
            entry = out / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink(missing_ok=True)
        for entry in sorted(staging.iterdir()):
            shutil.move(str(entry), str(out / entry.name))
    return out


#: Written beside a tiny model: the files :func:`build_tiny_model` wrote (all it may delete).
TINY_MARKER = ".steadyeval-tiny"


def _owned_tiny_files(out: Path) -> set[str]:
    """The files of the tiny model in ``out`` (none when ``out`` is new or empty); a
    non-empty folder without a readable marker is refused."""
    if not out.is_dir() or not any(out.iterdir()):
        return set()
    marker = out / TINY_MARKER
    try:
        files = json.loads(marker.read_text("utf-8"))["files"] if marker.is_file() else None
    except (OSError, ValueError, KeyError, TypeError):
        files = None
    if not isinstance(files, list) or marker.is_symlink():
        raise ConfigError(
            f"{out} is not empty and holds no tiny model written by steadyeval (no "
            f"{TINY_MARKER}); it is not cleared: choose an empty or new folder"
        )
    return {f for f in files if isinstance(f, str) and f and "/" not in f and f != ".."}


def _check_corpus(corpus: Sequence[str] | None) -> list[str]:
    if corpus is None:
        return list(DEFAULT_CORPUS)
    if isinstance(corpus, str):
        raise TypeError("corpus must be a sequence of sentences, not one string; wrap it in [...]")
    texts = list(corpus)
    if not texts:
        raise ConfigError("corpus is empty; pass at least one sentence or None for the default")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"corpus[{i}] is {type(text).__name__}, expected str")
    if not any(text.strip() for text in texts):
        raise ConfigError("corpus holds only blank sentences; pass some text")
    return texts


def _write_model(
    out: Path, arch: TinyArch, *, seed: int, vocab_size: int, corpus: list[str]
) -> None:
    tokenizer = TOKENIZERS[arch](corpus, vocab_size)
    model = _random_model(arch, tokenizer, seed)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    custom_corpus = corpus != list(DEFAULT_CORPUS)
    readme = _readme(arch, seed=seed, vocab_size=len(tokenizer), custom_corpus=custom_corpus)
    (out / "README.md").write_text(readme, encoding="utf-8")


def _random_model(arch: TinyArch, tokenizer: Any, seed: int) -> Any:
    """The model for ``tokenizer``, initialised from ``seed`` without touching global RNG state."""
    import torch

    build = {
        "gpt2": _gpt2_model,
        "t5": _t5_model,
        "bert": _bert_model,
        "roberta": _roberta_model,
        "albert": _albert_model,
        "deberta-v2": _deberta_model,
    }[arch]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build(tokenizer)
    return model.to(dtype=torch.float32).eval()


def _gpt2_model(tokenizer: Any) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    eos_id = tokenizer.eos_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=_MAX_POSITIONS,
        n_embd=_HIDDEN,
        n_layer=_LAYERS,
        n_head=_HEADS,
        n_inner=_FFN,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
    )
    model = GPT2LMHeadModel(config)
    # Like GPT-2 checkpoints: no pad token in the tokenizer, generate() pads with eos.
    model.generation_config = _generation_config(
        bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id
    )
    return model


def _t5_model(tokenizer: Any) -> Any:
    from transformers import T5Config, T5ForConditionalGeneration

    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=_HIDDEN,
        d_kv=_HIDDEN // _HEADS,
        d_ff=_FFN,
        num_layers=_LAYERS,
        num_decoder_layers=_LAYERS,
        num_heads=_HEADS,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
    )
    config.decoder_start_token_id = pad_id
    model = T5ForConditionalGeneration(config)
    model.generation_config = _generation_config(
        pad_token_id=pad_id, eos_token_id=eos_id, decoder_start_token_id=pad_id
    )
    return model


def _encoder_sizes(tokenizer: Any) -> dict[str, Any]:
    """The tiny dimensions in the names the BERT-family configs share."""
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": _HIDDEN,
        "num_hidden_layers": _LAYERS,
        "num_attention_heads": _HEADS,
        "intermediate_size": _FFN,
    }


def _bert_model(tokenizer: Any) -> Any:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        **_encoder_sizes(tokenizer),
        max_position_embeddings=_MAX_POSITIONS,
        pad_token_id=tokenizer.pad_token_id,
    )
    return BertForMaskedLM(config)


def _roberta_model(tokenizer: Any) -> Any:
    from transformers import RobertaConfig, RobertaForMaskedLM

    config = RobertaConfig(
        **_encoder_sizes(tokenizer),
        # RoBERTa numbers positions from pad_token_id + 1, so it needs 2 more.
        max_position_embeddings=_MAX_POSITIONS + 2,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return RobertaForMaskedLM(config)


def _albert_model(tokenizer: Any) -> Any:
    from transformers import AlbertConfig, AlbertForMaskedLM

    config = AlbertConfig(
        **_encoder_sizes(tokenizer),
        embedding_size=_HIDDEN // 2,  # ALBERT's factorised embedding
        max_position_embeddings=_MAX_POSITIONS,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    return AlbertForMaskedLM(config)


def _deberta_model(tokenizer: Any) -> Any:
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    # DeBERTa-v3's attention: relative positions only, in log buckets, keys shared with the
    # content; read by the model with getattr, so not in DebertaV2Config's signature.
    v3: dict[str, Any] = {
        "position_buckets": 32,
        "norm_rel_ebd": "layer_norm",
        "share_att_key": True,
    }
    config = DebertaV2Config(
        **_encoder_sizes(tokenizer),
        max_position_embeddings=_MAX_POSITIONS,
        relative_attention=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        pad_token_id=tokenizer.pad_token_id,
        **v3,
    )
    return DebertaV2ForMaskedLM(config)


def _generation_config(**token_ids: int) -> Any:
    from transformers import GenerationConfig

    return GenerationConfig(do_sample=False, **token_ids)  # type: ignore[no-untyped-call]


def _readme(arch: TinyArch, *, seed: int, vocab_size: int, custom_corpus: bool) -> str:
    corpus = "a corpus passed by the caller" if custom_corpus else "steadyeval's built-in corpus"
    return f"""\
# Tiny random {arch} model: a pipeline smoke tool, NOT a real model

This folder was written by steadyeval's `build_tiny_model` (CLI: `steadyeval tiny-model`).
Its weights are random (seed {seed}) and were never trained, so everything it outputs is noise.
Use it to test that loading, tokenizing, batching, caching and scoring code runs end to end;
never report numbers produced with it.

- architecture: {arch} ({_LAYERS} layers, hidden size {_HIDDEN}, {_HEADS} heads), float32
- tokenizer: trained on {corpus}, {vocab_size} tokens
- load with: `transformers.{_AUTO_CLASS[arch]}.from_pretrained(DIR)` and
  `transformers.AutoTokenizer.from_pretrained(DIR)`

The same arguments rebuild byte-identical weights and tokenizer files.
"""
