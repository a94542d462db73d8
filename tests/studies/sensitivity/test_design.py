"""The design: items, (template, name) conditions, and what the core makes of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steadyeval._errors import ConfigError
from steadyeval.conditions import Template, expand
from steadyeval.items import Item
from steadyeval.studies.sensitivity import (
    AnalysisOptions,
    ProbeOptions,
    SensitivityWarning,
    load_probes,
    probe_design,
    task_design,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "probes-study"


def test_probe_design_crosses_templates_and_names() -> None:
    design = probe_design(load_probes(EXAMPLE))
    names = [c.name for c in design.conditions]
    assert names == [f"t0{t}-a{a}" for t in range(3) for a in range(3)]
    assert {c.scoring for c in design.conditions} == {"top-k"}
    assert design.info.conditions["t01-a2"].model_dump() == {"template": "t01", "alias": 2}
    exp = expand(design.items, design.conditions)
    n = len(design.items)
    with_2 = sum(1 for i in design.items if len(i.aliases) >= 2)
    with_3 = sum(1 for i in design.items if len(i.aliases) >= 3)
    assert len(exp.trials) == 3 * (n + with_2 + with_3)
    assert exp.skipped[("t00-a2", "item has no alias #2")] == n - with_3
    prompts = {(t.condition.name, t.item.id): t.prompt for t in exp.trials}
    assert prompts[("t02-a2", "capital/Germany/Berlin")] == "[Y] is the capital of Deutschland ."
    assert prompts[("t00-a0", "river/Egypt/Nile")] == "The [Y] flows through Egypt ."
    assert prompts[("t01-a0", "continent/Peru/America")] == "Peru lies in [Y] ."


def test_items_hold_every_gold_object() -> None:
    design = probe_design(load_probes(EXAMPLE))
    by_id = {i.id: i for i in design.items}
    assert by_id["continent/Peru/America"].answers == ("America", "South America")
    assert by_id["continent/Peru/South America"].answers == ("South America", "America")
    assert by_id["river/Iraq/Tigris"].aliases == ("Iraq", "the Republic of Iraq")
    assert by_id["capital/France/Paris"].metadata["relation"] == "capital"
    assert by_id["capital/France/Paris"].metadata["subject"] == "France"


def test_candidates_vocab_limit_and_names(tmp_path: Path) -> None:
    data = load_probes(EXAMPLE)
    opts = ProbeOptions(
        candidates="relation",
        vocab=frozenset({"Paris", "Rome", "Tokyo", "yen"}),
        max_names=2,
        limit_per_relation=2,
        seed=1,
    )
    design = probe_design(data, opts)
    assert {c.candidates for c in design.conditions} == {"options"}
    assert {i.metadata["relation"] for i in design.items} == {"capital", "currency"}
    capital = [i for i in design.items if i.metadata["relation"] == "capital"]
    assert len(capital) == 2
    assert all(i.options == ("Paris", "Rome", "Tokyo") for i in capital)
    assert all(i.options[i.gold_options[0]] == i.answers[0] for i in capital)
    assert max(len(i.aliases) for i in design.items) <= 2
    assert design.info.data["facts"]["capital"] == {
        "facts": 5,
        "in_vocab": 3,
        "used": 2,
        "objects": 3,
    }
    again = probe_design(data, opts)
    assert [i.id for i in again.items] == [i.id for i in design.items]


def test_templates_per_relation(tmp_path: Path) -> None:
    (tmp_path / "relations.jsonl").write_text(
        json.dumps({"relation": "a", "templates": ["[X] a [Y] .", "[X] b [Y] .", "[X] c [Y] ."]})
        + "\n"
        + json.dumps({"relation": "b", "templates": ["[X] d [Y] .", "[X] e [Y] ."]})
        + "\n"
    )
    (tmp_path / "facts.jsonl").write_text(
        json.dumps({"relation": "a", "subject": "s", "object": "o"})
        + "\n"
        + json.dumps({"relation": "b", "subject": "s", "object": "o"})
        + "\n"
    )
    data = load_probes(tmp_path)
    with pytest.warns(SensitivityWarning, match="not applicable"):
        design = probe_design(data)
    assert design.info.templates == ["t00", "t01"]
    assert [c.name for c in design.conditions] == ["t00", "t01"]
    with pytest.warns(SensitivityWarning):
        three = probe_design(data, ProbeOptions(templates_per_relation=3))
    assert three.info.data["relations"] == ["a"]
    assert "b" in three.info.data["relations_dropped"]
    with pytest.raises(ConfigError, match="no relation has 4 templates"):
        probe_design(data, ProbeOptions(templates_per_relation=4))
    with pytest.raises(ConfigError, match="relations not in"):
        probe_design(data, ProbeOptions(relations=["zzz"]))


def test_templates_render_literally(tmp_path: Path) -> None:
    odd = 'He said "[X]" \\ {{ not jinja }} {% raw %} é [Y] .'
    (tmp_path / "relations.jsonl").write_text(json.dumps({"relation": "r", "templates": [odd]}))
    (tmp_path / "facts.jsonl").write_text(
        json.dumps({"relation": "r", "subject": "Zoë {{x}}", "object": "o"})
    )
    with pytest.warns(SensitivityWarning):
        design = probe_design(load_probes(tmp_path))
    (trial,) = expand(design.items, design.conditions).trials
    assert trial.prompt == odd.replace("[X]", "Zoë {{x}}")


def test_task_design() -> None:
    items = [
        Item(
            id=f"q{i}",
            question=f"Q{i}?",
            options=("yes", "no"),
            gold_options=(i % 2,),
            metadata={"subject": "s1" if i < 3 else "s2"},
        )
        for i in range(6)
    ]
    templates = [
        Template("plain", "{{ question }}\n{{ options_block }}\nAnswer:"),
        Template("polite", "Please answer: {{ question }}\n{{ options_block }}\n"),
    ]
    design = task_design(items, templates)
    assert [c.name for c in design.conditions] == ["plain", "polite"]
    assert {c.scoring for c in design.conditions} == {"option-logprob"}
    assert design.info.unit == "subject" and design.info.metric == "accuracy"
    with pytest.raises(ConfigError, match="at least 2 templates"):
        task_design(items, templates[:1])
    with pytest.raises(ConfigError, match="unique"):
        task_design(items, [templates[0], templates[0]])


def test_template_weights_from_the_data(tmp_path: Path) -> None:
    """LPAQA's mined templates carry weights; the original, added in front, gets weight 0."""
    manual = tmp_path / "prompt" / "manual_paraphrase"
    manual.mkdir(parents=True)
    (manual / "P19.txt").write_text("[X] was born in [Y] .\n[X] is born in [Y] .\n")
    mine = tmp_path / "prompt" / "mine"
    mine.mkdir()
    (mine / "P19.jsonl").write_text(
        json.dumps({"template": "[X] returned to [Y] .", "weight": 0.3})
        + "\n"
        + json.dumps({"template": "[X] left [Y] .", "weight": 0.1})
        + "\n"
    )
    (tmp_path / "TREx_train").mkdir()
    (tmp_path / "TREx_train" / "P19.jsonl").write_text(
        json.dumps({"sub_label": "A", "obj_label": "B"}) + "\n"
    )
    with pytest.warns(SensitivityWarning):
        design = probe_design(
            load_probes(tmp_path, prompt_set="mine"), analysis=AnalysisOptions(weights="data")
        )
    assert design.info.weights == {"P19": pytest.approx([0.0, 0.75, 0.25])}
    assert design.info.data["original_added"] == ["P19"]
    with pytest.warns(SensitivityWarning), pytest.raises(ConfigError, match="no template weights"):
        probe_design(load_probes(tmp_path), analysis=AnalysisOptions(weights="data"))


