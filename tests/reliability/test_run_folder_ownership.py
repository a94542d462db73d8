"""Issue 37, class 1: steadyeval never deletes or overwrites what it did not write.

A folder is a run folder only if it holds steadyeval's own marker (``.steadyeval-run``),
never because of a ``config.json`` (every Hugging Face model folder has one);
``--overwrite`` deletes only what the marker records as steadyeval's; the lock file is never
written through a link, and a lock path that is a link, a folder or a FIFO is an error."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import steadyeval as se
from steadyeval import ConfigError
from steadyeval.cli import main
from steadyeval.reports import write_report
from steadyeval.run._folder import LOCK, MARKER, MARKER_FORMAT
from tests.run_folder_edits import write_as_the_run
from tests.scripted_backend import register

register()


def _data(tmp: Path) -> Path:
    path = tmp / "items.jsonl"
    rows = [{"id": f"q{i}", "question": f"Item {i}?", "answer": "a"} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(tmp: Path, out: Path, model: str = "scripted:a", *extra: str) -> tuple[int, str]:
    argv = ["run", "--model", model, "--data", str(_data(tmp)), "--out", str(out), *extra]
    result = CliRunner().invoke(main, argv)
    return result.exit_code, result.output


def _model_folder(path: Path) -> dict[str, bytes]:
    """A folder shaped like a Hugging Face model folder (``config.json`` and weights)."""
    files = {
        "config.json": b'{"model_type": "gpt2", "run_id": "looks-like-a-run"}',
        "model.safetensors": b"\x00weights\x00",
        "tokenizer.json": b"{}",
        "summary.json": b'{"mine": true}',
    }
    path.mkdir()
    for name, data in files.items():
        (path / name).write_bytes(data)
    return files


def _unchanged(path: Path, files: dict[str, bytes]) -> None:
    assert {p.name for p in path.iterdir()} == set(files)
    for name, data in files.items():
        assert (path / name).read_bytes() == data


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_model_folder_is_never_taken_for_a_run(tmp_path: Path, overwrite: bool) -> None:
    out = tmp_path / "gpt2-model"
    files = _model_folder(out)
    code, output = _run(tmp_path, out, "scripted:a", *(["--overwrite"] if overwrite else []))
    assert code == 2, output
    assert "holds no steadyeval run" in output and "config.json" in output
    _unchanged(out, files)  # nothing deleted, nothing written (not even a lock file)


def test_overwrite_deletes_only_what_steadyeval_wrote(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out, "scripted:a")[0] == 0
    (out / "notes.txt").write_text("my notes")
    (out / "plots").mkdir()
    (out / "plots" / "fig.png").write_bytes(b"png")
    (out / "results.parquet.123-0badc0de.tmp").write_bytes(b"left by a kill -9")
    marker = json.loads((out / MARKER).read_text())
    assert marker["format"] == MARKER_FORMAT and "results.parquet" in marker["owns"]
    code, output = _run(tmp_path, out, "scripted:b")
    assert code == 2 and "--overwrite" in output  # another config: refused without the flag
    code, output = _run(tmp_path, out, "scripted:b", "--overwrite")
    assert code == 0, output
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "plots" / "fig.png").read_bytes() == b"png"
    assert not list(out.glob("*.tmp"))
    assert se.read_results(out).column("model").to_pylist()[0].startswith("scripted:b")


def test_overwrite_removes_a_link_it_owns_never_its_target(tmp_path: Path) -> None:
    out, precious = tmp_path / "run", tmp_path / "precious.json"
    precious.write_text("keep me")
    assert _run(tmp_path, out, "scripted:a")[0] == 0
    (out / "report.json").symlink_to(precious)
    assert _run(tmp_path, out, "scripted:b", "--overwrite")[0] == 0
    assert precious.read_text() == "keep me"


def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    out, victim = tmp_path / "run", tmp_path / "victim.txt"
    victim.write_text("do not truncate")
    out.mkdir()
    (out / LOCK).symlink_to(victim)
    code, output = _run(tmp_path, out)
    assert code == 2 and "symbolic link" in output, output
    assert victim.read_text() == "do not truncate"


@pytest.mark.parametrize("kind", ["folder", "fifo", "hardlink", "dangling"])
def test_a_lock_path_that_is_not_a_plain_file_is_an_error(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0  # a claimed run folder: the lock path is then replaced
    lock = out / LOCK
    lock.unlink()
    victim = tmp_path / "victim.txt"
    victim.write_text("do not truncate")
    if kind == "folder":
        lock.mkdir()
    elif kind == "fifo":
        os.mkfifo(lock)
    elif kind == "hardlink":
        os.link(victim, lock)
    else:
        lock.symlink_to(tmp_path / "nowhere")
    code, output = _run(tmp_path, out)
    assert code == 2 and LOCK in output and "Traceback" not in output, output
    assert victim.read_text() == "do not truncate"
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["folder", "symlink", "garbage"])
def test_a_marker_that_is_not_steadyevals_is_refused(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "data.bin").write_bytes(b"user data")
    marker = out / MARKER
    if kind == "folder":
        marker.mkdir()
    elif kind == "symlink":
        (tmp_path / "m.json").write_text('{"config_key": "x"}')
        marker.symlink_to(tmp_path / "m.json")
    else:
        marker.write_bytes(b"\xff\xfe not json")
    code, output = _run(tmp_path, out, "scripted:a", "--overwrite")
    assert code == 2 and MARKER in output, output
    assert (out / "data.bin").read_bytes() == b"user data"


def test_a_legacy_marker_without_format_still_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({"config_key": marker["config_key"], "claimed": 0}))
    code, output = _run(tmp_path, out)
    assert code == 0, output
    assert json.loads((out / MARKER).read_text())["format"] == MARKER_FORMAT


def test_claim_refuses_without_a_marker_even_with_config_json(tmp_path: Path) -> None:
    from steadyeval.run._folder import claim_run_dir

    out = tmp_path / "run"
    _model_folder(out)
    with pytest.raises(ConfigError, match="holds no steadyeval run"):
        claim_run_dir(out, "key", overwrite=True)


def test_tiny_model_overwrite_clears_only_a_tiny_model_it_wrote(tmp_path: Path) -> None:
    from steadyeval.models import build_tiny_model

    real = tmp_path / "real-model"
    files = _model_folder(real)
    with pytest.raises(ConfigError, match="holds no tiny model written by steadyeval"):
        build_tiny_model(real, "gpt2", overwrite=True)
    _unchanged(real, files)
    tiny = build_tiny_model(tmp_path / "tiny", "gpt2")
    (tiny / "notes.txt").write_text("mine")
    first = (tiny / "model.safetensors").read_bytes()
    build_tiny_model(tiny, "gpt2", seed=1, overwrite=True)
    assert (tiny / "notes.txt").read_text() == "mine"
    assert (tiny / "model.safetensors").read_bytes() != first


@pytest.mark.parametrize("kind", ["fifo", "deep", "garbage"])
def test_a_rerun_never_reads_a_special_or_damaged_config_json(tmp_path: Path, kind: str) -> None:
    """The rerun reads the old run id from config.json: a FIFO there must not block it, a
    damaged one must not crash it (the run just writes its own config.json again)."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    config = out / "config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "deep":
        config.write_text("[" * 100_000 + "]" * 100_000)
    else:
        config.write_bytes(b"\xff\x00{")
    done: list[tuple[int, str]] = []
    import threading

    thread = threading.Thread(target=lambda: done.append(_run(tmp_path, out)), daemon=True)
    thread.start()
    thread.join(300)
    assert done, "the rerun blocked on config.json"
    code, output = done[0]
    if kind == "fifo":  # a special file where the run writes: one error line, no traceback
        assert code in (0, 2) and "Traceback" not in output, output
    else:
        assert code == 0, output
        assert json.loads(config.read_text())["run_id"]


