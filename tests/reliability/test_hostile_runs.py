"""Run folders as they are read back (issue 37, classes 2-5): results.parquet,
summary.json and manifest.json damaged, huge, of the wrong types, not UTF-8 or replaced by
special files, read by ``report``, ``compare``, ``reanalyze`` and ``read_results``. The
manifest is rewritten to match where the damage must get past its hash check (a folder
from elsewhere can be consistent and still hostile)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from steadyeval import DataError, read_results
from steadyeval.cli import main
from steadyeval.results import read_summary
from steadyeval.studies import reanalyze

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
RUN_FILES = ("results.parquet", "summary.json", "summary.md", "config.json", "provenance.json")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder written by ``import lm-eval`` of the fixture (no model needed)."""
    out = tmp_path_factory.mktemp("base") / "run"
    lm = next((FIXTURES / "lmeval" / "out").iterdir())
    done = CliRunner().invoke(main, ["import", "lm-eval", str(lm), "--out", str(out)])
    assert done.exit_code == 0, done.output
    return out


def _copy(base: Path, tmp: Path) -> Path:
    run = tmp / "run"
    shutil.copytree(base, run, symlinks=True)
    return run


def _remanifest(run: Path) -> None:
    files = {}
    for n in RUN_FILES:
        if (run / n).is_file():
            with (run / n).open("rb") as fh:
                files[n] = hashlib.file_digest(fh, "sha256").hexdigest()
    (run / "manifest.json").write_text(json.dumps({"run_id": _run_id(run), "files": files}))


def _run_id(run: Path) -> str:
    """The run id a run would record: summary.json's ("x" where it has none: a FIFO, a
    summary of the wrong shape)."""
    path = run / "summary.json"
    if not path.is_file():
        return "x"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return "x"
    return str(summary.get("run_id", "x")) if isinstance(summary, dict) else "x"


def _line(argv: list[str]) -> str:
    """The CLI's one error line, from a thread that must finish (no FIFO is opened)."""
    box: list[Any] = []
    worker = threading.Thread(
        target=lambda: box.append(CliRunner().invoke(main, argv)), daemon=True
    )
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"{argv} hangs"
    result = box[0]
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and len(line) < 600
    return line


def _report(run: Path) -> str:
    return _line(["report", str(run), "--format", "json", "-o", str(run.parent / "r.json")])


SPECIAL: list[tuple[str, Callable[[Path], object], str]] = [
    ("fifo", os.mkfifo, "is a FIFO (named pipe)"),
    ("devzero", lambda p: p.symlink_to("/dev/zero"), "is a character device"),
    ("folder", lambda p: p.mkdir(), "is a folder"),
]


@pytest.mark.parametrize("name", ["summary.json", "results.parquet", "manifest.json"])
@pytest.mark.parametrize(("kind", "make", "said"), SPECIAL)
def test_special_files_in_a_run_folder(
    base: Path, tmp_path: Path, name: str, kind: str, make: Callable[[Path], object], said: str
) -> None:
    run = _copy(base, tmp_path)
    (run / name).unlink()
    make(run / name)
    if name != "manifest.json":
        _remanifest(run)  # the file is not listed: past the hash check, to the reader
    line = _report(run)
    assert name in line and (said in line or "not part of run" in line or "does not belong" in line)


