"""The report document model refuses, when a block is built, what a renderer could not show
(found by the second hostile review: these failed later, in one output format, with raw
errors)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from steadyeval.reports import (
    Bar,
    Column,
    Note,
    Paragraph,
    Point,
    Section,
    Series,
    Table,
    render_markdown,
    sections_markdown,
)

BAD: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: Paragraph(None), TypeError, "Paragraph.text must be a str; got NoneType"),  # type: ignore[arg-type]
    (lambda: Paragraph(5), TypeError, "Paragraph.text must be a str; got int"),  # type: ignore[arg-type]
    (lambda: Note("x", "danger"), ValueError, "Note.level must be 'info' or 'warning'"),  # type: ignore[arg-type]
    (lambda: Column("a", "percent"), ValueError, "Column.kind must be one of text, int"),  # type: ignore[arg-type]
    (
        lambda: Table("t", (Column("a", "pct_ci"),), ((0.5,),)),
        ValueError,
        "table 't': row 0, column 'a': 0.5 cannot be shown as 'pct_ci'",
    ),
    (
        lambda: Table("t", (Column("a", "int"),), ((10**400,),)),
        ValueError,
        "cannot be shown as 'int'",
    ),
    (lambda: Table("t", (Column("a"),), None), TypeError, ""),  # type: ignore[arg-type]
    (lambda: Bar("a", "0.5"), TypeError, "Bar.estimate must be a number; got str"),  # type: ignore[arg-type]
    (lambda: Bar("a", True), TypeError, "Bar.estimate must be a number; got bool"),
    (lambda: Point(math.nan, 0.5), ValueError, "Point.x must be finite"),
    (lambda: Series("s", None), TypeError, "points must be a sequence of Point"),  # type: ignore[arg-type]
    (lambda: Section.of("id", "t", "abc"), TypeError, "block 0 is a str"),  # type: ignore[arg-type]
    (lambda: Section.of("id", "t", [42]), TypeError, "block 0 is a int; expected one of"),  # type: ignore[list-item]
    (lambda: Section.of("id", "t", None), TypeError, ""),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("make", "error", "said"), BAD)
def test_a_block_a_renderer_cannot_show_is_refused_when_built(
    make: Callable[[], Any], error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=None) as info:
        make()
    assert said in str(info.value)


def test_what_renders_is_still_accepted() -> None:
    table = Table(
        "t",
        (Column("n", "int"), Column("p", "pct_ci"), Column("x", "float"), Column("s")),
        ((np.int64(3), (0.5, 0.4, 0.6), math.nan, "text"), (None, None, np.float64(0.25), 1)),
    )
    section = Section.of(
        "id", "Title", [Paragraph("p"), Note("n", "warning"), table], labels={"a": "A"}
    )
    text = sections_markdown([section])
    assert "50.0% [40.0, 60.0]" in text and "| 3 |" in text
    assert Bar("a", np.float64(0.5), math.nan, math.nan).estimate == 0.5
    assert Series("s", [Point(0, 0.5), Point(np.int64(1), 0.25, 0.1, 0.4)]).name == "s"
    assert callable(render_markdown)