def test_overwrite_keeps_a_users_checkpoints_folder_but_deletes_a_report_it_wrote(
    tmp_path: Path,
) -> None:
    """Only what steadyeval recorded as written is deleted: a report it wrote into the
    folder is recorded (and goes), a checkpoints/ folder the user made is not (and stays)."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    (out / "checkpoints").mkdir()
    (out / "checkpoints" / "mine.txt").write_text("mine")
    assert CliRunner().invoke(main, ["report", str(out), "--format", "md"]).exit_code == 0
    assert "report.md" in json.loads((out / MARKER).read_text())["owns"]
    assert _run(tmp_path, out, "scripted:b", "--overwrite")[0] == 0
    assert (out / "checkpoints" / "mine.txt").read_text() == "mine"
    assert not (out / "report.md").exists()


def test_a_marker_nested_too_deep_is_one_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    (out / MARKER).write_text("[" * 200_000)
    code, output = _run(tmp_path, out)
    assert code == 2 and "is not a steadyeval run marker" in output, output


@pytest.mark.parametrize("flag", ["report", "compare"])
def test_an_output_path_that_is_a_fifo_or_device_is_never_replaced(
    tmp_path: Path, flag: str
) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/null")):
        argv = (
            ["report", str(out), "--output", str(target)]
            if flag == "report"
            else ["compare", str(out), str(out), "--json", str(target)]
        )
        result = CliRunner().invoke(main, argv)
        said = "special file" if target == fifo else "is under /dev or /proc"
        assert result.exit_code == 2 and said in result.output, result.output
    assert fifo.is_fifo() and Path("/dev/null").is_char_device()


def test_the_atomic_writer_never_replaces_a_special_file(tmp_path: Path) -> None:
    from steadyeval import StorageError
    from steadyeval._json import write_text_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, kind in ((fifo, "a FIFO"), (tmp_path, "a folder")):
        with pytest.raises(StorageError, match=kind):
            write_text_atomic(target, "x")
    assert fifo.is_fifo()


def test_a_resumed_run_keeps_owning_its_report_and_the_report_its_run_id(
    tmp_path: Path,
) -> None:
    """Rerunning the same config claims the folder again: what the marker recorded (a
    report, and the run id the report shows) stays recorded, so a later --overwrite still
    deletes the report; a report of another run than the folder's results is deleted."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    assert CliRunner().invoke(main, ["report", str(out), "--format", "md"]).exit_code == 0
    run_id = json.loads((out / "config.json").read_text())["run_id"]
    assert _run(tmp_path, out)[0] == 0  # resumes
    marker = json.loads((out / MARKER).read_text())
    assert "report.md" in marker["owns"] and marker["reports"] == {"report.md": run_id}
    assert (out / "report.md").is_file()
    # a record naming another run: the report is stale, whatever the folder held before
    (out / MARKER).write_text(json.dumps({**marker, "reports": {"report.md": "other"}}))
    assert _run(tmp_path, out)[0] == 0
    assert not (out / "report.md").exists()
    assert json.loads((out / MARKER).read_text())["reports"] == {}