def test_a_huge_or_non_utf8_summary(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(base, tmp_path)
    with (run / "summary.json").open("ab") as fh:
        fh.truncate(600 << 20)  # sparse: 600 MiB to a reader, nothing on the disk
    _remanifest(run)
    assert "over the limit of 512 MiB" in _report(run)
    monkeypatch.setenv("STEADYEVAL_MAX_FILE_MB", "8")
    assert "over the limit of 8 MiB" in _report(run)
    with pytest.raises(DataError, match="STEADYEVAL_MAX_FILE_MB"):
        read_summary(run)
    (run / "summary.json").write_bytes(b'{"run_id": "\xe9"}')
    with pytest.raises(DataError, match=r"line 1: not UTF-8 text at column 13"):
        read_summary(run)


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        ("[" * 100_000, "nested deeper than 100 levels"),
        ('{"models": "m"}', "field 'models': is the string 'm' (expected a list"),
        ('{"conditions": [1]}', "field 'conditions[0]': is the integer 1"),
        ('{"design": [1]}', "field 'design': is a list"),
        ('{"imported": {"notes": "x"}}', "field 'imported.notes': is the string 'x'"),
        ('{"n_skipped": 1e400}', "field 'n_skipped': is the number inf"),
        ("[]", "is a list (expected a JSON object (a run's summary))"),
    ],
)
def test_summary_of_the_wrong_shape(base: Path, tmp_path: Path, summary: str, said: str) -> None:
    run = _copy(base, tmp_path)
    (run / "summary.json").write_text(summary, encoding="utf-8")
    _remanifest(run)
    assert said in _report(run)
    with pytest.raises(DataError, match=r"summary\.json"):
        reanalyze(run)


@pytest.mark.parametrize("study", ["formats", "knowledge", "spread"])
def test_a_study_analysis_that_is_not_the_studys(base: Path, tmp_path: Path, study: str) -> None:
    run = _copy(base, tmp_path)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    (run / "summary.json").write_text(
        json.dumps({**summary, "study": study, "analysis": {"x": 1}, "design": {}}),
        encoding="utf-8",
    )
    _remanifest(run)
    # every study's analysis is typed: the report refuses it as it is read (the table of an
    # imported run cannot be analysed as the study's either), naming the type and the fix
    said = _report(run)
    assert "summary.json: the analysis has schema version None (no schema_version key)" in said
    assert "Analysis); recompute it" in said
    with pytest.raises(DataError, match=f"not what study '{study}' writes"):
        reanalyze(run)


def _rewrite(run: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    table = pq.read_table(run / "results.parquet")
    pq.write_table(change(table), run / "results.parquet")
    _remanifest(run)


def _meta(key: bytes, value: bytes) -> Callable[[pa.Table], pa.Table]:
    return lambda t: t.replace_schema_metadata({**(t.schema.metadata or {}), key: value})


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t: t.drop_columns(["correct"]), "has no column 'correct'"),
        (lambda t: t.append_column("model", t.column("model")), "has the column 'model' twice"),
        (lambda t: t.set_column(t.column_names.index("correct"), "correct",
                                pa.array(["x"] * t.num_rows)), "column 'correct' holds string"),
        (_meta(b"steadyeval.schema_version", b"9" * 5000), "is not a number"),
        (_meta(b"steadyeval.schema_version", b"x"), "is not a number"),
        (_meta(b"steadyeval.study_columns", b"[" * 5000), "cannot be read"),
        (_meta(b"steadyeval.study_columns",
               json.dumps([{"name": "nope", "type": "int"}]).encode()), "does not have"),
        (_meta(b"steadyeval.study_columns",
               json.dumps([{"name": "subject", "type": "int"}]).encode()), "holds string"),
    ],
)  # fmt: skip
def test_a_results_table_of_the_wrong_shape(
    base: Path, tmp_path: Path, change: Callable[[pa.Table], pa.Table], said: str
) -> None:
    run = _copy(base, tmp_path)
    _rewrite(run, change)
    with pytest.raises(DataError, match=r"results\.parquet") as info:
        read_results(run)
    assert said in str(info.value)
    assert said in _line(["compare", str(base), str(run)])


