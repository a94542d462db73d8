"""``export_run``: a finished run written in another tool's format (the reverse of the
importers). The formats: :mod:`._export_inspect` (Inspect AI ``.eval`` logs) and
:mod:`._export_eee` (Every Eval Ever records)."""

from __future__ import annotations

import os
from pathlib import Path

from ._export_eee import write_eee
from ._export_inspect import write_inspect
from ._export_run import ExportedRun, ExportOptions, load_run

__all__ = ["ExportOptions", "ExportedRun", "export_run"]


def export_run(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    options: ExportOptions | None = None,
) -> ExportedRun:
    """Write the run in ``run_dir`` in another tool's format.

    Parameters
    ----------
    run_dir : path
        A finished run folder (``steadyeval run``, a study, or ``steadyeval import``).
    out : path, optional
        Where to write: a folder (created if needed), or for ``inspect`` a ``.eval`` file
        when the run holds one (model, condition). Default: beside the run folder,
        ``<run>-inspect`` or ``<run>-eee``; never inside it unless named.
    options : ExportOptions, optional
        The format (default ``inspect``), ``overwrite`` and the EEE ``benchmark`` name.

    Returns
    -------
    ExportedRun
        The files written, the rows they hold and notes on what the format could not hold.

    Raises
    ------
    ValueError
        (:class:`~steadyeval.DataError`) ``run_dir`` is not a run folder, did not finish
        (its manifest's state), or holds no rows; (:class:`~steadyeval.ConfigError`) a file
        the export would write exists (without ``overwrite``; nothing is written then) or
        ``out`` is of the wrong kind. Messages name the path and what was expected.

    Notes
    -----
    Only the results table, the time it was written and each condition's decoding settings
    are read: no secret, host name or file path of the run's machine reaches the export.
    The same run exports to the same bytes (times, ids and file names come from the run).
    """
    opts = options or ExportOptions()
    run = load_run(run_dir)
    target = Path(out) if out is not None else None
    if opts.format == "inspect":
        return write_inspect(run, target, opts)
    return write_eee(run, target, opts)
