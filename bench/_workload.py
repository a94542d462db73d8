"""The shared workload of the formats benchmark: model, items, conditions, and the exact
request strings both tools score."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steadyeval import FORMATS, TEMPLATES, Condition, Format, Generation, Item, expand
from steadyeval.requests import GenerateRequest, ScoreRequest
from steadyeval.scoring import requests_for

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad2"
SQUAD_FILE = SQUAD / "dev-v2.0.controlled_subset.json"


def conditions() -> list[Condition]:
    qa = TEMPLATES["qa"]
    refusal = Format(name="mc-refusal", escape="no answer>")
    return [
        Condition(name="mc", template=qa, format=FORMATS["mc"], scoring="option-logprob"),
        Condition(name="mc-nota", template=qa, format=FORMATS["mc-nota"], scoring="option-logprob"),
        Condition(name="mc-refusal", template=qa, format=refusal, scoring="option-logprob"),
        Condition(
            name="free",
            template=qa,
            format=FORMATS["free"],
            generation=Generation(max_new_tokens=24, stop=("\n",)),
        ),
    ]


def items(n_answerable: int = 100, n_unanswerable: int = 100, seed: int = 2022) -> list[Item]:
    from steadyeval.studies.formats import build_items, load_squad

    if not SQUAD_FILE.exists():
        raise SystemExit(f"the benchmark needs {SQUAD_FILE} (the shared SQuAD 2.0 subset)")
    data = load_squad(SQUAD_FILE)
    built = build_items(data, answerable=n_answerable, unanswerable=n_unanswerable, seed=seed)
    return list(built.items)


def corpus() -> list[str]:
    """Text to train the benchmark model's tokenizer on (the SQuAD paragraphs)."""
    raw = json.loads(SQUAD_FILE.read_text())
    return [p["context"] for art in raw["data"] for p in art["paragraphs"]]


#: Model shapes (GPT-2 architecture): ~12M parameters, and GPT-2 small's 768 x 12 layers
#: (~89M with the 4,096-token vocabulary).
SHAPES: dict[str, dict[str, int]] = {
    "12m": {"n_embd": 320, "n_layer": 8, "n_head": 8},
    "100m": {"n_embd": 768, "n_layer": 12, "n_head": 12},
}


def build_model(out: Path, *, seed: int = 0, shape: str = "12m") -> Path:
    """A GPT-2-architecture model (``SHAPES``; default about 12M parameters) with a BPE
    tokenizer trained on the SQuAD paragraphs (random weights: speed is what is measured)."""
    if (out / "model.safetensors").exists():
        return out
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from steadyeval.models import build_tiny_model

    build_tiny_model(out, "gpt2", seed=seed, vocab_size=4096, corpus=corpus(), overwrite=True)
    tok = AutoTokenizer.from_pretrained(out)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=1024,
        **SHAPES[shape],
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
    model.save_pretrained(out)
    return out


