"""The content-keyed response cache."""

from ._store import CacheInfo, ResponseCache, default_cache_path

__all__ = ["CacheInfo", "ResponseCache", "default_cache_path"]
