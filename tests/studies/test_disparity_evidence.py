"""The disparity study's overlap corpus from LAMA's T-REx evidence (issue 40, point 10): the
sentences as the seed's authors built WIKI-LAMA (c-box/causalEval ``mix_data.py`` lines
11-35: ``[MASK]`` filled with the evidence's ``obj_surface``, a repeat within one fact
dropped, one across facts kept), a folder read per probed relation as their
``utils/read_data.py`` lines 21-37 read it, malformed rows named by file, line and field,
and where the corpus came from recorded in the design and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval import DataError
from steadyeval.cli import main
from steadyeval.studies import get_study
from steadyeval.studies.disparity import DisparityAnalysis, DisparityDesign, read_overlap


def _ev(masked: str, obj: str, sub: str = "S") -> dict[str, str]:
    return {"sub_surface": sub, "obj_surface": obj, "masked_sentence": masked}


def _row(rel: str, sub: str, obj: str, *evidences: dict[str, str]) -> dict[str, Any]:
    return {
        "uuid": f"{rel}-{sub}",
        "sub_uri": f"Q-{sub}",
        "obj_uri": f"Q-{obj}",
        "sub_label": sub,
        "obj_label": obj,
        "predicate_id": rel,
        "evidences": list(evidences),
    }


def _write(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


P36 = [
    _row(
        "P36",
        "France",
        "Paris",
        _ev("[MASK] is the capital of France .", "Paris"),
        _ev("[MASK] is the capital of France .", "Paris"),  # a repeat within the fact: once
        _ev("The capital , [MASK] ( or [MASK] ) , is old .", "Paris"),  # every [MASK] filled
    ),
    _row(
        "P36",
        "Japan",
        "Tokyo",
        _ev("Its capital is [MASK] .", "Tōkyō"),  # the evidence's surface, not obj_label
        _ev("[MASK] is the capital of France .", "Paris"),  # shared with another fact: kept
    ),
    _row("P36", "Nowhere", "Atlantis"),  # a fact without evidence: no sentence
]
P19 = [_row("P19", "Dante", "Florence", _ev("Dante was born in [MASK] in 1265 .", "Florence"))]


def test_a_trex_file_by_hand(tmp_path: Path) -> None:
    corpus = read_overlap(_write(tmp_path / "P36.jsonl", P36))
    assert corpus.format == "trex"
    assert corpus.sentences == (
        "Paris is the capital of France .",
        "The capital , Paris ( or Paris ) , is old .",
        "Its capital is Tōkyō .",
        "Paris is the capital of France .",
    )
    assert (corpus.rows, corpus.evidences) == (3, 5)
    assert corpus.per_relation == {"P36": 4}
    assert corpus.facts == {
        ("P36", "France", "Paris"),
        ("P36", "Japan", "Tokyo"),
        ("P36", "Nowhere", "Atlantis"),
    }
    assert corpus.info() == {
        "path": str(tmp_path / "P36.jsonl"),
        "format": "trex",
        "files": ["P36.jsonl"],
        "rows": 3,
        "evidences": 5,
        "sentences": 4,
        "missing_relations": [],
    }


def test_a_trex_folder_reads_the_probed_relations_files(tmp_path: Path) -> None:
    folder = tmp_path / "TREx"
    _write(folder / "P36.jsonl", P36)
    _write(folder / "P19.jsonl", P19)
    _write(folder / "P1001.jsonl", [_row("P1001", "A", "B", _ev("x [MASK]", "y"))])
    corpus = read_overlap(folder, relations=["P19", "P36", "P19", "P20"])
    assert corpus.files == ("P19.jsonl", "P36.jsonl")  # P1001 is not probed: not read
    assert corpus.missing_relations == ("P20",)
    assert corpus.sentences[0] == "Dante was born in Florence in 1265 ."
    assert len(corpus.sentences) == 5 and corpus.per_relation == {"P19": 1, "P36": 4}
    every = read_overlap(folder)  # no relations given: every .jsonl file, by name
    assert every.files == ("P1001.jsonl", "P19.jsonl", "P36.jsonl")
    with pytest.raises(DataError, match=r"TREx: no \.jsonl file for the probed relations \(P20"):
        read_overlap(folder, relations=["P20"])
    with pytest.raises(DataError, match="a folder is read as LAMA T-REx"):
        read_overlap(folder, format="text")
    _write(folder / "P19.jsonl", [_row("P20", "Dante", "Florence", _ev("[MASK]", "x"))])
    with pytest.raises(DataError, match=r"P19.jsonl, line 1, field 'predicate_id': .*'P20'"):
        read_overlap(folder, relations=["P19"])


def test_the_format_is_detected(tmp_path: Path) -> None:
    text = tmp_path / "evidence.txt"
    text.write_text("Paris is the capital of France.\n\n  Rome is in Italy.  \n")
    assert read_overlap(text).format == "text"
    assert read_overlap(text).sentences == (
        "Paris is the capital of France.",
        "Rome is in Italy.",
    )
    sniffed = _write(tmp_path / "evidence.dat", P19)  # first line a JSON object: T-REx
    assert read_overlap(sniffed).format == "trex"
    as_text = read_overlap(sniffed, format="text")  # the user says otherwise: its lines
    assert as_text.format == "text" and as_text.sentences[0].startswith('{"uuid"')
    with pytest.raises(DataError, match=r"unknown overlap format 'xml' \(expected auto, trex or"):
        read_overlap(sniffed, format="xml")  # type: ignore[arg-type]


BAD: list[tuple[object, str]] = [
    ([1, 2], r"line 2: a JSON list, not an object"),
    ({"sub_label": "A"}, r"line 2, field 'evidences': missing"),
    ({"evidences": {"masked_sentence": "x"}}, r"line 2, field 'evidences': a dict"),
    ({"evidences": ["x"]}, r"line 2, field 'evidences\[0\]': a JSON str"),
    (
        {"evidences": [_ev("[MASK] ok", "o"), _ev("no mask here", "o")]},
        r"line 2, field 'evidences\[1\].masked_sentence': 'no mask here' \(expected a sentence "
        r"with \[MASK\]",
    ),
    (
        {"evidences": [{"masked_sentence": "[MASK]"}]},
        r"line 2, field 'evidences\[0\].obj_surface': missing",
    ),
    ({"evidences": [_ev("[MASK]", "  ")]}, r"line 2, field 'evidences\[0\].obj_surface': '  '"),
    ({"evidences": [_ev("[MASK]", 3)]}, r"line 2, field 'evidences\[0\].obj_surface': 3"),  # type: ignore[arg-type]
    (
        {"evidences": [{"masked_sentence": "[MASK]", "obj_surface": "o", "sub_surface": 1}]},
        r"line 2, field 'evidences\[0\].sub_surface': int 1 \(expected a string\)",
    ),
    ({"predicate_id": 36, "evidences": []}, r"line 2, field 'predicate_id': int 36"),
    ({"obj_label": ["Paris"], "evidences": []}, r"line 2, field 'obj_label': list"),
    ({"evidences": [_ev("[MASK] " + "x" * 10_000, "o")]}, r"line 2, .*over the limit of 10,000"),
]


@pytest.mark.parametrize(("row", "message"), BAD)
def test_a_malformed_row_names_file_line_and_field(
    tmp_path: Path, row: object, message: str
) -> None:
    path = _write(tmp_path / "P19.jsonl", [*P19, row])
    with pytest.raises(DataError, match=r"P19\.jsonl, " + message):
        read_overlap(path)


def test_not_json_and_no_sentence_at_all(tmp_path: Path) -> None:
    path = tmp_path / "P19.jsonl"
    path.write_text(json.dumps(P19[0]) + "\n{not json\n")
    with pytest.raises(DataError, match=r"P19\.jsonl, line 2: invalid JSON"):
        read_overlap(path)
    _write(path, [_row("P19", "A", "B")])
    with pytest.raises(DataError, match="no evidence sentence in 1 facts"):
        read_overlap(path)


# -- the study: the design records the source, the report names it -----------------------------


@pytest.fixture()
def lama(tmp_path: Path) -> Path:
    """LAMA's layout (relations.jsonl + TREx/P*.jsonl): the fact files are the evidence."""
    root = tmp_path / "lama"
    _write(
        root / "relations.jsonl",
        [
            {"relation": "P36", "template": "The capital of [X] is [Y] ."},
            {"relation": "P19", "template": "[X] was born in [Y] ."},
        ],
    )
    _write(root / "TREx" / "P36.jsonl", P36)
    _write(root / "TREx" / "P19.jsonl", P19)
    (tmp_path / "general.txt").write_text("The river flows north.\nBirds sing.\n")
    return root


