"""Server profiles of the ``openai:`` backend: what an OpenAI-compatible server does beyond
the OpenAI schema, and what the backend sends to get exact answers from it.

Each profile is one :class:`ServerProfile` in :data:`PROFILES`, chosen by the spec's
``?server=`` or, with ``server=auto`` (the default), from the server's ``/models`` listing
(:func:`profile_from_models`: llama-cpp-python lists its models as ``owned_by: "me"``,
llama.cpp's ``llama-server`` as ``"llamacpp"``, vLLM as ``"vllm"``). The profile says

* ``echo_max_tokens``: what to send as ``max_tokens`` with ``echo=true`` to read a prompt's
  log-probabilities. OpenAI and vLLM generate nothing for 0; llama-cpp-python reads 0 as
  "until the context is full", so it gets 1 (the generated token is left out by count).
* ``sampling``: fields sent with every generate request so that ``temperature: 0`` is plain
  greedy decoding and sampling is plain sampling, as the ``hf`` backend decodes: the
  llama.cpp servers apply ``repeat_penalty=1.1`` (llama-cpp-python), ``top_k=40`` and
  ``min_p=0.05`` unless told otherwise; vLLM honours a model's ``generation_config.json``.
* ``prompt_logprobs``: whether ``/completions`` can echo the prompt with log-probabilities
  (llama.cpp's ``llama-server`` cannot: score requests are refused before anything is sent).
* ``chat_fallback``: whether the server formats a chat with a generic template when the
  model has none (llama-cpp-python falls back to ``llama-2``). Chat requests to such a
  server need ``?chat_template=server`` in the spec, which is then part of the ``model``
  column, so the results say whose template formatted the prompt.

The spec's ``extra.NAME=VALUE`` options and ``extra_body={...}`` (a JSON object) are merged
into every request body last; they change outputs, so they are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OWNED_BY",
    "PROFILES",
    "RESERVED_FIELDS",
    "ServerName",
    "ServerProfile",
    "profile_from_models",
]

ServerName = Literal["openai", "llama-cpp-python", "llama-server", "vllm"]

#: Fields the backend writes itself; ``extra`` may not override them.
RESERVED_FIELDS = frozenset(
    {"model", "prompt", "messages", "echo", "logprobs", "top_logprobs", "max_tokens", "stream",
     "n", "best_of", "seed"}
)  # fmt: skip

_LLAMA_CPP_SAMPLING: Mapping[str, Any] = {
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "top_k": 0,
    "min_p": 0.0,
}


@dataclass(frozen=True)
class ServerProfile:
    """What one kind of server needs (see the module docstring)."""

    name: ServerName
    description: str
    echo_max_tokens: tuple[int, ...] = (0, 1)  # tried in order by the probe
    sampling: Mapping[str, Any] = field(default_factory=dict)
    prompt_logprobs: bool = True
    chat_fallback: bool = False


PROFILES: dict[ServerName, ServerProfile] = {
    "openai": ServerProfile("openai", "OpenAI or another server that follows its schema"),
    "llama-cpp-python": ServerProfile(
        "llama-cpp-python",
        "llama-cpp-python's server (python -m llama_cpp.server ... --logits_all true)",
        echo_max_tokens=(1,),
        sampling=_LLAMA_CPP_SAMPLING,
        chat_fallback=True,
    ),
    "llama-server": ServerProfile(
        "llama-server",
        "llama.cpp's llama-server (no prompt log-probabilities: score requests refused)",
        echo_max_tokens=(1,),
        sampling={**_LLAMA_CPP_SAMPLING, "dry_multiplier": 0.0, "xtc_probability": 0.0},
        prompt_logprobs=False,
        chat_fallback=True,
    ),
    "vllm": ServerProfile(
        "vllm",
        "vLLM's OpenAI server (vllm serve)",
        echo_max_tokens=(1,),
        sampling={
            "repetition_penalty": 1.0,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
            "top_k": -1,
            "min_p": 0.0,
        },
    ),
}

#: ``owned_by`` of a ``/models`` entry, as each server writes it.
OWNED_BY: dict[str, ServerName] = {"me": "llama-cpp-python", "llamacpp": "llama-server",
                                   "vllm": "vllm"}  # fmt: skip


def profile_from_models(listing: Mapping[str, Any], model: str) -> ServerProfile:
    """The profile that a ``GET /models`` reply names (``openai`` when none does)."""
    data = listing.get("data")
    entries = [e for e in data if isinstance(e, Mapping)] if isinstance(data, list) else []
    named = [e for e in entries if e.get("id") == model] or entries
    for entry in named:
        owner = entry.get("owned_by")
        if isinstance(owner, str) and owner in OWNED_BY:
            return PROFILES[OWNED_BY[owner]]
    return PROFILES["openai"]
