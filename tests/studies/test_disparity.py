"""The disparity study end to end on tiny models, its analysis on hand-built tables, and the
continued pre-training it relies on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from steadyeval import RunOptions
from steadyeval._errors import ConfigError
from steadyeval.models import build_tiny_model, load_backend
from steadyeval.models._tiny import DEFAULT_CORPUS
from steadyeval.results import ResultsFrame, read_results
from steadyeval.studies import get_study, read_analysis, reanalyze, run_study
from steadyeval.studies.disparity import analyze_disparity, disparity_report_sections, paired_gap

NAMES = [
    "anna",
    "boris",
    "clara",
    "david",
    "emma",
    "felix",
    "grace",
    "henry",
    "irene",
    "james",
    "karen",
    "louis",
    "maria",
    "nora",
    "oscar",
    "peter",
    "quinn",
    "rosa",
    "simon",
    "tina",
    "alice",
    "bruno",
    "chloe",
    "dylan",
    "elsa",
    "frank",
    "gina",
    "hugo",
    "ivy",
    "jack",
    "kate",
    "leon",
    "mila",
    "nick",
    "olga",
    "paul",
    "ruth",
    "sara",
    "tom",
    "uma",
]
CITIES = ("paris", "london", "tokyo", "cairo", "lima")
JOBS = ("baker", "doctor", "farmer", "pilot", "singer")
RELATIONS = [
    {"relation": "lives", "templates": ["[X] lives in [Y] .", "[X] has a home in [Y] ."]},
    {"relation": "job", "templates": ["[X] works as a [Y] .", "[X] earns a living as a [Y] ."]},
]


def _facts() -> list[dict[str, str]]:
    lives = [
        {"relation": "lives", "subject": n, "object": CITIES[i % 5]}
        for i, n in enumerate(NAMES[:20])
    ]
    jobs = [
        {"relation": "job", "subject": n, "object": JOBS[i % 5]} for i, n in enumerate(NAMES[20:40])
    ]
    return lives + jobs


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, one_thread: None) -> dict[str, Path]:
    """40 facts in 2 relations, a general corpus, and tiny models whose tokenizers know
    the probe's words."""
    root = tmp_path_factory.mktemp("disparity")
    data = root / "probes"
    data.mkdir()
    facts = _facts()
    (data / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RELATIONS))
    (data / "facts.jsonl").write_text("".join(json.dumps(f) + "\n" for f in facts))
    general = root / "general.txt"
    general.write_text("\n".join(DEFAULT_CORPUS) + "\n", encoding="utf-8")
    words = [
        t.replace("[X]", f["subject"]).replace("[Y]", f["object"])
        for f in facts
        for r in RELATIONS
        if r["relation"] == f["relation"]
        for t in r["templates"]
    ]
    corpus = list(DEFAULT_CORPUS) + words * 3
    return {
        "data": data,
        "general": general,
        "bert": _wider_bert(
            build_tiny_model(root / "bert", "bert", seed=0, corpus=corpus, vocab_size=600)
        ),
        "gpt2": build_tiny_model(root / "gpt2", "gpt2", seed=0, corpus=corpus, vocab_size=600),
        "root": root,
    }


