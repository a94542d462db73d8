"""``steadyeval export``: a run of the tiny GPT-2 (a generate condition, two log-probability
conditions, one shuffled with an escape option, and a sampled condition of three samples per
item) and of the scripted test backend, exported as Inspect logs and as Every Eval Ever
records, then read back by our own Inspect importer, by Inspect's own reader (when inspect-ai
is installed) and validated against the JSON schemas of the ``every-eval-ever`` 0.3.0 wheel."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.results import (
    ExportOptions,
    import_inspect,
    read_results,
    write_imported_run,
)
from steadyeval.results import export_run as export
from steadyeval.scoring import get_scoring

from ..scripted_backend import register

KEY = ("model", "condition", "item_id", "sample_index")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INSPECT_LOGS = Path(__file__).parent / "fixtures" / "inspect"
CONFIG = """\
data: {data}
seed: 2022
conditions:
  - name: free
    format: free
    scoring: generate
    generation: {{max_new_tokens: 6, stop: ["\\n"]}}
  - name: mc
    format: mc
    scoring: option-logprob
  - name: mc-nota-shuffled
    format: mc-nota
    scoring: option-logprob
    option_order: shuffled
  - name: sampled
    format: mc
    scoring: generate
    generation: {{max_new_tokens: 6, temperature: 1.0, n_samples: 3}}
"""
EEE_WHEEL = "every_eval_ever-0.3.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def run_dir(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: the example items on the tiny GPT-2 and a scripted model."""
    register()
    base = tmp_path_factory.mktemp("export-run")
    config = base / "run.yaml"
    config.write_text(CONFIG.format(data=EXAMPLES / "items.jsonl"), encoding="utf-8")
    out = base / "runs" / "demo"
    args = ["run", str(config), "--model", f"hf:{tiny_gpt2}", "--model", "scripted:echo"]
    args += ["--out", str(out), "--no-progress", "--cache", str(base / "cache.sqlite")]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    return out


def _rows(table: Any) -> dict[tuple[Any, ...], dict[str, Any]]:
    rows = {tuple(r[k] for k in KEY): r for r in table.to_pylist()}
    assert len(rows) == table.num_rows  # keys unique
    return rows


def test_the_run_has_what_the_export_must_carry(run_dir: Path) -> None:
    rows = read_results(run_dir).to_pylist()
    assert {r["scoring"] for r in rows} == {"generate", "option-logprob"}
    assert {r["sample_index"] for r in rows if r["condition"] == "sampled"} == {0, 1, 2}
    assert len({r["model"] for r in rows}) == 2
    assert len(rows) == 2 * 12 * (1 + 1 + 1 + 3)  # models × items × (conditions' samples)


def test_inspect_export_imports_back_to_the_same_rows(run_dir: Path, tmp_path: Path) -> None:
    done = export(run_dir, tmp_path / "logs")
    original = _rows(read_results(run_dir))
    assert done.rows == len(original) and len(done.files) == 2 * 4  # (model, condition)
    back = _rows(import_inspect([tmp_path / "logs"]).table)
    assert back.keys() == original.keys()
    for key, row in original.items():
        got = back[key]
        generated = get_scoring(row["scoring"]).extracts
        assert got["output"] == (row["output"] if generated else None), key
        for column in ("parsed", "correct", "gold", "prompt", "prompt_hash", "item_hash"):
            assert got[column] == row[column], (key, column)
        for column in ("template", "format", "scoring", "option_order", "n_shots", "chat"):
            assert got[column] == row[column], (key, column)  # the condition's settings
        meta = json.loads(got["metadata"])
        facts = meta.pop("inspect")["steadyeval"]
        assert meta == json.loads(row["metadata"])
        assert facts["parsed_kind"] == row["parsed_kind"]
        assert facts.get("option_logprobs") == row["option_logprobs"]


