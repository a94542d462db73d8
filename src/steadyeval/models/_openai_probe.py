"""Capability probing of the ``openai:`` backend: which log-probabilities a batch needs
(prompt, next-token or chat), and one tiny probe request per capability per backend instance
to learn whether the server gives them (:meth:`CapabilityProbe.preflight`). A mixin of
:class:`~steadyeval.models._openai.OpenAIBackend`, which provides the spec, options, locks
and ``_post``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from .._errors import UnsupportedRequestError
from ..requests import Request, ScoreRequest, TopKRequest
from ._openai_http import ServerError
from ._openai_options import OpenAIOptions
from ._openai_wire import PromptLogprobs, _chat_top, _choice, _messages
from ._spec import ModelSpec

__all__ = ["Capability", "CapabilityProbe"]

log = logging.getLogger(__name__)

_PROBE_PROMPT = "The capital of France is Paris"
_LABEL = re.compile(r"^\S{1,3}$")
Capability = Literal["prompt-logprobs", "completion-logprobs", "chat-logprobs"]
_CAPABILITY_TEXT: dict[Capability, str] = {
    "prompt-logprobs": "prompt log-probabilities (/completions with echo=true and logprobs)",
    "completion-logprobs": "next-token log-probabilities (/completions with logprobs)",
    "chat-logprobs": "chat log-probabilities (/chat/completions with logprobs and top_logprobs)",
}


class CapabilityProbe:
    """Probes the server, once per instance, for the log-probabilities requests need."""

    # Provided by the class this is mixed into (OpenAIBackend).
    spec: ModelSpec
    options: OpenAIOptions
    _probe_lock: threading.Lock
    _capabilities: dict[Capability, str | None]  # None: supported; str: why not
    _echo_max_tokens: int
    _post: Callable[[str, dict[str, Any]], dict[str, Any]]

    def _needs(self, requests: Sequence[Request]) -> set[Capability]:
        needs: set[Capability] = set()
        for r in requests:
            if isinstance(r, ScoreRequest):
                if r.chat:
                    if not _LABEL.match(r.continuation.strip()):
                        raise UnsupportedRequestError(
                            f"{self.spec}: a chat score request can only score a short label "
                            f"(like ' A') as the first answer token; got continuation "
                            f"{r.continuation[:40]!r}. Chat completions give no prompt "
                            "log-probabilities: use letter-logprob scoring, chat: false, or "
                            "generate"
                        )
                    needs.add("chat-logprobs")
                else:
                    needs.add("prompt-logprobs")
            elif isinstance(r, TopKRequest):
                if r.candidates:
                    raise UnsupportedRequestError(
                        f"{self.spec}: top-k restricted to candidate words needs the full "
                        "next-token distribution, which an OpenAI-compatible server does not "
                        "give; use candidates: vocabulary, or option-logprob scoring"
                    )
                needs.add("chat-logprobs" if r.chat else "completion-logprobs")
        return needs

    def preflight(self, requests: Sequence[Request]) -> None:
        """Check, before anything is sent, that the server can answer ``requests``.

        Probes each capability the requests need once per backend instance (one tiny
        request each; the answer is kept on the instance, not in the response cache: it
        describes the server now, not a model output) and raises
        :class:`~steadyeval.UnsupportedRequestError` naming the server and what it lacks.
        """
        needs = self._needs(requests)
        if needs and self.options.logprobs == "none":
            raise UnsupportedRequestError(
                f"{self.spec}: these requests need log-probabilities, and the spec says the "
                "server gives none (logprobs=none)"
            )
        for cap in sorted(needs):
            with self._probe_lock:
                if cap not in self._capabilities:
                    self._capabilities[cap] = self._probe(cap)
                    log.info(
                        "%s: %s: %s",
                        self.options.base_url,
                        cap,
                        "supported" if self._capabilities[cap] is None else "not supported",
                    )
                reason = self._capabilities[cap]
            if reason is not None:
                kind = {
                    "prompt-logprobs": "score",
                    "completion-logprobs": "top-k",
                    "chat-logprobs": "chat score and chat top-k",
                }[cap]
                raise UnsupportedRequestError(
                    f"server {self.options.base_url} (model {self.spec.name}) cannot give "
                    f"{_CAPABILITY_TEXT[cap]}, which {kind} requests need here: {reason}. "
                    "Use generate scoring for this model, or a server that returns "
                    "log-probabilities (e.g. vLLM's OpenAI server)"
                )

    def _probe(self, cap: Capability) -> str | None:
        """``None`` if the server gives ``cap``; else why not. Auth and network failures
        raise: they say nothing about the capability."""
        try:
            if cap == "prompt-logprobs":
                return self._probe_echo()
            if cap == "completion-logprobs":
                data = self._post(
                    "/completions",
                    {
                        "model": self.spec.name,
                        "prompt": _PROBE_PROMPT,
                        "max_tokens": 1,
                        "logprobs": 1,
                        "temperature": 0,
                    },
                )
                top = PromptLogprobs.from_choice(_choice(data)).top_logprobs
                return None if top and top[0] else "the reply lists no top_logprobs"
            data = self._post(
                "/chat/completions",
                {
                    "model": self.spec.name,
                    "messages": _messages(_PROBE_PROMPT, None),
                    "max_tokens": 1,
                    "logprobs": True,
                    "top_logprobs": 5,
                    "temperature": 0,
                },
            )
            return None if _chat_top(_choice(data)) else "no top_logprobs"
        except ServerError as exc:
            if exc.status in (400, 404, 405, 415, 422, 501) or exc.status == 200:
                return str(exc)
            raise

    def _probe_echo(self) -> str | None:
        last = ""
        for max_tokens in (0, 1):
            body = {
                "model": self.spec.name,
                "prompt": _PROBE_PROMPT,
                "echo": True,
                "logprobs": 1,
                "max_tokens": max_tokens,
                "temperature": 0,
            }
            try:
                data = self._post("/completions", body)
            except ServerError as exc:
                if exc.status in (400, 422):
                    last = str(exc)
                    continue  # max_tokens=0 rejected: try 1
                raise
            lp = PromptLogprobs.from_choice(_choice(data))
            if sum(x is not None for x in lp.token_logprobs) < 1 or len(lp.tokens) < 2:
                return "the reply does not list the prompt's tokens (echo ignored)"
            self._echo_max_tokens = max_tokens
            return None
        return last
