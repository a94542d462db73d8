"""The ``openai:`` spec's options: which are allowed (:data:`RUN_ONLY` names those that never
change an output) and their validation into :class:`OpenAIOptions`. A credential is refused
as an option (the spec is written to results, caches and logs): the key comes from the
environment variable named by ``api_key_env``, and ``base_url`` must be a plain http(s) URL.
Numbers must be finite; seconds are at most :data:`MAX_SECONDS` (a socket or a timer refuses
longer waits).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from .._errors import ModelSpecError
from ._openai_http import RetryPolicy
from ._openai_server import PROFILES, RESERVED_FIELDS, ServerName
from ._spec import ModelSpec

__all__ = ["DEFAULT_BASE_URL", "MAX_SECONDS", "RUN_ONLY", "OpenAIOptions", "default_deadline"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_SECONDS = 1e6  # about 11 days; far longer waits overflow the platform's timers
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
    "chat_template": "server: accept the server's own chat formatting on a server that falls "
    "back to a generic template (llama.cpp); recorded in the model column",
}
#: Options that change how a run goes, never an output: left out of the model's identity.
RUN_ONLY = frozenset(
    {"api_key_env", "max_concurrency", "max_retries", "backoff_base", "backoff_max", "timeout",
     "deadline", "max_retry_after", "strict", "max_tokens_total", "logprobs", "input_format"}
)  # fmt: skip
_SECONDS = frozenset({"backoff_base", "backoff_max", "timeout", "deadline", "max_retry_after"})


def _number(spec: ModelSpec, key: str, value: str, kind: type[Any], *, zero_ok: bool) -> Any:
    try:
        number = kind(value)
    except ValueError:
        number = None
    top = MAX_SECONDS if key in _SECONDS else math.inf
    if (
        number is None
        or not math.isfinite(number)
        or number < 0
        or (number == 0 and not zero_ok)
        or number > top
    ):
        what = "integer" if kind is int else "finite number"
        most = f" of at most {top:g} seconds" if key in _SECONDS else ""
        raise ModelSpecError(
            f"model spec {spec.backend}:{spec.name}: option {key} must be a "
            f"{'non-negative' if zero_ok else 'positive'} {what}{most}, got {value!r}"
        )
    return number


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
        unknown = sorted(k for k in set(o) - set(_ALLOWED) if not k.startswith("extra."))
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
        strict = o.get("strict", "false").lower()
        if strict not in ("true", "false"):
            raise ModelSpecError(f"{where}: strict must be true or false, got {strict!r}")

        def num(key: str, kind: type[Any], default: Any, *, zero_ok: bool = False) -> Any:
            return _number(spec, key, o[key], kind, zero_ok=zero_ok) if key in o else default

        d = RetryPolicy()
        timeout = num("timeout", float, d.timeout)
        server = o.get("server", "auto")
        if server != "auto" and server not in PROFILES:
            raise ModelSpecError(
                f"{where}: server must be auto or one of {', '.join(PROFILES)}, got {server!r}"
            )
        chat_template = o.get("chat_template")
        if chat_template not in (None, "server"):
            raise ModelSpecError(f"{where}: chat_template takes server, got {chat_template!r}")
        return cls(
            base_url=base_url,
            api_key_env=env,
            revision=o.get("revision"),
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
            input_format=o.get("input_format") or None,
            strict=strict == "true",
            server=None if server == "auto" else server,  # type: ignore[arg-type]
            extra=_extra(where, o),
            chat_template="server" if chat_template else None,
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


def _extra(where: str, o: dict[str, str]) -> tuple[tuple[str, Any], ...]:
    """The extra request fields of ``extra_body`` and ``extra.NAME`` options (these win)."""
    fields: dict[str, Any] = {}
    if "extra_body" in o:
        try:
            body = json.loads(o["extra_body"])
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ModelSpecError(f"{where}: extra_body must be a JSON object, e.g. "
                                 '{"repeat_penalty": 1.0}')  # fmt: skip
        fields.update(body)
    for key, value in o.items():
        if key.startswith("extra."):
            try:
                fields[key[6:]] = json.loads(value)
            except ValueError:
                fields[key[6:]] = value
    bad = sorted(k for k in fields if k in RESERVED_FIELDS or not k)
    if bad:
        raise ModelSpecError(
            f"{where}: extra field {bad[0]!r} is written by the backend itself; extra fields "
            f"may not be any of {', '.join(sorted(RESERVED_FIELDS))}"
        )
    return tuple(sorted(fields.items()))
