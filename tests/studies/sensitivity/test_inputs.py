"""The sensitivity study's inputs at the edges (issue 37 classes 2-4): probe folders (LAMA,
LPAQA, generic), aliases, vocabularies, stop words and templates that are not regular files,
not UTF-8, too large or hostile, and the config's numbers (each error names its flag)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, DataError
from steadyeval.cli import main
from steadyeval.studies.sensitivity import (
    AnalysisOptions,
    ProbeOptions,
    load_aliases,
    load_probes,
    load_vocab,
    sensitivity_design,
)
from steadyeval.studies.sensitivity._stopwords import load_stop_words
from tests import scripted_backend

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "probes-study"
FIFO_OK = hasattr(os, "mkfifo")


@pytest.fixture(autouse=True)
def _scripted() -> None:
    scripted_backend.register()


def _jsonl(path: Path, rows: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _study(data: Path, *extra: str) -> list[str]:
    return ["study", "sensitivity", "--model", "scripted:m", "--data", str(data), *extra,
            "--dry-run"]  # fmt: skip


def _error(argv: list[str]) -> str:
    result = CliRunner().invoke(main, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    return result.output[result.output.index("error") :]


# -- class 3: special files ----------------------------------------------------------------------
@pytest.mark.skipif(not FIFO_OK, reason="no FIFOs here")
def test_list_files_must_be_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad, what in ((fifo, "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        for load in (load_aliases, load_vocab, lambda p: load_stop_words(str(p))):
            with pytest.raises(DataError, match=what):
                load(bad)
        for flag in ("--aliases", "--vocab", "--stop-words"):
            assert what in _error(_study(EXAMPLE, flag, str(bad)))


@pytest.mark.skipif(not FIFO_OK, reason="no FIFOs here")
def test_a_special_file_in_an_lpaqa_prompt_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "prompt" / "manual_paraphrase").mkdir(parents=True)
    (tmp_path / "prompt" / "manual_paraphrase" / "P19.txt").write_text("[X] was born in [Y] .\n")
    os.mkfifo(tmp_path / "prompt" / "manual_paraphrase" / "P20.txt")
    _jsonl(tmp_path / "TREx_train" / "P19.jsonl", [{"sub_label": "Dante", "obj_label": "Rome"}])
    with pytest.raises(DataError, match=r"P20.txt: is a FIFO"):
        load_probes(tmp_path)


# -- class 2 and 4: sizes, text and numbers at the edges -----------------------------------------
def test_list_files_that_are_not_utf8_or_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "list.txt"
    path.write_bytes(b"Paris\nRome\n\xff\n")
    for load in (load_aliases, load_vocab, lambda p: load_stop_words(str(p))):
        with pytest.raises(DataError, match=r"list.txt, line 3: not UTF-8 text at column 1"):
            load(path)
    path.write_text("Paris\n" * 1000)
    monkeypatch.setenv("STEADYEVAL_MAX_FILE_MB", "0.001")
    for load in (load_vocab, lambda p: load_stop_words(str(p))):
        with pytest.raises(DataError, match=r"over the limit of .*STEADYEVAL_MAX_FILE_MB"):
            load(path)


def test_an_alias_map_nested_deep_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "aliases.json"
    path.write_text('{"Q30": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(DataError, match=r"aliases.json, line 1: nested deeper than"):
        load_aliases(path)
    path.write_text(json.dumps({"x" * 100_000: ["a", 1]}))
    with pytest.raises(DataError) as info:
        load_aliases(path)
    assert len(str(info.value)) < 400
    path.write_text('{"France": ["\\ud800 land"]}')
    with pytest.raises(DataError, match=r"aliases.json, field 'France\[0\]': lone surrogate"):
        load_aliases(path)


def test_relation_ids_and_templates_are_checked(tmp_path: Path) -> None:
    _jsonl(tmp_path / "relations.jsonl", [{"relation": "../../P19", "template": "[X] in [Y] ."}])
    _jsonl(tmp_path / "TREx" / "P19.jsonl", [{"sub_label": "Dante", "obj_label": "Rome"}])
    with pytest.raises(DataError, match=r"line 1, field 'relation': got '\.\./\.\./P19'"):
        load_probes(tmp_path)
    long = "[X] " + "x" * 2000 + " [Y] ."
    _jsonl(tmp_path / "relations.jsonl", [{"relation": "P19", "templates": ["[X] is [Y] .", long]}])
    with pytest.raises(DataError, match=r"field 'templates\[1\]': a template of 2,010 characters"):
        load_probes(tmp_path)


def test_the_design_size_is_checked_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_SENSITIVITY_MAX_ROWS", "10")
    with pytest.raises(ConfigError, match=r"would ask \d+ \(item, template, name\) rows, over"):
        sensitivity_design(EXAMPLE)
    assert "STEADYEVAL_SENSITIVITY_MAX_ROWS" in _error(_study(EXAMPLE))
    task = tmp_path / "task"
    task.mkdir()
    _jsonl(
        task / "items.jsonl", [{"id": f"q{i}", "question": "q?", "answer": "a"} for i in range(6)]
    )
    _jsonl(
        task / "templates.jsonl", [{"name": f"t{i}", "body": "{{ question }}"} for i in range(3)]
    )
    with pytest.raises(ConfigError, match="over the limit of 10"):
        sensitivity_design(task)


def test_options_are_bounded_in_the_library() -> None:
    for bad in ({"n_subsets": 10**12}, {"subset_size": 0}, {"seed": -1}, {"k_templates": 10**9},
                {"n_resamples": 10**400}, {"gap": float("nan")}):  # fmt: skip
        with pytest.raises(ConfigError) as info:
            AnalysisOptions(**bad)  # type: ignore[arg-type]
        assert len(str(info.value)) < 200
    for bad in ({"max_names": 10**400}, {"seed": 2**40}, {"limit_per_relation": 0},
                {"templates_per_relation": 10**6}, {"top_k": 10**9}):  # fmt: skip
        with pytest.raises(ConfigError):
            ProbeOptions(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--subsets", "1000000000000"], r"--subsets: subsets: Input should be less than"),
        (["--subset-size", "9" * 400], r"--subset-size: subset_size: .*(less than|at most)"),
        (["--seed", "-1"], r"--seed: seed: Input should be greater than or equal to 0"),
        (["--max-names", "5000"], r"--max-names: max_names: Input should be less than"),
        (["--k-templates", "100000"], r"--k-templates: k_templates: Input should be less"),
        (["--templates-per-relation", "100000"], r"--templates-per-relation: .*1\.\.10,000"),
        (["--limit-per-relation", "0"], r"--limit-per-relation: .*greater than or equal to 1"),
    ],
)
def test_config_numbers_name_their_flag(flags: list[str], message: str) -> None:
    assert re.search(message, _error(_study(EXAMPLE, *flags)))


def test_templates_file_rows_at_the_edges(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    _jsonl(task / "items.jsonl", [{"id": "q1", "question": "q?", "answer": "a"}])
    (task / "templates.jsonl").write_bytes(b'{"name": "a", "body": "{{ question }}"}\n\xff\n')
    assert "templates.jsonl, line 2: not UTF-8" in _error(_study(task))
    (task / "templates.jsonl").write_text('{"name": "a", "body": NaN}\n')
    assert "templates.jsonl, line 1: invalid JSON" in _error(_study(task))
    (task / "templates.jsonl").write_text('{"name": "\\ud800", "body": "x"}\n')
    assert "lone surrogate" in _error(_study(task))


def test_a_data_folder_name_too_long_is_an_error() -> None:
    assert "not a directory" in _error(_study(Path("y" * 300)))


def test_an_alias_file_that_matches_no_subject_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "aliases.json"
    path.write_text('{"Q999": ["Nowhere"], "Atlantis": ["Lost City"]}')
    with pytest.raises(DataError, match=r"aliases.json: none of its 2 keys .* is a subject"):
        sensitivity_design(EXAMPLE, aliases=path)
    path.write_text('{"Q999": ["Nowhere"], "France": ["the French Republic", "Gaul"]}')
    design = sensitivity_design(EXAMPLE, aliases=path)  # a partial match is fine
    france = next(i for i in design.items if i.metadata["subject"] == "France")
    assert "Gaul" in france.aliases
