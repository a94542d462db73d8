"""Is a name a local path or a Hugging Face hub id? One rule for model specs and data sets.

A name is a **local path** when it is written as one (``./x``, ``../x``, ``/abs``, ``~`` or
``~/x``, ``.``, ``..``, a backslash, or two or more slashes) or when something of that name
exists on disk (relative to the working directory). Otherwise it is a **hub id** when it
follows the hub's grammar (:func:`hub_id_problem`: ``NAME`` or ``OWNER/NAME``, at most one
slash, the characters ``huggingface_hub`` allows); otherwise it is neither, and the caller
says so. A suffix decides nothing: ``Qwen/Qwen2.5-0.5B`` and ``teknium/OpenHermes-2.5`` are
hub ids, not files.

Nothing here imports ``huggingface_hub``: deciding costs a regular expression and a ``stat``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, NamedTuple

__all__ = ["HUB_ID_FORM", "Location", "hub_id_problem", "locate", "written_as_path"]

#: What a hub id looks like, for messages.
HUB_ID_FORM = (
    "NAME or OWNER/NAME: letters, digits, '-', '_' and '.', each part at most 96 "
    "characters, starting and ending with a letter, digit or '_', no '--' or '..'"
)
_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")


def hub_id_problem(name: str) -> str | None:
    """Why ``name`` is not a hub id, or None when it is one.

    The rule is ``huggingface_hub``'s ``validate_repo_id`` restricted to ASCII (the hub
    allows no other letters): at most one slash, each part 1-96 characters of letters,
    digits, ``-``, ``_`` and ``.``, starting and ending with a letter, digit or ``_``; no
    ``--`` or ``..``; not ending in ``.git``.
    """
    if not name:
        return "the name is empty"
    if name.count("/") > 1:
        return "a hub id has at most one slash (OWNER/NAME)"
    for part in name.split("/"):
        if not part:
            return "a hub id has no empty part (OWNER/NAME)"
        if not _PART.fullmatch(part):
            return f"it does not follow the hub's form ({HUB_ID_FORM})"
    if "--" in name or ".." in name:
        return "a hub id has no '--' or '..'"
    if name.endswith(".git"):
        return "a hub id does not end in '.git'"
    return None


def written_as_path(name: str) -> bool:
    """Whether ``name`` is written as a local path whatever exists: ``./x``, ``../x``,
    ``/abs``, ``~`` or ``~/x``, ``.``, ``..``, a backslash, or two or more slashes."""
    return (
        name in (".", "..", "~")
        or name.startswith(("./", "../", "/", "~/", "~"))
        or "\\" in name
        or name.count("/") >= 2
    )


def _exists(path: Path) -> bool:
    """``path.exists()``, False where the name cannot be a path here (too long, a NUL)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


class Location(NamedTuple):
    """Where a name points (see the module docstring).

    ``kind`` is ``"path"`` (``path`` is the name with ``~`` expanded; ``exists`` says
    whether it exists), ``"hub"`` (a hub id, nothing of that name on disk) or ``"neither"``
    (``why`` says why it is no hub id).
    """

    kind: Literal["path", "hub", "neither"]
    path: Path
    exists: bool
    why: str = ""


def locate(name: str) -> Location:
    """Decide whether ``name`` is a local path or a hub id (see the module docstring)."""
    try:
        path = Path(name).expanduser()
    except RuntimeError:  # ~user of an unknown user
        path = Path(name)
    exists = _exists(path)
    if exists or written_as_path(name):
        return Location("path", path, exists)
    why = hub_id_problem(name)
    if why is None:
        return Location("hub", path, False)
    return Location("neither", path, False, why)
