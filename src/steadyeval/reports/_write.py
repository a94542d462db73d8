"""Rendering a report in a format and writing it next to its run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from .._errors import DataError, show_path
from .._files import text_sha256
from .._json import write_text_atomic
from ..document import Report, render_markdown
from ._build import build_report, load_context
from ._html import render_html
from ._json import render_json
from ._options import ReportOptions

__all__ = ["ReportFormat", "render", "write_report"]

ReportFormat = Literal["html", "md", "json"]
_SUFFIX = {"html": "html", "md": "md", "json": "json"}


def render(report: Report, fmt: ReportFormat) -> str:
    """Render ``report`` as ``html``, ``md`` or ``json``."""
    if fmt == "html":
        return render_html(report)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return render_json(report)
    raise ValueError(f"unknown report format {fmt!r}; expected one of html, md, json")


def write_report(
    run_dir: str | Path,
    *,
    fmt: ReportFormat = "html",
    output: str | Path | None = None,
    options: ReportOptions | None = None,
) -> Path:
    """Build the report of ``run_dir`` and write it (default ``RUN_DIR/report.<fmt>``).

    The file is written to a temporary name first and then renamed, so a reader never sees
    half a report. Returns the path written.
    """
    if fmt not in _SUFFIX:
        raise ValueError(f"unknown report format {fmt!r}; expected one of html, md, json")
    path = Path(output) if output is not None else Path(run_dir) / f"report.{_SUFFIX[fmt]}"
    from ..run import is_report, is_run_file, results_token, writing_report

    if output is None and os.path.lexists(path) and not is_report(path):
        raise DataError(
            f"{show_path(path)}: exists and is not a report steadyeval wrote (a file of "
            "yours?); it is left as it is: write the report elsewhere with --output, or "
            "move that file away"
        )
    if output is not None and is_run_file(Path(run_dir), path):
        same = os.path.realpath(path.parent) == os.path.realpath(run_dir)
        what = "of the run itself" if same else "of another run's folder (its results or reports)"
        raise DataError(
            f"{show_path(path)}: is a file {what}; write the report elsewhere "
            f"(the default is {show_path(Path(run_dir) / f'report.{_SUFFIX[fmt]}')})"
        )
    token = results_token(Path(run_dir))  # before reading: a run may rewrite them meanwhile
    ctx = load_context(run_dir, options)
    text = render(build_report(ctx), fmt)
    run_id = ctx.summary.get("run_id")
    path.parent.mkdir(parents=True, exist_ok=True)
    # in the run's folder: locked, checked against what was read, recorded once written
    digest = text_sha256(text)  # as write_text_atomic writes it
    shows = str(run_id) if run_id else None
    with writing_report(Path(run_dir), path, run_id=shows, token=token, digest=digest):
        write_text_atomic(path, text)
    return path
