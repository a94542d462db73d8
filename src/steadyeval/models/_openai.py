"""``openai:MODEL?base_url=...``: any OpenAI-compatible HTTP endpoint.

* *score* — ``/completions`` with ``echo=true``, ``logprobs=1`` and ``max_tokens=0`` (or 1
  where the server rejects 0): the log-probability of the continuation is the sum of the
  prompt tokens' log-probabilities over the tokens whose text reaches into the continuation
  (:func:`continuation_logprob`). A *chat* score request whose continuation is a short label
  (``" A"``) is asked as one chat-completion token with ``top_logprobs=20``
  (:func:`label_logprob`).
* *generate* — ``/completions`` for plain prompts, ``/chat/completions`` when the request is
  a chat request.
* *top-k* — ``/completions`` with ``logprobs=k`` (chat: ``top_logprobs=k``), one token.

Whether the server gives log-probabilities is probed once per backend instance, with one tiny
request, the first time a batch needs them (:meth:`OpenAIBackend.preflight`); a server that
cannot is an :class:`~steadyeval.UnsupportedRequestError` naming it, before that batch is sent.

This module holds :class:`OpenAIBackend` (construction, sending, token accounting and the
three request kinds); the spec's options are in ``_openai_options``, the pure mapping of
requests and replies in ``_openai_wire``, capability probing in ``_openai_probe`` and the
HTTP client in ``_openai_http``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import ModelSpecError, SteadyevalError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._backend import BackendStats, BaseBackend, Capabilities, StatsCounter
from ._known import known_input_format
from ._openai_http import HTTPClient, Secret, ServerError
from ._openai_options import RUN_ONLY, OpenAIOptions
from ._openai_probe import Capability, CapabilityProbe
from ._openai_wire import (
    PromptLogprobs,
    _chat_top,
    _choice,
    _messages,
    _usage,
    continuation_logprob,
    label_logprob,
    sample_seed,
)
from ._spec import ModelSpec, parse_model_spec

__all__ = [
    "OpenAIBackend",
    "OpenAIOptions",
    "TokenCapError",
    "continuation_logprob",
    "label_logprob",
]

CHAT_TOP_LOGPROBS = 20  # the most OpenAI's chat API returns; a label outside it gets -inf
PROTOCOL = 1  # bump when the mapping of requests to calls changes (it is in the fingerprint)


class TokenCapError(SteadyevalError):
    """The spec's ``max_tokens_total`` is used up. Everything received is already cached."""


