"""What an import holds in memory (issue 37: no allocation over 1 GB on hostile input).

A 1.2 MB ``.eval`` of twelve members, each 100 MiB of text and under the member limit,
used to import with 3.4 GB of peak memory: every sample's fields were kept until the table
was made, and the table copied them. ``STEADYEVAL_MAX_KEPT_MB`` bounds what an import
keeps (with the table's copies of its text) and the document it is parsing. The peaks are
measured as the maximum RSS of a subprocess; the logs are built in a streaming way, so the
test holds a few MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from steadyeval import DataError
from steadyeval.results import import_inspect, import_lmeval
from steadyeval.results._import_memory import TEXT_COPIES, VALUE_BYTES, kept_cost, parse_cost
from tests.importers._zip import DEFLATE, ZSTD, filled, fixture_members, streamed, write_zip

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ARITH = sorted(FIXTURES.glob("inspect/tasks/*arith*.eval"))[0]
LM_DIR = next((FIXTURES / "lmeval" / "out").iterdir())
ROOT = Path(__file__).resolve().parents[2]
_MIB = 1 << 20


def _log(path: Path, members: int, mib: int, field: str, method: int = ZSTD) -> Path:
    """The arith fixture's header and ``members`` samples whose ``field`` holds ``mib`` MiB
    of text, compressed as it is made."""
    header = dict(fixture_members(ARITH))["header.json"]
    samples = []
    for i in range(1, members + 1):
        head = json.dumps({"id": i, "epoch": 1, "input": "q", "target": "A"})[:-1]
        head += f', "{field}": "'
        parts = [head.encode(), *filled(mib * _MIB, b"a"), b'"}']
        samples.append(streamed(f"samples/{i}_epoch_1.json", parts, method))
    return write_zip(path, [streamed("header.json", [header], DEFLATE), *samples])


def _peak(log: Path, out: Path, **env: str) -> tuple[str, int]:
    """The import's error (or ``""``) and its peak RSS in bytes, from a subprocess that
    imports ``log`` and writes the run folder."""
    script = textwrap.dedent(
        """
        import sys
        from steadyeval import DataError
        from tests._memory import peak_rss_bytes
        from steadyeval.results import import_inspect, write_imported_run
        try:
            write_imported_run(import_inspect([sys.argv[1]]), sys.argv[2])
            said = ""
        except DataError as exc:
            said = str(exc)
        print(peak_rss_bytes())
        print(said)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(log), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    peak, said = done.stdout.split("\n", 1)
    return said.strip(), int(peak)


def test_twelve_members_of_100_mib_are_refused_under_1_gb(tmp_path: Path) -> None:
    # each member is under STEADYEVAL_MAX_MEMBER_MB (128) and all under the log's 4096:
    # was exit 0 with 3.4 GB of peak RSS (1.5 GB as the tester measured)
    log = _log(tmp_path / "x.eval", 12, 100, "input")
    assert log.stat().st_size < 2 * _MIB
    said, peak = _peak(log, tmp_path / "o", STEADYEVAL_MAX_KEPT_MB="")
    assert "x.eval!samples/" in said and "STEADYEVAL_MAX_KEPT_MB" in said, said
    assert "768 MiB" in said
    assert peak < 1 << 30, f"peak RSS {peak / _MIB:.0f} MiB"
    assert not (tmp_path / "o").exists()


def test_what_fits_the_budget_imports_within_it(tmp_path: Path) -> None:
    # text in the target is copied most (gold, the metadata's JSON, both in the table and
    # the Parquet writer): what the budget accepts still peaks near the budget, not 7 times
    log = _log(tmp_path / "fits.eval", 2, 16, "target")
    said, peak = _peak(log, tmp_path / "o", STEADYEVAL_MAX_KEPT_MB="256")
    assert said == ""
    assert peak < (256 + 256) * _MIB, f"peak RSS {peak / _MIB:.0f} MiB"
    said, _ = _peak(log, tmp_path / "o2", STEADYEVAL_MAX_KEPT_MB="200")
    assert "fits.eval!samples/2_epoch_1.json: with what the import read before it" in said
    assert "more than 200 MiB of memory" in said and "STEADYEVAL_MAX_KEPT_MB" in said


