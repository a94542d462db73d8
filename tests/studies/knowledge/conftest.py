"""A two-subject mini MMLU in the original CSV layout, written for these tests."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

Row = tuple[str, str, str, str, str, str]

DEV: dict[str, list[Row]] = {
    "abstract_algebra": [
        ("What is 1+1?", "1", "2", "3", "4", "B"),
        ("What is 2*3?", "6", "5", "8", "9", "A"),
        ("Is Z a ring?", "no", "yes", "maybe", "unknown", "B"),
    ],
    "high_school_us_history": [
        ("Who was the first US president?", "Lincoln", "Washington", "Adams", "Jefferson", "B"),
        ("In which year did the US declare independence?", "1776", "1789", "1812", "1865", "A"),
    ],
}
TEST: dict[str, list[Row]] = {
    "abstract_algebra": [
        ("What is 3+4?", "7", "6", "5", "4", "A"),
        ('Which set, "N" or "Z", has\nnegatives?', "N", "Z", "both", "neither", "B"),
        ("What is 0*5?", "5", "1", "0", "2", "C"),
        (
            "What is the order of the group Z/4Z under addition modulo four?",
            "1",
            "2",
            "3",
            "4",
            "D",
        ),
    ],
    "high_school_us_history": [
        ("Which war ended in 1865?", "Civil War", "War of 1812", "Revolution", "Korean War", "A"),
        (
            "Who wrote most of the Declaration of Independence?",
            "Adams",
            "Franklin",
            "Jefferson",
            "Madison",
            "C",
        ),
        (
            "Which purchase doubled the size of the US in 1803?",
            "Alaska",
            "Gadsden",
            "Florida",
            "Louisiana",
            "D",
        ),
    ],
}


def write_mmlu(root: Path, dev: dict[str, list[Row]], test: dict[str, list[Row]]) -> Path:
    for split, table in (("dev", dev), ("test", test)):
        (root / split).mkdir(parents=True, exist_ok=True)
        for subject, rows in table.items():
            with (root / split / f"{subject}_{split}.csv").open("w", newline="") as fh:
                csv.writer(fh).writerows(rows)
    return root


@pytest.fixture(scope="session")
def mini_mmlu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mmlu(tmp_path_factory.mktemp("mini_mmlu"), DEV, TEST)
