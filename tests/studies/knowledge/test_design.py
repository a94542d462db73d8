"""The design: exact prompts, conditions, rotations, shots cut to fit the context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steadyeval import ConfigError, SteadyevalDeprecationWarning, load_backend
from steadyeval.conditions import Trial, expand
from steadyeval.studies.knowledge import (
    KNOWLEDGE_STUDY,
    SHOT_SET,
    KnowledgeConfig,
    knowledge_conditions,
    knowledge_design,
    load_mmlu,
)

REF = "The following are multiple choice questions (with answers) about  abstract algebra.\n\n"
ONE = "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
SHOT_0 = "What is 1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
SHOT_1 = "What is 2*3?\nA. 6\nB. 5\nC. 8\nD. 9\nAnswer: A\n\n"
ITEM = 'Which set, "N" or "Z", has\nnegatives?\nA. N\nB. Z\nC. both\nD. neither\nAnswer:'


def _cfg(**kw: Any) -> KnowledgeConfig:
    """A config for designs built from data loaded here (models and data are not used)."""
    return KnowledgeConfig(models=["scripted:x"], data="unused", **kw)


def _trials(root: Path, config: KnowledgeConfig, **load: object) -> list[Trial]:
    design = knowledge_design(load_mmlu(root, **load), config, [])  # type: ignore[arg-type]
    return list(expand(design.items, design.conditions, shot_pools=design.shot_pools).trials)


def _prompt(trials: list[Trial], condition: str, item_id: str) -> str:
    (t,) = [t for t in trials if t.condition.name == condition and t.item.id == item_id]
    return t.prompt


@pytest.mark.parametrize(("template", "header"), [("reference", REF), ("single-space", ONE)])
def test_prompts_byte_for_byte(mini_mmlu: Path, template: str, header: str) -> None:
    trials = _trials(mini_mmlu, _cfg(shots=(0, 2), templates=(template,)))
    item = "abstract_algebra/test/1"
    assert _prompt(trials, f"letter-{template}-0shot", item) == header + ITEM
    assert _prompt(trials, f"letter-{template}-2shot", item) == header + SHOT_0 + SHOT_1 + ITEM


def test_reference_header_matches_format_subject(mini_mmlu: Path) -> None:
    """The reference code: ``"... about {}.\\n\\n".format(format_subject(subject))`` where
    ``format_subject`` prefixes every word with a space."""

    def format_subject(subject: str) -> str:
        return "".join(" " + entry for entry in subject.split("_"))

    trials = _trials(mini_mmlu, _cfg(shots=(0,)))
    for t in trials:
        subject = str(t.item.metadata["subject"])
        intro = "The following are multiple choice questions (with answers) about"
        head = f"{intro} {format_subject(subject)}.\n\n"
        assert t.prompt.startswith(head)


def test_shots_come_from_the_subjects_dev_split_in_file_order(mini_mmlu: Path) -> None:
    trials = _trials(mini_mmlu, _cfg(shots=(5,)))
    hist = [t for t in trials if t.item.metadata["subject"] == "high_school_us_history"]
    assert {t.n_shots_used for t in hist} == {2}  # the subject has 2 dev questions
    p = hist[0].prompt
    assert p.index("first US president") < p.index("declare independence") < p.index("1865?")
    assert "1+1" not in p


def test_conditions_cross_every_axis() -> None:
    cfg = _cfg(
        shots=(0, 5),
        templates=("reference", "single-space"),
        scorings=("letter-logprob", "option-logprob"),
        rotations=True,
        memorisation=True,
    )
    conds = knowledge_conditions(cfg)
    assert len(conds) == 2 * 2 * 2 * 4 + 1
    assert len({c.name for c in conds}) == len(conds)
    assert conds[0].name == "letter-reference-0shot"
    assert conds[1].name == "letter-reference-0shot-rot1" and conds[1].rotation == 1
    assert conds[-1].scoring == "prompt-logprob"
    assert all(c.shots.match == SHOT_SET and c.shots.selection == "first" for c in conds[:-1])
    default = knowledge_conditions(_cfg())
    assert [c.name for c in default] == ["letter-reference-5shot"]
    assert default[0].scoring == "letter-logprob" and default[0].option_order == "original"


def test_rotations_remap_the_gold_letter(mini_mmlu: Path) -> None:
    trials = _trials(mini_mmlu, _cfg(shots=(0,), rotations=True), subjects=["abstract_algebra"])
    by_rot = {t.condition.rotation: t for t in trials if t.item.id == "abstract_algebra/test/1"}
    # original options N, Z, both, neither; gold Z (index 1)
    assert by_rot[0].options == ("N", "Z", "both", "neither") and by_rot[0].gold_displayed == (1,)
    assert by_rot[1].options == ("Z", "both", "neither", "N") and by_rot[1].gold_displayed == (0,)
    assert by_rot[2].options == ("both", "neither", "N", "Z") and by_rot[2].gold_displayed == (3,)
    assert by_rot[3].options == ("neither", "N", "Z", "both") and by_rot[3].gold_displayed == (2,)
    assert by_rot[1].prompt.endswith("A. Z\nB. both\nC. neither\nD. N\nAnswer:")


def test_rotated_shots_show_their_rotated_answer(mini_mmlu: Path) -> None:
    trials = _trials(mini_mmlu, _cfg(shots=(1,), rotations=True), subjects=["abstract_algebra"])
    (t,) = [t for t in trials if t.condition.rotation == 1 and t.item.id.endswith("/0")]
    # "What is 1+1?" options 1,2,3,4 gold "2"; rotated by one: 2,3,4,1 so the answer is A
    assert t.prompt.startswith(REF + "What is 1+1?\nA. 2\nB. 3\nC. 4\nD. 1\nAnswer: A\n\n")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shots": ()},
        {"shots": (-1,)},
        {"shots": (1, 1)},
        {"templates": ("fancy",)},
        {"scorings": ("cloze",)},
        {"normalization": "bytes"},
    ],
)
def test_config_errors(kwargs: dict[str, object], tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(json.dumps({"models": ["hf:x"], "data": "d", **kwargs}))  # JSON is YAML
    (key,) = kwargs
    with pytest.raises(ConfigError, match=rf"{path}, line 1: {key}"):
        KNOWLEDGE_STUDY.load_config(path)


def test_an_alias_and_its_name_are_one_scoring(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text('{"models": ["hf:x"], "data": "d", "scorings": "letter,letter-logprob"}')
    with (
        pytest.raises(ConfigError, match="scorings: repeats a value: letter-logprob"),
        pytest.warns(SteadyevalDeprecationWarning),
    ):
        KNOWLEDGE_STUDY.load_config(path)


def test_short_scoring_names_are_deprecated_aliases() -> None:
    with pytest.warns(SteadyevalDeprecationWarning, match="'letter' is deprecated"):
        cfg = _cfg(scorings=["letter", "option-logprob"])
    assert cfg.scorings == ["letter-logprob", "option-logprob"]
    assert [c.name for c in knowledge_conditions(cfg)] == [
        "letter-reference-5shot",
        "option-reference-5shot",
    ]


# -- shots cut to fit a short context ----------------------------------------------------------


def _tokens_fed(backend: object, trial: Trial) -> int:
    """What the hf backend feeds the model for the longest letter continuation."""
    counts = backend.count_tokens([trial.prompt + " " + lab for lab in trial.labels])  # type: ignore[attr-defined]
    return max(counts) - 1


def test_shots_are_cut_until_the_prompt_fits(mini_mmlu: Path, tiny_gpt2: Path) -> None:
    backend = load_backend(f"hf:{tiny_gpt2}?max_length=160")
    data = load_mmlu(mini_mmlu)
    cfg = _cfg(shots=(0, 2), templates=("reference", "single-space"))
    design = knowledge_design(data, cfg, [backend])
    trials = expand(design.items, design.conditions, shot_pools=design.shot_pools).trials
    used = {(t.condition.name, t.item.id): t.n_shots_used for t in trials}
    # every prompt fits, and one more shot would not (for an item that was cut)
    plain = knowledge_design(data, cfg, [])  # no models: no cut
    plain_trials = {
        (k, t.condition.name, t.item.id): t
        for k in (0, 1, 2)
        for t in expand(
            plain.items,
            [c for c in knowledge_conditions(_cfg(shots=(k,), templates=cfg.templates))],
            shot_pools=plain.shot_pools,
        ).trials
    }
    for t in trials:
        assert _tokens_fed(backend, t) <= 160
        n = t.n_shots_used
        if t.condition.shots.n == 2 and n < 2:
            longer = [v for (k, _, i), v in plain_trials.items() if k == n + 1 and i == t.item.id]
            assert any(_tokens_fed(backend, v) > 160 for v in longer)
    caps = dict(design.info.shot_fit.caps)
    assert caps == {0: 3, 1: 2}  # us history: 0 shots; two long algebra questions: 1
    assert used[("letter-reference-2shot", "abstract_algebra/test/0")] == 2
    assert used[("letter-reference-2shot", "abstract_algebra/test/1")] == 1
    assert used[("letter-single-space-2shot", "abstract_algebra/test/1")] == 1  # same shots
    assert used[("letter-reference-2shot", "high_school_us_history/test/0")] == 0
    # the cut copies sit in the pool; the prompt is the 1-shot prompt exactly
    one = knowledge_design(data, _cfg(shots=(1,)), [])
    one_trials = expand(one.items, one.conditions, shot_pools=one.shot_pools).trials
    (a,) = [
        t
        for t in trials
        if t.condition.name == "letter-reference-2shot" and t.item.id == "abstract_algebra/test/1"
    ]
    (b,) = [t for t in one_trials if t.item.id == "abstract_algebra/test/1"]
    assert a.prompt == b.prompt


def test_too_long_even_without_shots(mini_mmlu: Path, tiny_gpt2: Path) -> None:
    backend = load_backend(f"hf:{tiny_gpt2}?max_length=64")
    design = knowledge_design(load_mmlu(mini_mmlu), _cfg(shots=(2,)), [backend])
    fit = design.info.shot_fit
    assert fit.checked_models == [backend.identity()]
    assert len(fit.too_long_without_shots) == 7  # the header alone is ~50 tokens
    assert fit.caps == {0: 7}
