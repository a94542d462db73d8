"""The disparity study's inputs at the edges (issue 37 classes 2-4): corpora that are not
regular files, not UTF-8 or too large, absurd corpus sizes and training settings (each error
names its flag), all refused before anything is allocated or trained."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, DataError
from steadyeval.cli import main
from steadyeval.studies.disparity import build_mixtures, read_corpus
from tests import scripted_backend

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _scripted() -> None:
    scripted_backend.register()


@pytest.fixture()
def probes(tmp_path: Path) -> Path:
    folder = tmp_path / "probes"
    shutil.copytree(ROOT / "examples" / "probes-study", folder)
    (tmp_path / "general.txt").write_text(
        "".join(f"River {i} flows to the sea.\n" for i in range(50))
    )
    return folder


def _study(probes: Path, *extra: str) -> list[str]:
    general = str(probes.parent / "general.txt")
    return ["study", "disparity", "--model", "scripted:m", "--data", str(probes),
            "--general", general, *extra, "--dry-run"]  # fmt: skip


def _error(argv: list[str]) -> str:
    result = CliRunner().invoke(main, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    return result.output[result.output.index("error") :]


# -- class 3: special files ----------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_corpora_must_be_regular_files(tmp_path: Path, probes: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad, what in ((fifo, "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        with pytest.raises(DataError, match=what):
            read_corpus(bad)
        argv = _study(probes)
        argv[argv.index("--general") + 1] = str(bad)
        assert what in _error(argv)
        assert what in _error(_study(probes, "--overlap-file", str(bad)))
        assert what in _error(_study(probes, "--vocab", str(bad)))
    with pytest.raises(DataError, match="is a folder"):
        read_corpus(tmp_path)


# -- class 2 and 4: sizes, text and numbers at the edges -----------------------------------------
def test_a_corpus_is_read_line_by_line_with_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"A first sentence.\n\xff\xfe bad\n")
    with pytest.raises(DataError, match=r"corpus.txt, line 2: not UTF-8 text at column 1"):
        read_corpus(corpus)
    corpus.write_text("short\n" + "x" * 20_000 + "\n")
    with pytest.raises(DataError, match=r"line 2: a sentence of 20,000 characters, over"):
        read_corpus(corpus)
    corpus.write_text("A sentence.\n" * 1000)
    monkeypatch.setenv("STEADYEVAL_MAX_CORPUS_MB", "0.001")
    with pytest.raises(
        DataError, match=r"over the limit of [0-9.]+ (bytes|KiB) \(STEADYEVAL_MAX_CORPUS_MB"
    ):
        read_corpus(corpus)
    monkeypatch.delenv("STEADYEVAL_MAX_CORPUS_MB")
    assert read_corpus(corpus) == ["A sentence."] * 1000


def test_a_corpus_size_is_bounded_before_anything_is_drawn() -> None:
    for size in (10**9, 10**400, 0, True):
        with pytest.raises(ConfigError, match=r"corpus size must be an integer in 1\.\.100,000"):
            build_mixtures(["o"], ["g"], gammas=[0, 50], size=size, seed=0)  # type: ignore[arg-type]
    with pytest.raises(
        ConfigError, match=r"gamma is a percentage.*got 10+\.\.\. \(401 characters\)"
    ):
        build_mixtures(["o"], ["g"], gammas=[10**400], size=10, seed=0)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--corpus-size", "1000000000"], r"--corpus-size: corpus_size: Input should be less"),
        (["--corpus-size", "9" * 400], r"--corpus-size: corpus_size: .*(less than|at most)"),
        (["--steps", "1000000000000"], r"--steps: steps: Input should be less than or equal"),
        (["--learning-rate", "inf"], r"--learning-rate: learning_rate: .*finite"),
        (["--learning-rate", "nan"], r"--learning-rate: learning_rate: .*finite"),
        (["--learning-rate", "1e30"], r"--learning-rate: learning_rate: Input should be less"),
        (["--seed", "-1"], r"--seed: seed: Input should be greater than or equal to 0"),
        (["--warmup-steps", "500"], r"--warmup-steps: warmup_steps: .*fewer than steps \(200\)"),
        (["--batch-size", "100000000"], r"--batch-size: batch_size: Input should be less"),
        (["--max-length", "100000000"], r"--max-length: max_length: Input should be less"),
        (["--mlm-probability", "nan"], r"--mlm-probability: mlm_probability: .*finite"),
        (["--device", "gpu"], r"--device: device: String should match pattern"),
        (["--gammas", "0,-20"], r"--gammas: gammas: .*percentage in 0\.\.100; got -20"),
        (
            ["--overlap", "probe-template", "--overlap-file", "x.txt"],
            r"--overlap-file: overlap_file: .*give one",
        ),
    ],
)
def test_numbers_at_the_edges_name_their_flag(probes: Path, flags: list[str], message: str) -> None:
    assert re.search(message, _error(_study(probes, *flags)))


def test_a_checkpoints_path_that_is_a_file_is_refused(probes: Path) -> None:
    general = probes.parent / "general.txt"
    assert "is not a folder" in _error(_study(probes, "--checkpoints", str(general)))


def test_a_device_this_machine_lacks_is_refused_by_the_dry_run(probes: Path) -> None:
    assert "device 'cuda:99': torch sees" in _error(_study(probes, "--device", "cuda:99"))
