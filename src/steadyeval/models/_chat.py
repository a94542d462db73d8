"""Prompts wrapped in a tokenizer's chat template: one rule for every Hugging Face backend,
checked up front (``precheck``) and applied per request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ConfigError
from ..requests import Request

__all__ = ["chat_prompt", "check_chat_template"]


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


def chat_prompt(tokenizer: Any, text: str, system: str | None, where: object) -> str:
    """``text`` (and an optional system prompt) wrapped in ``tokenizer``'s chat template,
    ending with the assistant's turn."""
    if not getattr(tokenizer, "chat_template", None):
        raise _no_template(where)
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]
    rendered: str = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    return rendered
