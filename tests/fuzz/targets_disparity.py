"""Fuzz targets: the disparity study (``steadyeval study disparity``): the general corpus and
the overlap file (text files of sentences, read line by line), the study's numeric flags
(corpus size, γ values, training settings, seed), and LAMA T-REx evidence folders read as
the overlap corpus (``read_overlap``).

Every call is a dry run (the mixtures are drawn, nothing is trained) on a tiny random masked
LM written once per process by the product's own builder (its config is read, never its
weights), so that valid examples succeed.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.fuzz._registry import check_cli, expect_own_error, target

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "examples" / "probes-study"


@cache
def _model() -> str:
    """``hf-masked:PATH`` of a tiny random BERT (built once per process)."""
    from steadyeval.models import build_tiny_model

    folder = Path(tempfile.mkdtemp(prefix="fuzz-disparity-model-")) / "bert"
    return f"hf-masked:{build_tiny_model(folder, 'bert', seed=0)}"


_sentence = st.one_of(
    st.sampled_from(
        ["The river flows to the sea.", "Paris is big. It has a river.", "", "   ", "é ü ß",
         "x" * 12_000, "{{ 7*7 }}", "\x00", "[X] [Y]", "A. B! C? D"]
    ),
    st.text(max_size=30),
)  # fmt: skip
_corpus = st.one_of(
    st.lists(_sentence, min_size=1, max_size=8).map(
        lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")
    ),
    st.lists(_sentence, min_size=1, max_size=8).map(
        lambda ls: "\r\n".join(ls).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=80),
    st.sampled_from([b"", b"\xff\xfe\x00", b"ok\n\xed\xa0\x80\n", b"\n\n\n"]),
)
_count = st.one_of(
    st.integers(-2, 300).map(str),
    st.sampled_from(["1e9", "1000000000", "100001", "1" + "0" * 400, "nan", "0", ""]),
)
_gammas = st.one_of(
    st.lists(st.integers(-5, 105), min_size=1, max_size=4).map(lambda g: ",".join(map(str, g))),
    st.sampled_from(["0,0", "0," + "9" * 400, "x", "0,,20", "50"]),
)
_numeric = st.sampled_from(
    ["--steps", "--batch-size", "--learning-rate", "--warmup-steps", "--max-length",
     "--mlm-probability", "--seed", "--limit-per-relation"]
)  # fmt: skip
_value = st.one_of(
    st.integers(-3, 300).map(str),
    st.sampled_from(["inf", "nan", "-1", "1e30", "5e-5", "0.15", "1" + "0" * 400, "2.5"]),
)
_example = st.fixed_dictionaries(
    {"general": _corpus},
    optional={
        "overlap": _corpus,
        "corpus_size": _count,
        "gammas": _gammas,
        "split": st.sampled_from(["line", "sentence"]),
        "overlap_mode": st.sampled_from(["other-templates", "probe-template"]),
        "numbers": st.lists(st.tuples(_numeric, _value), max_size=2),
    },
)


@target(
    "disparity-corpus",
    "steadyeval study disparity --general FILE --overlap-file FILE ... --dry-run",
    _example,
)
def disparity_corpus(example: dict[str, object], folder: Path) -> None:
    shutil.copytree(PROBES, folder / "probes")
    general = example["general"]
    assert isinstance(general, bytes)
    (folder / "general.txt").write_bytes(general)
    argv = ["study", "disparity", "--model", _model(), "--data", "probes",
            "--general", "general.txt", "--gammas", str(example.get("gammas", "0,50,100"))]  # fmt: skip
    if isinstance(example.get("overlap"), bytes):
        (folder / "overlap.txt").write_bytes(example["overlap"])  # type: ignore[arg-type]
        argv += ["--overlap-file", "overlap.txt"]
    argv += ["--corpus-size", str(example.get("corpus_size", "40"))]
    if "split" in example:
        argv += ["--general-split", str(example["split"])]
    if "overlap_mode" in example:
        argv += ["--overlap", str(example["overlap_mode"])]
    for flag, value in example.get("numbers", []):  # type: ignore[attr-defined]
        argv += [flag, value]
    check_cli([*argv, "--dry-run"])


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | _sentence,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_surface = st.one_of(st.sampled_from(["Paris", "", "  ", "[MASK]", "x" * 9_000]), _json)
_masked = st.one_of(
    st.sampled_from(["[MASK] is big .", "no mask", "[MASK] [MASK]", "[mask]", "[MASK]" * 3000]),
    _json,
)
_evidence = st.one_of(
    st.fixed_dictionaries(
        {"masked_sentence": _masked, "obj_surface": _surface},
        optional={"sub_surface": _surface},
    ),
    _json,
)
_good_evidence = st.fixed_dictionaries(
    {"masked_sentence": st.sampled_from(["[MASK] is big .", "A [MASK] ( [MASK] ) ."]),
     "obj_surface": st.sampled_from(["Paris", "Tōkyō", "\u00e9"])}
)  # fmt: skip
_good_row = st.fixed_dictionaries(
    {"evidences": st.lists(_good_evidence, max_size=3)},
    optional={"predicate_id": st.just("P19"), "sub_label": st.just("A")},
)
_trex_row = st.one_of(
    _good_row,
    _good_row,
    st.fixed_dictionaries(
        {"evidences": st.one_of(st.lists(_evidence, max_size=3), _json)},
        optional={
            "predicate_id": st.one_of(st.sampled_from(["P19", "P36"]), _json),
            "sub_label": _surface,
            "obj_label": _surface,
        },
    ),
    _json,
)
_trex_lines = st.lists(_trex_row, min_size=1, max_size=4).map(
    lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()
)
_trex_file = st.one_of(_trex_lines, _trex_lines, _trex_lines, _corpus)


@target(
    "disparity-trex",
    "read_overlap(FOLDER | FILE, relations=[...]) on LAMA T-REx evidence",
    st.fixed_dictionaries(
        {"files": st.fixed_dictionaries({"P19": _trex_file},
                                        optional={"P36": _trex_file, "P1001": _trex_file}),
         "relations": st.lists(st.sampled_from(["P19", "P36", "P20"]), min_size=1, max_size=3),
         "as_file": st.booleans()}
    ),
)  # fmt: skip
def disparity_trex(example: dict[str, Any], folder: Path) -> None:
    from steadyeval.studies.disparity import read_overlap

    trex = folder / "TREx"
    trex.mkdir()
    for name, data in example["files"].items():
        (trex / f"{name}.jsonl").write_bytes(data)
    path = trex / "P19.jsonl" if example["as_file"] else trex
    expect_own_error(lambda: read_overlap(path, relations=example["relations"]))
