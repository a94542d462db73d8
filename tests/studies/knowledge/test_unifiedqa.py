"""MMLU questions in UnifiedQA's input format (the seed's appendix A.3): the encoding
reproduces UnifiedQA's ``.tsv`` lines byte for byte, the study's two templates add
``tasks.py``'s normalisation and, for ``unifiedqa-eos``, the end marker ``</s>``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from steadyeval.conditions import Condition, Template, expand
from steadyeval.items import Item, load_mmlu
from steadyeval.studies.knowledge import (
    TEMPLATES,
    UNIFIEDQA_ENCODING,
    UNIFIEDQA_FORMAT,
    UNIFIEDQA_MARKER,
    KnowledgeConfig,
    knowledge_conditions,
)


def _render(item: Item, template: Template) -> str:
    cond = Condition(name="c", template=template, format=UNIFIEDQA_FORMAT, scoring="option-logprob")
    (trial,) = expand([item], [cond]).trials
    return trial.prompt


def _reference_normalise(text: str) -> str:
    """UnifiedQA's ``tasks.py`` ``normalize_text``: tf.strings.lower (ASCII letters only),
    then ``regex_replace(text, "'(.*)'", r"\\1")`` (RE2's ``.`` and Python's agree on a
    text without newlines)."""
    lowered = "".join(c.lower() if c.isascii() else c for c in text)
    return re.sub(r"'(.*)'", r"\1", lowered)


ITEM = Item(
    id="x/test/0",
    question="What's the 'Ü'\tset\nof É?",
    options=("O'ne", "Two\nlines", "ÄB", "D"),
    gold_options=(1,),
    metadata={"subject": "x"},
)


def test_encoding_normalisation_and_marker_on_a_constructed_item() -> None:
    encoded = "What's the 'Ü' set of É? \\n (a) O'ne (b) Two lines (c) ÄB (d) D"
    assert _render(ITEM, UNIFIEDQA_ENCODING) == encoded
    # ASCII letters lowered (Ü, É, Ä kept); the first and the last quote dropped
    normalised = "whats the 'Ü' set of É? \\n (a) one (b) two lines (c) Äb (d) d"
    assert _render(ITEM, TEMPLATES["unifiedqa"]) == normalised == _reference_normalise(encoded)
    assert _render(ITEM, TEMPLATES["unifiedqa-eos"]) == normalised + "</s>"
    assert UNIFIEDQA_MARKER == "</s>"


def test_one_quote_is_kept() -> None:
    item = Item(id="y", question="Newton's law", options=("a", "b"), gold_options=(0,))
    assert _render(item, TEMPLATES["unifiedqa"]) == "newton's law \\n (a) a (b) b"


def test_the_study_asks_unifiedqa_with_its_option_format() -> None:
    config = KnowledgeConfig(
        models=["scripted:x"],
        data="unused",
        shots=[0],
        templates=["reference", "unifiedqa", "unifiedqa-eos"],
        scorings=["option-logprob"],
    )
    conds = {c.name: c for c in knowledge_conditions(config)}
    assert list(conds) == [
        "option-reference-0shot",
        "option-unifiedqa-0shot",
        "option-unifiedqa-eos-0shot",
    ]
    assert conds["option-unifiedqa-eos-0shot"].format == UNIFIEDQA_FORMAT
    assert conds["option-reference-0shot"].format.option_style == "{label}. {text}"
    # Letter scoring skips UnifiedQA's templates (it answers with the option's text, and its
    # input has no "Answer:"); with only those templates it is an error.
    both = config.model_copy(update={"scorings": ["letter-logprob", "option-logprob"]})
    names = [c.name for c in knowledge_conditions(both)]
    assert "letter-reference-0shot" in names
    assert not any(n.startswith("letter-unifiedqa") for n in names)
    with pytest.raises(ValidationError, match="add option-logprob to the scorings"):
        KnowledgeConfig(
            models=["scripted:x"], data="unused", templates=["unifiedqa", "unifiedqa-eos"],
            scorings=["letter-logprob"],
        )  # fmt: skip
    with pytest.raises(ValidationError, match="template unifiedqa is scored by option text"):
        KnowledgeConfig(
            models=["scripted:x"], data="unused", templates=["unifiedqa"],
            scorings=["letter-logprob"],
        )  # fmt: skip


def _tsv_lines(shared: Path) -> list[str]:
    path = shared / "unifiedqa" / "mmlu_dev.unifiedqa_mc.tsv"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    text = path.read_bytes().decode("utf-8")  # some questions hold a bare \r
    assert text.endswith("\n")
    return text[:-1].split("\n")


def test_rendering_reproduces_unifiedqa_tsv_byte_for_byte(shared_data: Path) -> None:
    """Every MMLU dev question, rendered, is its line of the shared UnifiedQA encoding (285
    lines: subjects in sorted order, rows in file order; input, tab, the answer's text)."""
    lines = _tsv_lines(shared_data)
    data = load_mmlu(shared_data / "mmlu" / "hendrycks_format")
    dev = sorted(data.dev, key=lambda it: (it.metadata["subject"], int(it.id.rsplit("/", 1)[1])))
    assert len(dev) == len(lines) == 285
    for item, line in zip(dev, lines, strict=True):
        target = item.options[item.gold_options[0]].replace("\t", " ").replace("\n", " ")
        rendered = _render(item, UNIFIEDQA_ENCODING)
        assert f"{rendered}\t{target}".encode() == line.encode(), item.id
        # the study's templates: tasks.py's normalisation of that input, with or without </s>
        expected = _reference_normalise(line.split("\t")[0])
        assert _render(item, TEMPLATES["unifiedqa"]) == expected, item.id
        assert _render(item, TEMPLATES["unifiedqa-eos"]) == expected + "</s>", item.id
