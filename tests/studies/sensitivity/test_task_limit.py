"""``--limit-per-relation N`` on a generic task (items.jsonl + templates.jsonl) keeps a seeded
uniform sample of N items per relation (else subject), as it does for a probe's facts: the
first N of a file sorted by difficulty would be a biased sample."""

from __future__ import annotations

import json
from pathlib import Path

from steadyeval.items import load_jsonl, sample_items
from steadyeval.studies.sensitivity import ProbeOptions, sensitivity_design


def _task(root: Path) -> Path:
    rows = [
        {"id": f"{s}{k}", "question": f"{s} question {k}?", "options": ["a", "b"], "answer": 0,
         "metadata": {"subject": s}}
        for s in ("geo", "math", "art")
        for k in range(6 if s != "art" else 1)
    ]  # fmt: skip
    (root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    templates = [
        {"name": "qa", "body": "Q: {{ question }}"},
        {"name": "t", "body": "{{ question }}"},
    ]
    (root / "templates.jsonl").write_text("".join(json.dumps(t) + "\n" for t in templates))
    return root


def _asked(root: Path, seed: int) -> list[str]:
    design = sensitivity_design(root, probe=ProbeOptions(limit_per_relation=2, seed=seed))
    return list(dict.fromkeys(item.id for block in design.blocks for item in block.items))


def test_a_generic_tasks_limit_per_relation_is_a_seeded_sample(tmp_path: Path) -> None:
    root = _task(tmp_path)
    items = load_jsonl(root / "items.jsonl")
    expected = [
        item.id
        for s in ("geo", "math", "art")
        for item in sample_items([i for i in items if i.metadata["subject"] == s], 2, seed=7)
    ]
    asked = _asked(root, 7)
    assert sorted(asked) == sorted(expected) and len(asked) == 5  # art has one item
    assert asked == [i.id for i in items if i.id in set(asked)]  # in file order
    assert _asked(root, 7) == asked
    assert any(_asked(root, seed) != asked for seed in range(8, 12))
