"""The few-shot study's inputs at the edges (issue 37 classes 2-5): space files (bombs, grid
size, misspelt sections, per-task mappings, numbers), the config's numbers (each error names
its flag), FewGLUE and unlabelled files that are not regular files, and a dry run that refuses
what the run refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, DataError, ModelSpecError, PlanCounts
from steadyeval.cli import main
from steadyeval.studies import run_study
from steadyeval.studies.fewshot import build_grid, get_method, get_task, load_space
from steadyeval.train import TrainConfig
from tests import scripted_backend

FIFO_OK = hasattr(os, "mkfifo")


@pytest.fixture(autouse=True)
def _scripted() -> None:
    scripted_backend.register()


@pytest.fixture()
def rte(tmp_path: Path) -> Path:
    path = tmp_path / "rte.jsonl"
    rows = [
        {"premise": f"p {i}.", "hypothesis": f"h {i}.", "idx": i,
         "label": "entailment" if i % 2 else "not_entailment"}
        for i in range(16)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _study(rte: Path, *extra: str, model: str = "scripted:m") -> list[str]:
    return [
        "study", "fewshot", "--model", model, "--task", "RTE", "--labelled", str(rte),
        "--test-from-labelled", "4", "--k", "2", "--k-values", "2", "--strategy", "cv",
        *extra, "--dry-run",
    ]  # fmt: skip


def _error(argv: list[str]) -> str:
    """The one error line of a refused command (exit 2, no traceback)."""
    result = CliRunner().invoke(main, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output[result.output.index("error") :]


# -- class 2: bombs ------------------------------------------------------------------------------
def test_an_alias_bomb_in_a_method_section_is_refused_at_once(tmp_path: Path) -> None:
    lines = ["icl:", "  a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n, name in enumerate("bcdefgh"):
        prev = "abcdefg"[n]
        lines.append(f"  {name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")
    lines.append("  shots: *h")  # 10**8 values once expanded
    space = tmp_path / "bomb.yaml"
    space.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"bomb.yaml, line \d+: aliases here expand") as info:
        load_space(space, "icl")
    assert len(str(info.value)) < 300  # refused while composed: 10**8 values never built


def test_a_space_file_is_read_as_every_yaml_config_is(tmp_path: Path) -> None:
    """The space file goes through the run's YAML reader: values counted while composed,
    and YAML 1.2's floats."""
    space = tmp_path / "many.yaml"
    space.write_text("pet:\n  steps: [" + ", ".join(["1"] * 150_000) + "]\n")
    with pytest.raises(ConfigError, match=r"many.yaml, line 2: more than 100,000 values"):
        load_space(space, "pet")
    space.write_text("pet:\n  learning_rate: [1e-5, 2E+3, .5]\n  steps: [010, 0x10]\n")
    got = load_space(space, "pet")
    assert got["learning_rate"] == [1e-5, 2000.0, 0.5]
    assert got["steps"] == [10, 16]  # YAML 1.1 read 010 as octal 8
    space.write_text("pet:\n  steps: [1:30]\n")  # YAML 1.1: base-60 90; YAML 1.2: text
    with pytest.raises(ConfigError, match="steps"):
        build_grid(get_method("pet"), get_task("RTE"), load_space(space, "pet"))


def test_the_grid_size_is_checked_before_the_grid_is_built(tmp_path: Path) -> None:
    values = ", ".join(str(8 + i) for i in range(40))
    names = ("steps", "batch_size", "eval_every", "patience", "max_length")
    space = tmp_path / "grid.yaml"
    space.write_text("pet:\n" + "".join(f"  {n}: [{values}]\n" for n in names))
    with pytest.raises(ConfigError) as info:  # sized from the lists, never built
        build_grid(get_method("pet"), get_task("RTE"), load_space(space, "pet"))
    message = str(info.value)
    assert "grid.yaml, line 2: the space gives method pet 409,600,000 settings" in message
    assert "over the limit of 1,000; narrow the space" in message


