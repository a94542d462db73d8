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
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from .._errors import ModelSpecError, SteadyevalError, UnsupportedRequestError
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
from ._backend import BaseBackend, Capabilities
from ._known import known_input_format
from ._openai_http import HTTPClient, RetryPolicy, Secret, ServerError
from ._spec import ModelSpec, parse_model_spec

__all__ = [
    "OpenAIBackend",
    "OpenAIOptions",
    "TokenCapError",
    "continuation_logprob",
    "label_logprob",
]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CHAT_TOP_LOGPROBS = 20  # the most OpenAI's chat API returns; a label outside it gets -inf
PROTOCOL = 1  # bump when the mapping of requests to calls changes (it is in the fingerprint)
_PROBE_PROMPT = "The capital of France is Paris"
_LABEL = re.compile(r"^\S{1,3}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "api-key", "key", "token", "access_token", "authorization",
     "password", "secret", "bearer"}
)  # fmt: skip
_ALLOWED = {
    "base_url": f"the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1 "
    f"(default {DEFAULT_BASE_URL})",
    "api_key_env": "NAME of the environment variable holding the key (default OPENAI_API_KEY)",
    "revision": "a label of the deployment, folded into the fingerprint (change it when the "
    "weights behind the name change)",
    "max_concurrency": "requests in flight at once (default 8)",
    "max_retries": "retries per request (default 8)",
    "backoff_base": "seconds before the first retry (default 0.5)",
    "backoff_max": "longest wait between retries in seconds (default 30)",
    "timeout": "seconds per socket operation (default 120)",
    "max_tokens_total": "stop once this many tokens (prompt + output, as the server counts "
    "them) have been used",
    "logprobs": "auto (probe the server) | none (it gives none: only generation)",
    "input_format": "an input encoding the model expects, e.g. unifiedqa (see Capabilities)",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"api_key_env", "max_concurrency", "max_retries", "backoff_base", "backoff_max", "timeout",
     "max_tokens_total", "logprobs", "input_format"}
)  # fmt: skip
Capability = Literal["prompt-logprobs", "completion-logprobs", "chat-logprobs"]
_CAPABILITY_TEXT: dict[Capability, str] = {
    "prompt-logprobs": "prompt log-probabilities (/completions with echo=true and logprobs)",
    "completion-logprobs": "next-token log-probabilities (/completions with logprobs)",
    "chat-logprobs": "chat log-probabilities (/chat/completions with logprobs and top_logprobs)",
}


class TokenCapError(SteadyevalError):
    """The spec's ``max_tokens_total`` is used up. Everything received is already cached."""


def _number(spec: ModelSpec, key: str, value: str, kind: type[Any], *, zero_ok: bool) -> Any:
    try:
        number = kind(value)
    except ValueError:
        number = None
    if number is None or number < 0 or (number == 0 and not zero_ok) or number != number:
        what = "integer" if kind is int else "number"
        raise ModelSpecError(
            f"model spec {spec.backend}:{spec.name}: option {key} must be a "
            f"{'non-negative' if zero_ok else 'positive'} {what}, got {value!r}"
        )
    return number


@dataclass(frozen=True)
class OpenAIOptions:
    """The spec's options, validated. Only ``base_url`` and ``revision`` change results."""

    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"
    revision: str | None = None
    max_concurrency: int = 8
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    max_tokens_total: int | None = None
    logprobs: Literal["auto", "none"] = "auto"
    input_format: str | None = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIOptions:
        where = f"model spec {spec.backend}:{spec.name}"  # never str(spec): it may hold a key
        o = dict(spec.options)
        secret_like = sorted(k for k in o if k.lower() in _SECRET_KEYS)
        if secret_like:
            raise ModelSpecError(
                f"{where}: option {secret_like[0]!r} would put a credential in the model "
                "spec, which is written to results, caches and logs. Put the key in an "
                "environment variable and name it: api_key_env=NAME (default OPENAI_API_KEY)"
            )
        unknown = sorted(set(o) - set(_ALLOWED))
        if unknown:
            allowed = "; ".join(f"{k} ({v})" for k, v in _ALLOWED.items())
            raise ModelSpecError(f"{where}: unknown option {unknown[0]!r}; allowed: {allowed}")
        base_url = _check_base_url(where, o.get("base_url", DEFAULT_BASE_URL))
        env = o.get("api_key_env", "OPENAI_API_KEY")
        if not _ENV_NAME.match(env) or env.lower().startswith("sk-"):
            raise ModelSpecError(
                f"{where}: api_key_env takes the NAME of an environment variable (letters, "
                "digits, underscores), not the key itself"
            )
        logprobs = o.get("logprobs", "auto")
        if logprobs not in ("auto", "none"):
            raise ModelSpecError(f"{where}: logprobs must be auto or none, got {logprobs!r}")

        def num(key: str, kind: type[Any], default: Any, *, zero_ok: bool = False) -> Any:
            return _number(spec, key, o[key], kind, zero_ok=zero_ok) if key in o else default

        d = RetryPolicy()
        return cls(
            base_url=base_url,
            api_key_env=env,
            revision=o.get("revision"),
            max_concurrency=num("max_concurrency", int, 8),
            policy=RetryPolicy(
                max_retries=num("max_retries", int, d.max_retries, zero_ok=True),
                backoff_base=num("backoff_base", float, d.backoff_base, zero_ok=True),
                backoff_max=num("backoff_max", float, d.backoff_max, zero_ok=True),
                timeout=num("timeout", float, d.timeout),
            ),
            max_tokens_total=num("max_tokens_total", int, None),
            logprobs="none" if logprobs == "none" else "auto",
            input_format=o.get("input_format") or None,
        )