def test_a_document_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one character beyond U+FFFF makes Python store every character in 4 bytes: 1 MiB of
    # text with one emoji takes 4 MiB decoded and 4 MiB again parsed
    monkeypatch.setenv("STEADYEVAL_MAX_KEPT_MB", "7.5")
    doc = json.loads(next(FIXTURES.glob("inspect/json/*.json")).read_text("utf-8"))
    doc["samples"][0]["input"] = "a" * _MIB
    ascii_log = tmp_path / "ascii.json"
    ascii_log.write_text(json.dumps(doc), "utf-8")
    assert import_inspect([ascii_log]).table.num_rows > 0
    doc["samples"][0]["input"] += "\U0001f600"
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    with pytest.raises(DataError, match=r"wide.json: parsing it would take about 8 MiB"):
        import_inspect([wide])
    wide.write_text(json.dumps(doc), "utf-8")  # as the escape \ud83d\ude00: the same
    with pytest.raises(DataError, match="STEADYEVAL_MAX_KEPT_MB"):
        import_inspect([wide])


def test_a_member_of_many_small_values_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    # 100 KB of archive, 47 MB of '{"a":{"b":1}},...': 10 million values under the values
    # limit, which took 2 GB parsed
    header = dict(fixture_members(ARITH))["header.json"]
    head = b'{"id": 9, "epoch": 1, "input": "q", "metadata": {"x": ['
    body = (b'{"a":{"b":1}},' * 100_000 for _ in range(33))
    member = streamed("samples/9_epoch_1.json", [head, *body, b"0]}}"], DEFLATE)
    log = write_zip(tmp_path / "v.eval", [streamed("header.json", [header]), member])
    assert log.stat().st_size < 1 << 20
    with pytest.raises(DataError) as info:
        import_inspect([log])
    assert "v.eval!samples/9_epoch_1.json: parsing it would take about 1,3" in str(info.value)


def test_lmeval_records_count_against_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = next(LM_DIR.glob("samples_se_plain_*.jsonl"))
    recs = [json.loads(line) for line in samples.read_text("utf-8").splitlines()]
    for r in recs[:4]:
        r["doc"]["question"] = "q" * _MIB
    folder = tmp_path / "lm"
    folder.mkdir()
    (folder / samples.name).write_text("\n".join(map(json.dumps, recs)), "utf-8")
    monkeypatch.setenv("STEADYEVAL_MAX_KEPT_MB", "20")
    with pytest.raises(DataError) as info:
        import_lmeval([folder])
    assert f"{samples.name}, line 3: with what the import read before it" in str(info.value)
    monkeypatch.setenv("STEADYEVAL_MAX_KEPT_MB", "40")
    assert import_lmeval([folder]).table.num_rows == len(recs)


def test_kept_cost_counts_text_with_its_copies() -> None:
    text = "x" * 1000
    alone = kept_cost(text)
    assert alone == sys.getsizeof(text) * (1 + TEXT_COPIES)
    assert kept_cost([text, text]) == sys.getsizeof([text, text]) + alone  # held twice: once
    wide = "x" * 999 + "\U0001f600"  # 4 bytes a character
    assert kept_cost(wide) > 3.5 * alone
    assert kept_cost({"k": 5}) == sum(map(sys.getsizeof, ({"k": 5}, "k", 5)))


@pytest.mark.parametrize(
    ("text", "decoded", "parsed"),
    [
        (b'"aaaa"', 1, 1),
        ('"\u00e9\u00e9"'.encode(), 1, 1),  # Latin-1: one byte a character
        ('"\u0100"'.encode(), 2, 2),
        ('"\u4e2d"'.encode(), 2, 2),
        ('"\U0001f600"'.encode(), 4, 4),
        (b'"\\u0100"', 1, 2),  # escapes: ASCII text, wide strings
        (b'"\\ud83d\\ude00"', 1, 4),
        (b'"\\u00e9"', 1, 1),
    ],
)
def test_parse_cost_knows_the_width_of_the_text(text: bytes, decoded: int, parsed: int) -> None:
    assert parse_cost(text) == len(text) * (1 + decoded + parsed) + VALUE_BYTES
