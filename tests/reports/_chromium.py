"""Drive headless Chromium over the DevTools protocol (``--remote-debugging-pipe``).

No extra Python package: messages are NUL-terminated JSON on file descriptors 3 (to the
browser) and 4 (from it). Used by the report tests to load a report from disk, read
console errors and exceptions, evaluate expressions and take a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One browser tab attached with a flat session."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self.errors: list[str] = []

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def navigate(self, url: str, timeout: float = 30) -> None:
        self.browser.events.clear()
        self.send("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session, timeout)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate({expression!r}) threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Exceptions, ``console.error`` calls and error-level log entries so far."""
        out = []
        for ev in self.browser.all_events:
            if ev.get("sessionId") != self.session:
                continue
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append(f"Uncaught: {d.get('exception', {}).get('description') or d['text']}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value")) for a in p["args"]))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry']['text']}")
        return out


class Browser:
    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc = proc
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.all_events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium in time")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = 30,
    ) -> Any:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)
                self.all_events.append(reply)

    def wait_event(self, method: str, session: str | None, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev["method"] == method and ev.get("sessionId") == session:
                    return ev
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)
                self.all_events.append(msg)

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page


@contextmanager
def launch(binary: str, user_data_dir: Path) -> Iterator[Browser]:
    """Start headless Chromium with a DevTools pipe; stop it (by its pid) on exit."""
    to_r, to_w = os.pipe()  # we write, Chromium reads fd 3
    from_r, from_w = os.pipe()  # Chromium writes fd 4, we read

    def child_fds() -> None:
        os.dup2(to_r, 3)
        os.dup2(from_w, 4)

    proc = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(3, 4),
        preexec_fn=child_fds,
    )
    os.close(to_r)
    os.close(from_w)
    browser = Browser(proc, to_w, from_r)
    try:
        yield browser
    finally:
        with suppress(Exception):
            browser.send("Browser.close", timeout=5)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(to_w)
        os.close(from_r)


def open_report(browser: Browser, path: Path, width: int = 1280, height: int = 800) -> Page:
    """A new tab of ``width`` × ``height`` showing the report at ``path``, its script run."""
    page = browser.new_page(width, height)
    page.navigate(path.resolve().as_uri())
    assert page.evaluate("document.documentElement.getAttribute('data-items-ready')") == "1"
    return page


def shot(page: Page, path: Path, *, full: bool = True) -> Path:
    """A screenshot (the whole page, or the viewport), checked to be a real PNG, and copied
    to ``STEADYEVAL_SCREENSHOT_DIR`` when that is set."""
    if full:
        page.screenshot(path)
    else:
        data = page.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    keep = os.environ.get("STEADYEVAL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
    return path
