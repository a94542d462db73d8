"""Fuzz targets: the few-shot study (``steadyeval study fewshot``): space files (YAML with
method sections, per-task mappings, aliases and odd numbers), FewGLUE task folders
(``TASK/train.jsonl`` and ``unlabeled.jsonl`` rows) and the study's numeric flags.

Every call is a dry run with the scripted model and in-context learning (no training, no
model load): the design is built (data read, grid crossed, splits drawn) and planned. A
fine-tuning method on the scripted model must be refused by the dry run as by the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz._hostile import dump, hostile_value
from tests.fuzz._registry import check_cli, target

#: Few labelled RTE rows (the design crosses every split with every setting: keep it small).
RTE = "".join(
    json.dumps({"premise": f"A cat {i}.", "hypothesis": f"A pet {i}.", "idx": i,
                "label": "entailment" if i % 2 else "not_entailment"}) + "\n"
    for i in range(10)
)  # fmt: skip
_BASE = ["study", "fewshot", "--model", "scripted:m", "--task", "RTE", "--labelled", "rte.jsonl",
         "--test-from-labelled", "2", "--k", "2", "--k-values", "2", "--strategy", "cv"]  # fmt: skip

_numbers = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([0, -1, 2**31, 2**32, 2**63, 10**30, 10**400, 1e30, 1e-5, 2e-5, 0.5]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_names = st.sampled_from(
    ["pattern", "verbalizer", "shots", "shot_seed", "normalization", "learning_rate", "steps",
     "batch_size", "max_length", "generations", "lr", "shotz", "", "\ud800"]
)  # fmt: skip
_sections = st.sampled_from(
    ["icl", "ICL", "pet", "ipet", "ipet/cross-split", "adapet", "ilc", "pett", "x+y", "cls"]
)
_tasks = st.sampled_from(["RTE", "rte", "CB", "COPA", "RTEE", "Bogus", "multirc"])
_values = st.one_of(
    _numbers,
    st.sampled_from(["question", "based-on", "none", "token", "char", "x" * 300, "\ud800"]),
    st.lists(st.one_of(_numbers, st.sampled_from(["question", "none", "token"])), max_size=4),
)
_value = st.one_of(_values, _values, _values, st.dictionaries(_tasks, _values, max_size=3))
_document = st.dictionaries(
    st.one_of(_names, _sections),
    st.one_of(_value, st.dictionaries(_names, _value, max_size=3)),
    max_size=4,
)

#: Hand-written YAML: alias bombs inside a section, big grids, repeated keys, odd scalars.
_BOMB = (
    "icl:\n  a: &a [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
    "  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  shots: *e\n"
)
_RAW = [
    _BOMB,
    "icl:\n"
    + "".join(f"  {n}: [{', '.join(map(str, range(40)))}]\n" for n in ("shots", "shot_seed")),
    "shots: [0]\nshots: [1]\n",
    "shots: [1e30]\n",
    "shots: [" + "9" * 400 + "]\n",
    "icl: {shot_seed: [-1]}\n",
    "pet: {learning_rate: [.inf, .nan]}\n",
    "shots: !!python/object/apply:os.system ['true']\n",
    "shots: &x [*x]\n",
    "shots: " + "[" * 200 + "]" * 200 + "\n",
    "pattern: {RTE: [question], RTEE: [based-on]}\n",
    "ilc: {shots: [1]}\n",
    "ICL: {shots: [0, 1]}\n",
    "shots: [0, 1]\nicl: {normalization: [none, token]}\n",
]
#: Spaces ICL accepts (some with odd but valid spellings), so that many examples succeed.
_valid = st.fixed_dictionaries(
    {},
    optional={
        "shots": st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True),
        "pattern": st.one_of(
            st.just(["question"]), st.just({"RTE": ["based-on"], "CB": ["question"]})
        ),
        "normalization": st.sampled_from([["none"], ["token", "char"], "none"]),
        "learning_rate": st.just([1e-5]),
        "icl": st.fixed_dictionaries({}, optional={"shot_seed": st.integers(0, 2**32 - 1)}),
        "pet": st.fixed_dictionaries({}, optional={"steps": st.integers(1, 50)}),
    },
)
_space = st.one_of(
    _valid.map(lambda d: yaml.safe_dump(d).encode()),
    _valid.map(lambda d: yaml.safe_dump(d).encode()),
    _document.map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
    _document.map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
    st.sampled_from(_RAW).map(str.encode),
    st.binary(max_size=60),
)
_methods = st.sampled_from(["icl", "icl", "icl", "pet", "cls", "ipet"])


@target(
    "fewshot-space",
    "steadyeval study fewshot --space FILE --dry-run",
    st.tuples(_space, _methods),
)
def fewshot_space(example: tuple[bytes, str], folder: Path) -> None:
    raw, method = example
    (folder / "rte.jsonl").write_text(RTE)
    (folder / "space.yaml").write_bytes(raw)
    # iPET reads unlabelled examples: the test inputs here (rte.jsonl has no unlabeled.jsonl).
    semi = ["--transductive"] if method == "ipet" else []
    check_cli([*_BASE, "--space", "space.yaml", "--method", method, *semi, "--dry-run"])


# -- FewGLUE task folders ------------------------------------------------------------------------
_FIELDS: dict[str, dict[str, Any]] = {
    "RTE": {"premise": "A cat.", "hypothesis": "A pet.", "label": "entailment"},
    "CB": {"premise": "A cat.", "hypothesis": "A pet.", "label": "neutral"},
    "BoolQ": {"passage": "Cats purr.", "question": "do cats purr", "label": True},
    "COPA": {"premise": "It rained.", "choice1": "Wet.", "choice2": "Dry.",
             "question": "effect", "label": 0},
    "WiC": {"word": "bank", "sentence1": "A bank.", "sentence2": "The bank.", "start1": 2,
            "end1": 6, "start2": 4, "end2": 8, "label": False},
    "WSC": {"text": "Anna saw Bob and she waved.", "label": True,
            "target": {"span1_text": "Anna", "span1_index": 0, "span2_text": "she",
                       "span2_index": 4}},
    "MultiRC": {"passage": {"text": "Cats purr.", "questions": [
        {"question": "Do cats purr?", "idx": 0,
         "answers": [{"text": "Yes", "idx": 0, "label": 1}, {"text": "No", "idx": 1, "label": 0}]}]}},
}  # fmt: skip
_paths = st.sampled_from(
    ["premise", "hypothesis", "label", "idx", "passage", "question", "choice1", "target",
     "word", "start1", "end1", "text", "sentence1", "*"]
)  # fmt: skip


def _rows(task: str, n: int, edits: list[tuple[int, str, Any]]) -> list[Any]:
    rows: list[Any] = [{**_FIELDS[task], "idx": i} for i in range(n)]
    for row, key, value in edits:
        if rows and isinstance(rows[row % len(rows)], dict):
            target_row = rows[row % len(rows)]
            target_row[key if key != "*" else next(iter(target_row))] = value
    return rows


_edits = st.lists(st.tuples(st.integers(0, 9), _paths, hostile_value), max_size=2)
_folder = st.tuples(
    st.sampled_from(sorted(_FIELDS)),
    st.integers(0, 10),
    _edits,
    st.one_of(st.none(), _edits, st.binary(max_size=40)),
    st.sampled_from(["icl", "icl", "ipet"]),
)


@target(
    "fewshot-fewglue",
    "steadyeval study fewshot --labelled FOLDER (FewGLUE TASK/train.jsonl) --dry-run",
    _folder,
)
def fewshot_fewglue(example: tuple[str, int, Any, Any, str], folder: Path) -> None:
    task, n, edits, unlabelled, method = example
    root = folder / "FewGLUE" / task
    root.mkdir(parents=True)
    rows = _rows(task, n, edits)
    (root / "train.jsonl").write_bytes(b"\n".join(dump(r, depth=101) for r in rows))
    if isinstance(unlabelled, bytes):
        (root / "unlabeled.jsonl").write_bytes(unlabelled)
    elif unlabelled is not None:
        rows = _rows(task, 3, unlabelled)
        (root / "unlabeled.jsonl").write_bytes(b"\n".join(dump(r, depth=101) for r in rows))
    check_cli(
        ["study", "fewshot", "--model", "scripted:m", "--task", task, "--labelled", "FewGLUE",
         "--test-from-labelled", "2", "--k", "2", "--k-values", "2", "--strategy", "multisplit",
         "--method", method, *(["--transductive"] if method == "ipet" else []), "--dry-run"]
    )  # fmt: skip


# -- numeric flags -------------------------------------------------------------------------------
_number_text = st.one_of(
    st.integers(-3, 12).map(str),
    st.sampled_from(
        ["-1", "0", "1e12", "1" + "0" * 400, "inf", "nan", "4294967296", "0,-2", "2,,4", "2,x",
         "1.5", "", " 3"]
    ),
    st.text(max_size=6),
)  # fmt: skip
_flags = st.sampled_from(
    ["--k", "--k-values", "--seed", "--ratio", "--final-seeds", "--threads",
     "--test-from-labelled", "--device", "--split-sizes", "--checkpoints", "--unlabelled"]
)  # fmt: skip


@target(
    "fewshot-flags",
    "steadyeval study fewshot --k/--k-values/--seed/... --dry-run",
    st.lists(st.tuples(_flags, _number_text), min_size=1, max_size=3),
)
def fewshot_flags(flags: list[tuple[str, str]], folder: Path) -> None:
    (folder / "rte.jsonl").write_text(RTE)
    extra = [part for pair in flags for part in pair]
    check_cli([*_BASE, *extra, "--dry-run"])
