"""Fuzz targets: run configs and study configs (YAML files given to ``steadyeval run CONFIG``
and ``steadyeval study NAME CONFIG``), and the numeric options of ``run`` and the studies.

Documents mix valid configs with the edges of issue 37: aliases (bombs by count and by
length), wrong types where a list or mapping goes, numbers that are huge, negative, not
finite or not numbers, unknown keys, keys given twice, lone surrogates and text that is not
UTF-8. A config the dry run accepts is then run for real (with the scripted test model),
which must accept it too: the dry run refuses what the run refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz._registry import check_cli, target

ITEMS = "".join(
    json.dumps({"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b", "c"], "answer": i % 3})
    + "\n"
    for i in range(4)
)
SQUAD = Path(__file__).resolve().parents[2] / "examples" / "squad-mini.json"

_numbers = st.one_of(
    st.integers(-5, 50),
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**32, 2**63, -(2**63) - 1, 10**400, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_texts = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["", "qa", "mc", "free", "generate", "option-logprob", "\ud800", "{{ x }}"]),
)
_scalar = st.one_of(st.none(), st.booleans(), _numbers, _texts)
_any = st.recursive(
    _scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_texts, c, max_size=3),
    max_leaves=10,
)


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a plausible value, sometimes anything at all."""
    return st.one_of(values, values, values, values, values, values, _any)


def _spoiled(doc: st.SearchStrategy[dict[str, Any]], keys: list[str]) -> st.SearchStrategy[Any]:
    """Valid documents half the time; else one with a key set to anything (a known key of
    the wrong type or value, or an unknown key)."""
    bad = st.tuples(doc, st.sampled_from([*keys, "unknown"]), _any).map(
        lambda t: {**t[0], t[1]: t[2]}
    )
    return st.one_of(doc, bad)


_generation = _spoiled(
    st.fixed_dictionaries(
        {},
        optional={
            "max_new_tokens": st.integers(1, 64),
            "temperature": st.floats(0, 2),
            "top_p": st.floats(0.1, 1),
            "n_samples": st.integers(1, 3),
            "seed": st.integers(0, 10),
            "stop": st.lists(st.text(max_size=3), max_size=2),
        },
    ),
    ["max_new_tokens", "temperature", "top_p", "n_samples", "seed", "stop"],
)
_template = st.fixed_dictionaries(
    {
        "name": st.just("t"),
        "body": st.sampled_from(
            [
                "{{ question }}",
                "Q: {{",
                "{{ x }}",
                "{{ 'x' * 2000000000 }}",  # template bombs: memory, steps, output
                "{{ question|center(10000000000) }}",
                "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
                "{{ 7 ** 100000 }}",
            ]
        ),
    },
    optional={"answer": st.sampled_from([" {{ answer }}", "{% raw %}"])},
)
_CONDITION_KEYS = {
    "format": st.sampled_from(["mc", "free", "mc-nota"]),
    "scoring": st.sampled_from(["generate", "option-logprob", "letter-logprob"]),
    "template": st.one_of(st.just("qa"), _template),
    "option_order": st.sampled_from(["original", "shuffled", "rotated"]),
    "order_seed": st.integers(0, 5),
    "shots": st.fixed_dictionaries({"n": st.integers(0, 2)}),
    "generation": _generation,
    "top_k": st.integers(1, 5),
}
_condition = st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}, optional=_CONDITION_KEYS),
    _spoiled(
        st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}),
        ["name", *_CONDITION_KEYS],
    ),
)
_run_config = _spoiled(
    st.fixed_dictionaries(
        {"data": st.just("items.jsonl"), "models": st.just(["scripted:m"])},
        optional={
            "seed": st.integers(0, 100),
            "limit": st.integers(1, 5),
            "conditions": st.lists(
                _condition, min_size=1, max_size=3, unique_by=lambda c: repr(c.get("name"))
            ),
            "shot_pools": st.dictionaries(st.sampled_from(["dev"]), st.just("items.jsonl")),
            "columns": st.lists(st.sampled_from(["subject", "x"]), max_size=2, unique=True),
        },
    ),
    ["data", "models", "seed", "limit", "conditions", "shot_pools", "columns"],
)

