"""Importing lm-evaluation-harness ``--log_samples`` output.

The main test runs lm-eval 0.4.13 itself (in process, offline, sockets refused) on the tiny
GPT-2 with two multiple-choice tasks that differ only in their prompt and one generation
task, over a local JSONL data set; it writes the files exactly as lm-eval's CLI does (the
same ``EvaluationTracker`` calls), imports them, and checks every imported value against
the files and the flips between the two prompts against a direct count.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval import read_results, stats
from steadyeval.cli import main
from steadyeval.reports import ReportOptions, Table, build_report, render_html
from steadyeval.results._import_common import write_imported_run
from steadyeval.results._import_lmeval import LmEvalImportOptions, import_lmeval
from tests.models._lmeval_helpers import no_network, set_offline_env

WORDS = [
    "red",
    "green",
    "blue",
    "cat",
    "dog",
    "river",
    "apple",
    "bread",
    "seven",
    "stone",
    "cloud",
    "lamp",
]
TASKS = {
    "se_plain": "Question: {{question}}\\nAnswer:",
    "se_fancy": "Reply with one word only.\\n\\n### Q: {{question}}\\n### A:",
}
MC_YAML = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files: {data}
test_split: train
output_type: multiple_choice
doc_to_text: "{text}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
"""
GEN_YAML = """task: se_gen
dataset_path: json
dataset_kwargs:
  data_files: {data}
test_split: train
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices[label]}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 4
  do_sample: false
metric_list:
  - metric: exact_match
"""


def _docs() -> list[dict[str, Any]]:
    return [
        {
            "id": f"doc-{i}",
            "question": f"Which word goes with item {i}?",
            "choices": [WORDS[(i + k * 5) % len(WORDS)] for k in range(3)],
            "label": i % 3,
            "subject": "odd" if i % 2 else "even",
        }
        for i in range(10)
    ]


@pytest.fixture(scope="module")
def lmeval_output(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lm-eval's own output folder for three tasks on the tiny GPT-2."""
    pytest.importorskip("lm_eval", reason="lm-eval (test-only dependency) is not installed")
    pytest.importorskip("lm_eval.models.huggingface", reason="lm-eval's hf model needs accelerate")
    set_offline_env()
    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    base = tmp_path_factory.mktemp("lmeval")
    data = base / "items.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in _docs()))
    tasks = base / "tasks"
    tasks.mkdir()
    for name, text in TASKS.items():
        (tasks / f"{name}.yaml").write_text(MC_YAML.format(name=name, data=data, text=text))
    (tasks / "se_gen.yaml").write_text(GEN_YAML.format(data=data))
    out = base / "out"
    tracker = EvaluationTracker(output_path=str(out))
    with no_network():
        results = lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_gpt2},dtype=float32",
            tasks=[*TASKS, "se_gen"],
            task_manager=TaskManager(include_path=str(tasks), include_defaults=False),
            log_samples=True,
            device="cpu",
            batch_size=16,
            evaluation_tracker=tracker,
        )
    assert results is not None
    samples = results.pop("samples")  # what lm-eval's CLI does with --log_samples
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


def _records(out: Path, task: str) -> list[dict[str, Any]]:
    (path,) = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_real_lmeval_samples_import_exactly(lmeval_output: Path, tiny_gpt2: Path) -> None:
    _check_exact(lmeval_output, f"hf:{tiny_gpt2}")


#: lm-eval 0.4.13's output, written by its ``lm_eval`` command
#: (``fixtures/make_lmeval_fixtures.py``): the import of a committed copy stays checked
#: when lm-eval is not installed, or a later version writes something else.
COMMITTED = Path(__file__).parent / "fixtures" / "lmeval" / "out"


def test_committed_lmeval_0_4_13_output_imports_exactly() -> None:
    (results,) = COMMITTED.rglob("results_*.json")
    facts = json.loads(results.read_text())
    assert facts["lm_eval_version"] == "0.4.13"
    _check_exact(COMMITTED, f"hf:{facts['model_name']}")


