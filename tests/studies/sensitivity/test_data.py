"""Probe data: the three layouts, aliases, vocabularies, and located errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from steadyeval._errors import ConfigError, DataError
from steadyeval.studies.sensitivity import (
    load_aliases,
    load_probes,
    load_vocab,
    wikidata_aliases,
)
from steadyeval.studies.sensitivity._stopwords import load_stop_words

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


# Five entities as they appear in a Wikidata JSON dump (latest-all.json): one JSON array,
# an entity per line, trailing commas; only the fields the builder reads, plus noise.
WIKIDATA_EXCERPT = """[
{"type": "item", "id": "Q30", "labels": {"en": {"language": "en", "value": "United States of America"}, "fr": {"language": "fr", "value": "\\u00c9tats-Unis"}}, "aliases": {"en": [{"language": "en", "value": "USA"}, {"language": "en", "value": "America"}, {"language": "en", "value": "USA"}], "de": [{"language": "de", "value": "Amerika"}]}, "claims": {}},
{"type": "item", "id": "Q90", "labels": {"en": {"language": "en", "value": "Paris"}}, "aliases": {"en": [{"language": "en", "value": "City of Light"}]}},
{"type": "item", "id": "Q1299", "labels": {"en": {"language": "en", "value": "The Beatles"}}, "aliases": {}},
{"type": "item", "id": "Q183", "labels": {"de": {"language": "de", "value": "Deutschland"}}, "aliases": {"de": [{"language": "de", "value": "BRD"}]}},
{"type": "item", "id": "Q1", "labels": {"en": {"language": "en", "value": "universe"}}, "aliases": {"en": [{"language": "en", "value": "cosmos"}, {"language": "en", "value": "Universe"}]}}
]
"""


def test_wikidata_aliases_from_dump_lines(tmp_path: Path) -> None:
    dump = tmp_path / "excerpt.json"
    dump.write_text(WIKIDATA_EXCERPT)
    names = wikidata_aliases(dump)
    # English label first, then English aliases in dump order, repeats dropped; Q183 has no
    # English name and is left out; other languages are ignored.
    assert names == {
        "Q30": ["United States of America", "USA", "America"],
        "Q90": ["Paris", "City of Light"],
        "Q1299": ["The Beatles"],
        "Q1": ["universe", "cosmos", "Universe"],
    }
    assert wikidata_aliases(dump, language="de") == {
        "Q30": ["Amerika"],
        "Q183": ["Deutschland", "BRD"],
    }
    assert wikidata_aliases(WIKIDATA_EXCERPT.splitlines(), keep={"Q90", "Q183"}) == {
        "Q90": ["Paris", "City of Light"]
    }
    gz = tmp_path / "excerpt.json.gz"
    gz.write_bytes(gzip.compress(WIKIDATA_EXCERPT.encode()))
    assert wikidata_aliases(gz) == names
    # The map it builds is an --aliases file.
    alias_file = tmp_path / "aliases.json"
    alias_file.write_text(json.dumps(names))
    assert load_aliases(alias_file)["Q30"] == ("United States of America", "USA", "America")
    with pytest.raises(DataError, match="line 2: invalid JSON"):
        wikidata_aliases(["[", "{not json", "]"])
    with pytest.raises(DataError, match=r"line 1, field .labels\.en."):
        wikidata_aliases(['{"id": "Q5", "labels": {"en": "human"}}'])


def test_alias_map_file(tmp_path: Path) -> None:
    path = tmp_path / "aliases.json"
    path.write_text(json.dumps({"Q30": ["USA", "America"], "Japan": ["Nippon"]}, indent=2))
    assert load_aliases(path) == {"Q30": ("USA", "America"), "Japan": ("Nippon",)}
    path.write_text(json.dumps({"Q30": "USA"}))
    with pytest.raises(DataError, match="field 'Q30'"):
        load_aliases(path)
    path.write_text(json.dumps({"Q30": []}))
    with pytest.raises(DataError, match="empty key or list"):
        load_aliases(path)
    # A single JSONL record is still read as JSONL.
    path.write_text(json.dumps({"uri": "Q30", "aliases": ["USA"]}))
    assert load_aliases(path) == {"Q30": ("USA",)}


def test_stop_word_lists(tmp_path: Path) -> None:
    words = load_stop_words("default")
    # NLTK's pre-2018 English list (153 words) and nine tokenizer pieces, as the authors'.
    assert len(words) == len(set(words)) == 162
    assert {"the", "a", "of", "wouldn", "'s", "``"} <= set(words)
    assert "The" not in words and "don't" not in words
    assert load_stop_words("none") == ()
    path = tmp_path / "stop.txt"
    path.write_text("the\n\nof\nthe\n")
    assert load_stop_words(str(path)) == ("the", "of")
    path.write_text("\n")
    with pytest.raises(DataError, match="no stop words"):
        load_stop_words(str(path))
    with pytest.raises(ConfigError, match="neither 'default', 'none' nor a file"):
        load_stop_words(str(tmp_path / "missing.txt"))