def test_a_report_written_with_output_into_the_folder_is_recorded(tmp_path: Path) -> None:
    """``--output RUN/report.html`` is the default path spelled out: recorded the same way
    (so --overwrite deletes it, and a run of other results does too)."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    done = CliRunner().invoke(main, ["report", str(out), "--output", str(out / "report.html")])
    assert done.exit_code == 0, done.output
    run_id = json.loads((out / "config.json").read_text())["run_id"]
    marker = json.loads((out / MARKER).read_text())
    assert marker["reports"] == {"report.html": run_id} and "report.html" in marker["owns"]
    elsewhere = tmp_path / "mine.html"  # outside the folder: nothing recorded
    assert CliRunner().invoke(main, ["report", str(out), "-o", str(elsewhere)]).exit_code == 0
    assert json.loads((out / MARKER).read_text())["reports"] == {"report.html": run_id}


@contextmanager
def _held_by_another_thread(out: Path) -> Iterator[None]:
    """``out``'s lock held by a run in another thread (refused as another process is)
    while the block runs."""
    import threading

    from steadyeval.run import locked_run_dir

    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with locked_run_dir(out):
            holding.set()
            done.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(60)
        yield
    finally:
        done.set()
        thread.join()


def test_a_report_is_not_written_while_a_run_writes_the_folder(tmp_path: Path) -> None:
    """The report holds the folder's lock: a run (here another thread, refused as another
    process is) cannot replace the results under it, and one that holds the folder makes
    the report an error instead of a report of results about to change."""
    from steadyeval.reports import write_report
    from steadyeval.run import locked_run_dir

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    with _held_by_another_thread(out):
        with pytest.raises(ConfigError, match="is writing this run folder; write its report"):
            write_report(out)  # after waiting a few seconds for the lock
        # a second thread: refused, never re-entered
        with (
            pytest.raises(ConfigError, match="another thread of this process"),
            locked_run_dir(out),
        ):
            pass
    assert not (out / "report.html").exists()
    assert write_report(out).is_file()


def test_an_unrecorded_report_is_judged_by_the_run_it_was_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report the marker has no record of (an older release's, or one put there by hand)
    is recorded as the folder's run when a writer takes the folder: a run killed after it
    rewrote the results (no cleanup) cannot make that report look current to the next."""
    from steadyeval.run import _folder

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    old = json.loads((out / "config.json").read_text())["run_id"]
    write_report(out)
    marker = json.loads((out / MARKER).read_text())
    del marker["reports"]  # a copy of it put there: not recorded, not owned
    marker["owns"].remove("report.html")
    (out / MARKER).write_text(json.dumps(marker))
    with monkeypatch.context() as mp:  # killed: the lock's release never runs its cleanup
        mp.setattr(_folder, "_drop_stale_reports", lambda *a: [])
        assert _run(tmp_path, out, "scripted:a", "--limit", "2", "--overwrite")[0] == 0
    assert (out / "report.html").is_file()
    assert json.loads((out / MARKER).read_text())["reports"] == {"report.html": old}
    assert _run(tmp_path, out, "scripted:a", "--limit", "2")[0] == 0  # resumes, finishes
    assert not (out / "report.html").exists()


def test_own_keeps_only_what_steadyeval_writes_in_the_marker(tmp_path: Path) -> None:
    """A hand-edited marker's other keys are not copied on (a marker steadyeval writes is
    one it can read back), and a record that is not a run id is no record."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    marker = json.loads((out / MARKER).read_text())
    deep: object = "x"
    for _ in range(300):
        deep = [deep]
    junk = {"report.html": "", "report.md": 7, "../x": "abc"}
    (out / MARKER).write_text(json.dumps({**marker, "mine": deep, "reports": junk}))
    (out / "report.html").write_text("a report")
    assert CliRunner().invoke(main, ["report", str(out), "--format", "md"]).exit_code == 0
    written = json.loads((out / MARKER).read_text())
    assert "mine" not in written
    run_id = json.loads((out / "config.json").read_text())["run_id"]
    # the junk is gone; the unrecorded report.html stays unrecorded until a run takes the
    # folder (a report never changes which run the folder holds)
    assert written["reports"] == {"report.md": run_id}
    assert _run(tmp_path, out)[0] == 0  # resumes
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_a_default_report_path_that_is_a_folder_says_so_without_naming_a_flag(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    (out / "report.html").mkdir()
    done = CliRunner().invoke(main, ["report", str(out)])
    assert done.exit_code != 0
    assert not done.output.startswith("error: --output")
    assert "(the default report path); choose another with --output" in done.output
    assert done.output.count("--output") == 1


def test_a_report_that_fails_records_nothing(tmp_path: Path) -> None:
    """The record is written with the report, never before: a report refused (here the
    folder's files do not match its manifest, as when a run was killed mid-write) leaves the
    marker saying which run the report already there shows."""
    from steadyeval.reports import write_report

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    write_report(out)
    before = json.loads((out / MARKER).read_text())["reports"]
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "run_id": "another"}))
    with pytest.raises(se.DataError):
        write_report(out)
    assert json.loads((out / MARKER).read_text())["reports"] == before


def test_reports_written_at_once_all_succeed(tmp_path: Path) -> None:
    """Reports take the folder's lock only to write, and wait for one another."""
    import threading

    from steadyeval.reports import write_report

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    errors: list[BaseException] = []

    def report(fmt: str) -> None:
        try:
            write_report(out, fmt=fmt)  # type: ignore[arg-type]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=report, args=(f,)) for f in ("html", "md", "json") * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    run_id = json.loads((out / "config.json").read_text())["run_id"]
    made = json.loads((out / MARKER).read_text())["reports"]
    assert made == {f"report.{f}": run_id for f in ("html", "md", "json")}


def test_results_that_change_while_the_report_is_built_are_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steadyeval.reports import _write, write_report

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    render = _write.render

    def meanwhile(*args: object) -> str:
        manifest = out / "manifest.json"  # a run rewrote the folder meanwhile
        data = manifest.read_bytes()
        manifest.unlink()
        manifest.write_bytes(data)
        return render(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_write, "render", meanwhile)
    with pytest.raises(se.DataError, match="files changed while the report was built"):
        write_report(out)
    assert not (out / "report.html").exists()


def test_a_marker_of_a_newer_release_is_left_as_it_is(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    marker = {**json.loads((out / MARKER).read_text()), "format": 2, "newer": {"a": 1}}
    (out / MARKER).write_text(json.dumps(marker))
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    assert json.loads((out / MARKER).read_text()) == marker


def test_a_report_never_goes_into_another_runs_files_or_reports(tmp_path: Path) -> None:
    """``report A -o B/...``: a report of run A must not replace run B's own files, nor
    pass for B's report (B's next run would take it as its own); another name is fine."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(tmp_path, a)[0] == 0
    assert _run(tmp_path, b, "scripted:b")[0] == 0
    before = {p.name: p.read_bytes() for p in b.iterdir() if p.is_file()}
    for name in ("report.html", "manifest.json", "summary.json", MARKER, "results.parquet"):
        done = CliRunner().invoke(main, ["report", str(a), "-o", str(b / name)])
        assert done.exit_code == 2 and "another run's folder" in done.output, (name, done.output)
    assert {p.name: p.read_bytes() for p in b.iterdir() if p.is_file()} == before
    assert CliRunner().invoke(main, ["report", str(a), "-o", str(b / "a.html")]).exit_code == 0


def test_a_default_report_path_that_is_a_fifo_says_so_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    os.mkfifo(out / "report.md")
    done = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
    assert done.exit_code == 2 and "special file" in done.output
    assert done.output.count("choose another") == 1, done.output


def _study(tmp: Path) -> Path:
    """A finished spread study's run folder (the scripted backend, seconds)."""
    out = tmp / "run"
    rows = [
        {"id": f"q{i}", "question": f"Item {i}?", "options": ["a", "b", "c"], "answer": i % 3}
        for i in range(12)
    ]
    data = tmp / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["study", "spread", "--model", "scripted:m", "--data", str(data), "--n-formats",
            "6", "--budget", "12", "--draws", "50", "--out", str(out), "--no-progress",
            "--cache", str(tmp / "cache")]  # fmt: skip
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    return out


def test_reanalyze_holds_the_folder_and_says_the_report_is_older(tmp_path: Path) -> None:
    """``reanalyze`` rewrites the summaries under the folder's lock: a run holding it makes
    it an error (nothing rewritten); once free, it rewrites them and says the report in the
    folder shows the analysis as it was."""
    from steadyeval.run import RunFolderBusy
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    summary = (out / "summary.json").read_bytes()
    with (
        _held_by_another_thread(out),
        pytest.raises(RunFolderBusy, match="is writing this run folder; reanalyze it when"),
    ):
        reanalyze(out)
    assert (out / "summary.json").read_bytes() == summary
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code == 0, result.output
    assert "the analysis is unchanged" in result.output  # the summary was not edited
    assert (out / "report.html").is_file()  # the same run: kept
    # an analysis the run recorded (as another version's would be) that reanalyze changes:
    # the report, checked against it, is said to show the analysis as it was
    summary_json = json.loads(summary)
    summary_json["analysis"]["models"] = {}
    write_as_the_run(out, "summary.json", summary_json)
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "summary.json").read_bytes() == summary
    assert (
        f"report.html shows the analysis as it was when written; `steadyeval report {out}` "
        "writes it again"
    ) in result.output
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0


def test_reanalyze_locks_a_folder_of_an_older_release(tmp_path: Path) -> None:
    """A folder whose marker an older release wrote (no ``format``) is locked too: this
    release's run locks it, and would otherwise write new results under reanalyze's old
    summaries."""
    from steadyeval.run import RunFolderBusy
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({"config_key": marker["config_key"], "claimed": 0}))
    with (
        _held_by_another_thread(out),
        pytest.raises(RunFolderBusy, match="another thread of this process \\(a run\\)"),
    ):
        reanalyze(out)
    reanalyze(out)