def test_inspect_export_opens_in_inspects_own_reader(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="inspect-ai (the [inspect] extra) is not installed")
    from inspect_ai.log import (
        list_eval_logs,
        read_eval_log,
        read_eval_log_sample,
        read_eval_log_sample_summaries,
    )

    done = export(run_dir, tmp_path)
    table = read_results(run_dir).to_pylist()
    seen = 0
    for path in done.files:
        log = read_eval_log(str(path))
        rows = [r for r in table if (r["model"], r["condition"]) == (log.eval.model, log.eval.task)]
        assert log.status == "success" and log.eval.task_args == {"condition": log.eval.task}
        assert log.samples is not None and len(log.samples) == len(rows) > 0
        assert len(read_eval_log_sample_summaries(str(path))) == len(rows)
        last = rows[-1]  # one sample read alone, as Inspect View opens it
        alone = read_eval_log_sample(str(path), id=last["item_id"], epoch=last["sample_index"] + 1)
        assert alone.input == last["prompt"]
        by_key = {(r["item_id"], r["sample_index"] + 1): r for r in rows}
        for sample in log.samples:
            row = by_key[(sample.id, sample.epoch)]
            assert sample.input == row["prompt"] and sample.choices == row["options"]
            score = sample.scores["steadyeval"]  # type: ignore[index]
            assert score.value == ("C" if row["correct"] else "I")
            if get_scoring(row["scoring"]).extracts:
                assert sample.output.completion == row["output"]
            else:  # a log-probability row has no completion
                assert sample.output.completion == ""
                assert row["options"][ord(str(score.answer)) - 65] == row["parsed"]
        epochs = max(r["sample_index"] for r in rows) + 1
        assert log.eval.config.epochs == epochs
        scored = {}
        for r in rows:
            scored.setdefault(r["item_id"], []).append(float(r["correct"]))
        accuracy = sum(sum(v) / len(v) for v in scored.values()) / len(scored)
        assert log.results is not None
        assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(accuracy)
        seen += len(log.samples)
    assert seen == len(table)
    listed = list_eval_logs(str(tmp_path))  # Inspect's listing reads the task from the name
    assert sorted(log.task for log in listed) == sorted([*{r["condition"] for r in table}] * 2)


def test_the_export_is_deterministic_and_refuses_to_overwrite(
    run_dir: Path, tmp_path: Path
) -> None:
    first = export(run_dir, tmp_path)
    data = [p.read_bytes() for p in first.files]
    with pytest.raises(ValueError, match=r"exists; pass --overwrite"):
        export(run_dir, tmp_path)
    again = export(run_dir, tmp_path, ExportOptions(overwrite=True))
    assert again.files == first.files and [p.read_bytes() for p in again.files] == data
    # a copy of the run folder (new file dates) exports the same bytes
    import shutil
    import time

    time.sleep(1.1)  # the copy's files get a later date than the original's
    # (the same folder name: the export names the data set after it)
    copy = shutil.copytree(run_dir, tmp_path / "copy" / run_dir.name, copy_function=shutil.copy)
    copied = export(copy, tmp_path / "from-copy")
    assert [p.name for p in copied.files] == [p.name for p in first.files]
    assert [p.read_bytes() for p in copied.files] == data


def test_log_probability_rows_carry_no_completion() -> None:
    from steadyeval.results._export_run import generated_text

    lm_mc = {"scoring": "lm-eval", "output": "B", "option_logprobs": [-1.0, -0.5]}
    lm_gen = {"scoring": "lm-eval", "output": "12", "option_logprobs": None}
    cloze = {"scoring": "lm-eval", "output": "", "sequence_logprob": -3.0}
    assert not generated_text(lm_mc) and generated_text(lm_gen) and not generated_text(cloze)
    assert not generated_text({"scoring": "option-logprob", "output": "Paris"})
    assert generated_text({"scoring": "a-plugin-not-loaded", "output": "x"})


def test_nothing_of_the_machine_reaches_the_export(run_dir: Path, tmp_path: Path) -> None:
    """The data file's path is in config.json and the host in provenance.json; neither is
    read, so neither is written."""
    files = [*export(run_dir, tmp_path / "i").files, *export(run_dir, tmp_path / "e", ExportOptions(format="eee")).files]  # fmt: skip
    text = "".join(_text(p) for p in files)
    assert str(EXAMPLES) not in text and str(run_dir.parent) not in text
    assert os.uname().nodename not in text


def _text(path: Path) -> str:
    if path.suffix != ".eval":
        return path.read_text(encoding="utf-8")
    with zipfile.ZipFile(path) as zf:
        return "".join(zf.read(n).decode("utf-8") for n in zf.namelist())


# --- Every Eval Ever ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def eee_schemas() -> dict[str, Any]:
    """The JSON schemas the every-eval-ever 0.3.0 wheel ships (the package needs Python
    3.12; its schemas are read from the wheel), downloaded once into the test cache."""
    jsonschema = pytest.importorskip("jsonschema")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "steadyeval" / "test-wheels"
    wheel = folder / EEE_WHEEL
    if not wheel.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "every-eval-ever==0.3.0", "--no-deps"]
        cmd += ["--python-version", "3.12", "--only-binary=:all:", "-d", str(folder), "-q"]
        try:
            got = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot download the every-eval-ever 0.3.0 wheel: {exc}")
        if got.returncode != 0 or not wheel.is_file():
            pytest.skip(
                "cannot download the every-eval-ever 0.3.0 wheel (no network?): "
                + (got.stderr.strip().splitlines() or ["pip failed"])[-1]
            )
    with zipfile.ZipFile(wheel) as zf:
        load = lambda name: json.loads(zf.read(f"every_eval_ever/schemas/{name}"))  # noqa: E731
        aggregate, instance = load("eval.schema.json"), load("instance_level_eval.schema.json")
    return {
        "aggregate": jsonschema.Draft7Validator(aggregate),
        "instance": jsonschema.Draft7Validator(instance),
    }


