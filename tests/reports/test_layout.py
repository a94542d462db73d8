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


#: Line breaks inside a word: for every text in the given elements, a line that starts
#: right after a letter or digit, with no space or separator (/ - : @ # ? & = _ ,) before
#: it. Reads each character's box (a Range per character); a space at a line's end has
#: no box and counts as a space.
_MID_WORD = r"""(function (selector) {
  var bad = [], sep = /[\/\-:@#?&=_,.;)\]]/;
  document.querySelectorAll(selector).forEach(function (e) {
    var walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), node;
    var lastTop = null, last = "", space = false, text = "";
    while ((node = walk.nextNode())) {
      for (var i = 0; i < node.length; i++) {
        var ch = node.data[i];
        text += ch;
        if (/\s/.test(ch)) { space = true; continue; }
        var r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        var box = r.getClientRects()[0];
        if (!box) { space = true; continue; }
        if (lastTop !== null && box.top > lastTop + 2 && !space && !sep.test(last))
          bad.push(e.tagName + ": " + text.slice(-30) + " | " + node.data.slice(i + 1, i + 15));
        lastTop = box.top; last = ch; space = false;
      }
    }
  });
  return bad;
})"""
_NAMES = "dl.facts dd, section:not(#items) th, section:not(#items) td, figcaption"


@pytest.mark.parametrize("width", [1280, 760])
def test_disparity_report_wraps_long_model_names_at_separators(
    browser: Browser, study_runs: StudyRuns, width: int, tmp_path: Path
) -> None:
    """Model names as long as a hub cache's or a temp folder's wrap at / - : @ # in the
    header and the tables (the header broke them anywhere: ``word-break: break-all``),
    and nothing scrolls sideways, at 1280 px and at 760 px."""
    from ._studies import LONG_NAME

    path = write_report(
        study_runs["disparity"], output=tmp_path / "r.html", options=ReportOptions(n_resamples=100)
    )
    html = path.read_text(encoding="utf-8")
    assert f"gpt2-<wbr>{LONG_NAME.replace('-', '-<wbr>')}#<wbr>" in html
    if width == WIDTH:
        _check_fits(browser, path, "study-disparity", tmp_path)
    page = open_report(browser, path, width, HEIGHT)
    models = page.evaluate(
        "Array.from(document.querySelectorAll('dl.facts div'))"
        ".filter(d => d.querySelector('dt').textContent === 'models')"
        ".map(d => [d.querySelector('dd').textContent,"
        " Math.round(d.querySelector('dd').getBoundingClientRect().height)])[0]"
    )
    assert LONG_NAME in models[0]
    assert models[1] > 40  # the names did wrap: else the test below would prove nothing
    assert page.evaluate(f"{_MID_WORD}({_NAMES!r})") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate("document.querySelector('#disparity').scrollWidth") <= width
    section_clipped = _CLIPPED.replace(
        "document.querySelectorAll(", "document.querySelector('#disparity').querySelectorAll("
    )
    assert page.evaluate(section_clipped) == []
    assert page.console_errors() == []
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, tmp_path / f"disparity-{width}.png", full=False)
