"""Reports opened in headless Chromium: they render, run without console errors, the
per-item table searches, sorts and pages, and no payload in the data ever runs.

Chromium is required in CI (``CI`` set): the test fails there when it is missing, and
skips only on a machine without Chromium and without ``CI``. Set
``STEADYEVAL_SCREENSHOT_DIR`` to keep the screenshots.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from steadyeval.reports import ReportOptions, build_report, render_html, write_report

from ._chromium import Browser, Page, open_report, shot
from .conftest import PAYLOADS


def _open(browser: Browser, path: Path) -> Page:
    return open_report(browser, path, 1400, 900)


@pytest.mark.parametrize("csp", [False, True], ids=["escaping-alone", "with-csp"])
def test_payloads_never_run(
    browser: Browser, scripted_run: Path, tmp_path: Path, csp: bool
) -> None:
    report = build_report(scripted_run, ReportOptions(n_resamples=100))
    path = tmp_path / f"report-{'csp' if csp else 'nocsp'}.html"
    path.write_text(render_html(report, csp=csp), encoding="utf-8")
    page = _open(browser, path)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.console_errors() == []
    # every payload is on the page as text: search for it and find a cell holding it
    for payload in PAYLOADS:
        page.evaluate(
            "(() => { const s = document.getElementById('items-search');"
            f" s.value = {payload!r}.toLowerCase(); s.dispatchEvent(new Event('input')); }})()"
        )
        cells = page.evaluate(
            "Array.from(document.querySelectorAll('#items-table td')).map(td => td.textContent)"
        )
        assert payload in cells
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.console_errors() == []


def test_tiny_model_report_in_the_browser(
    browser: Browser, tiny_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    path = write_report(tiny_runs[0], options=ReportOptions(n_resamples=200))
    page = _open(browser, path)
    assert page.console_errors() == []
    sections = page.evaluate("Array.from(document.querySelectorAll('section')).map(s => s.id)")
    assert sections[:2] == ["headline", "agreement"]
    assert {"spread", "calibration", "shots", "items"} <= set(sections)
    assert page.evaluate("document.querySelectorAll('svg.chart').length") >= 6
    assert page.evaluate("document.querySelectorAll('svg.heatmap').length") >= 1
    n_rows = 7 * 4
    assert page.evaluate("document.querySelectorAll('#items-table tbody tr').length") == n_rows
    info = page.evaluate("document.getElementById('items-info').textContent")
    assert info.startswith(f"rows 1–{n_rows} of {n_rows} matching")
    # search narrows the rows, sorting orders them, paging splits them
    page.evaluate(
        "(() => { const s = document.getElementById('items-search'); s.value = 'geo-';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    items = page.evaluate(
        "Array.from(document.querySelectorAll('#items-table tbody tr'))"
        ".map(tr => tr.cells[0].textContent)"
    )
    assert len(items) == 12 and set(items) == {"geo-1", "geo-2", "geo-3"}
    page.evaluate("document.querySelectorAll('#items-table th')[0].click()")
    page.evaluate("document.querySelectorAll('#items-table th')[0].click()")  # descending
    first = page.evaluate("document.querySelector('#items-table tbody tr').cells[0].textContent")
    assert first == "geo-3"
    page.evaluate(
        "(() => { const s = document.getElementById('items-search'); s.value = '';"
        " s.dispatchEvent(new Event('input')); const z = document.getElementById('items-size');"
        " z.value = '25'; z.dispatchEvent(new Event('change'));"
        " document.getElementById('items-next').click(); })()"
    )
    assert page.evaluate("document.querySelectorAll('#items-table tbody tr').length") == 3
    # the sortable summary tables sort on the raw value, not the text
    page.evaluate("document.querySelector('#headline table.sortable th:nth-child(4)').click()")
    accs = page.evaluate(
        "Array.from(document.querySelectorAll('#headline table.sortable tbody tr'))"
        ".map(tr => parseFloat(tr.cells[3].getAttribute('data-v')))"
    )
    assert accs == sorted(accs)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, tmp_path / "tiny-gpt2-report.png")
    assert page.console_errors() == []