def _check_eee(files: tuple[Path, ...], out: Path, schemas: dict[str, Any]) -> int:
    """Validate every file; the aggregate and its samples agree; returns the records."""
    records = 0
    uuid4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    for aggregate_path in [p for p in files if p.suffix == ".json"]:
        relative = aggregate_path.relative_to(out).as_posix()
        assert re.fullmatch(rf"data/[^/]+/[^/]+/[^/]+/{uuid4}\.json", relative)
        aggregate = json.loads(aggregate_path.read_text(encoding="utf-8"))
        errors = [e.message for e in schemas["aggregate"].iter_errors(aggregate)]
        assert not errors, errors[:3]
        detail = aggregate["detailed_evaluation_results"]
        samples = out / detail["file_path"]
        assert samples in files and detail["file_path"] == relative[:-5] + "_samples.jsonl"
        data = samples.read_bytes()
        assert detail["checksum"] == hashlib.sha256(data).hexdigest()
        lines = data.decode("utf-8").splitlines()
        assert detail["total_rows"] == len(lines)
        results = {r["evaluation_result_id"] for r in aggregate["evaluation_results"]}
        for line in lines:
            record = json.loads(line)
            errors = [e.message for e in schemas["instance"].iter_errors(record)]
            assert not errors, errors[:3]
            assert record["evaluation_id"] == aggregate["evaluation_id"]
            assert record["model_id"] == aggregate["model_info"]["id"]
            assert record["evaluation_result_id"] in results
        records += len(lines)
    return records


def test_eee_export_validates_against_the_wheels_schemas(
    run_dir: Path, tmp_path: Path, eee_schemas: dict[str, Any]
) -> None:
    done = export(run_dir, tmp_path, ExportOptions(format="eee", benchmark="examples"))
    table = read_results(run_dir).to_pylist()
    assert len(done.files) == 4 and not done.notes  # two models; every row has a verdict
    assert _check_eee(done.files, tmp_path, eee_schemas) == done.rows == len(table)
    models = {}  # model_info.id -> the model's name in the results
    for p in done.files:
        if p.suffix == ".json":
            info = json.loads(p.read_text(encoding="utf-8"))["model_info"]
            models[info["id"]] = info["name"]
    assert sorted(models.values()) == sorted({r["model"] for r in table})
    records = [
        json.loads(line)
        for p in done.files
        if p.suffix == ".jsonl"
        for line in p.read_text(encoding="utf-8").splitlines()
    ]
    by_key = {
        (
            models[r["model_id"]],
            r["evaluation_name"],
            r["sample_id"],
            int(r["metadata"]["sample_index"]),
        ): r
        for r in records
    }
    assert len(by_key) == len(records)
    for row in table:
        record = by_key[(row["model"], row["condition"], row["item_id"], row["sample_index"])]
        assert record["evaluation"]["is_correct"] == row["correct"]
        assert record["input"]["reference"] == row["gold"]
        generated = get_scoring(row["scoring"]).extracts
        assert record["output"]["raw"] == ([row["output"]] if generated else [])
        assert record["answer_attribution"][0]["extracted_value"] == row["parsed"]


def test_eee_export_of_an_import_leaves_out_rows_without_a_verdict(
    tmp_path: Path, eee_schemas: dict[str, Any]
) -> None:
    """An Inspect log with an errored sample (correct null): EEE requires is_correct, so the
    row is left out and the note says so; the Inspect export keeps it as an error."""
    run = write_imported_run(import_inspect([INSPECT_LOGS / "errors"]), tmp_path / "run")
    done = export(run, tmp_path / "eee", ExportOptions(format="eee"))
    assert len(done.notes) == 1 and "left out" in done.notes[0]
    assert _check_eee(done.files, tmp_path / "eee", eee_schemas) == done.rows
    table = read_results(run)
    assert done.rows == sum(c is not None for c in table.column("correct").to_pylist()) > 0
    again = import_inspect(export(run, tmp_path / "inspect").files)
    kinds = [r["parsed_kind"] for r in again.table.to_pylist()]
    assert kinds == table.column("parsed_kind").to_pylist() and "error" in kinds


# --- the command ---------------------------------------------------------------------------


