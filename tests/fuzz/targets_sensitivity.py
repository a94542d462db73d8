"""Fuzz targets: the sensitivity study's inputs (``steadyeval study sensitivity``): probe
folders in the three layouts (generic ``relations.jsonl`` + ``facts.jsonl``, LAMA
``relations.jsonl`` + ``TREx/<relation>.jsonl``, LPAQA ``prompt/<set>/<relation>.txt|.jsonl``
+ ``TREx_train/``), the list files (``--aliases``, ``--vocab``, ``--stop-words``), a generic
task folder (``items.jsonl`` + ``templates.jsonl``) and the study's numeric flags.

Every call is a dry run with the scripted model (the design is built and planned; nothing is
scored). Rows start valid and get hostile values at some of their fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.fuzz._hostile import apply_edits, dump, edits, hostile_value
from tests.fuzz._registry import check_cli, target

_RELATIONS = [
    {"relation": "P19", "templates": ["[X] was born in [Y] .", "[X] is from [Y] ."],
     "weights": [1, 2]},
    {"relation": "P36", "template": "The capital of [X] is [Y] ."},
]  # fmt: skip
_FACTS = [
    {"relation": "P19", "subject": "Dante", "object": "Florence",
     "subject_aliases": ["Dante Alighieri"]},
    {"relation": "P19", "subject": "Verdi", "object": "Busseto"},
    {"relation": "P36", "subject": "France", "object": "Paris", "subject_uri": "Q142"},
]  # fmt: skip
_TREX = [
    {"sub_label": "Dante", "obj_label": "Florence", "sub_uri": "Q1067", "obj_uri": "Q2044"},
    {"sub_label": "Verdi", "obj_label": "Busseto", "sub_aliases": ["Giuseppe Verdi"]},
]
_TEMPLATE_LINES = ["[X] was born in [Y] .", "[X] is from [Y] .", "", "[Y] [X]", "no slots",
                   "[X] [Y] [Y]", "{{ 7*7 }} [X] [Y]", "\ud800 [X] [Y]", "[X] " + "x" * 1200 + " [Y]"]  # fmt: skip

_rel_paths = [("*", "relation"), ("*", "templates"), ("*", "templates", "*"), ("*", "template"),
              ("*", "weights"), ("*", "weights", "*"), ("*",)]  # fmt: skip
_fact_paths = [("*", "relation"), ("*", "subject"), ("*", "object"), ("*", "subject_aliases"),
               ("*", "subject_aliases", "*"), ("*", "subject_uri"), ("*",)]  # fmt: skip
_trex_paths = [("*", "sub_label"), ("*", "obj_label"), ("*", "sub_uri"), ("*", "sub_aliases"),
               ("*",)]  # fmt: skip


def _jsonl(rows: Any, depth: int) -> bytes:
    if not isinstance(rows, list):
        return dump(rows, depth=depth)
    return b"\n".join(dump(r, depth=depth) for r in rows) + b"\n"


_layout = st.sampled_from(["generic", "generic", "lama", "lpaqa"])
_probe_example = st.tuples(
    _layout,
    st.just([]) | edits(_rel_paths),  # valid rows half of the time
    st.just([]) | edits(_fact_paths + _trex_paths),
    st.lists(st.sampled_from(_TEMPLATE_LINES), max_size=4),
    st.sampled_from([101, 100_000]),
    st.none() | st.none() | st.binary(max_size=40),
)


def _write_probes(root: Path, example: tuple[Any, ...]) -> None:
    layout, rel_edits, fact_edits, lines, depth, raw = example
    root.mkdir()
    relations = apply_edits(_RELATIONS, rel_edits)
    if layout == "generic":
        (root / "relations.jsonl").write_bytes(_jsonl(relations, depth))
        facts = raw if raw is not None else _jsonl(apply_edits(_FACTS, fact_edits), depth)
        (root / "facts.jsonl").write_bytes(facts)
    elif layout == "lama":
        (root / "relations.jsonl").write_bytes(_jsonl(relations, depth))
        (root / "TREx").mkdir()
        trex = raw if raw is not None else _jsonl(apply_edits(_TREX, fact_edits), depth)
        (root / "TREx" / "P19.jsonl").write_bytes(trex)
        (root / "TREx" / "P36.jsonl").write_bytes(_jsonl(_TREX[:1], depth))
    else:
        prompts = root / "prompt" / "manual_paraphrase"
        prompts.mkdir(parents=True)
        text = "\n".join(["[X] was born in [Y] .", *lines]).encode("utf-8", "surrogatepass")
        (prompts / "P19.txt").write_bytes(raw if raw is not None else text)
        (prompts / "P36.jsonl").write_bytes(
            _jsonl([{"template": "[X] is in [Y] .", "weight": 0.5}, *relations[1:]], depth)
        )
        (root / "TREx_train").mkdir()
        (root / "TREx_train" / "P19.jsonl").write_bytes(
            _jsonl(apply_edits(_TREX, fact_edits), depth)
        )
        (root / "TREx_train" / "P36.jsonl").write_bytes(_jsonl(_TREX[1:], depth))


@target(
    "sensitivity-probes",
    "steadyeval study sensitivity --data PROBE_FOLDER (generic, LAMA, LPAQA) --dry-run",
    _probe_example,
)
def sensitivity_probes(example: tuple[Any, ...], folder: Path) -> None:
    _write_probes(folder / "probes", example)
    check_cli(["study", "sensitivity", "--model", "scripted:m", "--data", "probes", "--dry-run"])


# -- aliases, vocabularies, stop words -----------------------------------------------------------
_names = st.lists(st.sampled_from(["Dante", "Paris", "Florence", "the", "", "é", "\ud800"]))
_alias_doc = st.one_of(
    st.just(b'{"Dante": ["Dante Alighieri", "Durante"], "Q142": ["French Republic"]}'),
    st.dictionaries(
        st.sampled_from(["Dante", "Q142", "Verdi", "", "x" * 300]), _names, max_size=3
    ).map(lambda d: dump(d)),
    st.lists(
        st.fixed_dictionaries(
            {"subject": st.sampled_from(["Dante", "Verdi", "France"])},
            optional={"aliases": _names, "uri": st.just("Q142")},
        ),
        max_size=3,
    ).map(lambda rows: _jsonl(rows, 101)),
    hostile_value.map(lambda v: dump(v, depth=100_000)),
    st.binary(max_size=60),
)
_word_list = st.one_of(
    st.just(b"Florence\nParis\nBusseto\nthe\n"),
    _names.map(lambda ws: "\n".join(ws).encode("utf-8", "surrogatepass")),
    st.binary(max_size=60),
    st.sampled_from([b"", b"\n\n", b"Paris\r\nFlorence\r\n", b"\xff\xfe"]),
)
_lists = st.fixed_dictionaries(
    {}, optional={"--aliases": _alias_doc, "--vocab": _word_list, "--stop-words": _word_list}
)
_GENERIC = [
    (_RELATIONS, "relations.jsonl"),
    (_FACTS, "facts.jsonl"),
]


@target(
    "sensitivity-lists",
    "steadyeval study sensitivity --aliases FILE --vocab FILE --stop-words FILE --dry-run",
    _lists,
)
def sensitivity_lists(files: dict[str, bytes], folder: Path) -> None:
    (folder / "probes").mkdir()
    for rows, name in _GENERIC:
        (folder / "probes" / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["study", "sensitivity", "--model", "scripted:m", "--data", "probes"]
    for flag, raw in files.items():
        name = flag.strip("-") + ".txt"
        (folder / name).write_bytes(raw)
        argv += [flag, name]
    check_cli([*argv, "--dry-run"])


# -- a generic task folder and the numeric flags -------------------------------------------------
_TEMPLATES = [
    {"name": "plain", "body": "Q: {{ question }}"},
    {"name": "short", "body": "{{ question }}", "answer": " {{ answer }}"},
]
_ITEMS = [{"id": f"q{i}", "question": f"Question {i}?", "answer": "yes"} for i in range(3)]
_template_paths = [("*", "name"), ("*", "body"), ("*", "answer"), ("*", "header"), ("*",),
                   ("*", "extra")]  # fmt: skip
_number_text = st.one_of(
    st.integers(-2, 30).map(str),
    st.sampled_from(["0", "-1", "1e12", "1" + "0" * 400, "nan", "all", "4294967296", "10001"]),
)
_flags = st.sampled_from(
    ["--subsets", "--subset-size", "--k-templates", "--k-names", "--max-names", "--seed",
     "--limit-per-relation", "--templates-per-relation", "--ddof"]
)  # fmt: skip
_task = st.tuples(
    edits(_template_paths),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.lists(st.tuples(_flags, _number_text), max_size=2),
    st.booleans(),
)


@target(
    "sensitivity-task",
    "steadyeval study sensitivity --data TASK (items.jsonl + templates.jsonl) and flags --dry-run",
    _task,
)
def sensitivity_task(example: tuple[Any, ...], folder: Path) -> None:
    template_edits, raw, flags, generic_task = example
    data = folder / "data"
    data.mkdir()
    if generic_task:
        (data / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _ITEMS))
        templates = raw if raw is not None else _jsonl(apply_edits(_TEMPLATES, template_edits), 101)
        (data / "templates.jsonl").write_bytes(templates)
    else:
        for rows, name in _GENERIC:
            (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    extra = [part for pair in flags for part in pair]
    check_cli(["study", "sensitivity", "--model", "scripted:m", "--data", "data", *extra,
               "--dry-run"])  # fmt: skip
