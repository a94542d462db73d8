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

Each reply is read inside the HTTP client's retry loop: a malformed one (lists of different
lengths, no choices, a missing field) is a :class:`~._http_policy.BadReply` and is retried a
few times, as is an approximate score under ``strict=true``. When a request fails for good,
the requests of its batch that were answered come with the error
(:class:`~steadyeval.cache.PartialBatchError`), so that the run caches every paid reply
before it stops; and while a batch runs, each answered request goes to the run's answer sink
as it arrives (:mod:`._answers`), so that Ctrl-C or ``kill -9`` mid-batch loses none.

This module holds :class:`OpenAIBackend` (construction, sending, token accounting and the
three request kinds); the spec's options are in ``_openai_options``, the pure mapping of
requests and replies in ``_openai_wire``, capability probing in ``_openai_probe``, the
HTTP client in ``_openai_http`` (the OpenAI side: the key as a Bearer token) over the
provider-neutral layer ``_http`` (httpx: pooling, timeouts, deadlines) and ``_http_policy``
(errors, retry policy, key handling).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._errors import ModelSpecError, SteadyevalError
from ..cache import PartialBatchError
from ..requests import (
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
)
from ._answers import answer_sink
from ._backend import BackendStats, BaseBackend, Capabilities, StatsCounter
from ._generated_text import cut_at_stop
from ._http import HttpClient
from ._http_policy import BadReply, BatchFailed, Secret
from ._known import known_input_format
from ._openai_http import openai_client
from ._openai_options import RUN_ONLY, OpenAIOptions
from ._openai_probe import Capability, CapabilityProbe
from ._openai_server import ServerProfile
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

