"""Whether a process lives: what decides that a file a writer left behind is stale."""

from __future__ import annotations

import os

__all__ = ["alive"]


def alive(pid: int) -> bool:
    """Whether process ``pid`` lives on this machine (this process too; another user's
    counts as alive). A number no process can have is not alive."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # PermissionError: another user's process
        return True
    return True
