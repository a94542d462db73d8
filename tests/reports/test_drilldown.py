"""The per-item table's drill-down and filters, in headless Chromium (see the ``browser``
fixture): a row opens its prompt, its options in the order shown with their
log-probabilities, the gold and chosen options, the output and how it was parsed, and the
same unit under every other condition; filters by condition, outcome and flips between two
conditions; payloads stay text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from steadyeval import read_results
from steadyeval.reports import ReportOptions, write_report

from ._chromium import Browser, Page, open_report
from .conftest import PAYLOADS, tiny_conditions

#: Every card of the open drill-down: its condition, whether it is the clicked row's, its
#: prompt, option rows (text, log-prob, marks) and its facts.
_CARDS = """Array.from(document.querySelectorAll('#items-table tr.detail .cond-card')).map(c => ({
  condition: c.querySelector('h4').firstChild.textContent,
  current: c.classList.contains('current'),
  prompt: c.querySelector('pre.prompt')?.textContent ?? null,
  options: Array.from(c.querySelectorAll('table.options tbody tr')).map(tr =>
    Array.from(tr.cells).slice(1).map(td => td.textContent)),
  facts: Object.fromEntries(Array.from(c.querySelectorAll('dl.facts-small div')).map(d =>
    [d.querySelector('dt').textContent, d.querySelector('dd').textContent])),
}))"""


def _set(page: Page, element_id: str, value: str) -> None:
    event = "input" if element_id == "items-search" else "change"
    page.evaluate(
        f"(() => {{ const e = document.getElementById({element_id!r}); e.value = {value!r};"
        f" e.dispatchEvent(new Event({event!r})); }})()"
    )


def _shown(page: Page) -> list[list[str]]:
    rows: list[list[str]] = page.evaluate(
        "Array.from(document.querySelectorAll('#items-table tr.item-row'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))"
    )
    return rows


def _open_row(page: Page, item: str, condition: str) -> None:
    _set(page, "items-search", item)
    page.evaluate(
        "Array.from(document.querySelectorAll('#items-table tr.item-row')).find(tr =>"
        f" tr.cells[0].textContent === {item!r} && tr.cells[1].textContent === {condition!r})"
        ".click()"
    )


def _marks(row: dict[str, Any], k: int) -> str:
    src = row["option_source"][k]
    marks = []
    if src >= 0 and src in (row["gold_options"] or []):
        marks.append("gold")
    if (src >= 0 and src == row["parsed_option"]) or (src < 0 and row["parsed_kind"] == "refusal"):
        marks.append("chosen")
    if src < 0:
        marks.append("escape")
    return ", ".join(marks)


def test_a_row_opens_every_condition_of_its_item(
    browser: Browser, tiny_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    run_dir = tiny_runs[0]
    opts = ReportOptions(n_resamples=50, max_chars=5000)  # nothing cut
    page = open_report(browser, write_report(run_dir, output=tmp_path / "r.html", options=opts))
    _open_row(page, "geo-3", "mc-nota")
    cards = page.evaluate(_CARDS)
    names = [c.name for c in tiny_conditions()]
    assert [c["condition"] for c in cards] == names  # side by side, in run order
    assert [c["current"] for c in cards] == [n == "mc-nota" for n in names]
    rows = {r["condition"]: r for r in read_results(run_dir).to_pylist() if r["item_id"] == "geo-3"}
    for card in cards:
        row = rows[card["condition"]]
        assert card["prompt"] == row["prompt"]
        assert card["facts"]["gold"] == " | ".join(row["gold"])
        assert card["facts"]["output"] == row["output"]
        assert card["facts"]["parsed"] == f"{row['parsed_kind']}: {row['parsed'] or '–'}"
        assert card["facts"]["scoring"] == row["scoring"]
        if row["options"] is None:  # free form: no options to show
            assert card["options"] == []
            continue
        # options in the order shown, each with its own log-probability and marks
        assert [o[0] for o in card["options"]] == row["options"]
        assert [o[1] for o in card["options"]] == [f"{x:.3f}" for x in row["option_logprobs"]]
        assert [o[2] for o in card["options"]] == [
            _marks(row, k) for k in range(len(row["options"]))
        ]
    shuffled = rows["mc-nota"]
    assert shuffled["options"][-1] == "none of the above" and shuffled["option_source"][-1] == -1
    # the same row again closes it; Enter on a focused row opens it
    _open_row(page, "geo-3", "mc-nota")
    assert page.evaluate("document.querySelectorAll('#items-table tr.detail').length") == 0
    page.evaluate(
        "(() => { const tr = document.querySelector('#items-table tr.item-row'); tr.focus();"
        " tr.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()"
    )
    assert page.evaluate("document.querySelectorAll('#items-table tr.detail').length") == 1
    assert page.console_errors() == []


def test_filters_by_condition_outcome_and_flips(
    browser: Browser, tiny_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    run_dir = tiny_runs[0]
    page = open_report(browser, write_report(run_dir, output=tmp_path / "r.html"))
    table = read_results(run_dir).to_pylist()
    _set(page, "items-condition", "mc")
    assert [r[1] for r in _shown(page)] == ["mc"] * 7
    _set(page, "items-condition", "")
    # flips on correct between free and mc: both rows of every unit that flips
    by = {(r["item_id"], r["condition"]): r["correct"] for r in table}
    flips = {i for i, c in by if c == "free" and by[(i, "free")] != by[(i, "mc")]}
    assert flips  # the tiny model gets some right only when it sees options
    _set(page, "items-flip-a", "free")
    _set(page, "items-flip-b", "mc")
    shown = _shown(page)
    assert sorted((r[0], r[1]) for r in shown) == sorted(
        (i, c) for i in flips for c in ("free", "mc")
    )
    _set(page, "items-filter", "correct")  # filters combine: the correct side of each flip
    assert {(r[0], r[1]) for r in _shown(page)} == {
        (i, c) for i in flips for c in ("free", "mc") if by[(i, c)]
    }
    _set(page, "items-filter", "all")
    _set(page, "items-flip-on", "refused")
    refused = {(r["item_id"], r["condition"]): r["refused"] for r in table}
    expected = {
        (i, c)
        for (i, c) in refused
        if c in ("free", "mc") and refused[(i, "free")] != refused[(i, "mc")]
    }
    assert {(r[0], r[1]) for r in _shown(page)} == expected
    info = page.evaluate("document.getElementById('items-info').textContent")
    assert info == "no rows match" if not expected else info.startswith("rows 1")
    assert page.console_errors() == []


def test_payloads_stay_text_in_the_drilldown(
    browser: Browser, scripted_run: Path, tmp_path: Path
) -> None:
    path = write_report(
        scripted_run, output=tmp_path / "r.html", options=ReportOptions(n_resamples=50)
    )
    page = open_report(browser, path)
    items = {r["output"]: r["item_id"] for r in read_results(scripted_run).to_pylist()}
    for payload in PAYLOADS:
        _open_row(page, items[payload], "free")
        cards = page.evaluate(_CARDS)
        free = next(c for c in cards if c["current"])
        assert free["facts"]["output"] == payload
        assert len(cards) == 5  # every condition, the payload-named one too
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img, svg[onload]').length") == 0
    assert page.console_errors() == []


def test_the_page_says_when_rows_were_left_out(
    browser: Browser, tiny_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    opts = ReportOptions(n_resamples=50, max_item_rows=10, max_chars=30)
    page = open_report(
        browser, write_report(tiny_runs[0], output=tmp_path / "r.html", options=opts)
    )
    text = page.evaluate("document.getElementById('items').innerText")
    assert "20 of the run's 28 rows are not in this report" in text
    assert "--max-rows" in text and "cut at 30 characters" in text
    data = json.loads(page.evaluate("document.getElementById('items-data').textContent"))
    assert len(data["rows"]) == len(data["details"]) == 8  # two whole items of 4 conditions
    assert all(len(p) <= 30 + len("\n[… 9,999 characters left out …]\n") for p in data["prompts"])
