"""Importing logs Inspect AI itself wrote (``fixtures/inspect``, made by
``fixtures/make_inspect_fixtures.py`` with inspect-ai's ``mockllm/model``), checked field by
field against ``fixtures/inspect/expected.json``: what Inspect's own reader
(``inspect_ai.log.read_eval_log``) says of each log. Inspect is not needed to run these."""

from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steadyeval.cli import main
from steadyeval.reports import ReportOptions, build_report
from steadyeval.results import InspectImportOptions, import_inspect, write_imported_run

LOGS = Path(__file__).parent / "fixtures" / "inspect"
EXPECTED: dict[str, dict[str, Any]] = json.loads((LOGS / "expected.json").read_text())
_VALUE = {"C": True, "I": False, "N": False}


def _one(folder: str) -> Path:
    (path,) = (LOGS / folder).glob("*.eval")
    return path


def _expected_parse(sample: dict[str, Any], answer: Any) -> tuple[str, list[int] | None]:
    """``(parsed_kind, chosen options)`` as Inspect's answer says, worked out here."""
    if sample["error"]:
        return "error", None
    if not sample["choices"]:
        return "free", None
    letters = re.findall(r"[A-Z]", answer or "")
    if not letters:
        return "unmatched", None
    return ("option" if len(letters) == 1 else "options"), [ord(x) - 65 for x in letters]


def _check_row(row: dict[str, Any], sample: dict[str, Any]) -> None:
    meta = json.loads(row["metadata"])
    facts = meta.pop("inspect")
    assert meta == (sample["metadata"] or {})
    assert row.get("subject") == (sample["metadata"] or {}).get("subject")
    assert row["options"] == sample["choices"]
    assert facts["target"] == sample["target"] and facts["error"] == sample["error"]
    assert facts["stop_reason"] == sample["stop_reason"]
    errored = sample["error"] is not None
    assert row["output"] == (sample["completion"] or None if errored else sample["completion"])
    scores = sample["scores"]
    name = next(iter(scores), None)
    value = scores[name]["value"] if name else None
    answer = scores[name]["answer"] if name else None
    assert (facts["scorer"], facts["score_value"], facts["score_answer"]) == (name, value, answer)
    assert row["correct"] == _VALUE.get(value) if name else row["correct"] is None
    kind, chosen = _expected_parse(sample, answer)
    assert row["parsed_kind"] == kind
    targets = sample["target"] if isinstance(sample["target"], list) else [sample["target"]]
    if sample["choices"]:
        gold = sorted(ord(t) - 65 for t in targets)
        assert row["gold_options"] == gold
        assert row["gold"] == [sample["choices"][g] for g in gold]
        if kind == "option":
            assert chosen is not None
            assert row["parsed_option"] == chosen[0]
            assert row["parsed"] == sample["choices"][chosen[0]]
    else:
        assert row["gold"] == targets and row["parsed"] == answer


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_field_equals_inspects_reader(name: str) -> None:
    want = EXPECTED[name]
    imported = import_inspect([LOGS / name], InspectImportOptions(allow_unfinished=True))
    rows = {(r["item_id"], r["sample_index"]): r for r in imported.table.to_pylist()}
    assert len(rows) == len(want["samples"]) > 0
    for sample in want["samples"]:
        row = rows[(f"{want['task']}/{sample['id']}", sample["epoch"] - 1)]
        assert row["model"] == want["model"] and row["condition"] == want["task"]
        _check_row(row, sample)
    (log,) = imported.summary["imported"]["logs"]
    assert log["status"] == want["status"] and log["error"] == want["error"]
    assert (log["epochs"], log["epochs_reducer"]) == (want["epochs"], want["epochs_reducer"])
    assert log["inspect_metrics"] == want["metrics"]
    assert log["errored"] == sum(s["error"] is not None for s in want["samples"])
    (by_condition,) = imported.summary["by_condition"]
    accuracy = [v for k, v in want["metrics"].items() if k.endswith("/accuracy")]
    if want["status"] == "success" and want["epochs"] == 1:  # same numbers as Inspect's
        assert by_condition["accuracy"] == pytest.approx(accuracy[0])


