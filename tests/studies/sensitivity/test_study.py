"""The study end to end on tiny local models: P@1 equals a direct forward pass, names, the
shared LPAQA data, reanalysis and the CLI."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

from steadyeval.cli._main import main
from steadyeval.models import load_backend
from steadyeval.run import RunOptions
from steadyeval.scoring import normalize_answer
from steadyeval.studies import StudyResult, read_analysis, reanalyze, run_design
from steadyeval.studies.sensitivity import (
    AnalysisOptions,
    NotApplicable,
    ProbeOptions,
    PromptPreference,
    RankConsistency,
    SensitivityAnalysis,
    SensitivityWarning,
    Verbalization,
    sensitivity_design,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "probes-study"
FAST = AnalysisOptions(n_subsets=50, subset_size=2, n_resamples=50)
SUBJECTS = [
    "Paris",
    "the river",
    "the old bridge",
    "Tokyo",
    "the library",
    "Water",
    "A week",
    "The moon",
]
TEMPLATES = {
    "near": ["[X] is close to [Y] .", "[Y] lies near [X] .", "Near [X] there is [Y]"],
    "part": ["[X] is part of [Y] .", "[X] belongs to [Y] .", "[Y] contains [X] ."],
}


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from steadyeval.models._tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "bert", "bert", seed=0)


def _masked_top1(tok: Any, model: Any, prompt: str) -> str:
    left, _, right = prompt.partition("[Y]")
    ids = tok(left + tok.mask_token + right)["input_ids"]
    pos = ids.index(tok.mask_token_id)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, pos].clone()
    logits[list(tok.all_special_ids)] = float("-inf")
    return str(tok.decode([int(logits.argmax())]))


def _causal_top1(tok: Any, model: Any, prompt: str) -> str:
    ids = tok(prompt.partition("[Y]")[0].rstrip())["input_ids"]
    ids = ids or [tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1]
    return str(tok.decode([int(logits.argmax())]))


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_p_at_1_equals_a_direct_forward_pass(
    tiny_bert: Path, tiny_gpt2: Path, tmp_path: Path
) -> None:
    """Golds are what one of the models predicts under template 0 (so P@1 is not 0), or a
    word no model predicts; the study's P@1 per (model, relation, template) must equal the
    one computed here from the models' logits."""
    bert = (
        AutoTokenizer.from_pretrained(tiny_bert),
        AutoModelForMaskedLM.from_pretrained(tiny_bert).eval(),
    )
    gpt2 = (
        AutoTokenizer.from_pretrained(tiny_gpt2),
        AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval(),
    )
    predict = {
        f"hf:{tiny_bert}": lambda p: _masked_top1(*bert, p),
        f"hf:{tiny_gpt2}": lambda p: _causal_top1(*gpt2, p),
    }
    facts = []
    for r, templates in TEMPLATES.items():
        for i, s in enumerate(SUBJECTS):
            first = templates[0].replace("[X]", s)
            gold = [predict[f"hf:{tiny_bert}"], predict[f"hf:{tiny_gpt2}"]][i % 2](first)
            gold = gold.strip().lstrip("#") if i % 3 else "zebra"
            facts.append({"relation": r, "subject": s, "object": gold or "zebra"})
    _write(
        tmp_path / "relations.jsonl",
        [{"relation": r, "templates": t} for r, t in TEMPLATES.items()],
    )
    _write(tmp_path / "facts.jsonl", facts)
    with pytest.warns(SensitivityWarning, match="no subject has an alias"):
        design = sensitivity_design(tmp_path, analysis=FAST)
    result = run_design(
        "sensitivity",
        design,
        list(predict),
        options=RunOptions(out=tmp_path / "run", progress=False),
    )
    assert isinstance(result, StudyResult) and isinstance(result.analysis, SensitivityAnalysis)
    assert isinstance(result.analysis.prompt_preference, PromptPreference)
    pp = result.analysis.prompt_preference.per_unit
    hits: dict[tuple[str, str, int], list[bool]] = defaultdict(list)
    for item in design.items:
        r = item.metadata["relation"]
        golds = {normalize_answer(a) for a in item.answers}
        for t, template in enumerate(TEMPLATES[r]):
            for model, fn in predict.items():
                top = fn(template.replace("[X]", item.aliases[0])).strip()
                hits[(model, r, t)].append(bool(top) and normalize_answer(top) in golds)
    assert any(any(v) for v in hits.values())
    for (model, r, t), v in hits.items():
        name = load_backend(model).identity()
        assert pp[name][r].scores[t] == pytest.approx(sum(v) / len(v)), (model, r, t)


