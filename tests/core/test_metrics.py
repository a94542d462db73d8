"""A metric is added in one place: a scoring mode declares it (``metrics``) and sets its value;
the results table, its schema, summary.json and summary.md follow."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow.parquet as pq
import pytest

from steadyeval import ConfigError
from steadyeval.conditions import Condition, Trial
from steadyeval.items import Item
from steadyeval.models import parse_model_spec
from steadyeval.requests import Request, Response
from steadyeval.results import read_results, study_columns
from steadyeval.run import RunOptions, run
from steadyeval.scoring import ScoredTrial, ScoringMode, get_scoring, register_scoring
from tests.scripted_backend import ScriptedBackend


class _Words(ScoringMode):
    """Test mode: generation, plus the number of words in the output (a metric)."""

    name = "test-generate-words"
    doc = "generation, with the output's length in words"
    metrics: ClassVar = {"output_words": "words in the model's output"}

    def requests(self, trial: Trial) -> tuple[Request, ...]:
        return get_scoring("generate").requests(trial)

    def samples(self, n_requests: int) -> list[range]:
        return get_scoring("generate").samples(n_requests)

    def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
        scored = get_scoring("generate").score(trial, responses)
        words = len(scored.output.split()) if trial.item.id != "q0" else None
        return dataclasses.replace(scored, metrics={"output_words": words})


def _items() -> list[Item]:
    return [Item(id=f"q{i}", question=f"Question {i}?", answers=("x",)) for i in range(4)]


def _backend() -> ScriptedBackend:
    answers = {"Question 1?": "one", "Question 2?": "two words", "Question 3?": "three more words"}
    return ScriptedBackend(spec=parse_model_spec("scripted:m"), answers=answers)


def test_a_declared_metric_becomes_a_column_and_a_summary_mean(tmp_path: Path) -> None:
    register_scoring(_Words(), replace=True)
    cond = Condition(name="w", format="free", scoring="test-generate-words")  # type: ignore[arg-type]
    out = tmp_path / "run"
    result = run(_items(), [cond], [_backend()], options=RunOptions(out=out, progress=False))
    table = read_results(out)
    assert table.column("output_words").to_pylist() == [None, 1.0, 2.0, 3.0]
    (declared,) = study_columns(table)
    assert (declared.name, declared.type, declared.summary) == ("output_words", "float", "mean")
    field = pq.read_schema(out / "results.parquet").field("output_words")
    assert field.metadata[b"doc"] == b"words in the model's output"
    summary = json.loads((out / "summary.json").read_text())
    (row,) = summary["by_condition"]
    assert row["metrics"] == {"output_words": 2.0}  # the mean over the rows that have it
    assert result.summary["by_condition"][0]["metrics"] == {"output_words": 2.0}
    md = (out / "summary.md").read_text()
    assert "| F1 | output_words (mean) |" in md and "| 2 |" in md


def test_runs_without_metrics_keep_their_summary_shape(tmp_path: Path) -> None:
    cond = Condition(name="g", format="free", scoring="generate")  # type: ignore[arg-type]
    result = run(_items(), [cond], [_backend()], options=RunOptions(progress=False))
    assert "metrics" not in result.summary["by_condition"][0]
    assert study_columns(result.table) == []


def test_a_metric_the_mode_does_not_declare_is_an_error() -> None:
    class _Sloppy(_Words):
        name = "test-generate-sloppy"

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            return dataclasses.replace(super().score(trial, responses), metrics={"bleu": 0.5})

    register_scoring(_Sloppy(), replace=True)
    cond = Condition(name="s", format="free", scoring="test-generate-sloppy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="gave metric 'bleu', which its metrics do not declare"):
        run(_items(), [cond], [_backend()], options=RunOptions(progress=False))


def test_a_metric_value_that_is_not_a_number_is_an_error() -> None:
    class _Text(_Words):
        name = "test-generate-text-metric"

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            scored = super().score(trial, responses)
            return dataclasses.replace(scored, metrics={"output_words": "many"})  # type: ignore[dict-item]

    register_scoring(_Text(), replace=True)
    cond = Condition(name="t", format="free", scoring="test-generate-text-metric")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="the value 'many'; expected a finite number or None"):
        run(_items(), [cond], [_backend()], options=RunOptions(progress=False))


def test_metric_names_are_checked_when_the_mode_registers() -> None:
    for bad in ({"two words": "x"}, {"ok": 3}, ["output_words"]):

        class _Bad(_Words):
            name = "test-generate-bad-metric"
            metrics: ClassVar = bad

        with pytest.raises(ValueError, match="metrics must map identifier names"):
            register_scoring(_Bad(), replace=True)


def test_a_metric_named_as_a_core_column_is_refused(tmp_path: Path) -> None:
    class _Core(_Words):
        name = "test-generate-core-metric"
        metrics: ClassVar = {"f1": "shadows the core column"}

    register_scoring(_Core(), replace=True)
    cond = Condition(name="c", format="free", scoring="test-generate-core-metric")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="metric 'f1': study column 'f1' would shadow a core"):
        run(_items(), [cond], [_backend()], options=RunOptions(progress=False, out=tmp_path))


def test_a_metric_is_never_lifted_from_the_items_metadata(tmp_path: Path) -> None:
    """A row whose mode did not set the metric (here a plain ``generate`` condition beside
    the metric's) holds null, even where the item's metadata has a key of that name (text
    there made the table fail to build; a number there was averaged as the metric)."""
    register_scoring(_Words(), replace=True)
    items = [dataclasses.replace(i, metadata={"output_words": "many"}) for i in _items()]
    words = Condition(name="w", format="free", scoring="test-generate-words")  # type: ignore[arg-type]
    plain = Condition(name="g", format="free", scoring="generate")  # type: ignore[arg-type]
    out = tmp_path / "run"
    run(items, [words, plain], [_backend()], options=RunOptions(out=out, progress=False))
    table = read_results(out)
    by_condition: dict[str, list[float | None]] = {}
    for cond, value in zip(
        table.column("condition").to_pylist(),
        table.column("output_words").to_pylist(),
        strict=True,
    ):
        by_condition.setdefault(cond, []).append(value)
    assert by_condition == {"w": [None, 1.0, 2.0, 3.0], "g": [None] * 4}
    summary = json.loads((out / "summary.json").read_text())
    assert [r["metrics"] for r in summary["by_condition"]] == [
        {"output_words": 2.0},
        {"output_words": None},
    ]


def test_a_metric_may_take_the_name_of_a_summary_helper_column() -> None:
    """The summary's own working columns (``scored``, ``unmatched``, ...) do not overwrite a
    metric of that name."""

    class _Scored(_Words):
        name = "test-generate-scored-metric"
        metrics: ClassVar = {"scored": "a metric named as a summary helper", "unmatched": "too"}

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            scored = get_scoring("generate").score(trial, responses)
            return dataclasses.replace(scored, metrics={"scored": 0.25, "unmatched": 7})

    register_scoring(_Scored(), replace=True)
    cond = Condition(name="s", format="free", scoring="test-generate-scored-metric")  # type: ignore[arg-type]
    result = run(_items(), [cond], [_backend()], options=RunOptions(progress=False))
    (row,) = result.summary["by_condition"]
    assert row["metrics"] == {"scored": 0.25, "unmatched": 7.0}
    assert row["n"] == 4 and row["unmatched"] == 0


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        (None, "gave metrics None; expected a mapping"),
        ([("output_words", 1.0)], "gave metrics [('output_words', 1.0)]; expected a mapping"),
        ({"output_words": math.nan}, "the value nan; expected a finite number or None"),
        ({"output_words": math.inf}, "the value inf; expected a finite number or None"),
        ({"output_words": 10**400}, "expected a finite number or None"),
        ({"output_words": True}, "the value True; expected a finite number or None"),
    ],
)
def test_metrics_that_are_not_finite_numbers_are_errors_naming_the_mode(
    metrics: object, message: str
) -> None:
    class _Odd(_Words):
        name = "test-generate-odd-metric"

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            scored = get_scoring("generate").score(trial, responses)
            return dataclasses.replace(scored, metrics=metrics)  # type: ignore[arg-type]

    register_scoring(_Odd(), replace=True)
    cond = Condition(name="o", format="free", scoring="test-generate-odd-metric")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        run(_items(), [cond], [_backend()], options=RunOptions(progress=False))
    assert "scoring 'test-generate-odd-metric'" in str(caught.value)


def test_numpy_numbers_are_metric_values() -> None:
    class _Numpy(_Words):
        name = "test-generate-numpy-metric"

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            scored = get_scoring("generate").score(trial, responses)
            return dataclasses.replace(scored, metrics={"output_words": np.float32(1.5)})

    register_scoring(_Numpy(), replace=True)
    cond = Condition(name="n", format="free", scoring="test-generate-numpy-metric")  # type: ignore[arg-type]
    result = run(_items(), [cond], [_backend()], options=RunOptions(progress=False))
    assert result.table.column("output_words").to_pylist() == [1.5] * 4


def test_the_report_headline_shows_a_metric_mean(tmp_path: Path) -> None:
    from steadyeval.reports import write_report

    register_scoring(_Words(), replace=True)
    cond = Condition(name="w", format="free", scoring="test-generate-words")  # type: ignore[arg-type]
    out = tmp_path / "run"
    run(_items(), [cond], [_backend()], options=RunOptions(out=out, progress=False))
    md = write_report(out, fmt="md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| model | condition"))
    assert header.rstrip().endswith("| F1 | output_words (mean) |")
    row = next(line for line in md.splitlines() if line.startswith("| scripted:m | w |"))
    assert row.rstrip().endswith("| 2.000 |") or row.rstrip().endswith("| 2 |"), row


def test_a_metric_named_like_a_summary_header_gets_its_own_column(tmp_path: Path) -> None:
    from steadyeval.reports import write_report

    class _N(_Words):
        name = "test-generate-n-metric"
        metrics: ClassVar = {"n": "a metric called n"}

        def score(self, trial: Trial, responses: Sequence[Response]) -> ScoredTrial:
            return dataclasses.replace(super().score(trial, responses), metrics={"n": 1.5})

    register_scoring(_N(), replace=True)
    cond = Condition(name="n", format="free", scoring="test-generate-n-metric")  # type: ignore[arg-type]
    out = tmp_path / "run"
    run(_items(), [cond], [_backend()], options=RunOptions(out=out, progress=False))
    for md in ((out / "summary.md").read_text(), write_report(out, fmt="md").read_text()):
        header = next(line for line in md.splitlines() if line.startswith("| model | condition"))
        cells = [c.strip() for c in header.strip("|").split("|")]
        assert len(cells) == len(set(cells)) and cells[-1] == "n (mean)", cells
