"""lm-eval tasks as items: steadyeval's ``lm-eval`` template and scoring against lm-eval 0.4.13
itself, on five tasks of different kinds written here (local data, no hub):

- ``se_letters``: multiple choice with letters (MMLU's shape: the options in the prompt,
  the letters scored), 2 shots from a dev split;
- ``se_arc``: option log-likelihoods (ARC's shape) with ``acc`` and ``acc_norm``, 3 shots
  drawn from the training split;
- ``se_cloze``: a cloze (LAMBADA's shape, ``loglikelihood``): the last word's log-probability,
  correct when greedy;
- ``se_gsm``: generation with a regex filter and ``exact_match`` (GSM8K's shape), 2 shots;
- ``se_group``: a group of two subtasks.

lm-eval runs them through ``simple_evaluate`` with ``log_samples`` on the tiny GPT-2; the same
tasks run through ``steadyeval run --task lm-eval:...``. Prompts must be byte-identical, the
log-probabilities within 1e-4, and each document's correctness the same.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ._lmeval_helpers import no_network, set_offline_env

set_offline_env()
pytest.importorskip("lm_eval", reason="lm-eval (the [lm-eval] extra) is not installed")
pytest.importorskip("lm_eval.models.huggingface", reason="lm-eval's hf model needs accelerate")

ATOL = 1e-4
TASKS = ["se_letters", "se_arc", "se_cloze", "se_gsm", "se_group"]
LEAVES = ["se_letters", "se_arc", "se_cloze", "se_gsm", "se_sub_a", "se_sub_b"]

_COMMON = """dataset_path: json
dataset_kwargs:
  data_files:
    train: {data}/train.jsonl
    dev: {data}/dev.jsonl
    test: {data}/test.jsonl
test_split: test
"""

YAMLS = {
    "se_letters": """task: se_letters
{common}output_type: multiple_choice
fewshot_split: dev
num_fewshot: 2
description: "The following are questions about numbers.\\n\\n"
doc_to_text: "{{{{question.strip()}}}}\\nA. {{{{choices[0]}}}}\\nB. {{{{choices[1]}}}}\\nC. {{{{choices[2]}}}}\\nAnswer:"
doc_to_choice: ["A", "B", "C"]
doc_to_target: label
metric_list:
  - metric: acc
""",
    "se_arc": """task: se_arc
{common}output_type: multiple_choice
training_split: train
num_fewshot: 3
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: label
doc_to_choice: "{{{{choices}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
""",
    "se_cloze": """task: se_cloze
{common}output_type: loglikelihood
doc_to_text: "{{{{sentence.split(' ')[:-1]|join(' ')}}}}"
doc_to_target: "{{{{' '+sentence.split(' ')[-1]}}}}"
metric_list:
  - metric: perplexity
  - metric: acc
""",
    "se_gsm": """task: se_gsm
{common}output_type: generate_until
fewshot_split: train
num_fewshot: 2
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{solution}}}}"
generation_kwargs:
  until: ["Question:", "\\n\\n"]
  do_sample: false
  temperature: 0.0
  max_gen_toks: 12
metric_list:
  - metric: exact_match
    ignore_case: true
    regexes_to_ignore: [",", "\\\\$", "(?s).*#### ", "\\\\.$"]
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "(\\\\-?[0-9\\\\.\\\\,]+)"
        group_select: -1
      - function: take_first
""",
    "se_sub_a": """task: se_sub_a
{common}output_type: multiple_choice
doc_to_text: "Q: {{{{question}}}}\\nA:"
doc_to_target: label
doc_to_choice: "{{{{choices}}}}"
metric_list:
  - metric: acc
""",
    "se_sub_b": """task: se_sub_b
{common}output_type: multiple_choice
target_delimiter: ""
doc_to_text: "{{{{question}}}} ->"
doc_to_target: label
doc_to_choice: "{{{{choices}}}}"
metric_list:
  - metric: acc
""",
}
GROUP = """group: se_group
task:
  - se_sub_a
  - se_sub_b
aggregate_metric_list:
  - metric: acc
    weight_by_size: true