def test_aliases_file_gives_verbalization_stability(tiny_bert: Path, tmp_path: Path) -> None:
    """A LAMA-layout data set plus an alias file (by URI and by label), one masked model."""
    _write(
        tmp_path / "relations.jsonl",
        [
            {"relation": "P1", "template": "[X] is located in [Y] ."},
            {"relation": "P2", "template": "The capital of [X] is [Y] ."},
        ],
    )
    (tmp_path / "TREx").mkdir()
    countries = [
        ("Q142", "France", "Europe"),
        ("Q30", "United States", "America"),
        ("Q17", "Japan", "Asia"),
        ("Q183", "Germany", "Europe"),
    ]
    _write(
        tmp_path / "TREx" / "P1.jsonl",
        [{"sub_uri": u, "sub_label": s, "obj_label": o} for u, s, o in countries],
    )
    _write(
        tmp_path / "TREx" / "P2.jsonl",
        [
            {"sub_uri": "Q142", "sub_label": "France", "obj_label": "Paris"},
            {"sub_uri": "Q17", "sub_label": "Japan", "obj_label": "Tokyo"},
        ],
    )
    _write(
        tmp_path / "aliases.jsonl",
        [
            {"uri": "Q30", "aliases": ["USA", "America", "the States"]},
            {"subject": "France", "aliases": ["the French Republic"]},
            {"subject": "Japan", "aliases": ["Nippon", "Nihon"]},
        ],
    )
    no_rule = dataclasses.replace(FAST, stop_words=())  # a random model may predict "the"
    design = sensitivity_design(tmp_path, aliases=tmp_path / "aliases.jsonl", analysis=no_rule)
    assert design.info.max_names == 4
    assert design.info.analysis["stop_words"] == []
    result = run_design(
        "sensitivity",
        design,
        [f"hf:{tiny_bert}"],
        options=RunOptions(out=tmp_path / "run", progress=False),
    )
    assert isinstance(result, StudyResult) and isinstance(result.analysis, SensitivityAnalysis)
    skipped = {(s["condition"], s["count"]) for s in result.summary["skipped"]}
    assert ("t00-a1", 1) in skipped and ("t00-a3", 5) in skipped  # Germany; all but the USA
    preds: dict[str, set[str]] = defaultdict(set)
    for row in result.table.to_pylist():
        preds[row["item_id"]].add(row["parsed"])
    multi = [i.id for i in design.items if len(i.aliases) > 1]
    verb = result.analysis.verbalization
    assert isinstance(verb, Verbalization) and verb.facts_with_aliases == len(multi) == 5
    v = verb.per_model[load_backend(f"hf:{tiny_bert}").identity()]
    assert v.pooled.n == 5
    assert v.pooled.stability == sum(len(preds[i]) == 1 for i in multi) / 5
    # The headline: per relation (P1: the USA, France, Japan; P2: France, Japan), then the mean.
    share = {r: [len(preds[i]) == 1 for i in multi if i.startswith(f"{r}/")] for r in ("P1", "P2")}
    assert [len(share["P1"]), len(share["P2"])] == [3, 2]
    assert v.stability == pytest.approx((sum(share["P1"]) / 3 + sum(share["P2"]) / 2) / 2)
    assert verb.per_unit[load_backend(f"hf:{tiny_bert}").identity()]["P2"].n == 2
    assert isinstance(result.analysis.rankings, NotApplicable)
    assert isinstance(result.analysis.rank_consistency, NotApplicable)
    assert isinstance(result.analysis.prompt_preference, NotApplicable)  # one template
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "## Verbalization" in md and "Not applicable: one model" in md


