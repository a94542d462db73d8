"""Shot counts are bounded (issue 37): a count is 0..MAX_SHOTS, a list holds no empty entry,
and a count beyond the dev pool costs no more than the pool (it gives the pool's prompt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steadyeval import ConfigError, load_backend
from steadyeval.conditions import expand
from steadyeval.studies.knowledge import KNOWLEDGE_STUDY, knowledge_design, load_mmlu
from steadyeval.studies.knowledge._config import MAX_SHOTS


def _load(tmp_path: Path, **keys: Any) -> Any:
    path = tmp_path / "study.yaml"
    path.write_text(json.dumps({"models": ["hf:x"], "data": "d", **keys}))  # JSON is YAML
    return KNOWLEDGE_STUDY.load_config(path)


@pytest.mark.parametrize("shots", [[MAX_SHOTS + 1], [0, 100_000], [99_999_999_999], [-1]])
def test_shot_counts_are_bounded(tmp_path: Path, shots: list[int]) -> None:
    with pytest.raises(ConfigError, match=r"line 1: shots: shots must be integers in 0\.\.1,000"):
        _load(tmp_path, shots=shots)


def test_the_bound_itself_is_accepted(tmp_path: Path) -> None:
    assert _load(tmp_path, shots=[0, MAX_SHOTS]).shots == [0, MAX_SHOTS]


@pytest.mark.parametrize("text", ["0,,1", "0,1,", ",5", " , "])
def test_an_empty_entry_in_a_comma_string_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match=r"line 1: shots: .*value \d of .* is empty"):
        _load(tmp_path, shots=text)
    with pytest.raises(ConfigError, match=r"templates: .*is empty"):
        _load(tmp_path, templates="reference,")
    assert _load(tmp_path, shots=" 0, 2 ").shots == [0, 2]


def test_a_count_beyond_the_dev_pool_costs_what_the_pool_costs(
    mini_mmlu: Path, tiny_gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 64-token context fits no prompt even without shots: the fit tries every count from
    # the largest down. The largest dev pool holds 3 questions, so 1,000 shots try what 3 do.
    backend = load_backend(f"hf:{tiny_gpt2}?max_length=64")
    counted: list[int] = []
    count = backend.count_tokens

    def counting(texts: list[str]) -> list[int] | None:
        counted.append(len(texts))
        return count(texts)

    monkeypatch.setattr(backend, "count_tokens", counting)
    data = load_mmlu(mini_mmlu)
    designs, calls = [], []
    for shots in (3, MAX_SHOTS):
        counted.clear()
        cfg = KNOWLEDGE_STUDY.config(models=["hf:x"], data="unused", shots=[shots])
        designs.append(knowledge_design(data, cfg, [backend]))
        calls.append(len(counted))
    assert calls[0] == calls[1]
    few, many = designs
    assert few.info.shot_fit == many.info.shot_fit
    prompts = [
        [t.prompt for t in expand(d.items, d.conditions, shot_pools=d.shot_pools).trials]
        for d in designs
    ]
    assert prompts[0] == prompts[1]
