"""The Python API accepts what YAML does (built-in names, ``answer``, a spec string), has a
public ``run_config`` with overrides and ``RunResult.to_pandas``; ``limit`` never changes
another item's prompt; a run folder is resumed, refused or overwritten, never mixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import steadyeval as se
from steadyeval import ConfigError, DataError
from steadyeval.reports import write_report
from steadyeval.run import RunOptions
from tests.scripted_backend import register

register()


def _items(path: Path, n: int = 12) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "question": f"What is item {i}?",
            "options": [f"yes {i}", f"no {i}", f"maybe {i}"],
            "answer": i % 3,
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_condition_takes_builtin_names_as_yaml_does() -> None:
    c = se.Condition(
        name="x", template="qa", format="mc-nota", shots=2, generation={"stop": ["\n"]}
    )
    assert c.template is se.TEMPLATES["qa"]
    assert c.format is se.FORMATS["mc-nota"]
    assert c.shots == se.Shots(n=2)
    assert c.generation.stop == ("\n",)
    assert se.Condition(name="d").format is se.FORMATS["mc"]  # YAML's defaults
    same = se.Condition(
        name="x",
        template=se.TEMPLATES["qa"],
        format=se.FORMATS["mc-nota"],
        shots=se.Shots(n=2),
        generation=se.Generation(stop=("\n",)),
    )
    assert same.id == c.id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"template": "qb"},
            "unknown template 'qb'; built-in templates: cloze, lm-eval, qa, qa-cot, unifiedqa",
        ),
        ({"format": "mcq"}, "unknown format 'mcq'"),
        ({"option_order": "random"}, "option_order must be one of"),
        ({"shots": -1}, "shots: n must be an integer >= 0"),
        ({"template": 3}, "template must be a Template, a built-in name or a mapping"),
        ({"top_k": 0}, "top_k must be an integer in 1..100,000; got 0"),
        ({"candidates": "all"}, "candidates must be one of 'vocabulary', 'options'"),
    ],
)
def test_condition_refuses_bad_values_at_construction(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match="condition 'x'") as err:
        se.Condition(name="x", **kwargs)
    assert message in str(err.value)


def test_item_takes_the_data_files_answer_field() -> None:
    free = se.Item(id="1", question="Capital of France?", answer="Paris")
    assert free.answers == ("Paris",) and free.gold_options == ()
    by_text = se.Item(id="2", question="q", options=["Paris", "Rome"], answer="Rome")
    assert by_text.gold_options == (1,)
    by_index = se.Item(id="3", question="q", options=["Paris", "Rome"], answer=0)
    assert by_index.gold_options == (0,)
    assert by_index == se.Item(id="3", question="q", options=("Paris", "Rome"), gold_options=(0,))
    with pytest.raises(DataError, match="not one of the options"):
        se.Item(id="4", question="q", options=["a", "b"], answer="c")
    with pytest.raises(ValueError, match="not both"):
        se.Item(id="5", question="q", answer="x", answers=("x",))


def test_run_takes_one_spec_string_and_to_pandas(tmp_path: Path) -> None:
    items = se.load_items(_items(tmp_path / "items.jsonl"))
    result = se.run(items, [se.Condition(name="mc", scoring="option-logprob")], "scripted:m")
    df = result.to_pandas()
    assert len(df) == len(items) and set(df["model"]) == {"scripted:m"}
    assert list(df.columns) == result.table.column_names


def test_run_config_from_yaml_with_overrides(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        f"data: {data}\nmodels: [scripted:a]\nconditions:\n"
        "  - {name: mc, format: mc, scoring: option-logprob}\n",
        encoding="utf-8",
    )
    result = se.run_config(cfg, models="scripted:b", limit=4, out=tmp_path / "run")
    assert result.summary["models"] == ["scripted:b"] and result.table.num_rows == 4
    assert (tmp_path / "run" / "results.parquet").is_file()
    counts = se.run_config(str(cfg), dry_run=True)
    assert counts.rows == 12
    with pytest.raises(ConfigError, match="limit"):
        se.run_config(cfg, limit=0)


def test_limit_keeps_every_items_shots(tmp_path: Path) -> None:
    """A pilot's prompts are the full run's prompts for the same items."""
    data = _items(tmp_path / "items.jsonl", n=20)
    conditions = [
        {"name": "letters-3shot", "format": "mc", "scoring": "letter-logprob", "shots": {"n": 3}}
    ]
    config = {"data": str(data), "models": ["scripted:m"], "conditions": conditions}
    full = se.run_config(config).to_pandas().set_index("item_id")["prompt_hash"]
    pilot = se.run_config(config, limit=5).to_pandas().set_index("item_id")["prompt_hash"]
    assert len(pilot) == 5
    assert (pilot == full.loc[pilot.index]).all()


def test_run_folder_resumes_refuses_or_overwrites(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    out = tmp_path / "run"
    config = {"data": str(data), "models": ["scripted:m"]}
    first = se.run_config(config, out=out)
    write_report(out)
    (out / "notes.md").write_text("mine", encoding="utf-8")
    again = se.run_config(config, out=out)  # the same config resumes into its folder
    assert again.summary["run_id"] == first.summary["run_id"]
    assert (out / "report.html").is_file()  # same results: the report still holds
    with pytest.raises(ConfigError, match="different config; pass --overwrite"):
        se.run_config(config, out=out, limit=3)
    assert se.read_results(out).num_rows == first.table.num_rows  # untouched
    replaced = se.run_config(config, out=out, limit=3, overwrite=True)
    assert se.read_results(out).num_rows == replaced.table.num_rows == 3
    assert not (out / "report.html").exists()  # the old run's report went with it
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine"


def test_run_folder_that_is_not_a_run_is_never_cleared(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.tex").write_text("keep me", encoding="utf-8")
    items = se.load_items(data)
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="holds no steadyeval run"):
            se.run(
                items,
                [se.Condition(name="mc", scoring="option-logprob")],
                "scripted:m",
                options=RunOptions(out=precious, overwrite=overwrite),
            )
    assert (precious / "thesis.tex").read_text(encoding="utf-8") == "keep me"


def test_a_cache_inside_the_run_folder_is_kept(tmp_path: Path) -> None:
    data = _items(tmp_path / "items.jsonl")
    out = tmp_path / "run"
    out.mkdir()
    cache = out / "responses.sqlite"
    config = {"data": str(data), "models": ["scripted:m"]}
    se.run_config(config, out=out, cache=cache)  # the cache alone does not make it "not empty"
    replaced = se.run_config(config, out=out, cache=cache, limit=2, overwrite=True)
    assert cache.is_file() and replaced.summary["plan"]["model_calls"] == 0  # all cached