def test_the_design_size_is_checked_before_blocks_are_built(
    rte: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_FEWSHOT_MAX_ROWS", "50")
    message = _error(_study(rte))
    assert "the design would score up to" in message and "over the limit of 50" in message
    assert "STEADYEVAL_FEWSHOT_MAX_ROWS" in message


def test_echoed_values_are_cut(tmp_path: Path) -> None:
    space = tmp_path / "long.yaml"
    space.write_text(f"pattern: ['{'y' * 1_000_000}']\n")
    with pytest.raises(ConfigError, match=r"1,000,002 characters") as info:
        build_grid(get_method("icl"), get_task("RTE"), load_space(space, "icl"))
    assert len(str(info.value)) < 300
    space.write_text(f"shots: [{'9' * 400}]\n")
    with pytest.raises(ConfigError, match=r"line 1: an integer of 400 characters") as info:
        load_space(space, "icl")
    assert len(str(info.value)) < 300
    # The same values in a config's inline space (not read from YAML text).
    for space_value in (
        {"shots": [10**400]},
        {"pattern": ["y" * 10**6]},
        {"shots": {"x" * 10**6: 1}},
    ):
        with pytest.raises(ConfigError) as info:
            build_grid(get_method("icl"), get_task("RTE"), space_value)
        assert len(str(info.value)) < 300


# -- class 3: special files ----------------------------------------------------------------------
@pytest.mark.skipif(not FIFO_OK, reason="no FIFOs here")
def test_space_labelled_and_unlabelled_files_must_be_regular_files(
    tmp_path: Path, rte: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"fifo: is a FIFO \(named pipe\); expected a YAML"):
        load_space(fifo)
    with pytest.raises(ConfigError, match="/dev/zero: is a character device"):
        load_space("/dev/zero")
    with pytest.raises(ConfigError, match="is a folder"):
        load_space(tmp_path)
    assert "is a FIFO" in _error(_study(fifo))
    assert "is a character device" in _error(_study(Path("/dev/zero")))
    # An unlabelled file given explicitly must hold the examples (no silent fallback).
    for path, what in ((fifo, "is a FIFO"), (tmp_path / "none.jsonl", "no such file")):
        message = _error(_study(rte, "--method", "ipet", "--unlabelled", str(path)))
        assert what in message


# -- class 4: numbers and text at the edges -----------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"shots: [{'9' * 400}]", r"line 1: an integer of 400 characters"),
        (f"shots: [{'9' * 30}]", r"shots: expected an integer in 0\.\.1,000, got 9999"),
        ("steps: [1e30]", r"steps: expected an integer in 1\.\.1,000,000, got 1e\+30"),
        ("learning_rate: [1e308]", r"learning_rate: expected a positive number up to 10"),
        ("learning_rate: [0]", r"learning_rate: expected a positive number up to 10"),
        ("learning_rate: [.inf]", r"line 1: .* not a finite number"),
        ("learning_rate: [.nan]", r"line 1: .* not a finite number"),
        ("shot_seed: [-1]", r"shot_seed: expected an integer in 0\.\.4,294,967,295, got -1"),
        ("shots: [true]", r"shots: expected an integer in 0\.\.1,000, got True"),
        ('shots: ["\\ud800"]', r"lone surrogate"),
        ("shots: [0]\nshots: [1]", r"line 2: .*given twice"),
        ("shots: [0]\npattern: [\x01]", r"line 2: invalid YAML: unacceptable character #x0001"),
    ],
)
def test_numbers_and_text_at_the_edges_of_a_space(tmp_path: Path, text: str, message: str) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(text + "\n", encoding="utf-8", errors="surrogatepass")
    method = get_method("pet" if "shot" not in text else "icl")
    with pytest.raises(ConfigError, match=message):
        build_grid(method, get_task("RTE"), load_space(space, method.name))