@pytest.mark.parametrize("failing", ["summary.json", "summary.md"])
def test_a_reanalyze_stopped_while_writing_leaves_the_run_readable_and_finishes_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The manifest records the new summaries as pending before they are written: a
    failure at either write (a full disk) leaves each summary the run's or the new one,
    which readers accept; never a folder that looks unfinished and sends the user to run
    the study again. Reanalyze again finishes the rewrite."""
    import steadyeval.results._manifest as manifest_module
    from steadyeval.reports import write_report
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    summary = (out / "summary.json").read_bytes()
    older = json.loads(summary)
    older["analysis"]["models"] = {}
    write_as_the_run(out, "summary.json", older)  # an analysis reanalyze changes
    write = manifest_module.write_text_atomic

    def full(path: Path, text: str) -> None:
        if path.name == failing:
            raise OSError(28, "No space left on device")
        write(path, text)

    monkeypatch.setattr(manifest_module, "write_text_atomic", full)
    with pytest.raises(OSError, match="No space left"):
        reanalyze(out)
    monkeypatch.undo()
    assert "rewriting" in json.loads((out / "manifest.json").read_text())
    assert write_report(out).is_file()  # readable as it is
    reanalyze(out)
    assert (out / "summary.json").read_bytes() == summary
    assert "rewriting" not in json.loads((out / "manifest.json").read_text())
    assert write_report(out).is_file()


def test_reanalyze_refuses_an_edited_summary_json_and_keeps_the_reports(
    tmp_path: Path,
) -> None:
    """summary.json holds the study's design and the run's counts, which the results table
    cannot give back: one edited there is refused, never recorded as the run's (an edited
    analysis is repaired); a refusal leaves the folder as it was (reports included)."""
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    original = (out / "summary.json").read_bytes()
    edited = json.loads(original)
    edited["design"]["confidence"] = 0.5
    (out / "summary.json").write_text(json.dumps(edited), encoding="utf-8")
    manifest = (out / "manifest.json").read_bytes()
    with pytest.raises(se.DataError, match="design or the run's counts were edited or damaged"):
        reanalyze(out)
    assert (out / "manifest.json").read_bytes() == manifest
    assert json.loads((out / "summary.json").read_text())["design"]["confidence"] == 0.5
    # a manifest from before the record of what reanalyze may repair: refused, saying so
    old = json.loads(manifest)
    del old["summary_base"]
    (out / "manifest.json").write_text(json.dumps(old), encoding="utf-8")
    with pytest.raises(
        se.DataError, match="before steadyeval recorded which edits reanalyze can repair"
    ):
        reanalyze(out)
    (out / "manifest.json").write_bytes(manifest)
    (out / "summary.json").write_bytes(original)
    # config.json edited: refused too, and the report (of the run the manifest records)
    # is not deleted as another run's
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "run_id": "0" * 16}))
    with pytest.raises(se.DataError, match="does not belong to run"):
        reanalyze(out)
    assert (out / "report.html").is_file()


def test_reanalyze_writes_a_deleted_summary_md_again(tmp_path: Path) -> None:
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    text = (out / "summary.md").read_text()
    (out / "summary.md").unlink()
    reanalyze(out)
    assert (out / "summary.md").read_text() == text


def test_rewritten_summaries_never_vouch_for_a_file_changed_meanwhile(tmp_path: Path) -> None:
    """The manifest written with the summaries keeps the other files' recorded hashes: a
    results table replaced while the analysis ran is refused by the next reader."""
    from steadyeval.results import check_run_dir, rewrite_summaries

    out = _study(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "results.parquet").write_bytes(b"another run's table")
    rewrite_summaries(out, manifest["run_id"], {"summary.md": "# rewritten\n"})
    after = json.loads((out / "manifest.json").read_text())
    assert after["files"]["results.parquet"] == manifest["files"]["results.parquet"]
    assert after["files"]["summary.md"] != manifest["files"]["summary.md"]
    with pytest.raises(se.DataError, match=r"results\.parquet does not belong to run"):
        check_run_dir(out)


def test_a_report_of_a_folder_naming_two_runs_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """summary.json and config.json of different runs (a folder mixed by hand or by an old
    race): the report would be deleted as another run's the moment it was written."""
    out = _study(tmp_path)
    config = json.loads((out / "config.json").read_text())
    config["run_id"] = "0123456789abcdef"
    write_as_the_run(out, "config.json", config)
    result = CliRunner().invoke(main, ["report", str(out)])
    assert result.exit_code == 2, result.output
    assert "but its config.json of run 0123456789abcdef" in result.output
    assert not (out / "report.html").exists()


