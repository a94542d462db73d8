"""A rich progress bar: requests done (sent vs cached) and ETA; silent when disabled."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as _RichProgress

__all__ = ["Progress"]


class Progress:
    def __init__(self, *, total: int, cached: int, enabled: bool) -> None:
        self.enabled = enabled
        self.cached = cached
        self.sent = 0
        self._bar: _RichProgress | None = None
        if enabled:
            self._bar = _RichProgress(
                TextColumn("[bold]requests"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._task = self._bar.add_task(
                "run", total=total, completed=cached, detail=self._detail("")
            )

    def _detail(self, model: str) -> str:
        return f"sent {self.sent} · cached {self.cached}" + (f" · {model}" if model else "")

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def advance(self, n: int, *, model: str = "") -> None:
        self.sent += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n, detail=self._detail(model))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