def test_all_rows_compared() -> None:
    n = sum(len(e["samples"]) for e in EXPECTED.values())
    assert n == 55 and len(EXPECTED) == 13


def test_eval_logs_are_zstandard_archives_and_match_the_json_log() -> None:
    with zipfile.ZipFile(_one("epochs")) as zf:  # Inspect's default: zip method 93
        assert {i.compress_type for i in zf.infolist()} == {93}
    (json_log,) = (LOGS / "json").glob("*.json")
    a = import_inspect([json_log]).table.to_pylist()
    b = import_inspect([next((LOGS / "tasks").glob("*_science_*.eval"))]).table.to_pylist()
    same = ("item_id", "options", "output", "parsed", "parsed_kind", "correct", "item_hash")
    assert [{k: r[k] for k in same} for r in a] == [{k: r[k] for k in same} for r in b]


def test_without_zstandard_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ValueError, match=r"header\.json: compressed with Zstandard.*pip install"):
        import_inspect([_one("epochs")])


@pytest.mark.parametrize(
    ("folder", "status", "held"),
    [("failed", "error", "3 of 4"), ("killed", "started", "3 of 6")],
)
def test_unfinished_logs_are_refused_in_one_line(
    folder: str, status: str, held: str, tmp_path: Path
) -> None:
    done = CliRunner().invoke(
        main, ["import", "inspect", str(LOGS / folder), "--out", str(tmp_path)]
    )
    assert done.exit_code == 2 and "Traceback" not in done.output
    (line,) = done.output.strip().splitlines()
    assert line.startswith(f"error: {_one(folder)}: Inspect status '{status}'")
    assert f"holds {held} samples" in line and "--allow-unfinished" in line
    done = CliRunner().invoke(
        main,
        ["import", "inspect", str(LOGS / folder), "--out", str(tmp_path), "--allow-unfinished"],
    )
    assert done.exit_code == 0, done.output
    assert f"note: {_one(folder).name} (task " in done.output and f"status {status}" in done.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [g["status"] for g in summary["imported"]["logs"]] == [status]
    assert f"| {status} |" in (tmp_path / "summary.md").read_text()


def test_cancelled_log_beside_its_retry_takes_the_retry(tmp_path: Path) -> None:
    cancelled, retry = sorted((LOGS / "retry").glob("*.eval"))
    assert EXPECTED[f"retry/{cancelled.name}"]["status"] == "cancelled"
    imported = import_inspect([LOGS / "retry"])
    assert imported.table.num_rows == 6
    assert {json.loads(m)["inspect"]["log"] for m in imported.table["metadata"].to_pylist()} == {
        retry.name
    }
    (note,) = imported.summary["imported"]["notes"]
    assert note.startswith(f"{cancelled.name} (task slow, status cancelled, 4 samples) left out")
    assert retry.name in note
    done = CliRunner().invoke(
        main, ["import", "inspect", str(LOGS / "retry"), "--out", str(tmp_path / "r")]
    )
    assert done.exit_code == 0 and "left out" in done.output