def test_shell_path_is_pasteable() -> None:
    from steadyeval.cli._options import shell_path

    assert shell_path(Path("runs/a b")) == "'runs/a b'"
    assert shell_path(Path("-x")) == "./-x"
    assert shell_path(Path("runs/q")) == "runs/q"
    # what does not print is escaped (click strips an ESC from piped output; a newline
    # would split the command), bytes that are not UTF-8 as the bytes they are
    assert shell_path(Path("runs/a\x1b[31mb")) == "$'runs/a\\x1b[31mb'"
    assert shell_path(Path("it's\nx")) == "$'it\\'s\\x0ax'"
    assert shell_path(Path(os.fsdecode(b"r\xffn"))) == "$'r\\xffn'"
    assert shell_path(Path("runs/é")) == "'runs/é'"
    # a character that does not print is written as its UTF-8 bytes (bash reads \xa0 as
    # one byte, which would name another folder)
    assert shell_path(Path("nb\xa0sp")) == "$'nb\\xc2\\xa0sp'"
    assert shell_path(Path("z\u200bw")) == "$'z\\xe2\\x80\\x8bw'"


@pytest.mark.parametrize(
    "argv",
    [
        ["reanalyze", ""],
        ["report", ""],
        ["report", "RUN", "-o", ""],
        ["compare", "RUN", ""],
        ["run", "--model", "scripted:a", "--data", "DATA", "--out", ""],
        ["run", "--model", "scripted:a", "--data", ""],
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """``"$RUN"`` with RUN unset is ``''``, which would name the folder the user is in."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    argv = [{"RUN": str(out), "DATA": str(_data(tmp_path))}.get(a, a) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert "is empty" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_reanalyze_says_what_it_repaired(tmp_path: Path) -> None:
    out = _study(tmp_path)
    (out / "summary.md").write_text("edited", encoding="utf-8")
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code == 0, result.output
    assert "repaired summary.md (changed since the run wrote it)" in result.output
    assert "the analysis is unchanged" not in result.output
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert "the analysis is unchanged" in result.output and "repaired" not in result.output


def test_reanalyze_of_a_folder_it_cannot_write_fails_before_the_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only run folder is refused at once, not after an analysis of minutes."""
    from steadyeval.studies import get_study

    out = _study(tmp_path)
    study = type(get_study("spread"))

    def analyze(*args: Any) -> None:
        raise AssertionError("the analysis ran")

    monkeypatch.setattr(study, "analyze", analyze)
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m: real(p, m) and not (Path(p) == out and m & os.W_OK)
    )
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code != 0
    assert "cannot write in the folder (permission denied)" in result.output
    assert "nothing was written" in result.output


def test_reanalyze_refuses_a_manifest_naming_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steadyeval.studies import get_study

    out = _study(tmp_path)

    def analyze(*args: Any) -> None:
        raise AssertionError("the analysis ran")

    monkeypatch.setattr(type(get_study("spread")), "analyze", analyze)  # refused before it
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "run_id": "0123456789abcdef"}))
    summary = (out / "summary.json").read_bytes()
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code != 0
    assert "manifest.json names run 0123456789abcdef but summary.json run" in result.output
    assert (out / "summary.json").read_bytes() == summary
    assert json.loads((out / "manifest.json").read_text())["run_id"] == "0123456789abcdef"


