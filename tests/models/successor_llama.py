"""A tiny Llama whose greedy output is known: the next token depends only on the last one.

Its tokenizer is Llama-2's kind (``tokenizers``: SentencePiece pieces with byte fallback, and
Llama-2's decoder, whose ``Strip`` drops the first character of a decoded text: decoded
alone, a first new token ``▁P`` loses its space). Its weights are set by hand, so that the
model is a lookup table of successors: the embedding of token ``a`` is the ``a``-th unit
vector, every layer adds nothing (attention and MLP outputs zero), and the head gives
``successor[a]`` a logit of ``sqrt(hidden size)`` (every other token 0). After a prompt
ending in ``:`` it writes ``WRITES`` (`` Paris中.``: a leading space, then a character
spelled by three byte pieces) and then the end of sequence. A real ``LlamaForCausalLM``,
saved and loaded as any model folder (convention 12); llama.cpp converts it too.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

__all__ = ["PIECES", "WRITES", "build_successor_llama", "llama_tokenizer"]

SPECIALS = ["<unk>", "<s>", "</s>"]
_CHARS = sorted(set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;?!'()-\n"))
#: The vocabulary: specials, the 256 byte-fallback pieces, "▁" and the characters.
PIECES = [*SPECIALS, *(f"<0x{b:02X}>" for b in range(256)), "▁", *_CHARS]
#: The pieces the model writes after ``:`` (中 is E4 B8 AD in UTF-8: three byte pieces).
_CHAIN = [":", "▁", "P", "a", "r", "i", "s", "<0xE4>", "<0xB8>", "<0xAD>", "."]
#: The text it writes after a prompt ending in ``:``.
WRITES = " Paris中."


def llama_tokenizer() -> Any:
    """A Llama-2-style fast tokenizer over :data:`PIECES` (no merges: one piece per
    character, the rest byte-fallback pieces), BOS added."""
    from tokenizers import Tokenizer, decoders, models, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(PIECES)}
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    )
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.add_special_tokens(SPECIALS)
    tok.decoder = decoders.Sequence(  # Llama-2's tokenizer.json decoder
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def build_successor_llama(out: Path) -> Path:
    """Write the model and its tokenizer to ``out`` (f32)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = llama_tokenizer()
    tokenizer.save_pretrained(out)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(add_bos_token=True, add_eos_token=False)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    n = len(PIECES)
    hidden = 64 * -(-n // 64)
    config = LlamaConfig(
        vocab_size=n, hidden_size=hidden, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64,
        max_position_embeddings=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    ids = {t: i for i, t in enumerate(PIECES)}
    successor = dict.fromkeys(range(n), ids["</s>"])
    successor.update({ids[a]: ids[b] for a, b in itertools.pairwise(_CHAIN)})
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, :n] = torch.eye(n)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.norm.weight.fill_(1.0)
        model.lm_head.weight.zero_()
        for a, b in successor.items():
            model.lm_head.weight[b, a] = 1.0
    model.save_pretrained(out, safe_serialization=True)
    return out