def _wider_bert(folder: Path) -> Path:
    """The tiny BERT's tokenizer with a wider model (hidden 128, no dropout) written over its
    weights: the 64-wide one needs several times the steps to memorise 40 facts."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=256,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        BertForMaskedLM(config).save_pretrained(folder)
    return folder


def _config(world: dict[str, Path], model: str, **more: Any) -> dict[str, Any]:
    return {
        "models": [model],
        "data": str(world["data"]),
        "general": str(world["general"]),
        "overlap": "probe-template",
        "candidates": "relation",
        "gammas": [0, 100],
        "corpus_size": 200,
        "max_length": 32,
        "learning_rate": 3e-3,
        "include_base": False,
        "seed": 0,
        "device": "cpu",
        **more,
    }


# Masked LMs see the object masked in about one sentence in five, so they get larger batches.
SETTINGS = {
    "masked": ("hf-masked", "bert", {"steps": 160, "batch_size": 64}),
    "causal": ("hf-causal", "gpt2", {"steps": 200, "batch_size": 16}),
}


@pytest.mark.parametrize("kind", list(SETTINGS))
def test_overlap_raises_p_at_1(kind: str, world: dict[str, Path], tmp_path: Path) -> None:
    backend, folder, train = SETTINGS[kind]
    config = _config(world, f"{backend}:{world[folder]}", **train)
    options = RunOptions(out=tmp_path / "run", cache=tmp_path / "cache.sqlite", progress=False)
    result = run_study("disparity", config, options=options)
    a = result.analysis
    p = {c.gamma: c.p_at_1 for c in a.cells}
    assert set(p) == {"0", "100"}
    assert all(c.n == 40 for c in a.cells)
    assert p["100"] - p["0"] >= 0.3, p
    # One row per fact × γ, tagged with γ and the model before training.
    table = result.table
    assert table.num_rows == 80
    assert sorted(set(table.column("gamma").to_pylist())) == [0, 100]
    assert set(table.column("base_model").to_pylist()) == {a.models[0]}
    info = result.summary["design"]
    assert info["models"][0]["objective"] == kind
    assert [m["n_overlap"] for m in info["corpus"]["mixtures"]] == [0, 200]
    (change,) = a.changes
    assert change.diff == pytest.approx(p["100"] - p["0"])
    # summary.json reads back as the same typed analysis, and reanalyze recomputes it
    assert read_analysis(tmp_path / "run") == a
    assert reanalyze(tmp_path / "run") == a
    # A rerun from the warm cache sends nothing and trains nothing: the same table.
    checkpoints = sorted((tmp_path / "run" / "checkpoints").iterdir())
    again = run_study("disparity", config, options=options)
    assert again.summary["plan"]["model_calls"] == 0
    assert again.table.drop(["run_id"]).equals(table.drop(["run_id"]))
    assert sorted((tmp_path / "run" / "checkpoints").iterdir()) == checkpoints
    assert read_results(tmp_path / "run").num_rows == 80


def test_checkpoint_store_reuses_a_trained_model(world: dict[str, Path], tmp_path: Path) -> None:
    from steadyeval.models import model_folder
    from steadyeval.train import CheckpointStore, TrainConfig, pretrained_model

    base = load_backend(f"hf:{world['gpt2']}")
    store = CheckpointStore(tmp_path / "ck")
    texts = ["anna lives in paris .", "boris lives in london ."]
    cfg = TrainConfig(learning_rate=1e-3, steps=2, batch_size=2, device="cpu")

    def make(seed: int) -> Any:
        return pretrained_model(
            base, texts, cfg, objective="causal", seed=seed, store=store,
            base_dir=lambda: model_folder(base.spec),
        )  # fmt: skip

    first = make(0)
    assert first.spec.backend == "hf-causal"
    first.trained  # noqa: B018 - trains
    assert first.info is not None and not first.info.reused
    assert first.info.extra["objective"] == "causal"
    second = make(0)
    assert second.key == first.key
    second.trained  # noqa: B018 - finds it
    assert second.info is not None and second.info.reused
    assert make(1).key != first.key  # the seed is part of the recipe


def test_design_errors_name_the_fix(world: dict[str, Path], tmp_path: Path) -> None:
    single = tmp_path / "single"
    single.mkdir()
    (single / "relations.jsonl").write_text(
        json.dumps({"relation": "lives", "templates": ["[X] lives in [Y] ."]}) + "\n"
    )
    (single / "facts.jsonl").write_text(json.dumps(_facts()[0]) + "\n")
    config = _config(world, f"hf-masked:{world['bert']}", data=str(single))
    config["overlap"] = "other-templates"
    with pytest.raises(ConfigError, match="probe-template"):
        run_study("disparity", config, dry_run=True)
    with pytest.raises(ConfigError, match="hf-masked:PATH"):
        run_study("disparity", _config(world, "openai:gpt-4o"), dry_run=True)


def test_dry_run_counts_and_trains_nothing(world: dict[str, Path], tmp_path: Path) -> None:
    config = _config(
        world,
        f"hf-masked:{world['bert']}",
        gammas=[0, 50, 100],
        include_base=True,
        overlap="other-templates",
    )
    config["models"].append(f"hf-causal:{world['gpt2']}")
    counts = run_study("disparity", config, dry_run=True)
    # 40 facts × (3 γ + the model as given) × 2 models.
    assert counts.rows == counts.unique_requests == 40 * 4 * 2
    assert counts.cache_hits == 0


def _table(rows: Sequence[tuple[str, int | None, str, bool | None]]) -> pa.Table:
    model, gamma, item, correct = zip(*rows, strict=True)
    return pa.table(
        {
            "base_model": pa.array(model, pa.string()),
            "gamma": pa.array(gamma, pa.int64()),
            "item_id": pa.array(item, pa.string()),
            "correct": pa.array(correct, pa.bool_()),
        }
    )


def test_analysis_by_hand() -> None:
    # Model A right on facts 0-5 at γ=0 and on all 8 at γ=100; B right on fact 0 only at γ=0
    # and on facts 0-6 at γ=100.
    rows: list[tuple[str, int | None, str, bool | None]] = []
    for i in range(8):
        rows.append(("A", 0, f"f{i}", i < 6))
        rows.append(("B", 0, f"f{i}", i < 1))
        rows.append(("A", 100, f"f{i}", True))
        rows.append(("B", 100, f"f{i}", i < 7))
        rows.append(("B", None, f"f{i}", None if i == 7 else False))
    info = {"models": [{"model": "A"}, {"model": "B"}], "gammas": [0, 100]}
    a = analyze_disparity(ResultsFrame(_table(rows)), info)
    assert a.models == ["A", "B"]
    assert a.gammas == ["none", "0", "100"]
    cells = {(c.model, c.gamma): c for c in a.cells}
    assert cells[("A", "0")].p_at_1 == 6 / 8
    assert cells[("B", "100")].correct == 7
    assert cells[("B", "none")].p_at_1 == 0.0
    assert ("A", "none") not in cells
    gaps = {g.gamma: g for g in a.gaps}
    assert set(gaps) == {"0", "100"}
    # γ=0: A only on 5 facts, B only on none: exact McNemar p = 2 · (1/2)^5 = 0.0625.
    assert (gaps["0"].only_a, gaps["0"].only_b) == (5, 0)
    assert gaps["0"].pvalue == pytest.approx(0.0625)
    assert gaps["0"].diff == pytest.approx(5 / 8)
    # γ=100: one discordant fact, p = 1.
    assert gaps["100"].pvalue == pytest.approx(1.0)
    changes = {c.model: c for c in a.changes}
    assert (changes["B"].only_a, changes["B"].only_b) == (6, 0)
    assert changes["B"].pvalue == pytest.approx(2 / 64)
    assert any("1 rows have no verdict" in n for n in a.notes)


def test_paired_gap_uses_common_facts_only() -> None:
    g = paired_gap({"a": True, "b": False, "c": True}, {"b": True, "c": True, "d": False})
    assert g.n == 2
    assert (g.only_a, g.only_b) == (0, 1)
    empty = paired_gap({"a": True}, {"b": True})
    assert empty.n == 0 and empty.pvalue is None


def test_report_sections_and_cli_help() -> None:
    from steadyeval.cli import main
    from steadyeval.reports import LineChart, Table, render_markdown  # noqa: F401

    rows = [("A", g, f"f{i}", bool((i + g) % 3)) for g in (0, 100) for i in range(6)]
    analysis = analyze_disparity(
        ResultsFrame(_table(rows)), {"models": [{"model": "A"}], "gammas": [0, 100]}
    )
    (section,) = disparity_report_sections(analysis)
    kinds = [type(b).__name__ for b in section.blocks]
    assert kinds.count("LineChart") == 1 and "Table" in kinds
    (no_fig,) = disparity_report_sections(analysis, figures=False)
    assert not any(isinstance(b, LineChart) for b in no_fig.blocks)
    text = get_study("disparity").markdown(analysis, {})
    assert "P@1 per model and γ" in text and "one model" in text
    r = CliRunner().invoke(main, ["study", "disparity", "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    for flag in ("--general", "--gammas", "--corpus-size", "--overlap", "--steps"):
        assert flag in r.output


def test_a_report_recomputes_an_analysis_it_cannot_read_and_says_so() -> None:
    """An analysis written by another version (no schema_version, or the wrong shape) is
    recomputed from the table for the report, with a note; one that cannot be recomputed
    either is the reading error, naming the field."""
    from steadyeval._errors import DataError
    from steadyeval.reports import Note, context_from_table, study_sections

    rows = [("A", g, f"f{i}", bool((i + g) % 3)) for g in (0, 100) for i in range(6)]
    design = {"models": [{"model": "A"}], "gammas": [0, 100]}
    table = _table(rows)
    current = analyze_disparity(ResultsFrame(table), design).to_json()
    old = {k: v for k, v in current.items() if k != "schema_version"}
    for stored in (current, old):
        summary = {"study": "disparity", "design": design, "analysis": stored}
        (section,) = study_sections(context_from_table(table, summary))
        notes = [b.text for b in section.blocks if isinstance(b, Note)]
        recomputed = [n for n in notes if "recomputed it from the results table" in n]
        assert len(recomputed) == (stored is old), notes
    broken = {"study": "disparity", "design": design, "analysis": {**old, "cells": 3}}
    with pytest.raises(DataError, match="schema version None"):
        study_sections(context_from_table(table.drop(["gamma"]), broken))
