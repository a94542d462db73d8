"""This process's peak resident memory, as tests measure it in subprocesses.

``getrusage(RUSAGE_SELF).ru_maxrss`` is not it on Linux: the kernel carries the high-water
mark of the address space a process had *before* ``exec`` into the new program's figure, so
a subprocess started from a fat pytest-xdist worker reports the worker's RSS (a test measured
947 MiB where the program itself peaked at 422). ``VmHWM`` in ``/proc/self/status`` belongs
to the current address space only."""

from __future__ import annotations

import resource


def peak_rss_bytes() -> int:
    """Peak resident memory of this program since it was started (``VmHWM``; where there is
    no ``/proc``, ``ru_maxrss``, which may then include a parent's share)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
