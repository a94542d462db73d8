"""The content-keyed response cache, shared safely by processes that run at once."""

from ._store import (
    DEFAULT_CLAIM_EXPIRY,
    CacheInfo,
    Claims,
    PartialBatchError,
    ResponseCache,
    default_cache_path,
)

__all__ = [
    "DEFAULT_CLAIM_EXPIRY",
    "CacheInfo",
    "Claims",
    "PartialBatchError",
    "ResponseCache",
    "default_cache_path",
]
