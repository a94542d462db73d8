"""Lazy package exports: a package names what it exports and the submodule each name lives
in; the submodule is imported on first access (PEP 562), so importing the package stays cheap
(no torch, transformers, pyarrow or jinja2 until something needs them)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ._errors import ConfigError

__all__ = ["PLUGIN_GROUP", "lazy_exports", "load_entry", "load_plugins"]


class _Package(types.ModuleType):
    """A package whose exports named in ``_kept`` keep their name when a subpackage of the
    same name is imported (``steadyeval.run`` is the function, the subpackage stays in
    ``sys.modules["steadyeval.run"]``), as with an eager ``from .run import run``."""

    _kept: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._kept and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


def lazy_exports(
    package: str, exports: Mapping[str, Collection[str]], *, keep: Collection[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps each module
    (relative to ``package``, e.g. ``".results"``) to the names it exports. Names in
    ``keep`` are exports that share their name with a subpackage: the export wins."""
    where = {name: module for module, names in exports.items() for name in names}
    if keep:
        module = sys.modules[package]
        module.__class__ = _Package
        module._kept = frozenset(keep)  # type: ignore[attr-defined]

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__


def load_entry(path: str, what: str, error: type[Exception] = ConfigError) -> Any:
    """The object a registry names by import path (``"package.module:attr"``); an import
    that fails raises ``error`` saying ``what`` is not available and why."""
    module, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise error(f"{what} is not available in this installation ({path}: {exc})") from None


#: Installed packages extend steadyeval through this entry-point group: each entry names a
#: module that registers backends, scoring modes, data loaders or studies when imported.
PLUGIN_GROUP = "steadyeval.plugins"
_plugins_loaded = False


def load_plugins() -> None:
    """Import every installed plugin module once (registries call this before they list
    their names or report an unknown one). A plugin that fails to import is a warning."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    import warnings
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        try:
            ep.load()
        except Exception as exc:  # a broken plug-in must not break the rest
            warnings.warn(
                f"steadyeval plug-in {ep.name!r} ({ep.value}) failed: {exc}", stacklevel=2
            )