def test_cli_writes_beside_the_run_folder_never_inside(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs" / "copy"
    copy.parent.mkdir()
    import shutil

    shutil.copytree(run_dir, copy)
    before = sorted(p.name for p in copy.iterdir())
    done = CliRunner().invoke(main, ["export", str(copy)])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in copy.iterdir()) == before
    assert len(list((tmp_path / "runs" / "copy-inspect").glob("*.eval"))) == 8
    done = CliRunner().invoke(main, ["export", str(copy)])
    assert done.exit_code == 2 and "--overwrite" in done.output
    done = CliRunner().invoke(main, ["export", str(copy), "--format", "eee"])
    assert done.exit_code == 0 and (tmp_path / "runs" / "copy-eee" / "data" / "copy").is_dir()


def test_cli_errors_name_the_path_and_what_was_expected(run_dir: Path, tmp_path: Path) -> None:
    cases = {
        str(tmp_path / "missing"): "no such folder; expected a run folder",
        str(tmp_path): "no results.parquet in this folder; expected a run folder",
    }
    for path, message in cases.items():
        done = CliRunner().invoke(main, ["export", path])
        assert done.exit_code == 2 and "Traceback" not in done.output
        assert done.output.startswith(f"error: {path}: {message}"), done.output
    done = CliRunner().invoke(main, ["export", str(run_dir), "--out", str(tmp_path / "a.eval")])
    assert done.exit_code == 2 and "one .eval file holds one (model, condition)" in done.output
    done = CliRunner().invoke(
        main, ["export", str(run_dir), "--format", "eee", "--out", str(tmp_path / "a.jsonl")]
    )
    assert done.exit_code == 2 and "give a folder" in done.output


def test_an_unfinished_run_is_refused(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "state": "running"}))
    done = CliRunner().invoke(main, ["export", str(copy), "--out", str(tmp_path / "x")])
    assert done.exit_code == 2 and done.output.startswith(f"error: {copy}: the run did not finish")
    assert not (tmp_path / "x").exists()


def test_one_condition_exports_to_one_eval_file(tmp_path: Path) -> None:
    run = write_imported_run(
        import_inspect([next((INSPECT_LOGS / "tasks").glob("*_science_*.eval"))]), tmp_path / "r"
    )
    done = CliRunner().invoke(main, ["export", str(run), "--out", str(tmp_path / "one.eval")])
    assert done.exit_code == 0, done.output
    back = import_inspect([tmp_path / "one.eval"]).table.to_pylist()
    original = read_results(run).to_pylist()
    assert [(r["item_id"], r["parsed"], r["correct"]) for r in back] == [
        (r["item_id"], r["parsed"], r["correct"]) for r in original
    ]


def test_a_model_name_holding_a_credential_is_never_written(tmp_path: Path) -> None:
    """steadyeval's specs refuse keys; an imported table may name a model anything."""
    from steadyeval.results import InspectImportOptions

    log = next((INSPECT_LOGS / "tasks").glob("*_science_*.eval"))
    for model in ("openai:gpt?api_key=sk-SECRET", "openai:gpt?base_url=http://me:SECRET@h/v1"):
        imported = import_inspect([log], InspectImportOptions(model=model))
        run = write_imported_run(imported, tmp_path / "run")
        for fmt in ("inspect", "eee"):
            with pytest.raises(ValueError, match="looks like a credential") as caught:
                export(run, tmp_path / fmt, ExportOptions(format=fmt))  # type: ignore[arg-type]
            assert "SECRET" not in str(caught.value) and not (tmp_path / fmt).exists()


def test_two_revisions_of_one_model_are_two_eee_evaluations(
    tmp_path: Path, eee_schemas: dict[str, Any]
) -> None:
    import pyarrow as pa

    from steadyeval.results import ImportedRun, InspectImportOptions

    log = next((INSPECT_LOGS / "tasks").glob("*_science_*.eval"))
    parts = [
        import_inspect([log], InspectImportOptions(model=f"hf:org/m@{rev}"))
        for rev in ("aaaa", "bbbb")
    ]
    table = pa.concat_tables([p.table for p in parts])
    run = write_imported_run(ImportedRun(table, parts[0].summary), tmp_path / "run")
    done = export(run, tmp_path / "eee", ExportOptions(format="eee"))
    aggregates = [json.loads(p.read_text()) for p in done.files if p.suffix == ".json"]
    assert len({p.parent for p in done.files}) == 1  # data/run/org/m/
    assert len({a["evaluation_id"] for a in aggregates}) == 2
    assert {a["model_info"]["name"] for a in aggregates} == {"hf:org/m@aaaa", "hf:org/m@bbbb"}
    assert _check_eee(done.files, tmp_path / "eee", eee_schemas) == table.num_rows
