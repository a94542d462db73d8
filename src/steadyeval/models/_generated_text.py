"""The one rule for a generation's text, shared by every backend that decodes token ids.

A :class:`~steadyeval.requests.GenerateResponse`'s ``text`` is exactly the characters the new
tokens add after the prompt: ``decode(prompt + new)`` minus ``decode(prompt)``, leading
whitespace included. Decoding the new tokens alone is not that text: a SentencePiece
(Llama-style) decoder drops the space of the first token it sees (``▁Paris`` alone is
``Paris``, after ``Answer:`` it is `` Paris``), and a byte-level BPE character whose bytes
straddle two tokens decodes to U+FFFD when cut apart. Servers (llama.cpp's, vLLM's) return
the text as written after the prompt; so do the ``hf`` backends now.

Cost: only the prompt's last few tokens are decoded before the new ones (:class:`PromptTail`);
the tail is checked to give the same text as the whole prompt would (it decodes to some text
that does not start with U+FFFD, the mark of a tail cut inside a character), else the whole
prompt is used. For an encoder-decoder the prompt is the decoder's start tokens, which write
no text: T5's ``▁Paris`` is ``Paris``, as a server returns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["TAIL_TOKENS", "PromptTail", "cut_at_stop", "generated_text"]

#: Prompt tokens decoded before the new ones. One would do for SentencePiece's first-token
#: rule; a few more let a tail cut inside a byte-fallback or byte-level character (which
#: :class:`PromptTail` detects) be rare.
TAIL_TOKENS = 4

_REPLACEMENT = "\ufffd"


class PromptTail:
    """The end of a prompt that new tokens are decoded after; decoded once, so that each
    :meth:`text` (e.g. a stop check at every decoding step) decodes only tail + new tokens.

    ``tokenizer`` is a ``transformers`` tokenizer (``decode(ids, skip_special_tokens=True)``).
    """

    def __init__(self, tokenizer: Any, prompt: Sequence[int], tail: int = TAIL_TOKENS) -> None:
        self.tokenizer = tokenizer
        self.prompt = prompt  # not copied: a long prompt's ids are read only if needed
        self.tail = [int(t) for t in prompt[max(len(prompt) - tail, 0) :]] if tail > 0 else []
        self.before = self._decode(self.tail)
        if len(self.tail) < len(prompt) and not self._clean(self.before):
            self.tail = [int(t) for t in prompt]
            self.before = self._decode(self.tail)

    def _decode(self, ids: Sequence[int]) -> str:
        text: str = self.tokenizer.decode(list(ids), skip_special_tokens=True)
        return text

    @staticmethod
    def _clean(before: str) -> bool:
        """Whether a tail decoded to ``before`` can stand for the whole prompt: it writes
        some text (a tail of special tokens only would make a decoder that strips the
        text's first space strip the new text's) and does not start inside a character."""
        return bool(before) and not before.startswith(_REPLACEMENT)

    def text(self, new: Sequence[int]) -> str:
        """The characters ``new`` adds after the prompt."""
        new = [int(t) for t in new]
        if not new:
            return ""
        whole = self._decode(self.tail + new)
        if whole.startswith(self.before):
            return whole[len(self.before) :]
        if len(self.tail) < len(self.prompt):  # the tail misled (should not happen): all of it
            prompt = [int(t) for t in self.prompt]
            before = self._decode(prompt)
            whole = self._decode(prompt + new)
            if whole.startswith(before):
                return whole[len(before) :]
        # The new tokens rewrite the prompt's last characters: a byte-fallback decoder turns a
        # whole run of byte pieces into U+FFFDs when the run ends inside a character (the
        # prompt's complete "中" followed by two bytes of an unfinished one). The new tokens'
        # own text then (they start with byte pieces, so no first-token space is lost).
        return self._decode(new)


def generated_text(tokenizer: Any, prompt: Sequence[int], new: Sequence[int]) -> str:
    """The characters the ``new`` token ids add after the ``prompt`` token ids, leading
    whitespace included (see the module's docstring)."""
    return PromptTail(tokenizer, prompt).text(new)


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to its earliest stop string (empty stops never match), and whether one
    was found."""
    cut = [text.index(s) for s in stops if s and s in text]
    return (text[: min(cut)], True) if cut else (text, False)
