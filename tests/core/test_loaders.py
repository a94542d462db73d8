"""Named loaders in ``items``: SQuAD 2.0, MMLU, FewGLUE and LAMA-style probes, from Python and
from a run config, with located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steadyeval import ConfigError, DataError
from steadyeval.items import get_loader, load_items, loader_names, read_jsonl, register_loader
from steadyeval.run import load_run_config, run_config
from tests.golden.pipeline.cases import EXAMPLES, write_mmlu, write_rte
from tests.scripted_backend import register as register_scripted


def test_every_named_loader_reads_its_data(tmp_path: Path) -> None:
    assert {"squad2", "mmlu", "fewglue", "lama", "jsonl", "csv", "hf"} <= set(loader_names())
    squad = load_items(EXAMPLES / "squad-mini.json", loader="squad2")
    unanswerable = [i for i in squad if not i.answerable]
    assert squad and unanswerable and all(i.context for i in squad)
    assert all(i.metadata["plausible_answers"] for i in unanswerable)
    mmlu = write_mmlu(tmp_path / "mmlu")
    test = load_items(mmlu, loader="mmlu", subjects=["abstract_algebra"])
    dev = load_items(mmlu, loader="mmlu", split="dev")
    assert [i.id for i in test] == [f"abstract_algebra/test/{n}" for n in range(3)]
    assert len(dev) == 5 and {i.metadata["split"] for i in dev} == {"dev"}
    rte = load_items(write_rte(tmp_path / "rte.jsonl"), loader="fewglue", task="RTE")
    assert len(rte) == 12 and rte[0].options == ("entailment", "not_entailment")
    probes = load_items(EXAMPLES / "probes-study", loader="lama")
    first = probes[0]
    assert "[X]" in first.question and "[Y]" in first.question and first.aliases[0]
    assert first.metadata["relation"] and first.answers


def test_loader_options_and_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"loader 'mmlu' has no option 'subject'; its options: "):
        load_items(tmp_path, loader="mmlu", subject="anatomy")
    with pytest.raises(ConfigError, match="unknown data loader 'squad'; known loaders: jsonl"):
        load_items(tmp_path, loader="squad")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(DataError, match=r"bad.jsonl, line 2: invalid JSON"):
        list(read_jsonl(bad))
    with pytest.raises(DataError, match=r"rte.jsonl, line 1, field 'label'"):
        bad_rte = tmp_path / "rte.jsonl"
        bad_rte.write_text('{"premise": "p", "hypothesis": "h", "idx": 1, "label": "maybe"}\n')
        load_items(bad_rte, loader="fewglue", task="RTE")


def test_a_registered_loader_is_usable_by_name(tmp_path: Path) -> None:
    from steadyeval.items import Item

    def numbers(source: str, *, n: int = 3) -> list[Item]:
        return [
            Item(id=f"{source}-{i}", question=f"{i}+{i}?", answers=(str(2 * i),)) for i in range(n)
        ]

    register_loader("test-numbers", numbers, replace=True)
    assert get_loader("test-numbers") is numbers
    assert [i.id for i in load_items("x", loader="test-numbers", n=2)] == ["x-0", "x-1"]


def test_a_run_config_reads_data_through_a_loader(tmp_path: Path) -> None:
    register_scripted()
    config = tmp_path / "run.yaml"
    config.write_text(
        "data: {loader: squad2, path: %s}\n"
        "models: [scripted:squad]\n"
        "conditions:\n  - {name: free, format: free, scoring: generate}\n"
        % (EXAMPLES / "squad-mini.json")
    )
    cfg = load_run_config(config)
    result = run_config(cfg, out=tmp_path / "run", progress=False)
    rows = result.table.to_pylist()
    assert len(rows) == len(load_items(EXAMPLES / "squad-mini.json", loader="squad2"))
    assert {r["answerable"] for r in rows} == {True, False}
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["data"]["loader"] == "squad2"
    config.write_text("data: {path: x.jsonl, subjects: [a]}\nmodels: [hf:x]\n")
    with pytest.raises(ConfigError, match=r"line 1: data: unknown key 'subjects'.*set loader"):
        load_run_config(config)


def test_a_run_config_declares_its_columns(tmp_path: Path) -> None:
    register_scripted()
    mmlu = write_mmlu(tmp_path / "mmlu")
    config = tmp_path / "run.yaml"
    config.write_text(
        f"data: {{loader: mmlu, path: {mmlu}}}\n"
        "shot_pools: {dev: {loader: mmlu, path: %s, split: dev}}\n"
        "models: [scripted:m]\n"
        "columns: [subject, {name: cat, key: category, doc: MMLU category}]\n"
        "conditions:\n  - {name: letters, format: mc, scoring: letter-logprob,\n"
        "     shots: {n: 1, source: dev, match: subject, selection: first}}\n" % mmlu
    )
    table = run_config(load_run_config(config), progress=False).table
    assert table.column_names[-2:] == ["subject", "cat"]
    assert set(table.column("cat").to_pylist()) == {"STEM", "humanities"}
    assert set(table.column("n_shots_used").to_pylist()) == {1}
    config.write_text(config.read_text().replace("name: cat", "name: correct"))
    with pytest.raises(ConfigError, match="columns: study column 'correct' would shadow"):
        run_config(load_run_config(config), progress=False)


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("models: [hf:x]\ndata: a\n  bad: [\n")
    with pytest.raises(ConfigError, match=r"run\.yaml, line 3: invalid YAML: mapping values"):
        load_run_config(path)