def _uneven(tmp_path: Path) -> Path:
    """Three relations with 3, 2 and 3 templates; two facts each."""
    rels = [
        {"relation": "a", "templates": ["[X] a0 [Y] .", "[X] a1 [Y] .", "[X] a2 [Y] ."]},
        {"relation": "b", "templates": ["[X] b0 [Y] .", "[X] b1 [Y] ."]},
        {"relation": "c", "templates": ["[X] c0 [Y] .", "[X] c1 [Y] .", "[X] c2 [Y] ."]},
    ]
    facts = [
        {"relation": r, "subject": f"{r}{i}", "object": "o", "subject_aliases": [f"{r}{i}x"]}
        for r in "abc"
        for i in range(2)
    ]
    (tmp_path / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rels))
    (tmp_path / "facts.jsonl").write_text("".join(json.dumps(f) + "\n" for f in facts))
    return tmp_path


def test_templates_cut_to_the_smallest_count_or_all_kept(tmp_path: Path) -> None:
    data = load_probes(_uneven(tmp_path))
    cut = probe_design(data)  # default: the smallest count (2); a and c lose their third
    assert cut.info.templates == ["t00", "t01"]
    assert cut.info.template_text["a"] == ["[X] a0 [Y] .", "[X] a1 [Y] ."]
    assert cut.info.data["templates_per_relation"] == 2 and len(cut.blocks) == 1
    three = probe_design(data, ProbeOptions(templates_per_relation=3))
    assert three.info.data["relations_dropped"] == {
        "b": "has 2 templates; 3 per relation were asked for"
    }
    full = probe_design(data, ProbeOptions(templates_per_relation="all"))
    assert full.info.templates == ["t00", "t01", "t02"]
    assert full.info.data["templates_per_relation"] == "all"
    assert full.info.data["relations_dropped"] == {}
    assert full.info.template_text["b"] == ["[X] b0 [Y] .", "[X] b1 [Y] ."]
    # One block per template count: a and c under 3 templates, b under 2 (× 2 names each).
    sizes = [(len(b.items), [c.name for c in b.conditions]) for b in full.blocks]
    assert sizes == [
        (4, [f"t0{t}-a{a}" for t in range(3) for a in range(2)]),
        (2, [f"t0{t}-a{a}" for t in range(2) for a in range(2)]),
    ]
    prompts = {
        (t.condition.name, t.item.id): t.prompt
        for b in full.blocks
        for t in expand(b.items, b.conditions).trials
    }
    assert len(prompts) == 4 * 6 + 2 * 4
    assert prompts[("t02-a1", "c/c1/o")] == "c1x c2 [Y] ."
    assert prompts[("t01-a0", "b/b0/o")] == "b0 b1 [Y] ."
    assert not any(k[1].startswith("b/") and k[0].startswith("t02") for k in prompts)
    with pytest.raises(ConfigError, match=r"an integer in 1\.\.10,000"):
        ProbeOptions(templates_per_relation="some")  # type: ignore[arg-type]
