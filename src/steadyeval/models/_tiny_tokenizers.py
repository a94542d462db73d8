"""The tokenizers of the tiny test models, trained on the spot with ``tokenizers``.

One builder per architecture, each returning a ``PreTrainedTokenizerFast`` shaped like the
real model family's tokenizer (special tokens, their ids, the pre-tokenizer and the
post-processor that adds them), so the code paths that depend on them are exercised. Every
builder is deterministic: the same corpus and ``vocab_size`` give the same ``tokenizer.json``
in any process (see ``_bert_tokenizer`` for the one trainer that needs help).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

from .._errors import ConfigError

__all__ = ["MAX_POSITIONS", "TOKENIZERS"]

#: Positions the tiny models (and their tokenizers' ``model_max_length``) allow.
MAX_POSITIONS = 256

_GPT2_SPECIAL = "<|endoftext|>"
_GPT2_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|endoftext|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_T5_SPECIALS = ("<pad>", "</s>", "<unk>")  # ids 0, 1, 2
_BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4
# Printable ASCII without whitespace: seeded into the t5 and bert alphabets so that any ASCII text
# tokenizes without <unk>, whatever the corpus.
_ASCII = sorted(set(string.printable) - set(string.whitespace))
_ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # ids 0..4
_ALBERT_SPECIALS = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4
_DEBERTA_SPECIALS = ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")  # ids 0..4
_METASPACE = "\u2581"  # SentencePiece's word-start marker


def _fast_tokenizer(backend: Any, input_names: list[str], **special: str) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend,
        model_max_length=MAX_POSITIONS,
        model_input_names=input_names,
        clean_up_tokenization_spaces=False,
        **special,
    )


def _gpt2_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    _check_vocab_size("gpt2", vocab_size, 1 + len(alphabet))
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[_GPT2_SPECIAL],
        initial_alphabet=alphabet,
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer=trainer)
    tokenizer = _fast_tokenizer(
        backend,
        ["input_ids", "attention_mask"],
        bos_token=_GPT2_SPECIAL,
        eos_token=_GPT2_SPECIAL,
        unk_token=_GPT2_SPECIAL,
    )
    tokenizer.chat_template = _GPT2_CHAT_TEMPLATE
    return tokenizer


def _t5_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    from tokenizers import processors

    pad, eos, unk = _T5_SPECIALS
    backend = _metaspace_bpe("t5", corpus, vocab_size, _T5_SPECIALS, unk, lowercase=False)
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}",
        pair=f"$A {eos} $B {eos}",
        special_tokens=[(eos, backend.token_to_id(eos))],
    )
    return _fast_tokenizer(
        backend, ["input_ids", "attention_mask"], pad_token=pad, eos_token=eos, unk_token=unk
    )


def _bert_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    pad, unk, cls, sep, mask = _BERT_SPECIALS
    normalizer = normalizers.BertNormalizer(lowercase=True)
    alphabet = sorted({*(c.lower() for c in _ASCII), *_corpus_chars(normalizer, corpus)})
    continuations = [f"##{c}" for c in alphabet]
    _check_vocab_size("bert", vocab_size, len(_BERT_SPECIALS) + 2 * len(alphabet))
    # The WordPiece trainer numbers the "##x" pieces in hash-map order, which changes from run
    # to run and with it the tie-breaks between merges. Handing it every "##x" up front, in
    # sorted order, as if special, fixes their ids; the trained vocabulary is then moved into a
    # fresh tokenizer so that only the five real special tokens are special.
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=[*_BERT_SPECIALS, *continuations],
        initial_alphabet=alphabet,
        show_progress=False,
    )
    scratch = Tokenizer(models.WordPiece(unk_token=unk))
    scratch.normalizer = normalizer
    scratch.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    scratch.train_from_iterator(corpus, trainer=trainer)

    backend = Tokenizer(
        models.WordPiece(vocab=scratch.get_vocab(with_added_tokens=False), unk_token=unk)
    )
    backend.add_special_tokens(list(_BERT_SPECIALS))
    backend.normalizer = normalizer
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )
    return _fast_tokenizer(
        backend,
        ["input_ids", "token_type_ids", "attention_mask"],
        pad_token=pad,
        unk_token=unk,
        cls_token=cls,
        sep_token=sep,
        mask_token=mask,
    )


def _corpus_chars(normalizer: Any, corpus: list[str]) -> set[str]:
    """Characters left in the corpus after ``normalizer``, whitespace excluded."""
    return {c for text in corpus for c in normalizer.normalize_str(text) if not c.isspace()}


def _check_vocab_size(arch: str, vocab_size: int, needed: int) -> None:
    if vocab_size < needed:
        raise ConfigError(
            f"vocab_size={vocab_size} is too small for {arch}: its special tokens and alphabet "
            f"alone take {needed} entries; pass vocab_size >= {needed}"
        )


def _token_id(backend: Any, token: str) -> int:
    found = backend.token_to_id(token)
    if found is None:
        raise RuntimeError(f"the trained tokenizer lost its special token {token}")
    return int(found)


def _roberta_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    """RoBERTa's shape: byte-level BPE, ``<s> ... </s>``, a ``<mask>`` that absorbs the
    space before it."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    bos, pad, eos, unk, mask = _ROBERTA_SPECIALS
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    _check_vocab_size("roberta", vocab_size, len(_ROBERTA_SPECIALS) + len(alphabet))
    backend = Tokenizer(models.BPE(unk_token=unk))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(_ROBERTA_SPECIALS),
        initial_alphabet=alphabet,
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer=trainer)
    backend.add_special_tokens([AddedToken(mask, lstrip=True, special=True)])
    backend.post_processor = processors.RobertaProcessing(
        (eos, _token_id(backend, eos)),
        (bos, _token_id(backend, bos)),
        trim_offsets=True,
        add_prefix_space=False,
    )
    return _fast_tokenizer(
        backend,
        ["input_ids", "attention_mask"],
        bos_token=bos,
        eos_token=eos,
        sep_token=eos,
        cls_token=bos,
        unk_token=unk,
        pad_token=pad,
        mask_token=mask,
    )