def test_reanalyze_where_no_lock_can_be_had_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock file that is a link (never written through) is no lock to be had: reanalyze
    still rewrites the summaries, as before locks, and says it worked without the lock."""
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_text("mine", encoding="utf-8")
    (out / LOCK).unlink()
    (out / LOCK).symlink_to(target)
    with caplog.at_level("WARNING", logger="steadyeval"):
        reanalyze(out)
    assert "writing without the folder's lock" in caplog.text
    assert target.read_text(encoding="utf-8") == "mine"


def test_a_summary_edited_after_reanalyze_checked_it_is_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary reanalyze reads must be the one it checked: an edit of the design that
    lands between the check and the read is refused at the write, and nothing is written."""
    import steadyeval.studies._run as study_run
    from steadyeval.studies import reanalyze

    out = _study(tmp_path)
    manifest = (out / "manifest.json").read_bytes()
    read = study_run.read_summary

    def edited_meanwhile(run_dir: Path) -> Any:
        summary = json.loads((out / "summary.json").read_text())
        summary["design"]["confidence"] = 0.5
        (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
        return read(run_dir)

    monkeypatch.setattr(study_run, "read_summary", edited_meanwhile)
    with pytest.raises(se.DataError, match="changed while it was being read"):
        reanalyze(out)
    assert (out / "manifest.json").read_bytes() == manifest


def test_readers_say_what_repairs_a_summary(tmp_path: Path) -> None:
    """An edit of summary.json's analysis only: readers name reanalyze; an edit elsewhere
    (here a lone surrogate, text that is not UTF-8): the run again, never a traceback; a
    deleted summary.md: reanalyze."""
    from steadyeval.studies import read_analysis, reanalyze

    out = _study(tmp_path)
    original = (out / "summary.json").read_text()
    summary = json.loads(original)
    summary["analysis"]["models"] = {}
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    with pytest.raises(se.DataError, match="only its analysis differs: `steadyeval reanalyze"):
        read_analysis(out)
    reanalyze(out)
    assert (out / "summary.json").read_text() == original
    (out / "summary.json").write_text(
        original.replace('"study": "spread"', '"study": "spread", "x": "\\ud800"')
    )
    with pytest.raises(se.DataError, match="design or the run's counts were edited"):
        reanalyze(out)
    with pytest.raises(se.DataError, match=r"run the command that wrote it again$"):
        read_analysis(out)
    (out / "summary.json").write_text(original)
    (out / "summary.md").unlink()
    with pytest.raises(se.DataError, match=r"summary\.md is gone; `steadyeval reanalyze RUN_DIR`"):
        read_analysis(out)


def test_a_reader_racing_a_rewrite_checks_the_new_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that read the manifest before a reanalyze rewrote the summaries, and hashed
    them after: it reads the manifest again instead of calling a healthy run damaged."""
    import steadyeval.results._manifest as manifest_module
    from steadyeval.studies import read_analysis, reanalyze

    out = _study(tmp_path)
    older = json.loads((out / "summary.json").read_text())
    older["analysis"]["models"] = {}
    write_as_the_run(out, "summary.json", older)
    stale = manifest_module._manifest(out)  # what the reader saw before the rewrite
    reanalyze(out)  # the analysis changes: summary.json's recorded hash too
    real = manifest_module._manifest
    calls = iter([stale])
    monkeypatch.setattr(manifest_module, "_manifest", lambda d: next(calls, None) or real(d))
    assert read_analysis(out).models


def test_ctrl_c_in_reanalyze_says_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import steadyeval.studies as studies

    def interrupted(run_dir: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(studies, "reanalyze", interrupted)
    result = CliRunner().invoke(main, ["reanalyze", str(tmp_path)])
    assert result.exit_code == 130
    assert "interrupted: the run stays readable; run the same command again" in result.output


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next(tmp_path: Path) -> None:
    """A writer killed mid-write leaves ``NAME.PID-HEX.tmp`` beside the file it replaced:
    the next writer to hold the folder deletes those of dead processes, never one of a
    living process, a link, or a file of the user's."""
    import subprocess
    import sys

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(dead.stdout)
    stale = [
        out / f"summary.json.{pid}-0123abcd.tmp",
        out / f"report.html.{pid}-89abcdef.tmp",
        out / f"summary.md.{10**30}-0123abcd.tmp",  # no process has that number
    ]
    kept = [
        out / f"summary.md.{os.getpid()}-0123abcd.tmp",  # a living process's
        out / f"notes.txt.{pid}-0123abcd.tmp",  # not a name steadyeval writes
    ]
    for path in (*stale, *kept):
        path.write_text("half", encoding="utf-8")
    target = tmp_path / "mine.txt"
    target.write_text("mine", encoding="utf-8")
    link = out / f"config.json.{pid}-0123abcd.tmp"
    link.symlink_to(target)
    assert _run(tmp_path, out)[0] == 0  # the same run again: it takes the folder
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "mine"


def _users_file(path: Path, text: str = "# My notes\n\n- rows: the ones I looked at\n") -> str:
    path.write_text(text, encoding="utf-8")
    return text


def test_a_users_file_at_a_report_name_is_never_deleted_or_replaced(tmp_path: Path) -> None:
    """Notes of the user's saved as report.md in a run folder are not a report steadyeval
    wrote: neither ``--overwrite``, nor a run that changes the results, nor the report
    command's default path deletes or replaces them; steadyeval's own reports go."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0  # report.html
    notes = _users_file(out / "report.md")
    result = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
    assert result.exit_code == 2 and "report.md: exists and is not a report" in result.output
    assert "--output" in result.output and (out / "report.md").read_text() == notes
    assert _run(tmp_path, out, "scripted:b", "--overwrite")[0] == 0
    assert not (out / "report.html").exists()  # steadyeval's, of the run replaced
    assert (out / "report.md").read_text() == notes
    assert _run(tmp_path, out, "scripted:b", "--limit", "2", "--overwrite")[0] == 0
    assert (out / "report.md").read_text() == notes  # a run of other results: still there
    assert "report.md" not in json.loads((out / MARKER).read_text()).get("reports", {})
    target = str(out / "report.md")  # named explicitly, it is written over
    assert (
        CliRunner().invoke(main, ["report", str(out), "--format", "md", "-o", target]).exit_code
        == 0
    )
    assert (out / "report.md").read_text() != notes


def test_a_report_the_user_wrote_over_is_theirs(tmp_path: Path) -> None:
    """A report steadyeval wrote (recorded in the marker) that the user then replaced with
    their own text is kept when the results change, and stays theirs after any run: a
    refused one, a resume, an ``--overwrite``."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    assert CliRunner().invoke(main, ["report", str(out), "--format", "md"]).exit_code == 0
    assert "report.md" in json.loads((out / MARKER).read_text())["reports"]
    # annotated: it still holds every sign of a report, only its recorded hash tells
    notes = _users_file(out / "report.md", (out / "report.md").read_text() + "\n## Mine\n")
    for extra in (("scripted:b",), ("scripted:a",), ("scripted:a", "--limit", "2", "--overwrite")):
        _run(tmp_path, out, *extra)  # refused (another config), resumed, overwritten
        assert (out / "report.md").read_text() == notes
        result = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
        assert result.exit_code == 2 and "is not a report steadyeval wrote" in result.output


def test_every_report_format_is_recognised_as_steadyevals(tmp_path: Path) -> None:
    from steadyeval.run import is_report

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    for fmt in ("html", "md", "json"):
        args = ["report", str(out), "--format", fmt]
        assert CliRunner().invoke(main, args).exit_code == 0
        assert is_report(out / f"report.{fmt}")
        (out / f"report.{fmt}").rename(out / "copy")
        _users_file(out / f"report.{fmt}", (out / "copy").read_text()[:20])  # cut short
        assert not is_report(out / f"report.{fmt}")
        (out / f"report.{fmt}").unlink()
    (out / "report.md").mkdir()
    assert not is_report(out / "report.md") and not is_report(out / "summary.md")


def test_a_report_the_user_added_to_is_theirs(tmp_path: Path) -> None:
    """A report steadyeval wrote (its hash recorded) that the user then annotated is left
    alone by the report's default path, by ``--overwrite`` and by reanalyze's note."""
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    for fmt in ("md", "json"):
        assert CliRunner().invoke(main, ["report", str(out), "--format", fmt]).exit_code == 0
    with (out / "report.md").open("a", encoding="utf-8") as fh:
        fh.write("\n## My notes\n\nThe second condition looks off.\n")
    annotated = (out / "report.md").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
    assert result.exit_code == 2 and "is not a report steadyeval wrote" in result.output
    assert _run(tmp_path, out, "scripted:b", "--overwrite")[0] == 0
    assert (out / "report.md").read_text(encoding="utf-8") == annotated
    assert not (out / "report.json").exists()  # steadyeval's, unchanged: deleted


def test_notes_that_look_like_a_report_are_kept_when_never_written_by_steadyeval(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    notes = _users_file(out / "report.md", "# Notes\n\n- rows: 3, too few\n- items: 4\n")
    assert _run(tmp_path, out, "scripted:b", "--overwrite")[0] == 0
    assert (out / "report.md").read_text(encoding="utf-8") == notes
    (out / "report.json").write_text('{"schema": "steadyeval.report/1", "mine": 1}')
    assert _run(tmp_path, out, "scripted:a", "--overwrite")[0] == 0
    assert (out / "report.json").is_file()


def test_reanalyze_names_only_steadyevals_reports(tmp_path: Path) -> None:
    out = _study(tmp_path)
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    _users_file(out / "report.md")
    summary_json = json.loads((out / "summary.json").read_text())
    summary_json["analysis"]["models"] = {}
    write_as_the_run(out, "summary.json", summary_json)  # as another version recorded it
    result = CliRunner().invoke(main, ["reanalyze", str(out)])
    assert result.exit_code == 0, result.output
    assert "the analysis changed" in result.output
    assert "report.html shows the analysis as it was" in result.output
    assert "report.md" not in result.output


@pytest.mark.parametrize(
    ("yaml", "field"),
    [
        ("models: [scripted:a]\ndata: ''\n", "the data path is empty"),
        ("models: [scripted:a]\ndata: DATA\nformats: ''\n", "formats: empty; expected a value"),
    ],
)
def test_an_empty_path_in_a_config_file_is_refused(tmp_path: Path, yaml: str, field: str) -> None:
    """``data: ''`` named the config file's own folder."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.replace("DATA", str(_data(tmp_path))), encoding="utf-8")
    command = ["run"] if "formats" not in yaml else ["study", "spread"]
    result = CliRunner().invoke(main, [*command, str(config), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert field in result.output


def test_printed_paths_never_carry_a_control_character(tmp_path: Path) -> None:
    out = tmp_path / "run\x1b[31m\nx"
    code, output = _run(tmp_path, out)
    assert code == 0, output
    assert "\x1b" not in output and "run\\x1b[31m\\nx/ (results.parquet" in output
    result = CliRunner().invoke(main, ["export", str(out)])  # its list of the files written
    assert result.exit_code == 0, result.output
    listed = [line for line in result.output.splitlines() if line.startswith("  ")]
    assert listed and all("run\\x1b[31m\\nx-inspect" in line for line in listed), listed


def test_a_path_of_spaces_is_quoted_in_messages(tmp_path: Path) -> None:
    """``--data ' '`` said ``error:  : not a directory``: a blank name reads as nothing."""
    from steadyeval._errors import show_path

    assert show_path(" ") == "' '" and show_path("a.jsonl ") == "'a.jsonl '"
    assert show_path("runs/a b") == "runs/a b"  # inner spaces are part of the name
    argv = ["study", "sensitivity", "--model", "scripted:a", "--data", " "]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2 and "error: ' ': not a directory" in result.output
    for argv, said in (
        (["reanalyze", " "], "error: ' ': not a run folder"),
        (["report", " nope"], "error: ' nope': not a run directory"),
    ):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 2 and said in result.output, result.output


@pytest.mark.parametrize("written", [False, True])
def test_a_report_write_stopped_at_any_point_leaves_a_report_steadyeval_vouches_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: bool
) -> None:
    """The new report's hash is recorded beside the old one's before the write: a report
    stopped before or after writing its file (Ctrl-C, kill) leaves steadyeval's report, old
    or new, which the next report replaces (it was taken for the user's file)."""
    from steadyeval.reports import ReportOptions, _write
    from steadyeval.run import is_report

    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    assert CliRunner().invoke(main, ["report", str(out), "--format", "md"]).exit_code == 0
    first = (out / "report.md").read_bytes()
    real = _write.write_text_atomic

    def stopped(path: Path, text: str) -> None:
        if written:
            real(path, text)
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(_write, "write_text_atomic", stopped)
        with pytest.raises(KeyboardInterrupt):
            write_report(out, fmt="md", options=ReportOptions(max_chars=20))  # another text
    assert ((out / "report.md").read_bytes() != first) == written
    assert is_report(out / "report.md")
    result = CliRunner().invoke(main, ["report", str(out), "--format", "md"])
    assert result.exit_code == 0, result.output


def test_compare_never_writes_its_json_over_a_run_folders_file(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out)[0] == 0
    for name in ("summary.json", "results.parquet", "manifest.json", MARKER, "report.json"):
        before = (out / name).read_bytes() if (out / name).exists() else None
        args = ["compare", str(out), str(out), "--json", str(out / name)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "is a file of a run folder" in result.output
        assert ((out / name).read_bytes() if (out / name).exists() else None) == before


def test_fewshot_space_that_is_empty_is_refused(tmp_path: Path) -> None:
    argv = ["study", "fewshot", "--model", "scripted:a", "--task", "RTE", "--labelled",
            str(_data(tmp_path)), "--space", "", "--out", str(tmp_path / "o")]  # fmt: skip
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2 and "--space: space: is empty" in result.output


def test_an_error_never_carries_a_control_character_of_a_path(tmp_path: Path) -> None:
    """A file name's escape reaches the terminal through no error message."""
    result = CliRunner().invoke(main, ["report", str(tmp_path / "a\x1b[31mb")])
    assert result.exit_code == 2
    assert "\x1b" not in result.output and "a\\x1b[31mb: not a run directory" in result.output


def test_a_run_folder_renamed_to_a_name_that_is_not_utf8_is_still_read(tmp_path: Path) -> None:
    """steadyeval never names a folder so, but a user may rename one: pyarrow encodes every
    path as UTF-8, so the table is read through an open file there."""
    out = _study(tmp_path)
    renamed = Path(os.fsdecode(os.fsencode(tmp_path) + b"/r\xffn"))
    try:
        out.rename(renamed)
    except (OSError, UnicodeError):  # a file system that takes only UTF-8 names
        pytest.skip("this file system refuses names that are not UTF-8")
    result = CliRunner().invoke(main, ["reanalyze", str(renamed)])
    assert result.exit_code == 0, result.output
    assert "the analysis is unchanged" in result.output
    result = CliRunner().invoke(main, ["compare", str(renamed), str(renamed)])
    assert result.exit_code == 0, result.output
    report = tmp_path / "report.md"
    result = CliRunner().invoke(main, ["report", str(renamed), "--format", "md", "-o", str(report)])
    assert result.exit_code == 0, result.output
    assert "- rows:" in report.read_text(encoding="utf-8")


def test_compare_json_dash_writes_the_json_to_stdout_not_a_file_named_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--json -`` wrote a file named ``-`` in the current folder; stdout now holds the JSON
    alone (the tables go to stderr) and ``./-`` is the file named ``-``."""
    out = _study(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(out), str(out), "--json", "-"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["arms"][0]["label"] == "A"
    assert "arms" in result.stderr  # the tables' title
    assert not (tmp_path / "-").exists()
    result = CliRunner().invoke(main, ["compare", str(out), str(out), "--json", "./-"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "-").read_text(encoding="utf-8"))["arms"][0]["label"] == "A"


def test_compare_json_through_a_link_writes_its_target_and_never_a_device(tmp_path: Path) -> None:
    """The atomic write renamed over a link: ``--json /dev/stdout`` replaced the system's
    link with a regular file (as root), ``--json link.json`` left its target as it was."""
    out = _study(tmp_path)
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old", encoding="utf-8")
    link.symlink_to(target)
    result = CliRunner().invoke(main, ["compare", str(out), str(out), "--json", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8"))["arms"]
    for special in ("/dev/stdout", "/dev/null", "/proc/self/fd/1"):
        result = CliRunner().invoke(main, ["compare", str(out), str(out), "--json", special])
        assert result.exit_code == 2, result.output
        assert (
            "is under /dev or /proc (devices, shared memory, process files); --json - writes to stdout"
            in result.output
        )
    result = CliRunner().invoke(main, ["report", str(out), "-o", "/dev/stdout"])
    assert result.exit_code == 2 and "--output - writes to stdout" in result.output
    for spelled in ("/tmp/../dev/new.json", "//dev/new.json"):  # never a new file there
        result = CliRunner().invoke(main, ["compare", str(out), str(out), "--json", spelled])
        assert result.exit_code == 2 and "is under /dev or /proc" in result.output
    assert not Path("/dev/new.json").exists()
    loop_a, loop_b = tmp_path / "loop-a.json", tmp_path / "loop-b.json"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    for argv in (["compare", str(out), str(out), "--json"], ["report", str(out), "-o"]):
        result = CliRunner().invoke(main, [*argv, str(loop_a)])
        assert result.exit_code == 2 and "is a loop of links" in result.output
        result = CliRunner().invoke(main, [*argv, f"{tmp_path}/trailing/"])
        assert result.exit_code == 2 and "names a folder (ends with /)" in result.output
    assert loop_a.is_symlink() and not (tmp_path / "trailing").exists()