"""


def _docs(n: int, offset: int) -> list[dict[str, Any]]:
    out = []
    for i in range(offset, offset + n):
        a, b = i % 7 + 1, i % 5 + 2
        out.append(
            {
                "question": f"What is {a} plus {b}?",
                "choices": [str(a + b), str(a + b + 1), str(a * b)],
                "label": i % 3,
                "sentence": f"The sum of {a} and {b} is {a + b}",
                "solution": f"{a} plus {b} makes {a + b}.\n#### {a + b}",
            }
        )
    return out


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("lmeval_tasks")
    data = base / "data"
    data.mkdir()
    for split, (n, offset) in {"train": (8, 0), "dev": (4, 20), "test": (9, 40)}.items():
        (data / f"{split}.jsonl").write_text(
            "".join(json.dumps(d) + "\n" for d in _docs(n, offset))
        )
    tasks = base / "tasks"
    tasks.mkdir()
    common = _COMMON.format(data=data)
    for name, text in YAMLS.items():
        (tasks / f"{name}.yaml").write_text(text.format(common=common))
    (tasks / "se_group.yaml").write_text(GROUP)
    return tasks


@pytest.fixture(scope="module")
def lmeval_samples(tasks_dir: Path, tiny_gpt2: Path) -> dict[str, list[dict[str, Any]]]:
    """lm-eval's own logged samples for the five tasks on the tiny GPT-2."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    with no_network():
        results = lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_gpt2},dtype=float32",
            tasks=TASKS,
            task_manager=TaskManager(include_path=str(tasks_dir), include_defaults=False),
            log_samples=True,
            device="cpu",
            batch_size=8,
        )
    assert results is not None
    samples: dict[str, list[dict[str, Any]]] = results["samples"]
    return samples


@pytest.fixture(scope="module")
def steadyeval_rows(tasks_dir: Path, tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory):
    """steadyeval's rows for the same tasks, by (task, doc_id)."""
    from click.testing import CliRunner

    from steadyeval.cli import main
    from steadyeval.results import read_results

    out = tmp_path_factory.mktemp("se_run") / "run"
    args = ["run", "--model", f"hf:{tiny_gpt2}", "--include-path", str(tasks_dir)]
    for t in TASKS:
        args += ["--task", f"lm-eval:{t}"]
    args += ["--out", str(out), "--no-progress"]
    with no_network():
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = read_results(out).to_pylist()
    return {(r["item_id"].split("/")[0], int(r["item_id"].split("/")[1])): r for r in rows}


def test_every_document_of_every_task_is_an_item(
    lmeval_samples: dict[str, list[dict[str, Any]]], steadyeval_rows: dict[Any, Any]
) -> None:
    assert sorted(lmeval_samples) == sorted(LEAVES)
    expected = {(t, int(s["doc_id"])) for t in LEAVES for s in lmeval_samples[t]}
    assert set(steadyeval_rows) == expected
    assert all(r["condition"] == "lm-eval" for r in steadyeval_rows.values())
    # the group's subtasks say so
    for (task, _), row in steadyeval_rows.items():
        meta = json.loads(row["metadata"]) if isinstance(row["metadata"], str) else row["metadata"]
        assert meta["subtask"] == task
        assert meta.get("group") == ("se_group" if task.startswith("se_sub") else None)


def test_prompts_are_byte_identical_to_lm_evals(
    lmeval_samples: dict[str, list[dict[str, Any]]], steadyeval_rows: dict[Any, Any]
) -> None:
    shots_seen = 0
    for task in LEAVES:
        for s in lmeval_samples[task]:
            row = steadyeval_rows[(task, int(s["doc_id"]))]
            contexts = {a[0] for a in s["arguments"]}
            assert len(contexts) == 1
            assert row["prompt"] == contexts.pop(), (task, s["doc_id"])
            shots_seen += row["prompt"].count("Question:") > 1
    assert shots_seen > 0  # the shots are there, drawn by lm-eval's own stream


def test_log_probabilities_and_correctness_agree_with_lm_eval(
    lmeval_samples: dict[str, list[dict[str, Any]]], steadyeval_rows: dict[Any, Any]
) -> None:
    for task in ["se_letters", "se_arc", "se_sub_a", "se_sub_b"]:
        for s in lmeval_samples[task]:
            row = steadyeval_rows[(task, int(s["doc_id"]))]
            theirs = [float(r[0][0]) for r in s["resps"]]
            assert row["option_logprobs"] == pytest.approx(theirs, abs=ATOL)
            assert row["correct"] == bool(s["acc"])
            if "acc_norm" in s:
                norm = [lp / len(c) for lp, c in zip(theirs, s["doc"]["choices"], strict=True)]
                mine = row["option_logprobs_per_char"]
                assert mine == pytest.approx(norm, abs=ATOL)
    lls = []
    for s in lmeval_samples["se_cloze"]:
        row = steadyeval_rows[("se_cloze", int(s["doc_id"]))]
        ll, greedy = s["resps"][0][0]
        assert row["sequence_logprob"] == pytest.approx(float(ll), abs=ATOL)
        assert row["correct"] == bool(greedy) == bool(s["acc"])
        lls.append(row["sequence_logprob"])
    # lm-eval's perplexity is exp(-mean log-likelihood) over the documents
    assert math.isfinite(math.exp(-sum(lls) / len(lls)))


