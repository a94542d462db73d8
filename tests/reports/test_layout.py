"""Reports fit the page: at a 1280×800 viewport neither the page nor any table scrolls
sideways (no hidden McNemar columns), with a row's drill-down open, for a run and for each
built-in study. Needs Chromium (see the ``browser`` fixture). Set
``STEADYEVAL_SCREENSHOT_DIR`` to keep the screenshots.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from steadyeval.reports import ReportOptions, write_report

from ._chromium import Browser, open_report, shot
from ._studies import StudyRuns

WIDTH, HEIGHT = 1280, 800

#: Tables (and other blocks) whose content is wider than the box they sit in: each one
#: hides columns behind a horizontal scroll bar.
_CLIPPED = """Array.from(document.querySelectorAll('.scroll, pre, .cond-card, td'))
  .filter(e => e.scrollWidth > e.clientWidth + 1 && !e.matches('.scroll:has(> svg)'))
  .map(e => (e.closest('figure')?.querySelector('figcaption')?.textContent || e.tagName)
    + ': ' + e.scrollWidth + ' > ' + e.clientWidth)"""

#: Headers of McNemar columns that end right of the viewport.
_HIDDEN_MCNEMAR = f"""Array.from(document.querySelectorAll('th'))
  .filter(th => /McNemar/.test(th.textContent))
  .filter(th => th.getBoundingClientRect().right > {WIDTH})
  .map(th => th.textContent)"""


def _check_fits(browser: Browser, path: Path, name: str, tmp_path: Path) -> None:
    page = open_report(browser, path, WIDTH, HEIGHT)
    page.evaluate("document.querySelector('#items-table tbody tr').click()")  # a drill-down
    assert page.evaluate("document.querySelectorAll('#items-table tr.detail').length") == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert page.evaluate(_CLIPPED) == []
    assert page.evaluate(_HIDDEN_MCNEMAR) == []
    assert page.console_errors() == []
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, tmp_path / f"{name}-top.png", full=False)
    page.evaluate("document.querySelector('#items-table tr.detail').scrollIntoView()")
    page.evaluate("window.scrollBy(0, -90)")
    shot(page, tmp_path / f"{name}-drilldown.png", full=False)


def test_a_run_report_fits_1280_pixels(
    browser: Browser, tiny_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    path = write_report(tiny_runs[0], options=ReportOptions(n_resamples=100))
    _check_fits(browser, path, "run", tmp_path)


def test_the_scripted_run_report_fits_1280_pixels(
    browser: Browser, scripted_run: Path, tmp_path: Path
) -> None:
    """Two models, five conditions, payload outputs and a long condition name."""
    path = write_report(
        scripted_run, output=tmp_path / "r.html", options=ReportOptions(n_resamples=100)
    )
    _check_fits(browser, path, "scripted", tmp_path)


@pytest.mark.parametrize("study", ["formats", "sensitivity", "knowledge", "fewshot"])
def test_each_study_report_fits_1280_pixels(
    browser: Browser, study_runs: StudyRuns, study: str, tmp_path: Path
) -> None:
    path = write_report(
        study_runs[study], output=tmp_path / "r.html", options=ReportOptions(n_resamples=100)
    )
    _check_fits(browser, path, f"study-{study}", tmp_path)
