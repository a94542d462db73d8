"""``Item`` checks its fields as the loaders check a record's (issue 37): a string where a
list of strings goes (``options='Paris'`` became ``('P', 'a', 'r', 'i', 's')``), an id of
None, a lone surrogate in any text; each is a DataError naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from steadyeval import DataError
from steadyeval.items import Item


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"options": "Paris", "answer": "P"}, "options", "the string 'Paris'"),
        ({"answers": "Paris"}, "answers", "the string 'Paris'"),
        ({"aliases": "Paris"}, "aliases", "the string 'Paris'"),
        ({"id": None}, "id", "got NoneType"),
        ({"id": 3}, "id", "got int"),
        ({"question": b"q"}, "question", "got bytes"),
        ({"context": 1.5}, "context", "got float"),
        ({"options": ["a", None]}, r"options\[1\]", "got NoneType"),
        ({"options": {"a": 1, "b": 2}}, "options", "got dict"),
        ({"options": ["a", "b"], "gold_options": [True]}, r"gold_options\[0\]", "got bool"),
        ({"options": ["a", "b"], "gold_options": 0}, "gold_options", "got int"),
        ({"answerable": "no"}, "answerable", "the string 'no'"),
        ({"question": "\ud800"}, "question", "lone surrogate"),
        ({"id": "x\udc00"}, "id", "lone surrogate"),
        ({"context": "ok \udbff"}, "context", "lone surrogate"),
        ({"options": ["a", "b\ud800"]}, r"options\[1\]", "lone surrogate"),
        ({"answers": ("\udfff",)}, r"answers\[0\]", "lone surrogate"),
    ],
)
def test_a_field_of_the_wrong_kind_is_named(
    fields: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(DataError, match=rf"field '{field}': .*{message}"):
        Item(**{"id": "a", "question": "q", **fields})


def test_good_items_are_unchanged() -> None:
    item = Item(id="a", question="Capital?", options=["Paris", "Rome"], answer="Paris")
    assert item.options == ("Paris", "Rome") and item.gold_options == (0,)
    assert Item(id="b", question="q", context="\U0001f600 ok", answers=["x"]).answers == ("x",)
    import numpy as np

    numpy_index = Item(id="c", question="q", options=("a", "b"), gold_options=(np.int64(1),))
    assert numpy_index.gold_options == (1,) and type(numpy_index.gold_options[0]) is int
    assert numpy_index.hash  # JSON-ready