def _check_exact(lmeval_output: Path, model: str) -> None:
    """Every imported value against lm-eval's own files."""
    imported = import_lmeval([lmeval_output])
    t = imported.table
    assert t.num_rows == 30
    assert imported.summary["conditions"] == ["se_fancy", "se_gen", "se_plain"]
    assert imported.summary["models"] == [model]
    rows = {(r["condition"], r["item_id"]): r for r in t.to_pylist()}
    for task in TASKS:
        for rec in _records(lmeval_output, task):
            row = rows[(task, str(rec["doc_id"]))]
            lls = [float(x[0]) for x in rec["filtered_resps"]]
            assert row["option_logprobs"] == lls
            assert row["options"] == rec["doc"]["choices"]
            assert row["gold_options"] == [rec["doc"]["label"]]
            assert row["correct"] == (rec["acc"] == 1.0)
            assert row["parsed_option"] == lls.index(max(lls))
            assert row["item_hash"] == rec["doc_hash"]
            # One prompt_hash formula: lm-eval's is the whole SHA-256 of the same prompt.
            assert row["prompt_hash"] == rec["prompt_hash"][:16]
            assert row["prompt"] == rec["arguments"]["gen_args_0"]["arg_0"]
            assert row["n_shots"] == 0 and row["scoring"] == "option-logprob"
            assert row["subject"] == rec["doc"]["subject"]
            assert 0 < row["confidence"] <= 1
            meta = json.loads(row["metadata"])
            assert meta["lm_eval"]["prompt_hash"] == rec["prompt_hash"]
            assert meta["id"] == rec["doc"]["id"] and meta["lm_eval"]["metrics"] == {
                "acc": rec["acc"]
            }
    for rec in _records(lmeval_output, "se_gen"):
        row = rows[("se_gen", str(rec["doc_id"]))]
        assert row["output"] == rec["resps"][0][0]
        assert row["parsed"] == rec["filtered_resps"][0]
        assert row["em"] == rec["exact_match"]
        assert row["correct"] == (rec["exact_match"] == 1.0)
        assert row["gold"] == [rec["target"]]


def test_flips_between_two_prompts_are_analysed(lmeval_output: Path, tmp_path: Path) -> None:
    plain = {r["doc_id"]: r["acc"] for r in _records(lmeval_output, "se_plain")}
    fancy = {r["doc_id"]: r["acc"] for r in _records(lmeval_output, "se_fancy")}
    ids = sorted(plain)
    direct = stats.agreement_table([fancy[i] for i in ids], [plain[i] for i in ids])
    assert direct.discordant > 0  # the two prompts disagree on some documents
    opts = LmEvalImportOptions(condition_map={"se_plain": "plain", "se_fancy": "fancy"})
    run_dir = write_imported_run(import_lmeval([lmeval_output], opts), tmp_path / "run")
    assert read_results(run_dir).num_rows == 30
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["imported"]["tool"] == "lm-eval" and summary["conditions"][0] == "fancy"
    assert "## Imported" in (run_dir / "summary.md").read_text()
    report = build_report(run_dir, ReportOptions(n_resamples=100))
    pairs = next(
        b
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Table) and b.title.endswith("pairs of conditions on correct")
    )
    row = next(r for r in pairs.rows if (r[1], r[2]) == ("fancy", "plain"))
    assert row[3:9] == (
        direct.n,
        direct.both,
        direct.only_a,
        direct.only_b,
        direct.neither,
        direct.discordant,
    )
    if direct.discordant:
        assert row[9] == pytest.approx(direct.mcnemar().pvalue)
    assert "fancy" in render_html(report)


