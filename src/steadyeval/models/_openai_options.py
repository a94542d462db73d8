"""The ``openai:`` spec's options: which are allowed (:data:`RUN_ONLY` names those that never
change an output) and their validation into :class:`OpenAIOptions`. A credential is refused
as an option (the spec is written to results, caches and logs): the key comes from the
environment variable named by ``api_key_env``, and ``base_url`` must be a plain http(s) URL.
Numbers must be finite; seconds are at most :data:`MAX_SECONDS` (a socket or a timer refuses
longer waits).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from .._errors import ModelSpecError
from ._http_policy import RetryPolicy
from ._openai_extra import extra_fields
from ._openai_server import PROFILES, ServerName
from ._spec import ModelSpec, echo, spec_where
from ._spec_values import (
    check_known,
    choice_option,
    flag_option,
    float_option,
    input_format_option,
    int_option,
    text_option,
)

__all__ = ["DEFAULT_BASE_URL", "MAX_SECONDS", "RUN_ONLY", "OpenAIOptions", "default_deadline"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_SECONDS = 1e6  # about 11 days; far longer waits overflow the platform's timers
#: The largest count an option takes (concurrency, retries).
MAX_COUNT = 100_000
#: The largest token budget (``max_tokens_total``).
MAX_TOKENS = 10**15
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
    "timeout": "seconds per socket operation: connect, each read (default 120)",
    "deadline": "seconds one attempt of a request may take in all, however the reply "
    "trickles in (default 10 × timeout, at most 600, never below timeout)",
    "max_retry_after": "longest wait a server's Retry-After can impose, in seconds; longer "
    "asks are cut to it and logged (default 60)",
    "strict": "true: an approximate log-probability reply is retried, then an error; false: "
    "it is kept and its rows are flagged approximate (default false)",
    "max_tokens_total": "stop once this many tokens (prompt + output, as the server counts "
    "them) have been used",
    "logprobs": "auto (probe the server) | none (it gives none: only generation)",
    "input_format": "an input encoding the model expects, e.g. unifiedqa (see Capabilities)",
    "server": "auto (from the server's /models listing) | openai | llama-cpp-python | "
    "llama-server | vllm: which server profile to follow (see docs/backends-api.md)",
    "extra.NAME": "a field added to every request body, e.g. extra.repeat_penalty=1.0 (the "
    "value is read as JSON when it parses, else as a string)",
    "extra_body": "a JSON object of fields added to every request body",
    "http2": "true: offer HTTP/2 (needs the h2 package; llama.cpp and vLLM speak HTTP/1.1) "
    "(default false)",
    "chat_template": "server: accept the server's own chat formatting on a server that falls "
    "back to a generic template (llama.cpp); recorded in the model column",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"api_key_env", "max_concurrency", "max_retries", "backoff_base", "backoff_max", "timeout",
     "deadline", "max_retry_after", "strict", "max_tokens_total", "logprobs", "input_format",
     "http2"}
)  # fmt: skip
_SECONDS = frozenset({"backoff_base", "backoff_max", "timeout", "deadline", "max_retry_after"})


def _number(spec: ModelSpec, key: str, value: str, kind: type[Any], *, zero_ok: bool) -> Any:
    """An option's number: a count (``int``: up to :data:`MAX_COUNT`, or
    :data:`MAX_TOKENS` for a token budget) or seconds (``float``: up to :data:`MAX_SECONDS`)."""
    if kind is int:
        high = MAX_TOKENS if key == "max_tokens_total" else MAX_COUNT
        return int_option(spec, key, value, low=0 if zero_ok else 1, high=high)
    return float_option(
        spec, key, value, low=0, high=MAX_SECONDS, low_open=not zero_ok, unit="seconds"
    )


def default_deadline(timeout: float) -> float:
    """The default ``deadline`` for ``timeout``: 10 × timeout, at most 600 s, and never less
    than one read may wait."""
    return max(timeout, min(600.0, 10.0 * timeout))


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
    strict: bool = False
    server: ServerName | None = None  # None: auto
    extra: tuple[tuple[str, Any], ...] = ()  # sorted (name, JSON value) pairs
    chat_template: Literal["server"] | None = None
    http2: bool = False

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIOptions:
        where = spec_where(spec)  # never str(spec): it may hold a key
        o = dict(spec.options)
        secret_like = sorted(k for k in o if k.lower() in _SECRET_KEYS)
        if secret_like:
            raise ModelSpecError(
                f"{where}: option '{echo(secret_like[0], 40)}' would put a credential in the model "
                "spec, which is written to results, caches and logs. Put the key in an "
                "environment variable and name it: api_key_env=NAME (default OPENAI_API_KEY)"
            )
        check_known(spec, (k for k in _ALLOWED if k != "extra.NAME"), prefixes=("extra.",))
        base_url = _check_base_url(where, o.get("base_url", DEFAULT_BASE_URL))
        env = o.get("api_key_env", "OPENAI_API_KEY")
        if not _ENV_NAME.match(env) or env.lower().startswith("sk-"):
            raise ModelSpecError(
                f"{where}: api_key_env takes the NAME of an environment variable (letters, "
                "digits, underscores), not the key itself"
            )
        logprobs = choice_option(spec, "logprobs", o.get("logprobs", "auto"), ("auto", "none"))
        strict = flag_option(spec, "strict", o.get("strict", "false"))
        server = choice_option(spec, "server", o.get("server", "auto"), ("auto", *PROFILES))
        http2 = flag_option(spec, "http2", o.get("http2", "false"))
        if http2 and importlib.util.find_spec("h2") is None:
            raise ModelSpecError(f"{where}: http2=true needs the h2 package: pip install h2")
        chat_template = o.get("chat_template")
        if chat_template is not None:
            choice_option(spec, "chat_template", chat_template, ("server",))

        def num(key: str, kind: type[Any], default: Any, *, zero_ok: bool = False) -> Any:
            return _number(spec, key, o[key], kind, zero_ok=zero_ok) if key in o else default

        d = RetryPolicy()
        timeout = num("timeout", float, d.timeout)
        return cls(
            base_url=base_url,
            api_key_env=env,
            revision=text_option(spec, "revision", o),
            max_concurrency=num("max_concurrency", int, 8),
            policy=RetryPolicy(
                max_retries=num("max_retries", int, d.max_retries, zero_ok=True),
                backoff_base=num("backoff_base", float, d.backoff_base, zero_ok=True),
                backoff_max=num("backoff_max", float, d.backoff_max, zero_ok=True),
                timeout=timeout,
                deadline=num("deadline", float, default_deadline(timeout)),
                max_retry_after=num("max_retry_after", float, d.max_retry_after, zero_ok=True),
            ),
            max_tokens_total=num("max_tokens_total", int, None),
            logprobs="none" if logprobs == "none" else "auto",
            input_format=input_format_option(spec, o),
            strict=strict,
            server=None if server == "auto" else server,  # type: ignore[arg-type]
            extra=extra_fields(where, o),
            chat_template="server" if chat_template else None,
            http2=http2,
        )


def _check_base_url(where: str, url: str) -> str:
    """``url`` without a trailing slash, once it is a plain http(s) URL (the message never
    echoes more than its scheme and host: it could carry a credential)."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:  # an unclosed [IPv6 bracket, a port that is no number in range
        parts = None
    if parts is None or len(url) > 2048 or not url.isprintable():
        raise ModelSpecError(
            f"{where}: base_url must be a URL like http(s)://host[:port]/v1: at most 2,048 "
            "printable characters, a port from 0 to 65535"
        )
    if "://" not in url:
        raise ModelSpecError(
            f"{where}: base_url has no scheme: start it with http:// or https:// (a URL like "
            "http(s)://host[:port]/v1)"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelSpecError(
            f"{where}: base_url must look like http(s)://host[:port]/v1, got "
            f"{echo(parts.scheme, 20)}://{echo(parts.hostname or '', 60)}..."
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ModelSpecError(
            f"{where}: base_url must not carry credentials, a query or a fragment; keep keys "
            "in an environment variable named by api_key_env"
        )
    return url.rstrip("/")