def _metaspace_bpe(
    arch: str,
    corpus: list[str],
    vocab_size: int,
    specials: tuple[str, ...],
    unk: str,
    *,
    lowercase: bool,
) -> Any:
    """A BPE tokenizer over SentencePiece-style Metaspace pieces, trained on ``corpus`` (no
    post-processor): SentencePiece's nmt_nfkc with remove_extra_whitespaces (NFKC, runs of
    whitespace, newlines included, become one space, no leading or trailing space), then
    lower-cased when ``lowercase``. BPE for all: the Unigram trainer's result changes from
    process to process."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    steps = [normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    normalizer = normalizers.Sequence([*steps, normalizers.Lowercase()] if lowercase else steps)
    alphabet = sorted({_METASPACE, *_ASCII, *_corpus_chars(normalizer, corpus)})
    if lowercase:
        alphabet = sorted({c.lower() for c in alphabet})
    _check_vocab_size(arch, vocab_size, len(specials) + len(alphabet))
    backend = Tokenizer(models.BPE(unk_token=unk))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=alphabet,
        show_progress=False,
    )
    backend.normalizer = normalizer
    backend.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=_METASPACE, prepend_scheme="always"
    )
    backend.decoder = decoders.Metaspace(replacement=_METASPACE, prepend_scheme="always")
    backend.train_from_iterator(corpus, trainer=trainer)
    return backend


def _sentencepiece_like(
    arch: str,
    corpus: list[str],
    vocab_size: int,
    specials: tuple[str, ...],
    *,
    lowercase: bool,
) -> Any:
    """A SentencePiece-style tokenizer (BPE over Metaspace pieces, ``[CLS] ... [SEP]``), as
    ALBERT's (lower-cased) and DeBERTa-v3's (cased) are."""
    from tokenizers import processors

    unk = next(s for s in specials if "unk" in s.lower())
    backend = _metaspace_bpe(arch, corpus, vocab_size, specials, unk, lowercase=lowercase)
    cls, sep = "[CLS]", "[SEP]"
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )
    pad = next(s for s in specials if "pad" in s.lower())
    mask = next(s for s in specials if "mask" in s.lower())
    return _fast_tokenizer(
        backend,
        ["input_ids", "token_type_ids", "attention_mask"],
        pad_token=pad, unk_token=unk, cls_token=cls, sep_token=sep, mask_token=mask,
    )  # fmt: skip


def _albert_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    return _sentencepiece_like("albert", corpus, vocab_size, _ALBERT_SPECIALS, lowercase=True)


def _deberta_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    return _sentencepiece_like("deberta-v2", corpus, vocab_size, _DEBERTA_SPECIALS, lowercase=False)


#: The tokenizer builder of each architecture: ``build(corpus, vocab_size)``.
TOKENIZERS: dict[str, Callable[[list[str], int], Any]] = {
    "gpt2": _gpt2_tokenizer,
    "t5": _t5_tokenizer,
    "bert": _bert_tokenizer,
    "roberta": _roberta_tokenizer,
    "albert": _albert_tokenizer,
    "deberta-v2": _deberta_tokenizer,
}