def test_the_design_records_the_evidence_and_its_coverage(
    lama: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from steadyeval.items import load_probes
    from steadyeval.models import build_tiny_model, load_backend
    from steadyeval.studies.disparity import CorpusOptions, disparity_design

    bert = load_backend(f"hf-masked:{build_tiny_model(tmp_path / 'bert', 'bert', seed=0)}")
    data = load_probes(lama)
    # Evidence for France and Dante only: the file's Japan row names another object.
    evidence = _write(
        tmp_path / "evidence" / "P36.jsonl",
        [P36[0], _row("P36", "Japan", "Kyoto", _ev("[MASK] was the capital .", "Kyoto"))],
    )
    _write(tmp_path / "evidence" / "P19.jsonl", P19)
    corpus = read_overlap(evidence.parent, relations=[r.id for r in data.relations])
    design = disparity_design(
        data,
        ["The river flows north."],
        [bert],
        corpus=CorpusOptions(gammas=(0, 100), size=4, seed=0),
        overlap=corpus,
    )
    info = design.info.corpus
    assert info["overlap_source"] == "trex"
    assert info["overlap_pool"] == 4
    assert info["overlap_per_relation"] == {"P36": 3, "P19": 1}
    assert info["overlap_file"]["files"] == ["P36.jsonl", "P19.jsonl"]
    # 4 probed facts (France, Japan, Nowhere, Dante); evidence for France and Dante.
    assert info["overlap_facts"] == {"probed": 4, "with_evidence": 2}
    # said before any training (a dry run builds the design too)
    assert any("2 of 4 probed facts have evidence" in m for m in caplog.messages)
    text = _header(design.info)
    assert "LAMA T-REx evidence sentences (4 sentences from 3 facts in 2 file(s)" in text
    assert "2 of the 4 probed facts have evidence in it" in text
    proxy = disparity_design(data, ["g"], [bert], corpus=CorpusOptions(gammas=(0,), size=2))
    assert "a proxy: the seed used LAMA's Wikipedia evidence" in _header(proxy.info)


def _header(design: object) -> str:
    """The disparity section of ``summary.md`` for ``design`` (no results)."""
    assert isinstance(design, DisparityDesign)
    empty = DisparityAnalysis(models=[], gammas=[], cells=[], gaps=[], changes=[], notes=[])
    return get_study("disparity").markdown(empty, design)


def test_the_cli_reads_a_trex_folder(lama: Path) -> None:
    general = str(lama.parent / "general.txt")
    from steadyeval.models import build_tiny_model

    bert = build_tiny_model(lama.parent / "bert", "bert", seed=0)
    argv = ["study", "disparity", "--model", f"hf-masked:{bert}", "--data", str(lama),
            "--general", general, "--overlap-file", str(lama / "TREx"), "--gammas", "0,100",
            "--corpus-size", "4", "--dry-run"]  # fmt: skip
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    bad = CliRunner().invoke(main, [*argv[:-1], "--overlap-format", "text", "--dry-run"])
    assert bad.exit_code == 2 and "a folder is read as LAMA T-REx" in bad.output
    lone = CliRunner().invoke(main, [*argv[:8], "--overlap-format", "trex", "--dry-run"])
    assert lone.exit_code == 2 and "give one" in lone.output, lone.output


def test_a_run_records_the_source_in_summary_json_and_the_report(lama: Path) -> None:
    from steadyeval import RunOptions
    from steadyeval.models import build_tiny_model
    from steadyeval.studies import run_study

    bert = build_tiny_model(lama.parent / "bert", "bert", seed=0)
    out = lama.parent / "run"
    config = {
        "models": [f"hf-masked:{bert}"],
        "data": str(lama),
        "general": str(lama.parent / "general.txt"),
        "overlap_file": str(lama / "TREx"),
        "gammas": [100],
        "corpus_size": 4,
        "steps": 1,
        "batch_size": 2,
        "include_base": False,
        "device": "cpu",
    }
    options = RunOptions(out=out, cache=lama.parent / "cache.sqlite", progress=False)
    run_study("disparity", config, options=options)
    corpus = json.loads((out / "summary.json").read_text())["design"]["corpus"]
    assert corpus["overlap_source"] == "trex"
    assert corpus["overlap_file"]["path"] == str(lama / "TREx")
    assert corpus["overlap_facts"] == {"probed": 4, "with_evidence": 4}
    header = "Overlap corpus: LAMA T-REx evidence sentences (5 sentences from 4 facts in 2 file(s)"
    assert header in (out / "summary.md").read_text()
    result = CliRunner().invoke(main, ["report", str(out), "--format", "md", "-o", "-"])
    assert result.exit_code == 0 and header in result.output, result.output[-2000:]
