"""bench/compare_formats_bench.py: one pair's truth and intervals, and the quick run's table."""

from __future__ import annotations

import sys

import pytest

from ._script import load_bench_script

cb = load_bench_script("compare_formats_bench")


def test_one_pair_reports_every_measure() -> None:
    row = cb.one(("mild", 3, False, 80, 30))
    assert row["family"] == "mild" and row["budget"] == 80 and row["null"] is False
    for key in ("difference", "p_better"):
        assert isinstance(row[f"{key}_cover"], bool) and row[f"{key}_width"] >= 0
    assert isinstance(row["decisive"], bool) and not (row["wrong"] and not row["decisive"])


def test_quick_run_prints_the_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["compare_formats_bench.py", "--quick"])
    cb.main()
    out = capsys.readouterr().out
    assert "| mild | choose | 60 | 2 |" in out and "nominal coverage 0.9" in out
