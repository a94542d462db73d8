"""The SQuAD adapter, the seeded item sampling and the conditions (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steadyeval._errors import ConfigError, DataError, SteadyevalDeprecationWarning
from steadyeval.models import BaseBackend, Capabilities, parse_model_spec
from steadyeval.models._known import KNOWN_INPUT_FORMATS
from steadyeval.scoring import normalize_answer
from steadyeval.studies.formats import (
    FORMATS_STUDY,
    FormatsConfig,
    FormatsDesignOptions,
    build_conditions,
    build_items,
    formats_design,
    load_squad,
    qualify,
    squad_from_rows,
)

from .conftest import squad_mini


def test_load_official_json(squad_file: Path) -> None:
    data = load_squad(squad_file)
    assert [a.title for a in data.articles] == ["Towns_North", "Towns_South", "Hamlets", "Islet"]
    para = data.articles[0].paragraphs[1]
    assert para.id == "Towns_North#1"
    q = para.questions[0]
    assert q.answers == ("Lunn", "the Lunn river") and not q.is_impossible
    burnt = para.questions[4]
    assert burnt.is_impossible and burnt.plausible_answers == ("1188",)
    assert len(data.questions) == 44 and data.has_plausible_answers


def test_malformed_json_names_file_line_and_field(tmp_path: Path) -> None:
    raw = squad_mini()
    raw["data"][1]["paragraphs"][2]["qas"][3]["question"] = 7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw, indent=1))
    with pytest.raises(DataError) as err:
        load_squad(path)
    msg = str(err.value)
    assert str(path) in msg and "data[1].paragraphs[2].qas[3].question" in msg
    lines = path.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, start=1) if '"t5-goods"' in text)
    assert err.value.line == line
    path.write_text('{"data": [}')
    with pytest.raises(DataError, match=r"line 1.*invalid JSON"):
        load_squad(path)
    with pytest.raises(DataError, match="file not found"):
        load_squad(tmp_path / "missing.json")


def test_hub_rows_group_into_paragraphs_and_lack_decoys() -> None:
    rows = [
        {"id": "a", "title": "T", "context": "c1", "question": "q?",
         "answers": {"text": ["x"], "answer_start": [0]}},
        {"id": "b", "title": "T", "context": "c1", "question": "q2?",
         "answers": {"text": [], "answer_start": []}},
        {"id": "c", "title": "T", "context": "c2", "question": "q3?",
         "answers": {"text": ["y"], "answer_start": [0]}},
    ]  # fmt: skip
    data = squad_from_rows(rows, source="squad_v2[validation]")
    assert [p.id for p in data.articles[0].paragraphs] == ["T#0", "T#1"]
    assert data.questions[1].is_impossible and not data.has_plausible_answers
    with pytest.raises(ConfigError, match=r"no plausible_answers .* dev-v2\.0\.json"):
        build_items(data, answerable=0, unanswerable=1, seed=0)


def test_hub_offline_fails_with_a_clear_message() -> None:
    # tests/conftest.py sets HF_DATASETS_OFFLINE=1: the real load_dataset call must fail
    # with a message that names the data set and the way out (unless it is cached locally).
    try:
        data = load_squad("squad_v2")
    except DataError as exc:
        assert "squad_v2" in str(exc) and "dev-v2.0.json" in str(exc)
    else:  # pragma: no cover - only where the hub copy is cached
        assert not data.has_plausible_answers


def test_qualify_counts_fallback_and_skips(squad_file: Path) -> None:
    ans, unans, skipped = qualify(load_squad(squad_file))
    assert (sum(not e.article_fallback for e in ans), len(ans)) == (24, 27)
    assert (sum(not e.article_fallback for e in unans), len(unans)) == (12, 14)
    assert {e.question.id for e in unans if e.article_fallback} == {"h-filled", "h-size"}
    assert skipped == {
        "answerable: fewer than 2 distinct answers in paragraph and article": 1,
        "unanswerable: fewer than 2 distinct answers in paragraph and article": 1,
        "unanswerable: no plausible answer (decoy) in the source": 1,
    }


def test_items_have_three_distinct_options_and_the_right_key(squad_file: Path) -> None:
    data = load_squad(squad_file)
    built = build_items(data, answerable=27, unanswerable=14, seed=3)
    by_id = {q.id: q for q in data.questions}
    assert len(built.items) == 41
    for item in built.items:
        assert item.options is not None and len(item.options) == 3
        assert len({normalize_answer(o) for o in item.options}) == 3
        q = by_id[item.id]
        meta = item.metadata
        if item.answerable:
            assert item.options[item.gold_options[0]] == q.answers[0]
            golds = {normalize_answer(a) for a in q.answers}
            others = [o for i, o in enumerate(item.options) if i != item.gold_options[0]]
            assert not golds & {normalize_answer(o) for o in others}
        else:
            assert item.gold_options == () and item.answers == ()
            assert item.options[meta["decoy_option"]] == meta["decoy"] == q.plausible_answers[0]
        assert meta["paragraph_id"].startswith(meta["title"] + "#")
    fallback = {i.id for i in built.items if i.metadata["article_fallback"]}
    assert fallback == {"h-dug", "h-stone", "h-colour", "h-filled", "h-size"}
    # h-filled's paragraph offers no distinct answer: both distractors come from the mill.
    filled = next(i for i in built.items if i.id == "h-filled")
    assert set(filled.options or ()) == {"a tinker", "grey stone", "green"}


def test_sampling_is_seeded_and_limit_keeps_a_prefix(squad_file: Path) -> None:
    data = load_squad(squad_file)
    a = build_items(data, answerable=10, unanswerable=6, seed=2022)
    b = build_items(data, answerable=10, unanswerable=6, seed=2022)
    c = build_items(data, answerable=10, unanswerable=6, seed=2023)
    assert a.items == b.items
    assert [i.id for i in a.items] != [i.id for i in c.items]
    short = build_items(data, answerable=10, unanswerable=6, seed=2022, limit=3)
    assert short.items == a.items[:3] + a.items[10:13]
    with pytest.raises(ConfigError, match="asked for 15 unanswerable questions but only 14"):
        build_items(data, answerable=1, unanswerable=15, seed=0)


def test_no_decoy_variant_drops_only_the_decoy(squad_file: Path) -> None:
    built = build_items(load_squad(squad_file), answerable=2, unanswerable=3, seed=0, no_decoy=True)
    variants = [i for i in built.items if i.metadata["variant"] == "no-decoy"]
    assert len(variants) == 3
    for v in variants:
        base = next(i for i in built.items if i.id == v.metadata["base_id"])
        assert base.options is not None and v.options is not None
        decoy = base.metadata["decoy"]
        assert list(v.options) == [o for o in base.options if o != decoy]


@pytest.mark.shared
def test_shared_squad_subset_builds_300_plus_300(shared_data: Path) -> None:
    data = load_squad(shared_data / "squad2" / "dev-v2.0.controlled_subset.json")
    built = build_items(data, answerable=300, unanswerable=300, seed=2022)
    counts = built.counts
    assert counts["questions"] == {"answerable": 386, "unanswerable": 320}
    assert counts["qualified"]["unanswerable"] == {"paragraph": 289, "with_article_fallback": 320}
    assert counts["qualified"]["answerable"]["with_article_fallback"] >= 300
    assert counts["sampled"] == {"answerable": 300, "unanswerable": 300}
    flagged = sum(bool(i.metadata["article_fallback"]) for i in built.items if not i.answerable)
    assert flagged == counts["article_fallback_in_sample"]["unanswerable"] > 0
    assert all(i.options and len({normalize_answer(o) for o in i.options}) == 3
               for i in built.items)  # fmt: skip
    assert len({i.id for i in built.items}) == 600


def test_conditions_for_unifiedqa_and_decoders() -> None:
    conds, described = build_conditions(
        FormatsDesignOptions(template="unifiedqa", escapes=("i don't know",), orders=2,
                             control_word="meadow", temperature=0.7, n_samples=3)
    )  # fmt: skip
    names = [c.name for c in conds]
    assert names[:6] == ["free", "list", "list-nota", "list-refusal", "list-escape-1",
                         "list-control"]  # fmt: skip
    assert "list-nota@order2" in names and "free~sampled" in names
    by = {c.name: c for c in conds}
    assert by["list"].format.name == "unifiedqa-mc" and by["list"].format.escape is None
    assert by["list-nota"].format.name == "unifiedqa-nota"
    assert by["list-refusal"].format.escape == "no answer>"
    assert by["list-refusal"].format.option_style == "({label}) {text}"
    assert by["free"].generation.max_new_tokens == 24 and by["free"].generation.temperature == 0
    assert by["list-nota@order2"].option_order == "shuffled"
    assert by["list-nota@order2"].order_seed == 2
    assert by["list~sampled"].generation.n_samples == 3
    roles = {d["name"]: d["role"] for d in described}
    assert roles["list-control"] == "control" and roles["list-escape-1"] == "escape"
    logprob, _ = build_conditions(FormatsDesignOptions(template="qa", scoring="option-logprob"))
    assert [c.scoring for c in logprob] == ["generate"] + ["option-logprob"] * 3
    assert logprob[1].format.name == "mc" and logprob[0].generation.stop == ("\n",)


def test_config_yaml_errors_name_key_and_line(tmp_path: Path, squad_file: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        f"models: [hf:x]\ndata: {squad_file}\nsampling:\n  temperature: 0.5\n  sample: 3\n"
    )
    with pytest.raises(ConfigError) as err:
        FORMATS_STUDY.load_config(path)
    assert f"{path}, line 5: sampling.sample: unknown key" in str(err.value)
    assert "n_samples" in str(err.value)
    path.write_text("models: [hf:x]\ndata: d.json\nscoring: beam\n")
    with pytest.raises(ConfigError, match=r"line 3: scoring: .*'beam'"):
        FORMATS_STUDY.load_config(path)
    cfg = FORMATS_STUDY.load_config(path, {"scoring": "option-logprob", "seed": 7})
    assert cfg.scoring == "option-logprob" and cfg.seed == 7 and cfg.answerable == 300
    with pytest.warns(SteadyevalDeprecationWarning, match="'logprob' is deprecated"):
        old = FORMATS_STUDY.load_config(path, {"scoring": "logprob"})
    assert old.scoring == "option-logprob"


class _Declared(BaseBackend):
    """Scripted (tests only): a backend that declares an input format and answers nothing."""

    def __init__(self, name: str, input_format: str | None) -> None:
        self.spec = parse_model_spec(f"scripted:{name}")
        self.input_format = input_format

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(input_format=self.input_format)

    def fingerprint(self) -> str:
        return self.spec.name


def test_design_checks_template_and_noise_floor(squad_file: Path) -> None:
    uqa_model, plain = _Declared("uqa", "unifiedqa"), _Declared("plain", None)
    cfg = FormatsConfig(models=["hf:x"], data=str(squad_file), answerable=2, unanswerable=2)
    with pytest.raises(ConfigError, match="set template"):
        formats_design(cfg, [uqa_model, plain])
    bad = FormatsConfig(models=["hf:x"], data=str(squad_file), answerable=2, unanswerable=2,
                        noise_floor=("list-nota", "list-idk"))  # fmt: skip
    with pytest.raises(ConfigError, match="noise_floor: no condition 'list-idk'"):
        formats_design(bad, [])
    assert formats_design(cfg, [plain]).info.template == "qa"
    # The hub's UnifiedQA checkpoints declare their input format without any option.
    assert KNOWN_INPUT_FORMATS["allenai/unifiedqa-t5-large"] == "unifiedqa"
    design = formats_design(cfg, [uqa_model])
    assert design.info.template == "unifiedqa"
    assert design.info.refusal_phrases == ["no answer>"]
    prompt_cond = design.conditions[2]
    assert prompt_cond.template.name == "unifiedqa"


def test_a_flag_sets_one_key_of_a_config_section(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text("models: [hf:x]\ndata: d.json\nsampling:\n  temperature: 0.7\n")
    cfg = FORMATS_STUDY.load_config(path, {"sampling": {"n_samples": 3}})
    assert cfg.sampling is not None
    assert (cfg.sampling.temperature, cfg.sampling.n_samples) == (0.7, 3)
