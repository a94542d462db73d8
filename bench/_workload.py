"""The shared workload of the formats benchmark: model, items, conditions, and the exact
request strings both tools score."""

from __future__ import annotations

import json
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


def build_model(out: Path, *, seed: int = 0) -> Path:
    """A GPT-2-architecture model of about 12M parameters with a BPE tokenizer trained on the
    SQuAD paragraphs (random weights: speed is what is measured)."""
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
        n_embd=320,
        n_layer=8,
        n_head=8,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
    model.save_pretrained(out)
    return out


def requests(its: list[Item]) -> dict[str, Any]:
    """The exact strings: per multiple-choice format, (prompt, continuations, gold); for free
    form, the prompts."""
    out: dict[str, Any] = {}
    for cond in conditions():
        docs = []
        for trial in expand(its, [cond]).trials:
            reqs = requests_for(trial)
            if cond.scoring == "generate":
                (g,) = reqs
                assert isinstance(g, GenerateRequest)
                docs.append({"id": trial.item.id, "prompt": g.prompt, "target": ""})
            else:
                conts = [r.continuation for r in reqs if isinstance(r, ScoreRequest)]
                gold = trial.gold_displayed[0] if trial.gold_displayed else 0
                docs.append(
                    {"id": trial.item.id, "prompt": trial.prompt, "choices": conts, "gold": gold}
                )
        out[cond.name] = docs
    return out