def test_a_space_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_bytes(b"shots: [0]\npattern: [\xff]\n")
    with pytest.raises(ConfigError, match=r"space.yaml, line 2: not UTF-8 text at column 11"):
        load_space(space)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--seed", "-1"], r"--seed: seed: Input should be greater than or equal to 0"),
        (["--seed", str(2**40)], r"--seed: seed: Input should be less than or equal to"),
        (["--seed", str(2**64)], r"--seed: seed: .*(less than or equal|at most)"),
        (["--k-values", "0,-2"], r"--k-values: k_values\.\d: Input should be greater"),
        (["--k", "1001"], r"--k: k: Input should be less than or equal to 1000"),
        (["--k", "9" * 400], r"--k: k: .*(less than or equal|at most)"),
        (["--threads", "9" * 40], r"--threads: threads: .*(less than or equal|at most)"),
        (["--final-seeds", "1000000"], r"--final-seeds: final_seeds: Input should be less"),
        (["--device", "gpu0"], r"--device: device: String should match pattern"),
    ],
)
def test_config_numbers_name_their_flag(rte: Path, flags: list[str], message: str) -> None:
    import re

    assert re.search(message, _error(_study(rte, *flags)))


def test_training_settings_are_bounded() -> None:
    for bad in (
        {"steps": 10**30},
        {"steps": 1e30},
        {"learning_rate": float("inf")},
        {"learning_rate": float("nan")},
        {"batch_size": 10**9},
        {"max_length": 10**400},
        {"weight_decay": float("inf")},
        {"device": "bogus"},
    ):
        with pytest.raises(ConfigError, match="training setting") as info:
            TrainConfig(**bad)  # type: ignore[arg-type]
        assert len(str(info.value)) < 500


