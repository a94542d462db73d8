"""Inspect tasks as items (loader ``inspect``, ``--task inspect:FILE.py@TASK``): tasks
defined in files written here (``inspect_evals`` tasks load hub data), each mapped shape,
the refusals and the bad specs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from steadyeval import ConfigError, DataError
from steadyeval.items import load_inspect_items, load_items

pytest.importorskip("inspect_ai")

HEADER = """\
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample, json_dataset
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import choice, includes, match, model_graded_qa
from inspect_ai.solver import generate, multiple_choice, system_message, use_tools
"""

TASKS = """\
@task
def quiz():
    return Task(
        dataset=MemoryDataset([
            Sample(input="Largest planet?", choices=["Mars", "Jupiter", "Venus"], target="B",
                   id="p1", metadata={"topic": "space", "level": 2, "tags": ["x"]}),
            Sample(input="Even numbers?", choices=["1", "2", "3", "4"], target=["B", "D"]),
        ]),
        solver=multiple_choice(multiple_correct=True),
        scorer=choice(),
    )


@task
def arith(offset: int = 0):
    return Task(
        dataset=[Sample(input=f"{2 + offset} + 2 = ?", target=[str(4 + offset), "four"], id=7)],
        solver=[system_message("Answer briefly."), generate()],
        scorer=match(location="any", numeric=True),
    )


@task(name="capitals")
def capitals_task():
    return Task(dataset=json_dataset("capitals.jsonl"), scorer=includes(ignore_case=False))