def test_shared_lpaqa_two_models(
    shared_data: Path, tiny_bert: Path, tiny_gpt2: Path, tmp_path: Path
) -> None:
    with pytest.warns(SensitivityWarning):
        design = sensitivity_design(
            shared_data / "lama" / "lpaqa",
            prompt_set="manual_paraphrase",
            probe=ProbeOptions(limit_per_relation=2, templates_per_relation=3),
            analysis=AnalysisOptions(n_subsets=100, subset_size=20, n_resamples=50, k_templates=2),
        )
    models = [f"hf:{tiny_bert}", f"hf:{tiny_gpt2}"]
    result = run_design(
        "sensitivity", design, models, options=RunOptions(out=tmp_path / "run", progress=False)
    )
    assert isinstance(result, StudyResult)
    assert result.table.num_rows == 41 * 2 * 3 * 2
    a = result.analysis
    assert isinstance(a, SensitivityAnalysis)
    assert a.units == design.info.data["relations"] and len(a.units) == 41
    assert isinstance(a.rank_consistency, RankConsistency)
    assert set(a.rank_consistency.regimes) == {
        "original",
        "random",
        "intervention",
        "intervention_sampled",
    }
    assert a.rank_consistency.subset_size == 20
    assert a.rankings.applicable and a.prompt_preference.applicable
    assert a.verbalization.applicable is False
    for m in models:
        assert load_backend(m).identity() in a.adjusted.per_model
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["study"] == "sensitivity"
    assert summary["analysis"]["rank_consistency"] == a.to_json()["rank_consistency"]
    # the report's generic rank-consistency section reads the typed facts
    facts = a.rank_consistency_facts()
    assert facts is not None and facts.subset_size == 20
    assert [s.setting for s in facts.settings] == list(a.rank_consistency.regimes)
    assert set(summary["analysis"]["adjusted"]["per_model"][a.models[0]]) == {
        "original",
        "mean_over_templates",
        "exact",
        "sampled",
    }
    assert read_analysis(tmp_path / "run") == a
    assert reanalyze(tmp_path / "run") == a