# -- class 5: silent acceptance ------------------------------------------------------------------
def test_a_misspelt_method_section_is_an_error_with_the_closest_name(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text("shots: [0]\nilc:\n  shots: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"line 2: 'ilc' is neither .* did you mean 'icl'\?"):
        load_space(space, "icl")
    # A section for a method not in this run is still checked.
    space.write_text("shots: [0]\npet:\n  stepz: 5\n")
    with pytest.raises(ConfigError, match=r"line 3: method pet has no hyperparameter 'stepz'"):
        load_space(space, "icl")
    # Any spelling of a method names its section; two sections for one method are an error.
    space.write_text("ICL:\n  shots: [1, 2]\n")
    grid = build_grid(get_method("icl"), get_task("RTE"), load_space(space, "icl"))
    assert {h["shots"] for h in grid} == {1, 2}
    space.write_text("ipet:\n  generations: 1\nipet/single-split:\n  generations: 2\n")
    with pytest.raises(ConfigError, match="line 3: a second section for method ipet"):
        load_space(space, "ipet")


def test_a_per_task_mapping_with_an_unknown_task_names_the_task(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text("pattern: {RTE: [question], RTEE: [based-on]}\n")
    with pytest.raises(ConfigError, match=r"line 1: pattern: 'RTEE' is not a task.*mean RTE\?"):
        load_space(space, "icl")
    space.write_text("icl:\n  pattern: {RTE: [question]}\n  shots: {Bogus: [1]}\n")
    with pytest.raises(ConfigError, match=r"line 3: shots: 'Bogus' is not a task"):
        load_space(space, "icl")
    # A config's inline space is checked the same way.
    with pytest.raises(ConfigError, match=r"'Bogus' is not a task"):
        build_grid(get_method("icl"), get_task("RTE"), {"shots": {"RTE": [1], "Bogus": [2]}})


def test_values_for_a_task_outside_the_run_are_checked_too(rte: Path, tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text("icl:\n  shots: {RTE: [1], CB: [fast]}\n")
    assert "space.yaml, line 2: shots:" in _error(
        _study(rte, "--method", "icl", "--space", str(space))
    )
    space.write_text("icl:\n  shots: {RTE: [1], CB: [2]}\n")
    assert (
        CliRunner().invoke(main, _study(rte, "--method", "icl", "--space", str(space))).exit_code
        == 0
    )


def test_k_values_that_cannot_be_used_are_an_error_not_dropped(rte: Path) -> None:
    message = _error(_study(rte, "--k-values", "0,-2"))
    assert "(got '0')" in message and "(got '-2')" in message


def test_the_dry_run_refuses_pet_on_a_causal_model_as_the_run_does(
    tiny_gpt2: Path, rte: Path, tmp_path: Path
) -> None:
    config = {
        "models": [f"hf:{tiny_gpt2}"], "task": "RTE", "labelled": str(rte),
        "test_from_labelled": 4, "methods": ["pet"], "k": 2, "k_values": [2],
        "strategies": ["cv"],
    }  # fmt: skip
    with pytest.raises(ConfigError) as dry:
        run_study("fewshot", config, dry_run=True)
    from steadyeval import RunOptions

    options = RunOptions(out=tmp_path / "run", progress=False)
    with pytest.raises(ConfigError) as real:
        run_study("fewshot", config, options=options)
    assert str(dry.value) == str(real.value)
    assert str(dry.value).startswith("method pet needs a masked LM;")
    assert not (tmp_path / "run" / "checkpoints").exists()  # refused before any training
    # A backend that has no model folder cannot be fine-tuned: refused in the dry run too.
    scripted = {**config, "models": ["scripted:m"], "methods": ["cls"]}
    with pytest.raises(ModelSpecError, match="a transformers model folder is needed here"):
        run_study("fewshot", scripted, dry_run=True)
    icl = {**config, "methods": ["icl"]}
    assert isinstance(run_study("fewshot", icl, dry_run=True), PlanCounts)


def test_a_checkpoints_path_that_is_a_file_is_refused(rte: Path) -> None:
    assert "is not a folder" in _error(_study(rte, "--checkpoints", str(rte)))


def test_fewglue_rows_at_the_edges(tmp_path: Path) -> None:
    from steadyeval.studies.fewshot import load_task_items

    path = tmp_path / "rte.jsonl"
    path.write_bytes(
        b'{"premise": "a", "hypothesis": "b", "idx": 0, "label": "entailment"}\n\xff\n'
    )
    with pytest.raises(DataError, match=r"rte.jsonl, line 2: not UTF-8"):
        load_task_items(get_task("RTE"), path)
    path.write_text('{"premise": "\\ud800", "hypothesis": "b", "idx": 0, "label": "entailment"}\n')
    with pytest.raises(DataError, match=r"line 1, field 'premise': lone surrogate"):
        load_task_items(get_task("RTE"), path)
    path.write_text(json.dumps({"premise": "a", "hypothesis": "b", "idx": 10**400, "label": 0}))
    with pytest.raises(DataError, match=r"field 'idx': an integer of 401 digits"):
        load_task_items(get_task("RTE"), path)
    path.write_text(json.dumps({"premise": "a", "hypothesis": "b", "idx": 0, "label": "x" * 10**5}))
    with pytest.raises(DataError, match=r"unknown label 'xxx.*\(100,002 characters\)"):
        load_task_items(get_task("RTE"), path)


def test_long_names_are_cut_and_odd_paths_are_errors(rte: Path) -> None:
    long = "x" * 5000
    for flags in (["--method", long], ["--method", f"pet+{long}"], ["--method", f"ipet/{long}"]):
        message = _error(_study(rte, *flags))
        assert "(5,0" in message and len(message) < 600
    argv = _study(rte)
    argv[argv.index("--task") + 1] = long
    assert "unknown task" in _error(argv) and len(_error(argv)) < 600
    # A name too long for the file system is an error, not an OSError traceback.
    assert "cannot read" in _error(_study(rte, "--method", "ipet", "--unlabelled", "y" * 300))


def test_an_unknown_superglue_split_is_refused_before_the_hub(rte: Path) -> None:
    argv = _study(rte)
    at = argv.index("--test-from-labelled")
    argv[at : at + 2] = ["--test", "superglue:validaton"]
    assert "unknown SuperGLUE split; expected superglue:train" in _error(argv)


def test_unlabelled_examples_no_method_reads_are_an_error(rte: Path) -> None:
    message = _error(_study(rte, "--unlabelled", str(rte)))
    assert "is read only by the semi-supervised methods" in message and "icl" in message


@pytest.mark.parametrize("method", ["ipet", "noisy/cross-split", "pet+mlm", "pet-full"])
def test_a_method_without_unlabelled_examples_is_refused_unless_transductive(
    rte: Path, tiny_bert: Path, method: str
) -> None:
    """Issue 40, point 3: no unlabeled.jsonl next to the labelled file and no --unlabelled:
    refused with where FewGLUE's come from, unless --transductive (then the test inputs)."""
    message = _error(_study(rte, "--method", method))
    assert message.count("\n") == 1, message  # one line
    assert f"RTE: no unlabelled examples for the methods that read them (no {rte.parent}" in message
    assert "https://github.com/timoschick/fewglue: FewGLUE/RTE/unlabeled.jsonl" in message
    assert "--unlabelled FILE|DIR" in message and "--transductive" in message
    bert = f"hf:{tiny_bert}"
    result = CliRunner().invoke(main, _study(rte, "--method", method, "--transductive", model=bert))
    assert result.exit_code == 0, result.output


def test_transductive_is_refused_where_it_would_change_nothing(rte: Path) -> None:
    message = _error(_study(rte, "--method", "ipet", "--transductive", "--unlabelled", str(rte)))
    assert "give unlabelled or transductive, not both" in message
    message = _error(_study(rte, "--method", "pet", "--transductive"))
    assert "transductive: only the methods that read unlabelled examples" in message
    assert "none of pet does" in message
    # Every task has its unlabeled.jsonl: the test inputs would not be used, yet the run
    # was recorded as transductive (design.transductive) (review of issue 40).
    (rte.parent / "unlabeled.jsonl").write_text(rte.read_text())
    message = _error(_study(rte, "--method", "ipet", "--transductive"))
    assert "transductive: every task of the run has unlabelled examples (RTE: " in message
    assert "unlabeled.jsonl), so the test inputs would not be used" in message


def test_a_device_this_machine_lacks_is_refused_by_the_dry_run(tiny_bert: Path, rte: Path) -> None:
    from steadyeval.train import resolve_device

    with pytest.raises(ConfigError, match=r"device 'cuda:99': torch sees \d+ CUDA device"):
        resolve_device("cuda:99")
    assert resolve_device("cpu") == "cpu"
    flags = ["--method", "pet", "--device", "cuda:99"]
    assert "device 'cuda:99'" in _error(_study(rte, *flags, model=f"hf:{tiny_bert}"))


@pytest.mark.parametrize(
    ("task", "row", "message"),
    [
        ("MultiRC", {"idx": 0, "passage": None}, r"line 1, field 'passage'"),
        ("MultiRC", {"idx": 0, "passage": {"text": "t", "questions": [None]}}, r"line 1"),
        ("RTE", {"idx": 0, "premise": ["a"], "hypothesis": "b"}, r"line 1, field 'premise'"),
        ("COPA", [1, 2], r"line 1: a row must be a JSON object"),
    ],
)
def test_unlabelled_rows_are_checked_like_labelled_ones(
    tmp_path: Path, task: str, row: object, message: str
) -> None:
    from steadyeval.studies.fewshot import load_unlabelled_items

    path = tmp_path / "unlabeled.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=message):
        load_unlabelled_items(get_task(task), path)