def _check_base_url(where: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelSpecError(
            f"{where}: base_url must look like http(s)://host[:port]/v1, got {parts.scheme}://"
            f"{parts.hostname or ''}..."
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ModelSpecError(
            f"{where}: base_url must not carry credentials, a query or a fragment; keep keys "
            "in an environment variable named by api_key_env"
        )
    try:
        _ = parts.port
    except ValueError:
        raise ModelSpecError(f"{where}: base_url has an invalid port") from None
    return url.rstrip("/")


# -- pure mapping functions ------------------------------------------------------------------
@dataclass(frozen=True)
class PromptLogprobs:
    """The ``logprobs`` object of a ``/completions`` choice (legacy format)."""

    tokens: Sequence[str]
    token_logprobs: Sequence[float | None]
    text_offset: Sequence[int]
    top_logprobs: Sequence[Mapping[str, float] | None] | None = None

    @classmethod
    def from_choice(cls, choice: Mapping[str, Any], where: str) -> PromptLogprobs:
        lp = choice.get("logprobs")
        if not isinstance(lp, Mapping):
            raise ServerError(f"{where}: the reply has no logprobs object", status=200)
        tokens, lps, offs = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
        if not (isinstance(tokens, list) and isinstance(lps, list) and isinstance(offs, list)):
            raise ServerError(
                f"{where}: logprobs lacks tokens, token_logprobs or text_offset lists", status=200
            )
        if not len(tokens) == len(lps) == len(offs):
            raise ServerError(
                f"{where}: logprobs lists differ in length ({len(tokens)} tokens, "
                f"{len(lps)} token_logprobs, {len(offs)} text_offset)",
                status=200,
            )
        top = lp.get("top_logprobs")
        try:
            return cls(
                tokens=[str(t) for t in tokens],
                token_logprobs=[None if x is None else float(x) for x in lps],
                text_offset=[int(x) for x in offs],
                top_logprobs=top if isinstance(top, list) and len(top) == len(tokens) else None,
            )
        except (TypeError, ValueError):
            raise ServerError(
                f"{where}: token_logprobs must be numbers or null and text_offset integers",
                status=200,
            ) from None


@dataclass(frozen=True)
class ContinuationScore:
    logprob: float
    n_tokens: int
    is_greedy: bool
    approximate: bool


def continuation_logprob(
    lp: PromptLogprobs, *, prompt: str, n_context_chars: int, n_prompt_tokens: int
) -> ContinuationScore:
    """The log-probability of ``prompt[n_context_chars:]`` from an echoed prompt.

    Only the first ``n_prompt_tokens`` tokens are the prompt (a server that had to generate
    one token lists it after them). Character positions are anchored at the *end* of the
    prompt: the prompt ends where its last token's text ends, and the continuation starts
    ``len(continuation)`` characters before that, so a server that lists a BOS token such as
    ``<s>`` at offset 0 (shifting every offset) is read correctly.

    Boundary rule: a token belongs to the continuation when its text reaches past the
    boundary, so a token that straddles it (``" A"`` for context ``"Answer: "`` and
    continuation ``"A"``) is counted — as lm-evaluation-harness counts it, where trailing
    whitespace of the context moves to the continuation. When the straddled context
    characters are not all whitespace (a word split between context and continuation) the
    score also covers some context characters and is flagged ``approximate``. It is also
    flagged when a counted token has no log-probability (the first token of a prompt without
    BOS) or when the tokens' text does not spell the prompt's end (byte-level token strings).
    ``is_greedy`` needs ``top_logprobs`` (``logprobs >= 1``); without it it is ``False``.
    """
    n = max(0, min(n_prompt_tokens, len(lp.tokens)))
    n_cont_chars = len(prompt) - n_context_chars
    if n == 0 or n_cont_chars <= 0:
        return ContinuationScore(0.0, 0, True, n_cont_chars > 0)
    end = lp.text_offset[n - 1] + len(lp.tokens[n - 1])
    boundary = end - n_cont_chars
    chosen = [i for i in range(n) if lp.text_offset[i] + len(lp.tokens[i]) > boundary]
    approximate = False
    straddle = boundary - lp.text_offset[chosen[0]]  # characters of it before the boundary
    if straddle > 0:
        covered = prompt[max(0, n_context_chars - straddle) : n_context_chars]
        approximate = bool(covered.strip())
    spelled = "".join(lp.tokens[i] for i in chosen)
    if not prompt.endswith(spelled):
        approximate = True
    total, counted, greedy = 0.0, 0, True
    for i in chosen:
        value = lp.token_logprobs[i]
        if value is None:
            approximate = True
            continue
        total += value
        counted += 1
        top = lp.top_logprobs[i] if lp.top_logprobs is not None else None
        if not top or max(top.values()) > value + 1e-6:
            greedy = False
    return ContinuationScore(total, counted, greedy and counted > 0, approximate)


def label_logprob(top: Sequence[Mapping[str, Any]], label: str) -> tuple[float, bool, bool]:
    """``(logprob, is_greedy, found)`` of ``label`` as the first answer token.

    ``top`` is a chat reply's ``top_logprobs`` list (``{"token", "logprob"}`` entries). Every
    entry whose text equals the label once surrounding whitespace is stripped counts (``"A"``
    and ``" A"`` both answer A); their probabilities are added (log-sum-exp). A label absent
    from the list gets ``-inf`` and ``found=False``: its probability is below the smallest
    listed one but unknown, so the caller flags the score ``approximate``.
    """
    want = label.strip()
    entries = [
        (str(e.get("token", "")), float(e["logprob"]))
        for e in top
        if isinstance(e, Mapping) and isinstance(e.get("logprob"), int | float)
    ]
    hits = [v for t, v in entries if t.strip() == want]
    if not hits:
        return -math.inf, False, False
    m = max(hits)
    total = m + math.log(sum(math.exp(v - m) for v in hits))
    best = max(entries, key=lambda e: e[1])
    return total, best[0].strip() == want, True


def sample_seed(req: GenerateRequest) -> int:
    """A per-request seed from the condition's seed, the sample index and the prompt (the
    same value the ``hf`` backend seeds its sampler with)."""
    digest = hashlib.sha256(f"{req.seed}\x1f{req.sample_index}\x1f{req.prompt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _messages(text: str, system: str | None) -> list[dict[str, str]]:
    return ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]


def _choice(data: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ServerError(f"{where}: the reply has no choices", status=200)
    choice: Mapping[str, Any] = choices[0]
    return choice


def _usage(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return None, None
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (int(p) if isinstance(p, int) else None, int(c) if isinstance(c, int) else None)


def _chat_top(choice: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, Mapping) else None
    if not isinstance(content, list):
        raise ServerError(f"{where}: the chat reply has no logprobs.content list", status=200)
    if not content:
        return []
    top = content[0].get("top_logprobs") if isinstance(content[0], Mapping) else None
    if not isinstance(top, list):
        raise ServerError(f"{where}: the chat reply has no top_logprobs", status=200)
    return top


# -- the backend -----------------------------------------------------------------------------
class OpenAIBackend(BaseBackend):
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
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- capabilities --------------------------------------------------------------------
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
                top = PromptLogprobs.from_choice(_choice(data, "probe"), "probe").top_logprobs
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
            return None if _chat_top(_choice(data, "probe"), "probe") else "no top_logprobs"
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
            lp = PromptLogprobs.from_choice(_choice(data, "probe"), "probe")
            if sum(x is not None for x in lp.token_logprobs) < 1 or len(lp.tokens) < 2:
                return "the reply does not list the prompt's tokens (echo ignored)"
            self._echo_max_tokens = max_tokens
            return None
        return last

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