def test_cli(
    tiny_bert: Path, tiny_gpt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    r = runner.invoke(main, ["study", "sensitivity", "--help"])
    assert r.exit_code == 0 and "--prompt-set" in r.output
    base = [
        "study",
        "sensitivity",
        "--model",
        f"hf:{tiny_gpt2}",
        "--model",
        f"hf:{tiny_bert}",
        "--data",
        str(EXAMPLE),
        "--subsets",
        "50",
        "--subset-size",
        "2",
        "--no-progress",
    ]
    r = runner.invoke(main, [*base, "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "dry run:" in r.output
    r = runner.invoke(main, [*base, "--k-names", "1", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    assert "the whole analysis: " in r.output and "## Rank consistency" not in r.output
    md = (tmp_path / "run" / "summary.md").read_text()
    for heading in (
        "## Prompt and verbalization sensitivity",
        "## Rank consistency",
        "## Verbalization",
        "## Per relation",
    ):
        assert heading in md
    r = runner.invoke(main, [*base, "--prompt-set", "mine", "--dry-run"])
    assert r.exit_code == 2 and "LPAQA layout only" in r.output


def test_generic_task(tiny_gpt2: Path, tmp_path: Path) -> None:
    """Multiple choice under three wordings: the same analyses, with accuracy."""
    items = [
        {"id": f"q{i}", "question": q, "options": opts, "answer": a, "metadata": {"subject": s}}
        for i, (q, opts, a, s) in enumerate(
            [
                ("What is the capital of France?", ["Paris", "Rome"], "Paris", "geo"),
                ("What is the capital of Italy?", ["Berlin", "Rome"], "Rome", "geo"),
                ("Which is larger?", ["ten", "three"], "ten", "math"),
                ("What is two plus two?", ["four", "five"], "four", "math"),
                ("Where does the sun rise?", ["east", "west"], "east", "nature"),
                ("Is the ocean salty?", ["yes", "no"], "yes", "nature"),
            ]
        )
    ]
    _write(tmp_path / "items.jsonl", items)
    _write(
        tmp_path / "templates.jsonl",
        [
            {"name": "qa", "body": "Question: {{ question }}\nAnswer:"},
            {"name": "terse", "body": "{{ question }}"},
            {"name": "options", "body": "{{ question }}\n{{ options_block }}\nThe answer is"},
        ],
    )
    design = sensitivity_design(tmp_path, analysis=FAST)
    result = run_design(
        "sensitivity",
        design,
        [f"hf:{tiny_gpt2}", f"hf:{tiny_gpt2}?dtype=bfloat16"],
        options=RunOptions(out=tmp_path / "run", progress=False),
    )
    assert isinstance(result, StudyResult)
    a = result.analysis
    assert isinstance(a, SensitivityAnalysis) and a.pooled is not None
    assert a.metric == "accuracy" and a.unit == "subject"
    assert a.units == ["geo", "math", "nature"]
    assert a.templates == ["qa", "terse", "options"]
    acc = {(r["model"], r["condition"]): r["accuracy"] for r in result.summary["by_condition"]}
    for m in a.models:
        assert a.pooled[m].scores == pytest.approx(
            [acc[(m, t)] for t in ("qa", "terse", "options")]
        )
    assert read_analysis(tmp_path / "run") == a
    assert reanalyze(tmp_path / "run") == a


def test_every_template_kept(tiny_bert: Path, tiny_gpt2: Path, tmp_path: Path) -> None:
    """--templates-per-relation all: relations keep 3, 2 and 3 templates; every analysis
    uses each relation's own templates (checked against the table itself)."""
    rels = {
        "a": ["[X] is close to [Y] .", "[Y] lies near [X] .", "Near [X] there is [Y] ."],
        "b": ["[X] is part of [Y] .", "[X] belongs to [Y] ."],
        "c": ["[X] was made by [Y] .", "[Y] made [X] .", "The maker of [X] is [Y] ."],
    }
    _write(tmp_path / "relations.jsonl", [{"relation": r, "templates": t} for r, t in rels.items()])
    _write(
        tmp_path / "facts.jsonl",
        [
            {"relation": r, "subject": s, "object": "Paris", "subject_aliases": [f"the {s}"]}
            for r in rels
            for s in SUBJECTS[:4]
        ],
    )
    design = sensitivity_design(
        tmp_path,
        probe=ProbeOptions(templates_per_relation="all"),
        analysis=AnalysisOptions(n_subsets=30, subset_size=2, n_resamples=30, k_templates=2),
    )
    models = [f"hf:{tiny_bert}", f"hf:{tiny_gpt2}"]
    result = run_design(
        "sensitivity", design, models, options=RunOptions(out=tmp_path / "run", progress=False)
    )
    assert isinstance(result, StudyResult)
    assert result.table.num_rows == 2 * 4 * 2 * (3 + 2 + 3)  # models × facts × names × templates
    a = result.analysis
    assert isinstance(a, SensitivityAnalysis) and isinstance(a.prompt_preference, PromptPreference)
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in result.table.to_pylist():
        cells[(row["model"], row["relation"], row["item_id"])].append(float(row["correct"]))
    for m in models:
        name = load_backend(m).identity()
        pp = a.prompt_preference.per_unit[name]
        assert pp["b"].n_templates == 2 and pp["b"].scores[2] is None
        assert pp["a"].n_templates is None and None not in pp["a"].scores
        for r, templates in rels.items():
            facts = {k[2]: v for k, v in cells.items() if k[:2] == (name, r)}
            # two names per fact: the exact adjustment is the mean over its cells
            expected = sum(sum(v) / len(v) for v in facts.values()) / len(facts)
            assert all(len(v) == 2 * len(templates) for v in facts.values())
            assert a.adjusted.per_unit[name][r].exact == pytest.approx(expected)
    assert a.rank_consistency.applicable
    assert design.info.data["templates_per_relation"] == "all"
    # summary.json leaves n_templates out where a relation has every template
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    units = summary["analysis"]["prompt_preference"]["per_unit"][a.models[0]]
    assert units["b"]["n_templates"] == 2 and "n_templates" not in units["a"]
    assert "pooled" not in summary["analysis"]
    assert read_analysis(tmp_path / "run") == a
    assert reanalyze(tmp_path / "run") == a
