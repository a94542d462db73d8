"""Probe data: the three layouts, aliases, vocabularies, and located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steadyeval._errors import ConfigError, DataError
from steadyeval.studies.sensitivity import load_aliases, load_probes, load_vocab

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "probes-study"


def _jsonl(path: Path, rows: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_generic_example() -> None:
    data = load_probes(EXAMPLE)
    assert data.layout == "generic"
    assert [r.id for r in data.relations] == [
        "capital",
        "continent",
        "language",
        "currency",
        "river",
    ]
    assert all(len(r.templates) == 3 for r in data.relations)
    peru = [f for f in data.facts if f.subject == "Peru"]
    assert [f.object for f in peru] == ["America", "South America"]
    germany = next(f for f in data.facts if f.subject == "Germany")
    assert germany.aliases == ("the Federal Republic of Germany", "Deutschland")


def test_lama_layout(tmp_path: Path) -> None:
    _jsonl(
        tmp_path / "relations.jsonl",
        [
            {"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth"},
            {"relation": "P19-cp", "template": "[X] was born in [Y], in [Y]."},  # no facts: skipped
        ],
    )
    _jsonl(
        tmp_path / "TREx" / "P19.jsonl",
        [
            {
                "sub_label": "Dante",
                "obj_label": "Florence",
                "sub_uri": "Q1067",
                "obj_uri": "Q2044",
                "evidences": [],
            },
            {"sub_label": "Dante", "obj_label": "Florence", "sub_uri": "Q1067", "obj_uri": "Q2044"},
        ],
    )
    data = load_probes(tmp_path)
    assert data.layout == "lama"
    assert [r.id for r in data.relations] == ["P19"]
    assert len(data.facts) == 1 and data.facts[0].subject_uri == "Q1067"
    assert any("repeated" in n for n in data.notes)
    assert any("P19-cp" in n for n in data.notes)
    with pytest.raises(ConfigError, match="LPAQA layout only"):
        load_probes(tmp_path, prompt_set="mine")


def test_lpaqa_layout_puts_the_original_first(tmp_path: Path) -> None:
    manual = tmp_path / "prompt" / "manual_paraphrase"
    manual.mkdir(parents=True)
    (manual / "P19.txt").write_text("[X] was born in [Y] .\n[X] is born in [Y] .\n")
    _jsonl(
        tmp_path / "prompt" / "mine" / "P19.jsonl",
        [
            {"template": "[X] returned to [Y] .", "weight": 0.3},
            {"template": "[X] was born in [Y] .", "weight": 0.1},
        ],
    )
    _jsonl(
        tmp_path / "prompt" / "paraphrase" / "P19.jsonl",
        [
            {"template": "[X] came from [Y] .", "weight": 0.5},
        ],
    )
    _jsonl(tmp_path / "TREx_train" / "P19.jsonl", [{"sub_label": "A", "obj_label": "B"}])
    assert load_probes(tmp_path).relations[0].templates == (
        "[X] was born in [Y] .",
        "[X] is born in [Y] .",
    )
    mine = load_probes(tmp_path, prompt_set="mine").relations[0]
    assert mine.templates == ("[X] was born in [Y] .", "[X] returned to [Y] .")
    assert mine.weights == (0.1, 0.3) and not mine.original_added
    para = load_probes(tmp_path, prompt_set="paraphrase").relations[0]
    assert para.templates == ("[X] was born in [Y] .", "[X] came from [Y] .")
    assert para.original_added and para.weights == (0.0, 0.5)


def test_located_errors(tmp_path: Path) -> None:
    _jsonl(tmp_path / "relations.jsonl", [{"relation": "r", "templates": ["no slots here"]}])
    _jsonl(tmp_path / "facts.jsonl", [{"relation": "r", "subject": "s", "object": "o"}])
    with pytest.raises(DataError) as err:
        load_probes(tmp_path)
    assert "relations.jsonl, line 1, field 'templates[0]'" in str(err.value)
    _jsonl(tmp_path / "relations.jsonl", [{"relation": "r", "templates": ["[X] is [Y] ."]}])
    (tmp_path / "facts.jsonl").write_text('{"relation": "r", "subject": "s"}\n')
    with pytest.raises(DataError, match=r"facts.jsonl, line 1, field 'object'"):
        load_probes(tmp_path)
    (tmp_path / "facts.jsonl").write_text("\n{not json\n")
    with pytest.raises(DataError, match="line 2: invalid JSON"):
        load_probes(tmp_path)
    with pytest.raises(DataError, match="not a directory"):
        load_probes(tmp_path / "relations.jsonl")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="no known probe layout"):
        load_probes(empty)


def test_aliases_and_vocab_files(tmp_path: Path) -> None:
    path = tmp_path / "aliases.jsonl"
    _jsonl(
        path,
        [
            {"subject": "United States", "aliases": ["USA", "America"]},
            {"uri": "Q30", "aliases": ["the States"]},
        ],
    )
    assert load_aliases(path) == {"United States": ("USA", "America"), "Q30": ("the States",)}
    _jsonl(path, [{"subject": "X", "aliases": []}])
    with pytest.raises(DataError, match="line 1, field 'aliases'"):
        load_aliases(path)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("Paris\n\nRome\n")
    assert load_vocab(vocab) == frozenset({"Paris", "Rome"})


def test_shared_lpaqa_and_s_test(shared_data: Path) -> None:
    lama = shared_data / "lama"
    data = load_probes(lama / "lpaqa", prompt_set="manual_paraphrase")
    assert len(data.relations) == 41
    assert len(data.facts) == 38896
    assert all(15 <= len(r.templates) <= 30 for r in data.relations)
    p19 = next(r for r in data.relations if r.id == "P19")
    assert p19.templates[0] == "[X] was born in [Y] ."
    mine = load_probes(lama / "lpaqa", prompt_set="mine")
    assert all(
        r.templates[0] == next(x for x in data.relations if x.id == r.id).templates[0]
        for r in mine.relations
    )
    s_test = load_probes(lama / "s_test" / "data")
    assert s_test.layout == "lama" and len(s_test.relations) == 5