def test_a_results_table_over_the_size_limit(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_RESULTS_MB", "0.001")  # about 1 KB
    with pytest.raises(DataError, match="STEADYEVAL_MAX_RESULTS_MB") as info:
        read_results(base)
    assert "over the limit of 1.0 KiB" in str(info.value)
    monkeypatch.delenv("STEADYEVAL_MAX_RESULTS_MB")
    assert read_results(base).num_rows > 0


def test_a_cut_or_flipped_table_and_a_deep_manifest(base: Path, tmp_path: Path) -> None:
    run = _copy(base, tmp_path)
    data = (run / "results.parquet").read_bytes()
    (run / "results.parquet").write_bytes(data[: len(data) // 2])
    _remanifest(run)
    assert "not a readable Parquet file" in _line(["compare", str(base), str(run)])
    (run / "manifest.json").write_text("[" * 100_000)
    assert "manifest.json: nested deeper than 100 levels" in _report(run)
    (run / "manifest.json").write_text(json.dumps({"run_id": "r" * 10_000, "files": {}}))
    assert "(10,000 characters)" in _report(run)  # the echoed run id is cut


@pytest.mark.parametrize(("kind", "make", "said"), SPECIAL)
def test_the_summary_md_of_an_unknown_study(
    base: Path, tmp_path: Path, kind: str, make: Callable[[Path], object], said: str
) -> None:
    """A study this steadyeval does not know: the report shows its summary.md as text,
    read like any outside file (a FIFO hung the report)."""
    run = _copy(base, tmp_path)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    (run / "summary.json").write_text(json.dumps({**summary, "study": "unknown"}))
    (run / "summary.md").unlink()
    make(run / "summary.md")
    _remanifest(run)  # summary.md is not a regular file: not listed
    line = _report(run)
    assert "summary.md" in line and said in line


# -- found by the second hostile review ---------------------------------------------------


@pytest.mark.parametrize(
    "name", ["results.parquet", "summary.json", "manifest.json", "config.json", ".steadyeval-run"]
)
def test_report_output_over_a_file_of_the_run_is_refused(
    base: Path, tmp_path: Path, name: str
) -> None:
    run = _copy(base, tmp_path)
    before = (run / name).read_bytes() if (run / name).is_file() else None
    said = _line(["report", str(run), "-o", str(run / name)])
    assert "is a file of the run itself; write the report elsewhere" in said
    assert ((run / name).read_bytes() if (run / name).is_file() else None) == before
    assert (
        CliRunner().invoke(main, ["report", str(run), "-o", str(tmp_path / "r.html")]).exit_code
        == 0
    )


def test_a_huge_sparse_results_file_is_refused_before_it_is_hashed(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(base, tmp_path)
    with (run / "results.parquet").open("ab") as fh:
        fh.truncate(5 << 30)  # sparse: hashing it would read 5 GiB of zeros
    said = _report(run)
    assert "results.parquet is 5 GiB, over the limit of 4 GiB" in said
    assert "STEADYEVAL_MAX_RESULTS_MB" in said
    other = _copy(base, tmp_path / "other")
    (other / "summary.json").unlink()
    assert "summary.json: no such file; expected run" in _report(other)
    (other / "summary.json").mkdir()
    assert "summary.json: is a folder" in _report(other)


@pytest.mark.parametrize(
    ("value", "said"),
    [("1e13", None), ("99999999999999999999999", None), ("1e-300", "expected a positive number")],
)
def test_limits_beyond_any_file_mean_no_limit_and_below_a_byte_are_refused(
    base: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, said: str | None
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_FILE_MB", value)
    result = CliRunner().invoke(main, ["report", str(base), "-o", str(tmp_path / "r.html")])
    if said is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and said in result.output
        compared = CliRunner().invoke(main, ["compare", str(base), str(base)])
        assert compared.exit_code == 2 and said in compared.output


def test_sizes_that_read_the_same_are_given_in_bytes(tmp_path: Path) -> None:
    from steadyeval.run import read_yaml

    path = tmp_path / "s.yaml"
    path.write_text("a: 1\n" + "#" * (1 << 20) + "\n")
    with pytest.raises(Exception, match=r"is 1,048,58\d bytes, over the limit of 1,048,576 bytes"):
        read_yaml(path, "space", max_bytes=1 << 20)