#: Text that only a hand-written YAML file holds: aliases, bombs, odd scalars, repeated keys.
_RAW_TAILS = [
    "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
    'a: &a "' + "x" * 200_000 + '"\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n'
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
    "seed: 1" + "0" * 5000 + "\n",
    "seed: .inf\n",
    "limit: .nan\n",
    "seed: 1.0e+999\n",
    "seed: 2024-02-30\n",
    "seed: 1\nseed: 2\n",
    "conditions: &c [{name: a}]\nshot_pools: {dev: *c}\n",
    "x: &x [*x]\n",
    "conditions:\n" + "  - " * 120 + "a\n",
    "seed: !!python/object/apply:os.system ['true']\n",
    "seed: -3\n",
    "conditions: {name: a}\n",
    "conditions: [{name: a, template: {name: t, body: '" + "y" * 120_000 + "'}}]\n",
    "data: [items.jsonl]\n",
    "\t- bad indentation\n",
]


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")


_head = "data: items.jsonl\nmodels: [scripted:m]\n"
_run_yaml = st.one_of(
    _run_config.map(_yaml),
    _run_config.map(_yaml),
    st.sampled_from(_RAW_TAILS).map(lambda t: (_head + t).encode()),
    _any.map(_yaml),
    st.binary(max_size=80),
    st.binary(max_size=40).map(lambda b: _head.encode() + b),
)


@target("run-config", "steadyeval run CONFIG.yaml --dry-run", _run_yaml)
def run_config_yaml(raw: bytes, folder: Path) -> None:
    (folder / "items.jsonl").write_text(ITEMS)
    (folder / "run.yaml").write_bytes(raw)
    if check_cli(["run", "run.yaml", "--dry-run"]) == 0:  # what the dry run takes, the run takes
        assert check_cli(["run", "run.yaml", "--out", "out", "-q"]) == 0, "the run refused"


_study_keys: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "spread": {
        "n_formats": st.integers(2, 4),
        "grammar_seed": st.integers(0, 3),
        "method": st.sampled_from(["estimate", "search"]),
        "budget": st.integers(1, 20),
        "batch": st.integers(1, 6),
        "draws": st.integers(50, 100),
        "confidence": st.floats(0.5, 0.99),
        "sampler": st.sampled_from(["stratified", "adaptive"]),
        "seed": st.integers(0, 3),
        "limit": st.integers(1, 4),
        "formats": st.just("formats.json"),
    },
    "knowledge": {
        "subjects": st.sampled_from([["abstract_algebra"], "anatomy", ["anatomyy"], []]),
        "shots": st.lists(st.integers(0, 3), min_size=1, max_size=2),
        "split": st.sampled_from(["test", "val"]),
        "limit_per_subject": st.integers(1, 3),
        "templates": st.sampled_from([["reference"], ["single-space"], ["x"]]),
        "seed": st.integers(0, 3),
        "rotations": st.booleans(),
    },
    "formats": {
        "answerable": st.integers(0, 3),
        "unanswerable": st.integers(0, 3),
        "seed": st.integers(0, 3),
        "orders": st.integers(0, 2),
        "max_new_tokens": st.integers(1, 8),
        "limit": st.integers(1, 3),
        "sampling": st.fixed_dictionaries({"temperature": _maybe(st.floats(0.1, 2))}),
        "escapes": st.lists(st.text(max_size=5), max_size=2),
    },
}
_DATA = {"spread": "items.jsonl", "knowledge": "mmlu", "formats": str(SQUAD)}
#: Accepted study configs run for real per study and process (the rest only as dry runs).
MAX_REAL_RUNS = 4
_REAL_RUNS = dict.fromkeys(_DATA, 0)


