"""LLM-as-judge (issue 43, point 4) against the FAKE OpenAI-compatible server with SCRIPTED
replies: a graded run, then judges that read the answer and the reference from their prompt.
What is tested is steadyeval's side: prompts, verdict extraction, the judged columns,
agreement figures, caching and errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from steadyeval import Condition, DataError, Item, RunOptions, read_results, run
from steadyeval.cli import main
from steadyeval.judge import judge_results, read_labels
from tests.models.fake_openai_server import FakeOpenAIServer, ServerConfig

# fast retries, and a per-request timeout no busy machine reaches (the fake server answers
# at once)
FAST = "max_concurrency=2&backoff_base=0.01&backoff_max=0.02&timeout=300"
ITEMS = [
    Item(id=f"q{i}", question=f"What is {i} plus {i + 1}?", answers=(str(2 * i + 1),))
    for i in range(6)
]


def _student(prompt: str) -> tuple[str | None, str]:
    """Right on even items, one off on odd ones, thinking first."""
    a, b = map(int, re.findall(r"What is (\d+) plus (\d+)\?", prompt)[-1])
    answer = a + b + (a % 2)
    return f"{a} + {b}", f"The answer is {answer}."


def _judge(strict: bool):  # type: ignore[no-untyped-def]
    def grade(prompt: str) -> tuple[str | None, str]:
        given = re.search(r"Answer to grade: (.*)", prompt)
        ref = re.search(r"Reference answer: (.*)", prompt)
        assert given and ref, prompt
        if given.group(1).strip() == "5":  # an item it cannot decide: no verdict
            return None, "I am not sure."
        ok = given.group(1).strip() == ref.group(1).strip() or not strict
        return None, f"Compared with the reference.\nVERDICT: {'CORRECT' if ok else 'INCORRECT'}"

    return grade


@pytest.fixture()
def graded(tmp_path: Path) -> Path:
    cond = Condition(name="cot", template="qa-cot", format="free", chat=True, extract="strict")
    with FakeOpenAIServer(ServerConfig(reasoner=_student)) as srv:
        run(
            ITEMS,
            [cond],
            f"openai:student?base_url={srv.url}&{FAST}",
            options=RunOptions(out=tmp_path / "graded", cache=tmp_path / "cache.sqlite"),
        )
    return tmp_path / "graded"


def test_judges_grade_rows_and_agreement_is_measured(graded: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"item_id": f"q{i}", "label": i % 2 == 0}) + "\n" for i in range(6))
    )
    with (
        FakeOpenAIServer(ServerConfig(reasoner=_judge(True))) as strict,
        FakeOpenAIServer(ServerConfig(reasoner=_judge(False))) as lenient,
    ):
        judges = [
            f"openai:strict-judge?base_url={strict.url}&{FAST}",
            f"openai:lenient-judge?base_url={lenient.url}&{FAST}",
        ]
        opts = RunOptions(cache=tmp_path / "cache.sqlite")
        result = judge_results(
            graded, judges, labels=read_labels(labels), out=tmp_path / "judged", options=opts
        )
        again = judge_results(graded, judges, options=opts)  # all from the cache
        calls = strict.record.n_requests + lenient.record.n_requests
    assert calls == 12  # 6 rows x 2 judges, once: the second pass was cached
    rows = read_results(tmp_path / "judged" / "results.parquet").to_pylist()
    by = {r["item_id"]: r for r in rows}
    assert by["q0"]["judge_verdict"] == "correct" and by["q1"]["judge_verdict"] == "incorrect"
    assert by["q2"]["judge_correct"] is None  # "5": no verdict in the reply
    assert "Answer to grade: 1" in by["q0"]["judge_prompt"]
    assert "VERDICT: CORRECT" in by["q0"]["judge_output"]
    assert json.loads(by["q1"]["judges"]) == {
        result.judges[0]: False,
        result.judges[1]: True,
    }
    kappas = {(a.judge, a.other): a for a in result.agreements}
    strict_name, lenient_name = result.judges
    assert kappas[(strict_name, "automatic scoring")].kappa == pytest.approx(1.0)
    assert kappas[(strict_name, "human labels")].n == 5
    assert kappas[(strict_name, lenient_name)].agreement == pytest.approx(2 / 5)
    assert result.verdict_rate[strict_name] == pytest.approx(5 / 6)
    assert result.alpha is not None
    saved = json.loads((tmp_path / "judged" / "judge.json").read_text())
    assert saved["judges"] == list(result.judges)
    assert (tmp_path / "judged" / "judge-1" / "results.parquet").exists()
    assert [r["judge_verdict"] for r in again.table.to_pylist()] == [
        r["judge_verdict"] for r in rows
    ]


def test_the_cli_and_bad_input(graded: Path, tmp_path: Path) -> None:
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"item_id": "q0", "label": "maybe"}\n')
    with pytest.raises(DataError, match=r"line 1: field 'label' must be"):
        read_labels(bad)
    bad.write_text('{"item_id": "q0", "label": true, "colour": 1}\n')
    with pytest.raises(DataError, match="unknown field"):
        read_labels(bad)
    with FakeOpenAIServer(ServerConfig(reasoner=_judge(True))) as srv:
        res = CliRunner().invoke(
            main,
            [
                "judge",
                str(graded),
                "--judge",
                f"openai:j?base_url={srv.url}&{FAST}",
                "--out",
                str(tmp_path / "cli"),
                "--cache",
                str(tmp_path / "c.sqlite"),
            ],
        )
        assert res.exit_code == 0, res.output
        assert "a verdict in 83.3% of replies" in res.output
        judged = read_results(tmp_path / "cli" / "results.parquet")
        with pytest.raises(DataError, match="judged already"):
            judge_results(judged, [f"openai:j?base_url={srv.url}&{FAST}"])


def _fair(prompt: str) -> tuple[str | None, str]:
    ref = re.search(r"Reference answer: (.*)", prompt)
    first = re.search(r"Answer 1: (.*)", prompt)
    second = re.search(r"Answer 2: (.*)", prompt)
    assert ref and first and second, prompt
    one, two = (x.group(1).strip() == ref.group(1).strip() for x in (first, second))
    return None, "VERDICT: " + ("TIE" if one == two else ("1" if one else "2"))


def _first_always(prompt: str) -> tuple[str | None, str]:
    return None, "The first one. VERDICT: 1"


def test_pairwise_judging_swaps_the_order_and_measures_position_bias(
    graded: Path, tmp_path: Path
) -> None:
    """A: the graded student (wrong on odd items); B: a student always right. A fair judge
    prefers B on the odd items and ties elsewhere, in both orders; a judge that always
    names the first answer is inconsistent on every unit, and its bias shows."""
    from steadyeval.judge import judge_pairwise

    cond = Condition(name="cot", template="qa-cot", format="free", chat=True, extract="strict")

    def right(prompt: str) -> tuple[str | None, str]:
        a, b = map(int, re.findall(r"What is (\d+) plus (\d+)\?", prompt)[-1])
        return None, f"The answer is {a + b}."

    with FakeOpenAIServer(ServerConfig(reasoner=right)) as srv:
        run(
            ITEMS,
            [cond],
            f"openai:good?base_url={srv.url}&{FAST}",
            options=RunOptions(out=tmp_path / "good", cache=tmp_path / "cache.sqlite"),
        )
    runs = [graded, tmp_path / "good"]
    models = [read_results(r).column("model")[0].as_py() for r in runs]
    opts = RunOptions(cache=tmp_path / "cache.sqlite")
    with FakeOpenAIServer(ServerConfig(reasoner=_fair)) as srv:
        fair = judge_pairwise(
            runs,
            *models,
            f"openai:fair?base_url={srv.url}&{FAST}",
            out=tmp_path / "pw",
            options=opts,
        )
    assert (fair.n, fair.wins_a, fair.wins_b, fair.ties, fair.inconsistent) == (6, 0, 3, 3, 0)
    assert fair.consistency == 1.0 and fair.first_share == pytest.approx(0.5)
    assert fair.b_win_rate == pytest.approx(0.75)
    assert json.loads((tmp_path / "pw" / "pairwise.json").read_text())["wins_b"] == 3
    with FakeOpenAIServer(ServerConfig(reasoner=_first_always)) as srv:
        biased = judge_pairwise(
            runs, *models, f"openai:biased?base_url={srv.url}&{FAST}", options=opts
        )
    assert biased.inconsistent == 6 and biased.consistency == 0.0
    assert biased.first_share == 1.0 and biased.first_pvalue < 0.001
    verdicts = biased.pairs.to_pylist()[0]
    assert (verdicts["verdict_ab"], verdicts["verdict_ba"], verdicts["winner"]) == (
        "A",
        "B",
        "inconsistent",
    )


def test_a_judge_never_writes_over_a_run_and_checks_its_inputs(
    graded: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from steadyeval import ConfigError
    from steadyeval.judge import check_rubric

    judge = "openai:j?base_url=http://127.0.0.1:9/v1"  # never reached: refused before
    for out in (graded, graded / "results.parquet", tmp_path / "elsewhere"):
        if out.name == "elsewhere":
            out.mkdir()
            (out / "results.parquet").write_bytes(b"x")  # some other table
        with pytest.raises(ConfigError, match="--out"):
            judge_results(graded, [judge], out=out if out.is_dir() else out.parent)
    assert read_results(graded).num_rows == 6  # untouched
    with pytest.raises(ConfigError, match="empty"):
        check_rubric("  \n")
    with pytest.raises(ConfigError, match=r"the rubric: template error at its line 2"):
        check_rubric("Grade this.\n{{ metadata.answer }")
    with pytest.raises(ConfigError, match="undefined variable 'answer'"):
        judge_results(graded, [judge], rubric="{{ answer }}")
    # labels: narrowed by model only, a BOM, conflicting lines, lines matching nothing
    labels = tmp_path / "labels.jsonl"
    model = read_results(graded).column("model")[0].as_py()
    labels.write_text(
        "\ufeff" + json.dumps({"item_id": "q0", "model": model, "label": True}) + "\n",
        encoding="utf-8",
    )
    assert read_labels(labels) == {(("item_id", "q0"), ("model", model)): True}
    labels.write_text('{"item_id": "q0", "label": true}\n{"item_id": "q0", "label": false}\n')
    with pytest.raises(DataError, match="line 2: labels the same rows as line 1"):
        read_labels(labels)


def test_labels_match_the_most_specific_line() -> None:
    from steadyeval.judge._judge import _match_labels

    rows = [
        {"model": "m", "item_id": "q0", "condition": "c", "sample_index": 0},
        {"model": "m", "item_id": "q0", "condition": "c", "sample_index": 1},
        {"model": "n", "item_id": "q0", "condition": "c", "sample_index": 0},
    ]
    labels = {
        (("item_id", "q0"),): True,
        (("item_id", "q0"), ("sample_index", "1")): False,
        (("item_id", "zz"),): True,
    }
    assert _match_labels(rows, labels) == ([True, False, True], 1)


def test_items_given_to_the_judge_must_be_the_graded_ones(caplog: pytest.LogCaptureFixture) -> None:
    from steadyeval.judge._common import matched_items

    rows = [{"item_id": i.id, "item_hash": i.hash} for i in ITEMS[:3]]
    edited = Item(id="q1", question="What is 100 plus 1?", answers=("101",))
    got = matched_items(rows, [ITEMS[0], edited, Item(id="zz", question="?")])
    assert list(got) == ["q0"]
    assert "differ from the graded run's (item_hash), e.g. 'q1'" in caplog.text
    assert "1 of the graded run's items are not among the items given" in caplog.text


def test_overlapping_runs_and_equally_specific_opposite_labels_are_refused(
    graded: Path, tmp_path: Path
) -> None:
    from steadyeval import ConfigError
    from steadyeval.judge import judge_pairwise
    from steadyeval.judge._judge import _match_labels

    judge = "openai:j?base_url=http://127.0.0.1:9/v1"  # never reached: refused before
    table = read_results(graded)
    other = table.set_column(
        table.column_names.index("model"), "model", pa.array(["other"] * table.num_rows)
    )
    stacked = pa.concat_tables([table, other, table])  # the graded run given twice
    with pytest.raises(DataError, match="more than once: the runs given overlap"):
        judge_pairwise(stacked, None, None, judge)
    row = {"model": "m", "item_id": "q0", "condition": "c", "sample_index": 0}
    labels = {
        (("item_id", "q0"), ("model", "m")): True,
        (("condition", "c"), ("item_id", "q0")): False,
    }
    with pytest.raises(DataError, match="opposite labels"):
        _match_labels([row], labels)
    with pytest.raises(ConfigError, match="--out is empty"):
        judge_results(graded, [judge], out="")