# -- the backend -----------------------------------------------------------------------------
class OpenAIBackend(CapabilityProbe, BaseBackend):
    """A model behind an OpenAI-compatible API (see the module docstring and
    docs/backends-api.md).

    Construction reads the spec and the key's environment variable; nothing is sent until a
    batch arrives. The key is never part of the spec, the fingerprint, an error or a log.
    """

    kind = "openai"
    run_only_options = RUN_ONLY

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            input_format=self.options.input_format or known_input_format(self.spec.name)
        )

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.options = OpenAIOptions.from_spec(spec)
        self._secret = self._read_secret()
        self._client: HTTPClient | None = None
        self._lock = threading.Lock()  # guards tokens_used
        self._probe_lock = threading.Lock()  # one probe at a time
        self._capabilities: dict[Capability, str | None] = {}  # None: supported; str: why not
        self._echo_max_tokens = 0
        self.tokens_used = 0
        self._counter = StatsCounter()  # retries and back-off waits, across clients

    def _read_secret(self) -> Secret | None:
        value = os.environ.get(self.options.api_key_env, "")
        if not value:
            return None
        if value in str(self.spec):
            raise ModelSpecError(
                f"model spec {self.spec.backend}:...: it contains the value of "
                f"${self.options.api_key_env}; never put a key in a model spec"
            )
        return Secret(value)

    def __repr__(self) -> str:
        return f"OpenAIBackend({str(self.spec)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Sent to another process (an executor): no threads, locks or key travel along.
        state = dict(self.__dict__)
        state.update(_client=None, _lock=None, _probe_lock=None, _secret=None)
        state["spec"] = str(self.spec)  # a ModelSpec holds a mappingproxy, which won't pickle
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.spec = parse_model_spec(state["spec"])
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._secret = self._read_secret()

    # -- cheap parts ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self.spec.name} at {self.options.base_url}"

    @property
    def supported_kinds(self) -> frozenset[RequestKind]:
        if self.options.logprobs == "none":
            return frozenset({"generate"})
        return frozenset({"score", "generate", "top-k"})

    def fingerprint(self) -> str:
        """Server URL, model name and the deployment label (``revision``); never the key.

        A server-reported id or ``system_fingerprint`` is left out on purpose: reading it
        needs the network at plan time (a warm-cache rerun must work offline), and servers
        report values that change between restarts, which would orphan the cache.
        """
        body = {
            "backend": self.kind,
            "protocol": PROTOCOL,
            "base_url": self.options.base_url,
            "model": self.spec.name,
            "revision": self.options.revision,
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return None  # the server's tokenizer is not known here

    @property
    def client(self) -> HTTPClient:
        if self._client is None:
            self._client = HTTPClient(
                self.options.base_url,
                secret=self._secret,
                policy=self.options.policy,
                max_concurrency=self.options.max_concurrency,
                user_agent="steadyeval",
                key_hint=f"${self.options.api_key_env} (the spec's api_key_env)",
                counter=self._counter,
            )
        return self._client

    def stats(self) -> BackendStats:
        """Retries and back-off waits of every request so far (probes included)."""
        return self._counter.snapshot()

    def release(self) -> None:
        """Close the HTTP connections (the run calls this after the model's last batch; a
        later request opens new ones)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- sending -------------------------------------------------------------------------
    def _account(self, data: Mapping[str, Any]) -> None:
        usage = data.get("usage")
        used = 0
        if isinstance(usage, Mapping):
            total = usage.get("total_tokens")
            if isinstance(total, int):
                used = total
            else:
                p, c = _usage(data)
                used = (p or 0) + (c or 0)
        with self._lock:
            self.tokens_used += used

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        data = self.client.post(path, body)
        self._account(data)
        return data

    def _check_cap(self) -> None:
        cap = self.options.max_tokens_total
        if cap is not None and self.tokens_used >= cap:
            raise TokenCapError(
                f"{self.spec}: max_tokens_total={cap} is used up ({self.tokens_used} tokens "
                "used by this run, as the server counted them); every response received so "
                "far is in the cache: raise the cap and run the same command again to go on"
            )

    def _send(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Send one batch; identical calls are sent once (the labels of one chat letter
        question share one call). The cap is checked before the batch: a batch that starts
        under it is completed (so it can be cached), and the next one stops."""
        self._check_cap()
        slots: dict[str, int] = {}
        unique: list[tuple[str, dict[str, Any]]] = []
        index: list[int] = []
        for path, body in calls:
            key = path + "\n" + json.dumps(body, sort_keys=True)
            if key not in slots:
                slots[key] = len(unique)
                unique.append((path, body))
            index.append(slots[key])
        replies = self.client.post_many(unique, on_reply=self._account)
        return [replies[i] for i in index]

    # -- score ---------------------------------------------------------------------------
    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        if not requests:
            return []
        self._check_cap()
        self.preflight(requests)
        calls = [self._score_call(r) for r in requests]
        replies = self._send(calls)
        return [self._score_reply(r, d) for r, d in zip(requests, replies, strict=True)]

    def _score_call(self, r: ScoreRequest) -> tuple[str, dict[str, Any]]:
        if r.chat:
            return "/chat/completions", {
                "model": self.spec.name,
                "messages": _messages(r.context, r.system),
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": CHAT_TOP_LOGPROBS,
                "temperature": 0,
            }
        return "/completions", {
            "model": self.spec.name,
            "prompt": r.context + r.continuation,
            "echo": True,
            "logprobs": 1,
            "max_tokens": self._echo_max_tokens,
            "temperature": 0,
        }

    def _score_reply(self, r: ScoreRequest, data: Mapping[str, Any]) -> ScoreResponse:
        n_prompt, _ = _usage(data)
        if r.chat:
            where = f"{self.options.base_url}/chat/completions"
            top = _chat_top(_choice(data, where), where)
            value, greedy, found = label_logprob(top, r.continuation)
            return ScoreResponse(
                logprob=value,
                n_tokens=1,
                is_greedy=greedy,
                n_input_tokens=n_prompt or 0,
                approximate=not found,
            )
        where = f"{self.options.base_url}/completions"
        lp = PromptLogprobs.from_choice(_choice(data, where), where)
        if n_prompt is None or n_prompt > len(lp.tokens):
            n_prompt = len(lp.tokens) - self._echo_max_tokens
        s = continuation_logprob(
            lp,
            prompt=r.context + r.continuation,
            n_context_chars=len(r.context),
            n_prompt_tokens=n_prompt,
        )
        return ScoreResponse(
            logprob=s.logprob,
            n_tokens=s.n_tokens,
            is_greedy=s.is_greedy,
            n_input_tokens=n_prompt,
            approximate=s.approximate,
        )

    # -- generate ------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        if not requests:
            return []
        self._check_cap()
        calls = [self._generate_call(r) for r in requests]
        replies = self._send(calls)
        return [self._generate_reply(r, d) for r, d in zip(requests, replies, strict=True)]

    def _generate_call(self, r: GenerateRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.spec.name,
            "max_tokens": r.max_new_tokens,
            "temperature": r.temperature,
        }
        if r.temperature > 0:
            body.update(top_p=r.top_p, seed=sample_seed(r))
        if r.stop:
            body["stop"] = list(r.stop)
        if r.chat:
            body["messages"] = _messages(r.prompt, r.system)
            return "/chat/completions", body
        body["prompt"] = r.prompt
        return "/completions", body

    def _generate_reply(self, r: GenerateRequest, data: Mapping[str, Any]) -> GenerateResponse:
        path = "/chat/completions" if r.chat else "/completions"
        where = f"{self.options.base_url}{path}"
        choice = _choice(data, where)
        if r.chat:
            message = choice.get("message")
            text = message.get("content") if isinstance(message, Mapping) else None
        else:
            text = choice.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise ServerError(f"{where}: the reply's text is not a string", status=200)
        cut = [text.index(s) for s in r.stop if s and s in text]  # servers that ignore stop
        if cut:
            text = text[: min(cut)]
        n_in, n_out = _usage(data)
        finish = choice.get("finish_reason")
        return GenerateResponse(
            text=text,
            n_input_tokens=n_in or 0,
            n_output_tokens=n_out or 0,
            finish_reason=finish if isinstance(finish, str) else "stop",
        )

    # -- top-k ---------------------------------------------------------------------------
    def top_k(self, requests: Sequence[TopKRequest]) -> list[TopKResponse]:
        if not requests:
            return []
        self._check_cap()
        self.preflight(requests)
        calls: list[tuple[str, dict[str, Any]]] = []
        for r in requests:
            body: dict[str, Any] = {"model": self.spec.name, "max_tokens": 1, "temperature": 0}
            if r.chat:
                body.update(messages=_messages(r.prompt, r.system), logprobs=True)
                body["top_logprobs"] = r.k
                calls.append(("/chat/completions", body))
            else:
                body.update(prompt=r.prompt, logprobs=r.k)
                calls.append(("/completions", body))
        replies = self._send(calls)
        return [self._top_k_reply(r, d) for r, d in zip(requests, replies, strict=True)]

    def _top_k_reply(self, r: TopKRequest, data: Mapping[str, Any]) -> TopKResponse:
        path = "/chat/completions" if r.chat else "/completions"
        where = f"{self.options.base_url}{path}"
        choice = _choice(data, where)
        pairs: list[tuple[str, float]]
        if r.chat:
            pairs = [
                (str(e.get("token", "")), float(e["logprob"]))
                for e in _chat_top(choice, where)
                if isinstance(e, Mapping) and isinstance(e.get("logprob"), int | float)
            ]
        else:
            lp = PromptLogprobs.from_choice(choice, where)
            first = lp.top_logprobs[0] if lp.top_logprobs else None
            if not first:
                raise ServerError(f"{where}: the reply lists no top_logprobs", status=200)
            pairs = [(str(t), float(v)) for t, v in first.items()]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        pairs = pairs[: r.k]
        n_in, _ = _usage(data)
        return TopKResponse(
            tokens=tuple(t for t, _ in pairs),
            logprobs=tuple(v for _, v in pairs),
            n_input_tokens=n_in or 0,
        )