def test_generation_filter_and_exact_match_agree_with_lm_eval(
    lmeval_samples: dict[str, list[dict[str, Any]]], steadyeval_rows: dict[Any, Any]
) -> None:
    for s in lmeval_samples["se_gsm"]:
        row = steadyeval_rows[("se_gsm", int(s["doc_id"]))]
        (gen_args,) = {json.dumps(a[1], sort_keys=True) for a in s["arguments"]}
        assert json.loads(gen_args)["until"] == ["Question:", "\n\n"]
        assert row["output"] == s["resps"][0][0]
        assert row["parsed"] in (s["filtered_resps"][0], None)
        assert row["correct"] == bool(s["exact_match"])
        assert row["extractor"] == "lm-eval:strict-match"


def test_the_filter_and_exact_match_rules_on_known_answers() -> None:
    from steadyeval.scoring import lm_eval_exact_match, lm_eval_filter

    steps = [
        {"function": "regex", "regex_pattern": r"#### (\-?[0-9\.\,]+)"},
        {"function": "take_first"},
    ]
    assert lm_eval_filter("so #### 1,234 then #### 7", steps) == "1,234"
    assert lm_eval_filter("no marker", steps) == "[invalid]"
    last = [
        {"function": "regex", "regex_pattern": r"(-?[$0-9.,]{2,})|(-?[0-9]+)", "group_select": -1}
    ]
    assert lm_eval_filter("3 apples and $12.", last) == "$12."
    rules = {"ignore_case": True, "regexes_to_ignore": [",", r"\$", "(?s).*#### ", r"\.$"]}
    assert lm_eval_exact_match("$1,234.", "so it is\n#### 1234", rules)
    assert not lm_eval_exact_match("1235", "#### 1234", rules)
    assert lm_eval_exact_match("Yes", "yes", {"ignore_case": True})
    assert not lm_eval_exact_match("Yes", "yes", {})
    assert lm_eval_exact_match("yes!", "yes", {"ignore_punctuation": True})


def test_the_task_crossed_with_other_conditions_compares(
    tasks_dir: Path, tiny_gpt2: Path, tmp_path: Path
) -> None:
    """The task's own prompt beside steadyeval's conditions on the same items, two models,
    then ``compare`` and the report."""
    from steadyeval.compare import compare_runs
    from steadyeval.models._tiny import build_tiny_model
    from steadyeval.reports import write_report
    from steadyeval.results import read_results
    from steadyeval.run import run_config

    other = build_tiny_model(tmp_path / "gpt2b", "gpt2", seed=1)
    config = {
        "data": {"loader": "lm-eval", "task": "se_arc", "include_path": str(tasks_dir)},
        "models": [f"hf:{tiny_gpt2}", f"hf:{other}"],
        "shot_pools": {
            "train": {
                "loader": "lm-eval",
                "task": "se_arc",
                "include_path": str(tasks_dir),
                "docs": "fewshot",
            }
        },
        "conditions": [
            {"name": "lm-eval", "template": "lm-eval", "scoring": "lm-eval"},
            {
                "name": "lm-eval-norm",
                "template": "lm-eval",
                "scoring": "lm-eval",
                "normalization": "char",
            },
            {"name": "qa-mc", "template": "qa", "format": "mc", "scoring": "letter-logprob"},
            {
                "name": "qa-shuffled",
                "template": "qa",
                "format": "mc",
                "scoring": "option-logprob",
                "option_order": "shuffled",
                "shots": {"n": 2, "source": "train"},
            },
        ],
    }
    with no_network():
        result = run_config(config, out=tmp_path / "run", progress=False)
    assert result.summary.get("n_skipped", 0) == 0
    cmp = compare_runs([tmp_path / "run"])
    conditions = {d.condition for pair in cmp.pairs for d in pair.conditions}
    assert conditions == {"lm-eval", "lm-eval-norm", "qa-mc", "qa-shuffled"}
    for pair in cmp.pairs:
        for d in pair.conditions:
            assert d.n == 9
    rows = read_results(tmp_path / "run").to_pylist()
    shuffled = [r for r in rows if r["condition"] == "qa-shuffled"]
    # the question is the document's question, and the shots come from the training split
    assert all(r["prompt"].count("Question: What is") == 3 for r in shuffled)
    assert all("Question: Question:" not in r["prompt"] for r in rows)
    report = write_report(tmp_path / "run", output=tmp_path / "report.html")
    assert "lm-eval-norm" in report.read_text()