def test_import_command(lmeval_output: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = CliRunner().invoke(
        main,
        [
            "import",
            "lm-eval",
            str(lmeval_output),
            "--out",
            str(out),
            "--condition-map",
            "se_gen=generate",
            "--item-id",
            "id",
            "--model",
            "tiny",
        ],
    )
    assert done.exit_code == 0, done.output
    rows = read_results(out).to_pylist()
    assert {r["condition"] for r in rows} == {"generate", "se_plain", "se_fancy"}
    assert {r["item_id"] for r in rows} == {f"doc-{i}" for i in range(10)}
    assert {r["model"] for r in rows} == {"tiny"}
    bad = CliRunner().invoke(
        main,
        [
            "import",
            "lm-eval",
            str(lmeval_output),
            "--out",
            str(out),
            "--condition-map",
            "nosuchtask=x",
        ],
    )
    assert bad.exit_code == 2 and "names 'nosuchtask', which no imported file holds" in bad.output


# -- hand-written records: edge cases without running lm-eval ---------------------------------


def _mc_record(doc_id: int, acc: float, *, flt: str = "none") -> dict[str, Any]:
    ctx = f"Q{doc_id}?\nA:"
    return {
        "doc_id": doc_id,
        "doc": {"q": f"Q{doc_id}?", "choices": ["x", "y"], "label": 1},
        "target": "1",
        "arguments": {
            "gen_args_0": {"arg_0": ctx, "arg_1": " x"},
            "gen_args_1": {"arg_0": ctx, "arg_1": " y"},
        },
        "resps": [[["-2.0", "False"]], [["-1.0", "True"]]],
        "filtered_resps": [["-2.0", "False"], ["-1.0", "True"]],
        "filter": flt,
        "metrics": ["acc", "brier"],
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": "t",
        "acc": acc,
        "brier": 0.3,
    }


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_without_results_json_types_are_inferred(tmp_path: Path) -> None:
    f = _write(
        tmp_path / "samples_toy_2024-01-01T00-00-00.000001.jsonl",
        [_mc_record(0, 1.0), _mc_record(1, 1.0)],
    )
    t = import_lmeval([f], LmEvalImportOptions(model="m")).table.to_pylist()
    assert [r["options"] for r in t] == [["x", "y"], ["x", "y"]]
    assert t[0]["parsed"] == "y" and t[0]["correct"] is True and t[0]["condition"] == "toy"
    assert t[0]["option_logprobs_per_char"] == [-2.0, -1.0]
    assert t[0]["n_shots"] is None and t[0]["model"] == "m"


def test_several_filters_become_conditions(tmp_path: Path) -> None:
    f = _write(
        tmp_path / "samples_gsm_2024-01-01T00-00-00.000001.jsonl",
        [_mc_record(0, 1.0, flt="strict"), _mc_record(0, 0.0, flt="flexible")],
    )
    conds = {r["condition"] for r in import_lmeval([f]).table.to_pylist()}
    assert conds == {"gsm/strict", "gsm/flexible"}
    opts = LmEvalImportOptions(condition_map={"gsm": "g"})
    assert {r["condition"] for r in import_lmeval([f], opts).table.to_pylist()} == {
        "g/strict",
        "g/flexible",
    }


@pytest.mark.parametrize(
    ("records", "options", "message"),
    [
        ([_mc_record(0, 1.0), _mc_record(0, 1.0)], {}, r"line 2: duplicate row .*line 1"),
        ([_mc_record(0, 1.0)], {"metric": "brier"}, r"line 1: metric 'brier' is 0\.3, not 0/1"),
        ([_mc_record(0, 1.0)], {"metric": "f1"}, r"metric 'f1' is not in this record"),
        ([_mc_record(0, 1.0)], {"item_id_field": "id"}, r"doc has no field 'id'.*fields: q"),
        ([{"doc_id": 0}], {}, r"line 1, field 'doc': missing field"),
    ],
)
def test_bad_input_names_the_file_and_line(
    tmp_path: Path, records: list[dict[str, Any]], options: dict[str, Any], message: str
) -> None:
    f = _write(tmp_path / "samples_toy_2024-01-01T00-00-00.000001.jsonl", records)
    with pytest.raises(ValueError, match=message):
        import_lmeval([f], LmEvalImportOptions(**options))


def test_missing_paths_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file or folder"):
        import_lmeval([tmp_path / "nope"])
    with pytest.raises(ValueError, match="no samples_"):
        import_lmeval([tmp_path])
    f = tmp_path / "samples_x_2024-01-01T00-00-00.000001.jsonl"
    f.write_text('{"doc_id": 0,\n')
    with pytest.raises(ValueError, match=r"line 1: invalid JSON"):
        import_lmeval([f])


def test_import_follows_the_run_folder_rules(tmp_path: Path) -> None:
    """The same logs again rewrite the same run; other logs into that folder are refused
    unless --overwrite."""
    a = _write(tmp_path / "samples_a_2024-01-01T00-00-00.000001.jsonl", [_mc_record(0, 1.0)])
    b = _write(tmp_path / "samples_b_2024-01-01T00-00-00.000001.jsonl", [_mc_record(1, 0.0)])
    out = str(tmp_path / "run")
    for _ in range(2):
        r = CliRunner().invoke(main, ["import", "lm-eval", str(a), "--out", out])
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["import", "lm-eval", str(b), "--out", out])
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = CliRunner().invoke(main, ["import", "lm-eval", str(b), "--out", out, "--overwrite"])
    assert r.exit_code == 0, r.output
    assert {row["condition"] for row in read_results(out).to_pylist()} == {"b"}


def test_an_option_that_is_not_utf8_is_refused_not_a_traceback(tmp_path: Path) -> None:
    """``--model $'m\\xff'``: the shell passes bytes that are not UTF-8, which Python holds
    as a lone surrogate; hashing the options for the run id crashed on it."""
    a = _write(tmp_path / "samples_a_2024-01-01T00-00-00.000001.jsonl", [_mc_record(0, 1.0)])
    argv = ["import", "lm-eval", str(a), "--out", str(tmp_path / "run"), "--model", "m\udcff"]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2, r.output
    assert "not UTF-8" in r.output and "Traceback" not in r.output
