"""Run and study configs at the edges (issue 37 classes 2, 4 and 5; issue 38.6): every number
has a stated range checked before anything is allocated, the error names the flag (or the key
and line of the YAML file), and the dry run refuses what the real run refuses."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, Generation, Shots, Template
from steadyeval.cli import main
from steadyeval.conditions import MAX_TEMPLATE_CHARS
from steadyeval.run import load_run_config, run_config
from tests.scripted_backend import register

BIG = "1" + "0" * 400


@pytest.fixture(autouse=True)
def _scripted() -> None:
    register()


@pytest.fixture
def items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b", "c"], "answer": i % 3}
        for i in range(6)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _error(argv: Sequence[str]) -> str:
    """The one error line of a command that must fail with exit code 2."""
    result = CliRunner().invoke(main, list(argv))
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    return result.output


RUN = ("run", "--model", "scripted:m", "--data", "items.jsonl")


def test_a_missing_data_flag_is_named(items: Path) -> None:
    out = _error(["run", "--model", "scripted:m", "--dry-run"])
    assert "--data is required (or give a config file with data:)" in out
    assert "<flags>" not in out and "Field required" not in out
    out = _error(["study", "spread", "--model", "scripted:m", "--dry-run"])
    assert "--data is required (or give a config file with data:)" in out
    (items.parent / "c.yaml").write_text("models: [scripted:m]\n")
    out = _error(["run", "c.yaml", "--dry-run"])
    assert "c.yaml, line 1: data: Field required (give data: in the file, or --data)" in out


@pytest.mark.parametrize(
    ("flags", "expect"),
    [
        (("--seed", "-1"), "flag --seed: seed: Input should be greater than or equal to 0"),
        (("--seed", "4294967296"), "flag --seed: seed: Input should be less than or equal to"),
        (("--seed", BIG), "flag --seed: seed: an integer of 401 digits"),
        (("--limit", BIG), "flag --limit: limit: an integer of 401 digits"),
        (("--workers", "0"), "Invalid value for '--workers': 0 is not in the range 1<=x<=1024"),
        (("--workers", BIG), "Invalid value for '--workers'"),
    ],
)
def test_run_flags_out_of_range_name_the_flag(
    items: Path, flags: tuple[str, str], expect: str
) -> None:
    for dry in ((), ("--dry-run",)):
        assert expect in _error([*RUN, *flags, *dry, "--out", "out"])


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("seed: -3", "c.yaml, line 3: seed: Input should be greater than or equal to 0"),
        (
            "conditions: [{name: a, shots: {n: 1, seed: -1}}]",
            "c.yaml, line 3: conditions.0.shots.seed: Input should be greater than or equal to 0",
        ),
        (
            "conditions: [{name: a, generation: {temperature: 1, n_samples: 100000000}}]",
            "conditions.0.generation.n_samples: Input should be less than or equal to 10000",
        ),
        ("seed: [1, 2]", "c.yaml, line 3: seed: Input should be a valid integer"),
        ("seed: true", "c.yaml, line 3: seed: true or false where a number goes"),  # was seed 1
        (
            "conditions: [{name: a, shots: {n: true}}]",
            "c.yaml, line 3: conditions.0.shots.n: true or false where a number goes",
        ),
        ("conditions: {name: a}", "c.yaml, line 3: conditions: Input should be a valid list"),
        ("shot_pools: [a]", "c.yaml, line 3: shot_pools: Input should be a valid dictionary"),
        # a required field of a conditions dataclass is required in YAML too (not a default
        # of dataclasses.MISSING that failed later, located at the condition)
        ("conditions: [{format: free}]", "c.yaml, line 3: conditions.0.name: Field required"),
        (
            "conditions: [{name: a, template: {name: t}}]",
            "c.yaml, line 3: conditions.0.template.body: Field required",
        ),
        (
            "conditions: [{name: a, format: {kind: mc}}]",
            "c.yaml, line 3: conditions.0.format.name: Field required",
        ),
        # every member of a union refused the type: one error, not an empty message
        (
            "conditions: [{name: a, template: null}]",
            "conditions.0.template: Input should be a valid string or a valid dictionary",
        ),
        # a key the user wrote with a capital is named (it is not a union member's tag)
        ("Seed: 3", "c.yaml, line 3: Seed: unknown key; allowed keys here: columns,"),
        (
            "conditions: [{name: a, generation: {Stop: [x]}}]",
            "conditions.0.generation.Stop: unknown key; allowed keys here: max_new_tokens,",
        ),
        (
            "conditions: [{name: a, verbalizer: {name: v, words: {A: 1}}}]",
            "conditions.0.verbalizer.words.A: Input should be a valid string",
        ),
    ],
)
def test_yaml_values_out_of_range_or_of_the_wrong_type_name_key_and_line(
    items: Path, line: str, expect: str
) -> None:
    (items.parent / "c.yaml").write_text(f"data: items.jsonl\nmodels: [scripted:m]\n{line}\n")
    for dry in ((), ("--dry-run",)):
        assert expect in _error(["run", "c.yaml", *dry, "--out", "out"])


def test_a_ten_megabyte_template_is_refused_with_its_limit(items: Path) -> None:
    body = "x" * (MAX_TEMPLATE_CHARS + 1)
    (items.parent / "c.yaml").write_text(
        "data: items.jsonl\nmodels: [scripted:m]\nconditions:\n"
        f"  - {{name: a, template: {{name: t, body: '{body}'}}}}\n"
    )
    out = _error(["run", "c.yaml", "--dry-run"])
    assert f"over the limit of {MAX_TEMPLATE_CHARS:,} characters for a template part" in out
    (items.parent / "c.yaml").write_text(
        "data: items.jsonl\nmodels: [scripted:m]\nconditions:\n"
        f"  - {{name: a, template: {{name: t, body: '{'y' * 1_100_000}'}}}}\n"
    )
    out = _error(["run", "c.yaml", "--dry-run"])
    assert "line 4: conditions.0.template.body: text of 1,100,000 characters" in out
    with pytest.raises(ConfigError, match="body is 100,001 characters, over the limit"):
        Template(name="t", body=body)


def test_python_mappings_get_the_same_checks(items: Path) -> None:
    base = {"data": str(items), "models": ["scripted:m"]}
    for bad, match in [
        ({"seed": 10**400}, "seed: an integer of 401 digits"),
        ({"limit": float("nan")}, "limit: nan is not a finite number"),
        ({"conditions": [{"name": "\ud800"}]}, r"conditions\.0\.name: .* lone surrogate"),
    ]:
        with pytest.raises(ConfigError, match=match):
            run_config({**base, **bad}, dry_run=True)
    with pytest.raises(ConfigError, match=r"--seed is required|seed: an integer"):
        load_run_config(None, {**base, "seed": -(10**30)})


def test_the_conditions_state_their_ranges() -> None:
    for make, match in [
        (lambda: Generation(max_new_tokens=10**12), r"max_new_tokens must be an integer in 1\.\."),
        (lambda: Generation(n_samples=10**9), r"n_samples must be an integer in 1\.\.10,000"),
        (lambda: Generation(temperature=float("inf")), "temperature must be a finite number"),
        (lambda: Generation(top_p=float("nan")), r"top_p must be a finite number > 0 and <= 1"),
        (lambda: Generation(seed=-1), "seed must be an integer in 0.."),
        (lambda: Shots(n=1, seed=2**40), "seed must be an integer in 0.."),
    ]:
        with pytest.raises(ConfigError, match=match):
            make()


@pytest.mark.parametrize(
    ("flags", "expect"),
    [
        (("--n-formats", "1000000000"), "flag --n-formats: n_formats: Input should be less than"),
        (("--draws", "1000000000000"), "flag --draws: draws: Input should be less than or equal"),
        (("--draws", BIG), "flag --draws: draws: an integer of 401 digits"),
        (("--grammar-seed", "-5"), "flag --grammar-seed: grammar_seed: Input should be greater"),
        (("--seed", "-5"), "flag --seed: seed: Input should be greater than or equal to 0"),
        (("--confidence", "nan"), "flag --confidence: confidence: nan is not a finite number"),
        (("--budget", "inf"), "'inf' is not a valid integer"),
        (("--method", "search", "--budget", "4", "--batch", "5"), "below two search steps"),
    ],
)
def test_spread_options_out_of_range_fail_in_the_dry_run_too(
    items: Path, flags: tuple[str, ...], expect: str
) -> None:
    argv = ["study", "spread", "--model", "scripted:m", "--data", "items.jsonl"]
    for dry in ((), ("--dry-run",)):
        assert expect in _error([*argv, "--n-formats", "3", *flags, *dry, "--out", "out"])


def test_spread_draws_times_cells_are_checked_before_the_run(items: Path, tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "question": "q", "options": ["a", "b"], "answer": 0} for i in range(50)]
    (tmp_path / "many.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["study", "spread", "--model", "scripted:m", "--data", "many.jsonl"]
    flags = ["--n-formats", "1000", "--budget", "1000", "--draws", "50000"]
    out = _error([*argv, *flags, "--dry-run"])
    assert "over the estimator's limit of 50,000,000 values held at once" in out
    assert "pass --draws 47619 or fewer" in out
    # formats + items over the fit's limit: before any cell is asked, with what to do
    out = _error([*argv, "--n-formats", "6000", "--dry-run"])
    assert "6,000 formats + 24 covariate columns (the grammar's choices) is over" in out
    assert "limit of 6,000" in out and "--n-formats 5976 or fewer (or --no-covariates)" in out


def test_spread_formats_plus_items_are_checked_before_the_run(items: Path, tmp_path: Path) -> None:
    """Formats + items + the grammar's covariate columns over MAX_EFFECTS (20,000): the
    sampler's time and the completed matrices grow with it; refused up front, with the
    sample size that fits (all of MMLU, 14,042 items, fits since the fit's Schur complement)."""
    row = {"question": "q", "options": ["a", "b"], "answer": 0}
    lines = (json.dumps({"id": f"q{i}", **row}) + "\n" for i in range(20_000))
    (tmp_path / "big.jsonl").write_text("".join(lines))
    argv = ["study", "spread", "--model", "scripted:m", "--data", "big.jsonl", "--dry-run"]
    out = _error(argv)
    assert "100 formats + 20,000 items + 24 covariate columns" in out
    assert "--sample 19876 or fewer" in out  # as it can be pasted, room left for the covariates
    # the search's analysis estimates too (review: it failed after asking the model)
    assert "is over the estimator's limit" in _error([*argv, "--method", "search"])
    # without the covariates, only formats + items count
    out = _error([*argv, "--no-covariates"])
    assert "100 formats + 20,000 items is over the estimator's limit of 20,000" in out
    assert "--sample 19900 or fewer" in out


def test_the_completed_matrix_is_checked_before_the_run(items: Path, tmp_path: Path) -> None:
    """1,000 formats × 10,000 items is within formats + items, but every posterior draw
    completes a 10M-cell matrix (review: a 6,000 × 14,000 estimate took 15-25 min, and the
    decide study's comparison holds models × formats × items): refused up front, with the
    sample that fits, for one model (spread) and for every model at once (decide)."""
    row = {"question": "q", "options": ["a", "b"], "answer": 0}
    lines = (json.dumps({"id": f"q{i}", **row}) + "\n" for i in range(10_000))
    (tmp_path / "big.jsonl").write_text("".join(lines))
    spread = ["study", "spread", "--model", "scripted:m", "--data", "big.jsonl", "--dry-run"]
    out = _error([*spread, "--n-formats", "1000", "--budget", "2000"])
    assert "1,000 formats × 10,000 items is over the estimator's limit of 9,000,000 cells" in out
    assert "--sample 9000 or fewer" in out
    models = ["--model", "scripted:a", "--model", "scripted:b"]
    decide = ["study", "decide", *models, "--data", "big.jsonl", "--dry-run"]
    out = _error([*decide, "--n-formats", "500", "--budget", "2000"])
    assert "2 models × 500 formats × 10,000 items is over" in out
    assert "--sample 9000 or fewer" in out


def test_spread_covariate_columns_count_before_the_run(items: Path, tmp_path: Path) -> None:
    """19,950 items + 50 formats is under 20,000, but the fit adds the grammar's 24 covariate
    columns: refused before any cell reaches the model (review: the run sent every request,
    then the fit refused), and the suggested sample fits (19,926 items + 50 + 24 = 20,000)."""
    row = {"question": "q", "options": ["a", "b"], "answer": 0}
    lines = (json.dumps({"id": f"q{i}", **row}) + "\n" for i in range(19_950))
    (tmp_path / "big.jsonl").write_text("".join(lines))
    argv = ["study", "spread", "--model", "scripted:m", "--data", "big.jsonl", "--n-formats", "50"]
    out = _error([*argv, "--budget", "60", "--out", str(tmp_path / "run")])
    assert "50 formats + 19,950 items + 24 covariate columns" in out
    assert "--sample 19926 or fewer" in out
    assert not (tmp_path / "run" / "results.parquet").exists()


@pytest.mark.parametrize(
    ("flags", "expect"),
    [
        (("--orders", "100000000000"), "flag --orders: orders: Input should be less than or equal"),
        (("--temperature", "inf"), "flag --temperature: sampling.temperature: inf is not a finite"),
        (
            ("--temperature", "1", "--samples", "100000000000"),
            "flag --samples: sampling.n_samples: Input should be less than or equal to 10000",
        ),
        (("--max-new-tokens", BIG), "flag --max-new-tokens: max_new_tokens: an integer of 401"),
        (("--seed", "-1"), "flag --seed: seed: Input should be greater than or equal to 0"),
        (("--escape", "x") * 101, "flag --escape: escapes: List should have at most 100 items"),
    ],
)
def test_formats_options_out_of_range_name_the_flag(
    items: Path, flags: tuple[str, ...], expect: str
) -> None:
    squad = Path(__file__).parents[2] / "examples" / "squad-mini.json"
    argv = ["study", "formats", "--model", "scripted:m", "--data", str(squad), "--dry-run"]
    assert expect in _error([*argv, "--answerable", "2", "--unanswerable", "2", *flags])


def test_knowledge_seed_out_of_range_names_the_flag(items: Path) -> None:
    out = _error(["study", "knowledge", "--model", "scripted:m", "--data", ".", "--seed", "-2"])
    assert "flag --seed: seed: Input should be greater than or equal to 0" in out
