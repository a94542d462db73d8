"""Prompts wrapped in a tokenizer's chat template: one rule for every Hugging Face backend,
checked up front (``precheck``) and applied per request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ConfigError
from ..requests import Request

__all__ = ["chat_messages", "chat_prompt", "check_chat_template"]


def _no_template(where: object) -> ConfigError:
    return ConfigError(
        f"{where}: the condition asks for a chat template but the tokenizer has none; set "
        "chat: false for this model"
    )


def check_chat_template(tokenizer: Any, requests: Sequence[Request], where: object) -> None:
    """Refuse chat requests when ``tokenizer`` has no chat template (before any is sent)."""
    if any(getattr(r, "chat", False) for r in requests) and not getattr(
        tokenizer, "chat_template", None
    ):
        raise _no_template(where)


def chat_messages(
    text: str, system: str | None, turns: Sequence[tuple[str, str]] = ()
) -> list[dict[str, str]]:
    """The messages of a chat request: the system prompt, earlier (user, assistant) turns,
    then ``text`` as the last user turn. The one rule for every backend."""
    messages = [{"role": "system", "content": system}] if system else []
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return [*messages, {"role": "user", "content": text}]


def chat_prompt(
    tokenizer: Any,
    text: str,
    system: str | None,
    where: object,
    turns: Sequence[tuple[str, str]] = (),
) -> str:
    """``text`` (after an optional system prompt and earlier turns) wrapped in
    ``tokenizer``'s chat template, ending with the assistant's turn."""
    if not getattr(tokenizer, "chat_template", None):
        raise _no_template(where)
    messages = chat_messages(text, system, turns)
    rendered: str = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    return rendered