def score_requests(docs: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[ScoreRequest]:
    """Every (prompt, choice) of the lm-eval docs as steadyeval's score request."""
    return [
        ScoreRequest(d["prompt"], c)
        for rows in docs.values()
        for d in rows
        for c in d.get("choices", ())
    ]


def requests(
    its: Sequence[Item],
    conds: Sequence[Condition] | None = None,
    shot_pools: Mapping[str, Sequence[Item]] | None = None,
) -> dict[str, Any]:
    """The exact strings: per scored condition, (prompt, continuations, gold); per generation
    condition, the prompts with their stop strings and token limit."""
    out: dict[str, Any] = {}
    for cond in conditions() if conds is None else conds:
        docs = []
        for trial in expand(its, [cond], shot_pools=shot_pools).trials:
            reqs = requests_for(trial)
            if cond.scoring == "generate":
                (g,) = reqs
                assert isinstance(g, GenerateRequest)
                docs.append(
                    {
                        "id": trial.item.id,
                        "prompt": g.prompt,
                        "target": "",
                        "until": list(g.stop),
                        "max_gen_toks": g.max_new_tokens,
                    }
                )
            else:
                scored = [r for r in reqs if isinstance(r, ScoreRequest)]
                gold = trial.gold_displayed[0] if trial.gold_displayed else 0
                docs.append(
                    {
                        "id": trial.item.id,
                        "prompt": scored[0].context,
                        "choices": [r.continuation for r in scored],
                        "gold": gold,
                    }
                )
        out[cond.name] = docs
    return out


# -- the layouts of issue 22 -------------------------------------------------------------------

DATA = SQUAD.parent
MMLU_DIR = DATA / "mmlu" / "hendrycks_format"
LPAQA_DIR = DATA / "lama" / "lpaqa"


@dataclass(frozen=True)
class Workload:
    """One benchmark workload: what both tools evaluate, and on which model shape."""

    key: str  # a..e
    name: str
    shape: str  # a key of SHAPES
    items: list[Item]
    conditions: list[Condition]
    shot_pools: Mapping[str, Sequence[Item]] = field(default_factory=dict)
    about: str = ""


#: Items per workload and size: SQuAD questions (half answerable) for a, b, e; (subjects,
#: questions per subject) for c; (templates per relation, facts per relation) for d.
SIZES: dict[str, dict[str, Any]] = {
    "full": {"a": 100, "b": 100, "c": (8, 8), "d": (10, 10), "e": 20},
    "quick": {"a": 40, "b": 40, "c": (4, 5), "d": (5, 4), "e": 6},
    "tiny": {"a": 4, "b": 4, "c": (2, 2), "d": (2, 2), "e": 2},
}
WORKLOADS = "abcde"


def question_first_conditions() -> list[Condition]:
    """The formats study's conditions for UnifiedQA's order (question, options, paragraph):
    free form (greedy, 24 tokens, no stop string) and three option lists scored by
    log-probability (no escape, "none of the above", the refusal text)."""
    from steadyeval.scoring import OPTION_LOGPROB
    from steadyeval.studies.formats._design import FormatsDesignOptions, build_conditions

    conds, _ = build_conditions(FormatsDesignOptions(template="unifiedqa", scoring=OPTION_LOGPROB))
    return conds


def mmlu_workload(n_subjects: int, per_subject: int) -> tuple[list[Item], list[Condition], Any]:
    """MMLU test questions of the first ``n_subjects`` subjects, 5-shot (the subject's five
    dev questions before every question), letter scoring, the reference header."""
    from steadyeval.items import load_mmlu
    from steadyeval.studies.knowledge import KnowledgeConfig, knowledge_design

    subjects = sorted(p.name[: -len("_test.csv")] for p in (MMLU_DIR / "test").glob("*.csv"))
    data = load_mmlu(MMLU_DIR, subjects=subjects[:n_subjects], limit_per_subject=per_subject)
    config = KnowledgeConfig(
        data=str(MMLU_DIR),
        shots=[5],
        templates=["reference"],
        scorings=["letter-logprob"],
        rotations=False,
        memorisation=False,
        models=["hf:none"],  # required by the config; the design calls no model
    )
    (block,) = knowledge_design(data, config, []).blocks
    return list(block.items), list(block.conditions), dict(block.shot_pools)


def cloze_workload(n_templates: int, n_facts: int) -> tuple[list[Item], list[Condition]]:
    """LPAQA (mined prompts) on T-REx: per relation its first ``n_facts`` facts and its first
    ``n_templates`` templates with text before ``[Y]``; each condition scores the gold object
    as the continuation of the template cut at ``[Y]`` (subject in place of ``[X]``)."""
    from steadyeval import Template
    from steadyeval.items import load_probes
    from steadyeval.scoring import OPTION_LOGPROB

    data = load_probes(LPAQA_DIR, prompt_set="mine")
    cut: dict[str, list[str]] = {}
    for rel in data.relations:
        heads = [t.split("[Y]")[0].rstrip() for t in rel.templates]
        cut[rel.id] = [h for h in heads if h.replace("[X]", "").strip()][:n_templates]
    its: list[Item] = []
    seen: dict[str, int] = {}
    for fact in data.facts:
        k = seen.get(fact.relation, 0)
        if k < n_facts and len(cut.get(fact.relation, ())) == n_templates:
            seen[fact.relation] = k + 1
            its.append(
                Item(
                    id=f"{fact.relation}-{k}",
                    question=fact.subject,
                    options=(fact.object,),
                    gold_options=(0,),
                    metadata={"relation": fact.relation},
                )
            )
    conds = []
    for t in range(n_templates):
        pairs = ", ".join(
            f"{json.dumps(r)}: {json.dumps(h[t])}" for r, h in cut.items() if len(h) > t
        )
        body = "{{ {" + pairs + "}[metadata.relation] | replace('[X]', question) }}"
        template = Template(name=f"t{t:02d}", body=body, answer=" {{ answer }}")
        conds.append(
            Condition(
                name=f"t{t:02d}",
                template=template,
                format=Format(name="cloze", kind="mc"),
                scoring=OPTION_LOGPROB,
            )
        )
    return its, conds


def workload(key: str, size: str = "full") -> Workload:
    """Workload ``key`` (a-e) at ``size`` (full, quick or tiny)."""
    n = SIZES[size][key]
    if key in "abe":
        if not SQUAD_FILE.exists():
            raise FileNotFoundError(f"{SQUAD_FILE} is absent (the shared SQuAD 2.0 subset)")
        its = items(n // 2, n - n // 2)
        if key == "a":
            return Workload(key, "paragraph-first", "12m", its, conditions(), about="qa template")
        conds = question_first_conditions()
        shape = "100m" if key == "e" else "12m"
        name = "question-first-100m" if key == "e" else "question-first"
        return Workload(key, name, shape, its, conds, about="unifiedqa template")
    if key == "c":
        if not MMLU_DIR.exists():
            raise FileNotFoundError(f"{MMLU_DIR} is absent")
        its, conds, pools = mmlu_workload(*n)
        return Workload(key, "mmlu-5shot-letter", "12m", its, conds, pools)
    if key == "d":
        if not LPAQA_DIR.exists():
            raise FileNotFoundError(f"{LPAQA_DIR} is absent")
        its, conds = cloze_workload(*n)
        return Workload(key, "cloze-lpaqa", "12m", its, conds)
    raise ValueError(f"unknown workload {key!r}; choose from {WORKLOADS}")


def child_env(threads: int) -> dict[str, str]:
    """The environment a benchmark's timed child process runs in: ``threads`` math threads,
    offline, no tokenizer threads (each side of a comparison gets the same)."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