"""


def write(path: Path, body: str, header: str = HEADER) -> Path:
    path.write_text(header + "\n" + textwrap.dedent(body))
    return path


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    rows = [{"input": "Capital of France?", "target": "Paris", "id": "fr"}]
    (tmp_path / "capitals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write(tmp_path / "tasks.py", TASKS)


def test_multiple_choice_task_maps_to_options_and_gold(tasks_file: Path) -> None:
    first, second = load_inspect_items(f"{tasks_file}@quiz")
    assert (first.id, second.id) == ("p1", "2")  # sample id, else the 1-based position
    assert first.question == "Largest planet?"
    assert first.options == ("Mars", "Jupiter", "Venus") and first.gold_options == (1,)
    assert second.gold_options == (1, 3)
    assert dict(first.metadata) == {
        "topic": "space",
        "level": 2,  # scalar metadata kept; the list 'tags' is not
        "subtask": "quiz",
        "inspect_scorer": "choice",
        "inspect_solver": "multiple_choice",
        "inspect_multiple_correct": True,
        "inspect_cot": False,
    }


def test_generate_match_and_includes_tasks(tasks_file: Path) -> None:
    (item,) = load_inspect_items(f"{tasks_file}@arith")
    assert item.id == "7" and item.options is None and item.answers == ("4", "four")
    assert dict(item.metadata) == {
        "subtask": "arith",
        "inspect_scorer": "match",
        "inspect_solver": "system_message -> generate",
        "inspect_location": "any",
        "inspect_ignore_case": True,
        "inspect_numeric": True,
    }
    (shifted,) = load_inspect_items(f"{tasks_file}@arith", task_args={"offset": 1})
    assert shifted.answers == ("5", "four")
    # @task(name=...) is the task's name; its json dataset is read next to the task file
    (capital,) = load_inspect_items(task=f"{tasks_file}@capitals")
    assert capital.id == "fr" and capital.answers == ("Paris",)
    assert capital.metadata["inspect_scorer"] == "includes"
    assert capital.metadata["inspect_ignore_case"] is False


def test_several_tasks_prefix_ids_and_load_items_reaches_the_loader(tasks_file: Path) -> None:
    items = load_inspect_items(task=[f"{tasks_file}@quiz", f"{tasks_file}@arith"])
    assert [i.id for i in items] == ["quiz/p1", "quiz/2", "arith/7"]
    assert [i.metadata["subtask"] for i in items] == ["quiz", "quiz", "arith"]
    only = write(tasks_file.parent / "one.py", TASKS.split("\n\n\n")[1])
    assert [i.id for i in load_items(str(only), loader="inspect")] == ["7"]  # FILE.py: its one task
    assert load_items(f"{tasks_file}@quiz", loader="inspect") == load_inspect_items(
        f"{tasks_file}@quiz"
    )
    both = [f"{tasks_file}@quiz", f"{tasks_file}@arith"]
    assert load_items(None, loader="inspect", task=both) == items
    assert load_items(only, loader="inspect")[0].id == "7"  # a Path as source
    with pytest.raises(ConfigError, match="no task takes the argument 'offst'"):
        load_inspect_items(
            task=[f"{tasks_file}@quiz", f"{tasks_file}@arith"], task_args={"offst": 1}
        )
    with pytest.raises(ConfigError, match="task has no argument 'offst'; its arguments: offset"):
        load_inspect_items(f"{tasks_file}@arith", task_args={"offst": 1})
    with pytest.raises(ConfigError, match="'quiz' is given twice"):
        load_inspect_items(task=[f"{tasks_file}@quiz", f"{tasks_file}@quiz"])


REFUSED = {
    "graded": (
        "Task(dataset=[Sample(input='q', target='a')], scorer=model_graded_qa())",
        r"scorer model_graded_qa with solver generate does not map .*supported: solver "
        "multiple_choice with scorer choice",
    ),
    "tools": (
        "Task(dataset=[Sample(input='q', target='a')], solver=[use_tools([]), generate()], "
        "scorer=match())",
        "solver chain is use_tools -> generate, which steadyeval cannot reproduce",
    ),
    "mismatched": (
        "Task(dataset=[Sample(input='q', choices=['a', 'b'], target='A')], "
        "solver=multiple_choice(), scorer=match())",
        "scorer match with solver multiple_choice does not map",
    ),
    "sandboxed": (
        "Task(dataset=[Sample(input='q', target='a')], scorer=match(), sandbox='docker')",
        "runs in a sandbox",
    ),
    "no_scorer": ("Task(dataset=[Sample(input='q', target='a')])", "scorer none"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_tasks_that_do_not_map_are_refused(tmp_path: Path, name: str) -> None:
    task, message = REFUSED[name]
    path = write(tmp_path / "t.py", f"@task\ndef {name}():\n    return {task}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_inspect_items(f"{path}@{name}")
    assert f"{path}@{name}" in str(err.value)


SAMPLES = {
    "chat": (
        "Sample(input=[ChatMessageSystem(content='s'), ChatMessageUser(content='q')], "
        "target='a', id='c1')",
        r"sample 'c1', field 'input': input is a chat of 2 message\(s\) \(system, user\)",
    ),
    "letters": (
        "Sample(input='q', choices=['a', 'b'], target='A?')",
        "field 'target': target 'A\\?' is not answer letters",
    ),
    "beyond": (
        "Sample(input='q', choices=['a', 'b'], target='Paris')",  # letters P, A, R, I, S
        "target 'Paris' names P, R, I, S, beyond the 2 choices",
    ),
    "clash": (
        "Sample(input='q', target='a', metadata={'subtask': 'x'})",
        "sample metadata has key 'subtask', which steadyeval sets",
    ),
    "duplicate": (
        "Sample(input='q', target='a', id='d'), Sample(input='r', target='b', id='d')",
        "duplicate sample id 'd'",
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_that_do_not_map_name_the_sample(tmp_path: Path, name: str) -> None:
    sample, message = SAMPLES[name]
    mc = "choices" in sample
    solver, scorer = ("multiple_choice()", "choice()") if mc else ("generate()", "match()")
    body = f"@task\ndef {name}():\n    return Task([{sample}], solver={solver}, scorer={scorer})\n"
    path = write(tmp_path / "t.py", body)
    with pytest.raises(DataError, match=message):
        load_inspect_items(str(path))


def test_a_single_user_message_is_the_question(tmp_path: Path) -> None:
    body = (
        "@task\ndef chat():\n    return Task([Sample(input=[ChatMessageUser(content='Hi?')], "
        "target='a')], scorer=match())\n"
    )
    (item,) = load_inspect_items(str(write(tmp_path / "t.py", body)))
    assert item.question == "Hi?"


def test_bad_specs_name_the_file_and_what_was_expected(tasks_file: Path, tmp_path: Path) -> None:
    with pytest.raises(
        DataError, match=r"nope\.py: file not found \(expected an Inspect task file"
    ):
        load_inspect_items(str(tmp_path / "nope.py"))
    (tmp_path / "tasks.txt").write_text("x")
    with pytest.raises(DataError, match=r"tasks\.txt: not a Python file \(\.txt\)"):
        load_inspect_items(str(tmp_path / "tasks.txt"))
    with pytest.raises(
        ConfigError, match=r"no task 'missing' in .*; its tasks: quiz, arith, capitals"
    ):
        load_inspect_items(f"{tasks_file}@missing")
    with pytest.raises(ConfigError, match=r"defines 3 tasks \(quiz, arith, capitals\); name one"):
        load_inspect_items(str(tasks_file))
    with pytest.raises(ConfigError, match="no task name after '@'"):
        load_inspect_items(f"{tasks_file}@")
    broken = write(tmp_path / "broken.py", "@task\ndef t(:\n    pass\n")
    with pytest.raises(ConfigError, match=r"broken\.py: line \d+: syntax error"):
        load_inspect_items(str(broken))
    empty = write(tmp_path / "empty.py", "x = 1\n")
    with pytest.raises(ConfigError, match="defines no Inspect @task function"):
        load_inspect_items(str(empty))
    with pytest.raises(ConfigError, match="no Inspect task registered under that name"):
        load_inspect_items("no_such_package/task")
    with pytest.raises(ConfigError, match="as source or as task, not both"):
        load_inspect_items(str(tasks_file), task="x.py")


def test_a_dataset_that_cannot_load_is_a_data_error(tmp_path: Path) -> None:
    body = "@task\ndef offline():\n    return Task(json_dataset('absent.jsonl'), scorer=match())\n"
    path = write(tmp_path / "t.py", body)
    with pytest.raises(DataError, match=r"t\.py: creating the task or loading its dataset failed"):
        load_inspect_items(str(path))


def test_missing_inspect_names_the_extra(monkeypatch: pytest.MonkeyPatch, tasks_file: Path) -> None:
    from steadyeval import _extras

    monkeypatch.setattr(_extras, "_installed", lambda module: module != "inspect_ai")
    with pytest.raises(_extras.MissingExtraError, match=r"pip install 'steadyeval\[inspect\]'"):
        load_inspect_items(f"{tasks_file}@quiz")


def test_generated_answers_are_judged_by_the_tasks_own_scorer(tasks_file: Path) -> None:
    """Scoring ``inspect`` asks the task's own scorer (here ``match(location="any",
    numeric=True)`` and ``includes(ignore_case=False)``), through the pipeline."""
    from steadyeval import Condition, RunOptions, expand, parse_model_spec, run
    from steadyeval.scoring import inspect_verdict
    from tests.scripted_backend import ScriptedBackend

    items = load_inspect_items(task=[f"{tasks_file}@arith", f"{tasks_file}@capitals"])
    cond = Condition(name="inspect", format="free", scoring="inspect", items="without-options")
    quiz = load_inspect_items(task=f"{tasks_file}@quiz")
    assert expand(quiz, [cond]).n_skipped == len(quiz)  # no match/includes scorer to ask
    answers = {"2 + 2": "I think it is 4.0 really", "France": "the capital is paris"}
    backend = ScriptedBackend(spec=parse_model_spec("scripted:inspect"), answers=answers)
    result = run(items, [cond], [backend], options=RunOptions(progress=False))
    rows = {r["item_id"]: r for r in result.table.to_pylist()}
    arith = rows["arith/7"]
    assert arith["correct"] is True  # numeric, anywhere: 4.0 == 4
    assert arith["extractor"] == "inspect:match"
    capitals = [r for k, r in rows.items() if k.startswith("capitals/")]
    # includes(ignore_case=False): "paris" is not "Paris"
    assert capitals and all(r["correct"] is False for r in capitals)
    meta = {"inspect_scorer": "includes", "inspect_ignore_case": True}
    assert inspect_verdict("the capital is paris", ["Paris"], meta).value == "C"
    meta = {"inspect_scorer": "match", "inspect_location": "end", "inspect_numeric": False}
    assert inspect_verdict("It is 12", ["12"], meta).value == "C"
    assert inspect_verdict("12 it is", ["12"], meta).value == "I"


def test_a_relative_path_with_a_folder_loads(
    tasks_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tasks_file.parent.parent)
    relative = f"{tasks_file.parent.name}/{tasks_file.name}"
    assert [i.id for i in load_items(f"{relative}@arith", loader="inspect")] == ["7"]