def _study_config(name: str) -> st.SearchStrategy[tuple[str, bytes]]:
    keys = _study_keys[name]
    fixed = {"data": st.just(_DATA[name]), "models": st.just(["scripted:m"])}
    if name == "spread":  # the default 100 formats need more cells than 4 items have
        fixed["n_formats"] = keys["n_formats"]
    optional = {k: v for k, v in keys.items() if k not in fixed}
    doc = _spoiled(st.fixed_dictionaries(fixed, optional=optional), ["data", "models", *keys])
    raw = st.one_of(
        doc.map(_yaml),
        doc.map(_yaml),
        st.sampled_from(_RAW_TAILS).map(
            lambda t: (f"data: {_DATA[name]}\nmodels: [scripted:m]\n" + t).encode()
        ),
        _any.map(_yaml),
    )
    return raw.map(lambda r: (name, r))


def _write_mmlu(root: Path) -> None:
    for split, rows in (("dev", "Q?,a,b,c,d,A\n"), ("test", "Q1?,a,b,c,d,B\nQ2?,a,b,c,d,C\n")):
        (root / split).mkdir(parents=True)
        (root / split / f"abstract_algebra_{split}.csv").write_text(rows)


_studies = st.one_of(*(_study_config(n) for n in _study_keys))


@target("study-config", "steadyeval study NAME CONFIG.yaml --dry-run", _studies)
def study_config_yaml(example: tuple[str, bytes], folder: Path) -> None:
    name, raw = example
    (folder / "items.jsonl").write_text(ITEMS)
    (folder / "formats.json").write_text(json.dumps(["{question}\n{choices}\nAnswer:"] * 3))
    _write_mmlu(folder / "mmlu")
    (folder / "study.yaml").write_bytes(raw)
    accepted = check_cli(["study", name, "study.yaml", "--dry-run"]) == 0
    if accepted and _REAL_RUNS[name] < MAX_REAL_RUNS:  # a study's run costs seconds: a few
        _REAL_RUNS[name] += 1
        assert check_cli(["study", name, "study.yaml", "--out", "out", "-q"]) == 0, "run refused"


_number_text = st.one_of(
    st.integers().map(str),
    st.sampled_from(
        ["-1", "0", "1e12", "1000000000000", "1" + "0" * 400, "inf", "-inf", "nan", "NaN", "1.5"]
    ),
    st.sampled_from(["4294967296", "9223372036854775808", "-0", " 3", "0x10", "１２"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)
_COMMANDS: list[tuple[list[str], list[str]]] = [
    (["run", "--model", "scripted:m", "--data", "items.jsonl"], ["--seed", "--limit", "--workers"]),
    (
        ["study", "spread", "--model", "scripted:m", "--data", "items.jsonl", "--n-formats", "3"],
        [
            "--seed",
            "--limit",
            "--draws",
            "--budget",
            "--batch",
            "--n-formats",
            "--grammar-seed",
            "--confidence",
            "--max-new-tokens",
        ],
    ),
    (
        ["study", "knowledge", "--model", "scripted:m", "--data", "mmlu"],
        ["--seed", "--limit-per-subject", "--shots"],
    ),
    (
        ["study", "formats", "--model", "scripted:m", "--data", str(SQUAD), "--answerable", "2"],
        [
            "--seed",
            "--limit",
            "--orders",
            "--max-new-tokens",
            "--unanswerable",
            "--temperature",
            "--determinism",
            "--examples",
        ],
    ),
]
_cli_numbers = st.sampled_from(range(len(_COMMANDS))).flatmap(
    lambda k: st.tuples(
        st.just(k),
        st.lists(st.tuples(st.sampled_from(_COMMANDS[k][1]), _number_text), max_size=3),
    )
)


@target("cli-numbers", "steadyeval run/study NUMERIC OPTIONS --dry-run", _cli_numbers)
def cli_numbers(example: tuple[int, list[tuple[str, str]]], folder: Path) -> None:
    k, pairs = example
    (folder / "items.jsonl").write_text(ITEMS)
    _write_mmlu(folder / "mmlu")
    argv = list(_COMMANDS[k][0])
    for flag, value in pairs:
        argv += [f"{flag}={value}"]
    check_cli([*argv, "--dry-run"])
