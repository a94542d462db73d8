"""How causal backends turn text into tokens: lm-evaluation-harness's context/continuation
split, the prefix token for an empty context, and chat templates. Shared by the ``hf`` and
``vllm`` backends so both score exactly the same token sequences."""

from __future__ import annotations

from typing import Any

from .._errors import ConfigError
from ..requests import ScoreRequest

__all__ = ["CausalText"]


class CausalText:
    """Tokenisation rules over one ``transformers`` tokenizer; ``where`` names the model in
    errors."""

    def __init__(self, tokenizer: Any, where: str) -> None:
        self.tokenizer = tokenizer
        self.where = where

    def encode(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text``. With ``special``, the tokenizer's own special tokens (e.g. a
        Llama-style BOS) are added as lm-evaluation-harness adds them, unless the text
        already starts with the BOS text (as chat-templated prompts do)."""
        tok = self.tokenizer
        if special and tok.bos_token and text.startswith(tok.bos_token):
            special = False
        ids: list[int] = tok(text, add_special_tokens=special)["input_ids"]
        return ids

    def prefix_token(self) -> int:
        """The token an empty context conditions on: BOS, else EOS."""
        tok = self.tokenizer
        for tid in (tok.bos_token_id, tok.eos_token_id):
            if tid is not None:
                return int(tid)
        raise ConfigError(f"{self.where}: an empty context needs a BOS or EOS token")

    def chat(self, text: str, system: str | None) -> str:
        """``text`` (and an optional system prompt) wrapped in the tokenizer's chat template."""
        tok = self.tokenizer
        if not getattr(tok, "chat_template", None):
            raise ConfigError(
                f"{self.where}: the condition asks for a chat template but the tokenizer has "
                "none; set chat: false for this model"
            )
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": text}
        ]
        rendered: str = tok.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return rendered

    def encode_pair(
        self, req: ScoreRequest, context_lengths: dict[str, int] | None = None
    ) -> tuple[list[int], int]:
        """Token ids of context + continuation and how many of them are the continuation.

        As lm-evaluation-harness: trailing whitespace of the context moves to the
        continuation; the pair is encoded whole and the context's tokens are cut off; an empty
        context conditions on :meth:`prefix_token` (unless the continuation starts with it).
        ``context_lengths`` (context text -> its token count), when given, is read and filled
        so that a context shared by several continuations is encoded once.
        """
        context, continuation = req.context, req.continuation
        if req.chat:
            context = self.chat(context, req.system)
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        if context == "":
            cont = self.encode(continuation, special=False)
            prefix = self.prefix_token()
            if cont and cont[0] == prefix:  # the continuation already starts with it
                return cont, len(cont) - 1
            return [prefix, *cont], len(cont)
        whole = self.encode(context + continuation)
        if context_lengths is None:
            return whole, len(whole) - len(self.encode(context))
        n_context = context_lengths.get(context)
        if n_context is None:
            n_context = context_lengths[context] = len(self.encode(context))
        return whole, len(whole) - n_context