REFUSED = {
    "rolling": (
        "output_type: loglikelihood_rolling\ndoc_to_text: ''\ndoc_to_target: sentence\n",
        "loglikelihood_rolling",
    ),
    "f1": (
        'output_type: multiple_choice\ndoc_to_text: q\ndoc_to_choice: "{{choices}}"\n'
        "doc_to_target: label\nmetric_list: [{metric: f1}]\n",
        "metric 'f1'",
    ),
    "own_results": (
        'output_type: multiple_choice\ndoc_to_text: q\ndoc_to_choice: "{{choices}}"\n'
        "doc_to_target: label\nprocess_results: !function utils.process\n",
        "process_results",
    ),
    "filter": (
        "output_type: generate_until\ndoc_to_text: q\ndoc_to_target: solution\n"
        "filter_list: [{name: maj, filter: [{function: majority_vote}]}]\n",
        "majority_vote",
    ),
    "contexts": (
        "output_type: multiple_choice\ndoc_to_text: !function utils.contexts\n"
        'doc_to_choice: "{{choices}}"\ndoc_to_target: " x"\n',
        "multiple_input",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_tasks_steadyeval_cannot_score_as_lm_eval_does_are_refused(
    tasks_dir: Path, tmp_path: Path, case: str
) -> None:
    from steadyeval import ConfigError
    from steadyeval.items import load_items

    body, message = REFUSED[case]
    data = tasks_dir.parent / "data"
    common = _COMMON.format(data=data)
    (tmp_path / f"bad_{case}.yaml").write_text(f"task: bad_{case}\n{common}{body}")
    (tmp_path / "utils.py").write_text(
        "def process(doc, results):\n    return {'acc': 1.0}\n\ndef contexts(doc):\n    return 0\n"
    )
    with pytest.raises(ConfigError, match=message):
        load_items(None, loader="lm-eval", task=f"bad_{case}", include_path=str(tmp_path))


def test_local_split_files_replace_a_tasks_data_set(tasks_dir: Path, tmp_path: Path) -> None:
    from steadyeval import ConfigError, DataError
    from steadyeval.items import load_items

    folder = tmp_path / "arc"
    folder.mkdir()
    data = tasks_dir.parent / "data"
    (folder / "test.jsonl").write_text((data / "test.jsonl").read_text())
    with pytest.raises(DataError, match="no file for split 'train'"):
        load_items(
            None,
            loader="lm-eval",
            task="se_arc",
            include_path=str(tasks_dir),
            task_data={"se_arc": str(folder)},
        )
    (folder / "train.jsonl").write_text((data / "dev.jsonl").read_text())
    items = load_items(
        None,
        loader="lm-eval",
        task="se_arc",
        include_path=str(tasks_dir),
        task_data={"se_arc": str(folder)},
        num_fewshot=1,
    )
    assert len(items) == 9  # the test rows; the one shot now comes from dev's rows
    dev = {d["question"] for d in _docs(4, 20)}
    shot = items[0].metadata["lm_eval"]["prompt"].split("\n\n")[0]
    assert shot.removeprefix("Question: ").split("\n")[0] in dev
    with pytest.raises(ConfigError, match="not among the tasks"):
        load_items(
            None,
            loader="lm-eval",
            task="se_arc",
            include_path=str(tasks_dir),
            task_data={"se_gsm": str(folder)},
        )
    with pytest.raises(ConfigError, match="did you mean se_arc"):
        load_items(None, loader="lm-eval", task="se_ark", include_path=str(tasks_dir))
    with pytest.raises(ConfigError, match="one lm-eval task defined in YAML"):
        load_items(
            None,
            loader="lm-eval",
            task="se_group",
            include_path=str(tasks_dir),
            task_data={"se_group": str(folder)},
        )


def test_label_choices_leave_the_option_texts_to_other_templates(tasks_dir: Path) -> None:
    """MMLU's shape: lm-eval scores the letters (its prompt lists the texts); steadyeval's own
    templates get the texts, the lm-eval template keeps the letters."""
    from steadyeval import Condition, expand
    from steadyeval.items import load_items

    items = load_items(None, loader="lm-eval", task="se_letters", include_path=str(tasks_dir))
    first = items[0]
    assert tuple(first.metadata["lm_eval"]["choices"]) == ("A", "B", "C")
    assert first.options == tuple(_docs(9, 40)[0]["choices"])
    lm = Condition(name="lm", template="lm-eval", scoring="lm-eval")
    qa = Condition(name="qa", template="qa", format="mc", scoring="letter-logprob")
    trials = {t.condition.name: t for t in expand([first], [lm, qa]).trials}
    assert trials["lm"].options == ("A", "B", "C")
    assert f"A. {first.options[0]}" in trials["qa"].prompt
    with pytest.raises(Exception, match="option texts"):
        load_items(
            None,
            loader="lm-eval",
            task="se_letters",
            include_path=str(tasks_dir),
            options_field="question",
        )


def test_what_lm_eval_cannot_build_is_one_error(tasks_dir: Path, tmp_path: Path) -> None:
    from steadyeval import ConfigError, DataError
    from steadyeval.items import load_items

    def load(**kw: Any) -> Any:
        return load_items(None, loader="lm-eval", include_path=str(tasks_dir), **kw)

    with pytest.raises(ConfigError, match="num_fewshot 20 needs more shots than its 8"):
        load(task="se_arc", num_fewshot=20)
    with pytest.raises(ConfigError, match="num_fewshot is a count"):
        load(task="se_arc", num_fewshot=-1)
    with pytest.raises(ConfigError, match="at least one task"):
        load(task=[])
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "train.jsonl").write_text('{"question": "q"}\n')
    (folder / "test.jsonl").write_text('{"question": "q", "choices": [\n')
    with pytest.raises(DataError, match=r"test.jsonl, line 1"):
        load(task="se_arc", task_data={"se_arc": str(folder)})
    (folder / "test.jsonl").write_text("")
    with pytest.raises(DataError, match="no rows"):
        load(task="se_arc", task_data={"se_arc": str(folder)})
    (folder / "test.jsonl").write_text('{"question": "q", "label": 0}\n')  # no choices
    with pytest.raises(ConfigError, match="se_arc"):
        load(task="se_arc", task_data={"se_arc": str(folder)})


def test_command_line_flags_and_config_paths(
    tasks_dir: Path, tiny_gpt2: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The lm-eval flags apply to a CONFIG's lm-eval data; a CONFIG's relative paths are
    read from its folder; a condition that applies to no item is said to."""
    import os

    from click.testing import CliRunner

    from steadyeval.cli import main

    sub = tmp_path / "configs"
    sub.mkdir()
    rel = os.path.relpath(tasks_dir, sub)
    (sub / "run.yaml").write_text(
        f"data: {{loader: lm-eval, task: se_arc, include_path: {rel}}}\n"
        f"models: ['hf:{tiny_gpt2}']\n"
        "conditions:\n"
        "  - {name: lm, template: lm-eval, scoring: lm-eval}\n"
        "  - {name: gen, template: lm-eval, scoring: generate}\n"
    )

    def run(*args: str) -> Any:
        return CliRunner().invoke(main, ["run", *args, "--dry-run"], catch_exceptions=False)

    done = run(str(sub / "run.yaml"), "--num-fewshot", "1")
    assert done.exit_code == 0, done.output
    said = done.output + "".join(caplog.messages)
    assert "condition 'gen' applies to none of the items" in said
    done = run("--model", f"hf:{tiny_gpt2}", "--data", "x.jsonl", "--num-fewshot", "1")
    assert done.exit_code == 2 and "--num-fewshot applies to lm-eval tasks" in done.output
    done = run("--model", f"hf:{tiny_gpt2}", "--task", "lm-eval:se_arc,se_gsm")
    assert done.exit_code == 2 and "--task lm-eval:se_arc --task lm-eval:se_gsm" in done.output
    done = run("--model", f"hf:{tiny_gpt2}", "--task", "lm-eval:se_arc",
               "--task-data", "se_arc=a", "--task-data", "se_arc=b")  # fmt: skip
    assert done.exit_code == 2 and "given twice" in done.output
    done = run("--model", f"hf:{tiny_gpt2}", "--task", "lm-eval:se_arc", "--data", "x.jsonl")
    assert done.exit_code == 2 and "not both" in done.output


def test_the_lm_eval_template_refuses_what_would_change_its_prompt() -> None:
    from steadyeval import Condition, ConfigError

    for kwargs, message in [
        ({"format": "mc-nota"}, "escape option"),
        ({"shots": {"n": 2}}, "shots must be unset"),
        ({"option_order": "shuffled"}, "option_order must be original"),
    ]:
        with pytest.raises(ConfigError, match=message):
            Condition(name="x", template="lm-eval", scoring="lm-eval", **kwargs)
    with pytest.raises(ConfigError, match="needs template 'lm-eval'"):
        Condition(name="x", template="qa", scoring="lm-eval")