RespT = TypeVar("RespT", ScoreResponse, GenerateResponse, TopKResponse)
CHAT_TOP_LOGPROBS = 20  # the most OpenAI's chat API returns; a label outside it gets -inf
PROTOCOL = 2  # bump when the mapping of requests to calls changes (it is in the fingerprint)


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
        self._client: HttpClient | None = None
        self._lock = threading.Lock()  # guards tokens_used
        self._probe_lock = threading.Lock()  # one probe at a time
        self._capabilities: dict[Capability, str | None] = {}  # None: supported; str: why not
        self._echo_max_tokens = 0
        self._profile: ServerProfile | None = None  # from the spec, else probed once
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
        if not (value.isascii() and value.isprintable()) or value != value.strip():
            raise ModelSpecError(  # an HTTP header cannot carry it; the value is not shown
                f"${self.options.api_key_env} holds characters an HTTP header cannot carry "
                "(a line break, a space at either end, a control or non-ASCII character); "
                "set it to the key alone"
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
        o = self.options  # options that change outputs, when set
        if o.server is not None:
            body["server"] = o.server
        if o.extra:
            body["extra"] = dict(o.extra)
        if o.chat_template is not None:
            body["chat_template"] = o.chat_template
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        return None  # the server's tokenizer is not known here

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            self._client = openai_client(
                self.options.base_url,
                secret=self._secret,
                key_env=self.options.api_key_env,
                policy=self.options.policy,
                max_concurrency=self.options.max_concurrency,
                counter=self._counter,
                http2=self.options.http2,
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
        return self.client.post(path, body, on_reply=self._account)

    def _check_cap(self) -> None:
        cap = self.options.max_tokens_total
        if cap is not None and self.tokens_used >= cap:
            raise TokenCapError(
                f"{self.spec}: max_tokens_total={cap} is used up ({self.tokens_used} tokens "
                "used by this run, as the server counted them); every response received so "
                "far is in the cache: raise the cap and run the same command again to go on"
            )

    def _send(
        self,
        requests: Sequence[Request],
        calls: Sequence[tuple[str, dict[str, Any]]],
        read: Callable[[int, dict[str, Any]], RespT],
    ) -> list[RespT]:
        """Send one batch and ``read(i, reply)`` request ``i``'s response from its call's
        reply (a :class:`BadReply` from it makes the client try the call again).

        Identical calls are sent once (the labels of one chat letter question share one
        call). The cap is checked before the batch: a batch that starts under it is
        completed (so it can be cached), and the next one stops. The run's answer sink
        (:func:`~steadyeval.models.answer_sink`), when set, gets the answered requests as
        they arrive, so that Ctrl-C or ``kill -9`` in the middle of a batch loses none.
        When a call fails for good, the requests already answered come with the error
        (:class:`~steadyeval.cache.PartialBatchError`) so that the run caches them.
        """
        self._check_cap()
        members: dict[str, list[int]] = {}
        unique: list[tuple[str, dict[str, Any]]] = []
        extra = dict(self.options.extra)
        for i, (path, body) in enumerate(calls):
            body = {**body, **extra}  # the spec's extra fields: sent with every request
            key = path + "\n" + json.dumps(body, sort_keys=True)
            if key not in members:
                members[key] = []
                unique.append((path, body))
            members[key].append(i)
        groups = list(members.values())
        wire = [(p, b, _reader(read, g)) for (p, b), g in zip(unique, groups, strict=True)]
        sink = answer_sink()
        hand: Callable[[Mapping[int, list[RespT]]], None] | None = None
        if sink is not None:
            hand = lambda got: sink(_answered(requests, groups, got))  # noqa: E731
        try:
            replies = self.client.post_many(wire, on_reply=self._account, on_results=hand)
        except BatchFailed as exc:
            answered = _answered(requests, groups, exc.done)
            if answered:
                raise PartialBatchError(exc.error, answered) from exc.error
            raise exc.error from None
        out: dict[int, RespT] = {}
        for group, got in zip(groups, replies, strict=True):
            out.update(zip(group, got, strict=True))
        return [out[i] for i in range(len(calls))]

    # -- score ---------------------------------------------------------------------------
    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResponse]:
        if not requests:
            return []
        self._check_cap()
        self.preflight(requests)
        calls = [self._score_call(r) for r in requests]
        return self._send(requests, calls, lambda i, d: self._score_reply(requests[i], d))

    def _score_call(self, r: ScoreRequest) -> tuple[str, dict[str, Any]]:
        if r.chat:
            return "/chat/completions", {
                "model": self.spec.name,
                "messages": _messages(r.context, r.system, r.turns),
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
            value, greedy, found = label_logprob(_chat_top(_choice(data)), r.continuation)
            return self._checked(
                ScoreResponse(
                    logprob=value,
                    n_tokens=1,
                    is_greedy=greedy,
                    n_input_tokens=n_prompt or 0,
                    approximate=not found,
                ),
                f"label {r.continuation!r} is not among the top {CHAT_TOP_LOGPROBS}",
            )
        lp = PromptLogprobs.from_choice(_choice(data))
        # The prompt's tokens are those listed before the generated ones: a server may count
        # a BOS token in usage.prompt_tokens that it does not list (llama.cpp).
        generated = _usage(data)[1]
        if generated is None or not 0 <= generated <= len(lp.tokens):
            generated = self._echo_max_tokens
        n_listed = len(lp.tokens) - generated
        # The context's trailing whitespace belongs to the continuation (lm-evaluation-
        # harness's split, as hf: scores): a tokenizer that writes spaces as tokens of their
        # own scores them with the continuation. A generated token may be counted and not
        # listed (llama.cpp leaves out a generated BOS): then the listing that spells the
        # prompt exactly is the one with fewer generated tokens.
        for n in range(n_listed, len(lp.tokens) + 1):
            s = continuation_logprob(
                lp,
                prompt=r.context + r.continuation,
                n_context_chars=len(r.context.rstrip()),
                n_prompt_tokens=n,
            )
            if n == n_listed:
                first = s
            if not s.approximate:
                break
        else:
            s = first
        # Tokens the model conditions on (with BOS; the last one is only predicted), as hf:.
        n_fed = (n_prompt if n_prompt is not None else n_listed) - 1
        return self._checked(
            ScoreResponse(
                logprob=s.logprob,
                n_tokens=s.n_tokens,
                is_greedy=s.is_greedy,
                n_input_tokens=max(0, n_fed),
                approximate=s.approximate,
            ),
            "the listed tokens do not cover the continuation exactly",
        )

    def _checked(self, resp: ScoreResponse, why: str) -> ScoreResponse:
        """``resp``, unless it is approximate and the spec says ``strict=true``."""
        if resp.approximate and self.options.strict:
            raise BadReply(f"an approximate score ({why}) and the spec says strict=true")
        return resp

    # -- generate ------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        if not requests:
            return []
        self._check_cap()
        self.preflight(requests)
        sampling = dict(self.profile().sampling)
        calls = [self._generate_call(r, sampling) for r in requests]
        return self._send(requests, calls, lambda i, d: self._generate_reply(requests[i], d))

    def _generate_call(
        self, r: GenerateRequest, sampling: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """The call for ``r``; ``sampling`` holds the server profile's fields that make
        ``temperature: 0`` plain greedy decoding and sampling plain (no penalties)."""
        body: dict[str, Any] = {
            "model": self.spec.name,
            "max_tokens": r.max_new_tokens,
            "temperature": r.temperature,
            **sampling,
        }
        if r.temperature > 0:
            body.update(top_p=r.top_p, seed=sample_seed(r))
        if r.stop:
            body["stop"] = list(r.stop)
        if r.chat:
            body["messages"] = _messages(r.prompt, r.system, r.turns)
            return "/chat/completions", body
        body["prompt"] = r.prompt
        return "/completions", body

    def _generate_reply(self, r: GenerateRequest, data: Mapping[str, Any]) -> GenerateResponse:
        choice = _choice(data)
        reasoning = None
        if r.chat:
            message = choice.get("message")
            if not isinstance(message, Mapping):
                raise BadReply("the chat reply's choice has no message")
            text = message.get("content")
            if text is None:  # e.g. a refusal, or a reasoning model out of tokens: no text
                text = ""
            # a reasoning model's trace, apart from the answer (vLLM, SGLang and DeepSeek
            # call it reasoning_content; some routers reasoning)
            for key in ("reasoning_content", "reasoning"):
                if isinstance(message.get(key), str) and message[key]:
                    reasoning = message[key]
                    break
        else:
            if "text" not in choice:
                raise BadReply("the reply's choice has no text")
            text = choice["text"]
        if not isinstance(text, str):
            raise BadReply("the reply's text is not a string")
        # The server's text is the text as written after the prompt (``_generated_text``):
        # kept as it is, leading whitespace included; cut for servers that ignore ``stop``.
        text, _ = cut_at_stop(text, r.stop)
        n_in, n_out = _usage(data)
        finish = choice.get("finish_reason")
        return GenerateResponse(
            text=text,
            n_input_tokens=n_in or 0,
            n_output_tokens=n_out or 0,
            finish_reason=finish if isinstance(finish, str) else "stop",
            reasoning=reasoning,
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
                body.update(messages=_messages(r.prompt, r.system, r.turns), logprobs=True)
                body["top_logprobs"] = r.k
                calls.append(("/chat/completions", body))
            else:
                body.update(prompt=r.prompt, logprobs=r.k)
                calls.append(("/completions", body))
        return self._send(requests, calls, lambda i, d: self._top_k_reply(requests[i], d))

    def _top_k_reply(self, r: TopKRequest, data: Mapping[str, Any]) -> TopKResponse:
        choice = _choice(data)
        pairs: list[tuple[str, float]]
        if r.chat:
            pairs = [
                (str(e.get("token", "")), float(e["logprob"]))
                for e in _chat_top(choice)
                if isinstance(e, Mapping) and isinstance(e.get("logprob"), int | float)
            ]
        else:
            lp = PromptLogprobs.from_choice(choice)
            first = lp.top_logprobs[0] if lp.top_logprobs else None
            if not first:
                raise BadReply("the reply lists no top_logprobs")
            pairs = [(str(t), float(v)) for t, v in first.items()]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        pairs = pairs[: r.k]
        n_in, _ = _usage(data)
        return TopKResponse(
            tokens=tuple(t for t, _ in pairs),
            logprobs=tuple(v for _, v in pairs),
            n_input_tokens=n_in or 0,
        )


def _answered(
    requests: Sequence[Request], groups: Sequence[Sequence[int]], got: Mapping[int, list[RespT]]
) -> list[tuple[Request, RespT]]:
    """The ``(request, response)`` pairs of the calls answered (``got``: by call index)."""
    return [(requests[i], r) for u, rs in got.items() for i, r in zip(groups[u], rs, strict=True)]


def _reader(
    read: Callable[[int, dict[str, Any]], RespT], members: Sequence[int]
) -> Callable[[dict[str, Any]], list[RespT]]:
    """Read one call's reply into the responses of the requests that share the call."""
    return lambda data: [read(i, data) for i in members]
