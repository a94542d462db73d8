"""Capability probing of the ``openai:`` backend: which server it talks to (its profile,
:mod:`._openai_server`: from ``?server=`` or one ``GET /models``), which log-probabilities a
batch needs (prompt, next-token or chat), and one tiny probe request per capability to learn
whether the server gives them and how (:meth:`CapabilityProbe.preflight`): what
``max_tokens: 0`` does there, whether it answers at all. What is learnt is kept for the
process, keyed by the backend's fingerprint (the model's identity at that server), so a run
probes each server once however many backend instances it makes. A mixin of
:class:`~steadyeval.models._openai.OpenAIBackend`, which provides the spec, options, locks,
``client``, ``fingerprint`` and ``_post``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._errors import UnsupportedRequestError
from ..requests import GenerateRequest, Request, ScoreRequest, TopKRequest
from ._http import HttpClient
from ._http_policy import ServerError
from ._openai_options import OpenAIOptions
from ._openai_server import PROFILES, ServerProfile, profile_from_models
from ._openai_wire import PromptLogprobs, _chat_top, _choice, _messages, _usage
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


def _no_echo(profile: ServerProfile) -> str:
    return f"{profile.description} does not echo the prompt with log-probabilities"


class CapabilityProbe:
    """Probes the server, once per instance, for the log-probabilities requests need."""

    # Provided by the class this is mixed into (OpenAIBackend).
    spec: ModelSpec
    options: OpenAIOptions
    _probe_lock: threading.Lock
    _capabilities: dict[Capability, str | None]  # None: supported; str: why not
    _echo_max_tokens: int
    _profile: ServerProfile | None
    _post: Callable[[str, dict[str, Any]], dict[str, Any]]
    fingerprint: Callable[[], str]

    if TYPE_CHECKING:

        @property
        def client(self) -> HttpClient:  # provided by OpenAIBackend
            ...

    def profile(self) -> ServerProfile:
        """The server's profile: the spec's ``server=``, else what ``GET /models`` names
        (kept for the process). A 404 there on a base_url without /v1 is an error with
        that hint; any other failure leaves the generic ``openai`` profile."""
        if self._profile is not None:
            return self._profile
        if self.options.server is not None:
            self._profile = PROFILES[self.options.server]
            return self._profile
        key = self.fingerprint()
        with _SHARED_LOCK:
            known = _PROFILES.get(key)
        if known is None:
            try:
                known = profile_from_models(self.client.get("/models"), self.spec.name)
            except ServerError as exc:
                if exc.status == 404 and not self.options.base_url.endswith("/v1"):
                    raise
                if exc.status is None:  # not reachable now: ask again next time
                    return PROFILES["openai"]
                known = PROFILES["openai"]
            log.info("%s: server profile %s", self.options.base_url, known.name)
            with _SHARED_LOCK:
                _PROFILES[key] = known
        self._profile = known
        return known

    def _check_chat(self, requests: Sequence[Request]) -> None:
        """Refuse chat requests to a server that would format them with a generic template
        unless the spec accepts the server's formatting (``chat_template=server``)."""
        chat = (ScoreRequest, GenerateRequest, TopKRequest)
        if not any(isinstance(r, chat) and r.chat for r in requests):
            return
        profile = self.profile()
        if profile.chat_fallback and self.options.chat_template is None:
            raise UnsupportedRequestError(
                f"{self.spec}: chat requests to {profile.description} are formatted with the "
                "model's chat template, or with a generic one (llama-2) when the model has "
                "none, and the reply does not say which. Add chat_template=server to the spec "
                "to accept the server's formatting (it is then part of the model column), or "
                "use chat: false"
            )

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

    def precheck(self, requests: Sequence[Request]) -> None:
        """What :meth:`preflight` decides without contacting the server: requests no server
        of this kind answers, log-probabilities under ``logprobs=none``, and, when the spec
        names the server (``server=``), what its profile refuses (a dry run calls this)."""
        if self.options.server is not None:
            self._check_chat(requests)  # the profile is known without asking the server
        needs = self._needs(requests)
        if needs and self.options.logprobs == "none":
            raise UnsupportedRequestError(
                f"{self.spec}: these requests need log-probabilities, and the spec says the "
                "server gives none (logprobs=none)"
            )
        profile = PROFILES[self.options.server] if self.options.server is not None else None
        if profile is not None and "prompt-logprobs" in needs and not profile.prompt_logprobs:
            raise self._cannot("prompt-logprobs", _no_echo(profile))

    def preflight(self, requests: Sequence[Request]) -> None:
        """Check, before anything is sent, that the server can answer ``requests``.

        Probes each capability the requests need once per backend instance (one tiny
        request each; the answer is kept on the instance, not in the response cache: it
        describes the server now, not a model output) and raises
        :class:`~steadyeval.UnsupportedRequestError` naming the server and what it lacks.
        """
        self.precheck(requests)
        self._check_chat(requests)
        for cap in sorted(self._needs(requests)):
            with self._probe_lock:
                if cap not in self._capabilities:
                    self._capabilities[cap] = self._shared_probe(cap)
                    log.info(
                        "%s: %s: %s",
                        self.options.base_url,
                        cap,
                        "supported" if self._capabilities[cap] is None else "not supported",
                    )
                reason = self._capabilities[cap]
            if reason is not None:
                raise self._cannot(cap, reason)

    def _cannot(self, cap: Capability, reason: str) -> UnsupportedRequestError:
        kind = {
            "prompt-logprobs": "score",
            "completion-logprobs": "top-k",
            "chat-logprobs": "chat score and chat top-k",
        }[cap]
        return UnsupportedRequestError(
            f"server {self.options.base_url} (model {self.spec.name}) cannot give "
            f"{_CAPABILITY_TEXT[cap]}, which {kind} requests need here: {reason}. "
            "Use generate scoring for this model, or a server that returns "
            "log-probabilities (vLLM's OpenAI server; llama-cpp-python's started "
            "with --logits_all true)"
        )

    def _shared_probe(self, cap: Capability) -> str | None:
        """:meth:`_probe`, once per process for this fingerprint and server profile."""
        key = (self.fingerprint(), self.profile().name, cap)
        with _SHARED_LOCK:
            known = _CAPABILITIES.get(key)
        if known is None:
            known = (self._probe(cap), self._echo_max_tokens)
            with _SHARED_LOCK:
                _CAPABILITIES[key] = known
        self._echo_max_tokens = known[1]
        return known[0]

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
            if exc.status in (None, 401, 403):
                raise  # the key, the network or a request that cannot be sent: not the capability
            if exc.status == 404 and not self.options.base_url.endswith("/v1"):
                raise  # a wrong base_url, not a missing capability
            if exc.status in (400, 404, 405, 415, 422, 501, 200) or exc.permanent:
                return str(exc)
            raise

    def _probe_echo(self) -> str | None:
        profile = self.profile()
        if not profile.prompt_logprobs:
            return _no_echo(profile)
        last = ""
        for max_tokens in profile.echo_max_tokens:
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
            generated = _usage(data)[1]
            if max_tokens == 0 and (generated is None or generated > 0):
                last = "max_tokens=0 generates text on this server"
                continue  # it read 0 as "no limit": ask for one token instead
            self._echo_max_tokens = max_tokens
            return None
        return last or "no max_tokens value gives the prompt's log-probabilities alone"


_SHARED_LOCK = threading.Lock()
_PROFILES: dict[str, ServerProfile] = {}  # fingerprint -> profile
_CAPABILITIES: dict[tuple[str, str, Capability], tuple[str | None, int]] = {}