def test_eval_set_folder(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        main, ["import", "inspect", str(LOGS / "eval-set"), "--out", str(tmp_path / "run")]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["conditions"] == ["arith", "science"] and summary["n_rows"] == 8
    with pytest.raises(ValueError, match=r"eval-set\.json: Inspect's eval-set\.json describes"):
        import_inspect([LOGS / "eval-set" / "eval-set.json"])


def test_errored_samples_are_their_own_kind() -> None:
    imported = import_inspect([LOGS / "errors"])
    rows = imported.table.to_pylist()
    bad = [r for r in rows if r["parsed_kind"] == "error"]
    assert [r["item_id"] for r in bad] == ["flaky/2"]
    assert bad[0]["correct"] is None and bad[0]["output"] is None
    (record,) = imported.summary["by_condition"]
    assert (record["errored"], record["unmatched"], record["n"]) == (1, 0, 4)
    assert record["accuracy"] == pytest.approx(1 / 3)  # Inspect leaves it out, as here


def test_several_correct_answers_parse_as_a_set_of_options() -> None:
    (path,) = (LOGS / "tasks").glob("*_multi_*.eval")
    rows = {r["item_id"]: r for r in import_inspect([path]).table.to_pylist()}
    both = rows["multi/1"]
    assert (both["parsed_kind"], both["correct"], both["parsed_option"]) == ("options", True, None)
    assert json.loads(both["parsed"]) == ["Red", "Blue"] and both["parsed_options"] == "[0,2]"
    assert both["gold_options"] == [0, 2] and both["gold"] == ["Red", "Blue"]
    half = rows["multi/2"]  # one of two correct answers: one option, incorrect
    assert (half["parsed_kind"], half["parsed_option"], half["correct"]) == ("option", 0, False)
    assert half["parsed_options"] is None


def test_tasks_are_scoped_unless_mapped() -> None:
    rows = import_inspect([LOGS / "tasks"]).table.to_pylist()
    assert len({r["item_id"] for r in rows}) == len(rows) == 15  # no two tasks pair
    pair = {"science": "sci", "science_cot": "sci"}
    paired = import_inspect([LOGS / "tasks"], InspectImportOptions(item_scope=pair))
    ids = {r["condition"]: set() for r in paired.table.to_pylist()}
    for r in paired.table.to_pylist():
        ids[r["condition"]].add(r["item_id"])
    assert ids["science"] == ids["science_cot"] == {f"sci/{i}" for i in range(1, 5)}
    assert paired.summary["imported"]["notes"] == []
    with pytest.warns(UserWarning, match=r"arith, science share item ids.*4 of 4"):
        wrong = import_inspect(
            [LOGS / "tasks"], InspectImportOptions(item_scope={"science": "x", "arith": "x"})
        )
    assert "hold different samples" in wrong.summary["imported"]["notes"][0]
    with pytest.raises(ValueError, match=r"--item-scope names 'nope'"):
        import_inspect([LOGS / "tasks"], InspectImportOptions(item_scope={"nope": "x"}))


def test_epoch_reducer_is_recorded_and_reported(tmp_path: Path) -> None:
    imported = import_inspect([LOGS / "epochs"])
    (record,) = imported.summary["by_condition"]
    assert record["n"] == 8 and record["accuracy"] == 0.5  # per epoch
    (log,) = imported.summary["imported"]["logs"]
    assert (
        log["epochs_reducer"] == ["at_least_1"]
        and log["inspect_metrics"]["choice/accuracy"] == 0.75
    )
    (note,) = imported.summary["imported"]["notes"]
    assert "one row per epoch" in note and "at_least_1" in note and "0.75" in note
    run_dir = write_imported_run(imported, tmp_path / "run")
    report = build_report(run_dir, ReportOptions(n_resamples=50))
    assert ("import note", note) in report.facts


def test_damaged_eval_logs_give_a_located_error(tmp_path: Path) -> None:
    cut = tmp_path / "cut.eval"
    cut.write_bytes(_one("epochs").read_bytes()[:-200])
    flipped = tmp_path / "flipped.eval"
    shutil.copy(_one("epochs"), flipped)
    with zipfile.ZipFile(flipped) as zf:
        info = zf.getinfo("header.json")
    data = bytearray(flipped.read_bytes())
    data[info.header_offset + 30 + len("header.json") + 40] ^= 0xFF
    flipped.write_bytes(bytes(data))
    for path, said in [
        (cut, "not a readable zip archive"),
        (flipped, "flipped.eval!header.json: "),
    ]:
        done = CliRunner().invoke(
            main, ["import", "inspect", str(path), "--out", str(tmp_path / "o")]
        )
        assert done.exit_code == 2 and "Traceback" not in done.output
        (line,) = done.output.strip().splitlines()
        assert line.startswith(f"error: {path}") and said in line
