"""A small SQuAD 2.0 file written for these tests (invented towns; no real data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

TOWNS = [
    # town, river, year, founder, goods
    ("Harnwick", "Velm", "1204", "Abbot Cedric", "wool"),
    ("Osterby", "Lunn", "1188", "Lady Maren", "salt fish"),
    ("Calder Cross", "Tave", "1311", "the weavers' guild", "linen"),
    ("Brimsford", "Orrel", "1266", "Count Aldo", "copper pots"),
    ("Wenlow", "Pike", "1150", "two brothers", "cheese"),
    ("Ashgate", "Morrow", "1402", "a ferryman", "timber"),
]


def _span(context: str, text: str) -> dict[str, Any]:
    start = context.index(text)
    return {"text": text, "answer_start": start}


def _paragraph(
    i: int, town: str, river: str, year: str, founder: str, goods: str
) -> dict[str, Any]:
    ctx = (
        f"The town of {town} lies on the {river} river. It was founded in {year} by {founder}. "
        f"Its weekly market is known for {goods}."
    )
    return {
        "context": ctx,
        "qas": [
            {"id": f"t{i}-river", "question": f"Which river does {town} lie on?",
             "answers": [_span(ctx, river), _span(ctx, f"the {river} river")],
             "is_impossible": False},
            {"id": f"t{i}-year", "question": f"When was {town} founded?",
             "answers": [_span(ctx, year)], "is_impossible": False},
            {"id": f"t{i}-founder", "question": f"Who founded {town}?",
             "answers": [_span(ctx, founder)], "is_impossible": False},
            {"id": f"t{i}-goods", "question": f"What is the market of {town} known for?",
             "answers": [_span(ctx, goods)], "is_impossible": False},
            {"id": f"t{i}-burnt", "question": f"When did {town} burn down?",
             "answers": [], "plausible_answers": [_span(ctx, year)], "is_impossible": True},
            {"id": f"t{i}-mayor", "question": f"Who was the first mayor of {town}?",
             "answers": [], "plausible_answers": [_span(ctx, founder)], "is_impossible": True},
        ],
    }  # fmt: skip


def squad_mini() -> dict[str, Any]:
    """Two articles of three towns each, plus edge cases.

    Answerable: 24 qualify by paragraph, 3 more (``Hamlets``) only with the article fallback,
    1 (``Islet``) not at all. Unanswerable: 12 by paragraph, 2 with the fallback (``h-filled``,
    ``h-size``), 1 without a plausible answer (``h-name``) and 1 whose article has no other
    answer (``i-planted``).
    """
    towns = [_paragraph(i, *t) for i, t in enumerate(TOWNS)]
    small = "Little Fenn has one well. The well was dug by a tinker."
    mill = "The mill of Little Fenn was built of grey stone and painted green."
    islet_text = "The islet has a single tree, an old oak."
    islet = {
        "title": "Islet",
        "paragraphs": [
            {
                "context": islet_text,
                "qas": [
                    {"id": "i-tree", "question": "What grows on the islet?",
                     "answers": [_span(islet_text, "an old oak")], "is_impossible": False},
                    {"id": "i-planted", "question": "What did the monks plant on the islet?",
                     "answers": [], "plausible_answers": [_span(islet_text, "an old oak")],
                     "is_impossible": True},
                ],
            }
        ],
    }  # fmt: skip
    hamlets = {
        "title": "Hamlets",
        "paragraphs": [
            {
                "context": small,
                "qas": [
                    {"id": "h-dug", "question": "Who dug the well of Little Fenn?",
                     "answers": [_span(small, "a tinker")], "is_impossible": False},
                    {"id": "h-filled", "question": "Who filled the well of Little Fenn?",
                     "answers": [], "plausible_answers": [_span(small, "a tinker")],
                     "is_impossible": True},
                ],
            },
            {
                "context": mill,
                "qas": [
                    {"id": "h-stone", "question": "What was the mill of Little Fenn built of?",
                     "answers": [_span(mill, "grey stone")], "is_impossible": False},
                    {"id": "h-colour", "question": "What colour was the mill painted?",
                     "answers": [_span(mill, "green")], "is_impossible": False},
                ],
            },
            {
                "context": "Nobody remembers the name of the second hamlet.",
                "qas": [
                    {"id": "h-name", "question": "What was the second hamlet called?",
                     "answers": [], "plausible_answers": [], "is_impossible": True},
                    {"id": "h-size", "question": "How large was the second hamlet?",
                     "answers": [], "plausible_answers": [{"text": "second hamlet",
                     "answer_start": 33}], "is_impossible": True},
                ],
            },
        ],
    }  # fmt: skip
    return {
        "version": "v2.0",
        "data": [
            {"title": "Towns_North", "paragraphs": towns[:3]},
            {"title": "Towns_South", "paragraphs": towns[3:]},
            hamlets,
            islet,
        ],
    }


@pytest.fixture(scope="session")
def squad_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("squad") / "mini-v2.0.json"
    path.write_text(json.dumps(squad_mini(), indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random T5 written by the product's own builder (session-scoped)."""
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "t5", "t5", seed=0)
