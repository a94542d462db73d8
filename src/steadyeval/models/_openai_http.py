"""The OpenAI side of the HTTP layer: the key goes as ``Authorization: Bearer KEY``, and a
404 hints at the ``/v1`` of an OpenAI API root. The sending, pooling, retries and deadlines
are provider-neutral (:mod:`._http`, :mod:`._http_policy`); this module builds the client
the ``openai:`` backend uses and re-exports the policy's names it needs.
"""

from __future__ import annotations

from ._backend import StatsCounter
from ._http import ApiProvider, HttpClient
from ._http_policy import (
    BadReply,
    BatchFailed,
    RetryPolicy,
    Secret,
    ServerError,
    retry_after_seconds,
    scrub,
)

__all__ = [
    "BadReply",
    "BatchFailed",
    "HttpClient",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "bearer",
    "openai_client",
    "retry_after_seconds",
    "scrub",
    "status_hint",
]


def bearer(key: str) -> dict[str, str]:
    """OpenAI's way to send a key (vLLM's ``--api-key`` and llama.cpp's ``--api-key`` too)."""
    return {"Authorization": f"Bearer {key}"}


def status_hint(status: int, base_url: str) -> str:
    """A hint for a reply that the request itself caused: a wrong base_url or model name."""
    if status == 404 and not base_url.rstrip("/").endswith("/v1"):
        return f"; OpenAI-compatible servers answer under /v1: is base_url {base_url}/v1 meant?"
    if status == 404:
        return "; is base_url the server's OpenAI API root, and the model name right?"
    return ""


def openai_client(
    base_url: str,
    *,
    secret: Secret | None,
    key_env: str,
    policy: RetryPolicy,
    max_concurrency: int,
    counter: StatsCounter,
    http2: bool = False,
) -> HttpClient:
    """The HTTP client of an ``openai:`` backend; ``key_env`` names the key's environment
    variable (for the message of a 401/403 reply)."""
    provider = ApiProvider(
        auth_headers=bearer,
        key_hint=f"${key_env} (the spec's api_key_env)",
        status_hint=status_hint,
    )
    return HttpClient(
        base_url,
        provider=provider,
        secret=secret,
        policy=policy,
        max_concurrency=max_concurrency,
        counter=counter,
        http2=http2,
    )
