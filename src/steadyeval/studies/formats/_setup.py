"""The answer-format study's design (data → items × conditions) and its determinism check
(loaded when a run starts, not when the CLI builds its command)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..._errors import ConfigError
from ...conditions import Condition
from ...items import Item, load_squad
from ...models import Backend
from ...run import RunOptions, run
from .._protocol import StudyDesign
from ._config import FormatsConfig
from ._design import (
    CONTROL_WORDS,
    FormatsDesignOptions,
    build_conditions,
    build_items,
    check_template,
    stable_rng,
)
from ._types import DeterminismRun, FormatsDesign

__all__ = ["determinism_check", "formats_design"]


def formats_design(config: FormatsConfig, backends: Sequence[Backend]) -> StudyDesign:
    """Items and conditions for ``config`` (loads the data; calls no model). ``backends``
    are the models' (``template: auto`` follows their declared input format).

    ``design.info`` holds what the analysis needs besides the table: the seed, the
    conditions' roles, the noise-floor pair, and how the items were chosen (counts of
    qualifying, skipped and article-fallback questions).
    """
    data = load_squad(config.data, split=config.split)  # before a model opens
    template = check_template(backends, config.template)
    built = build_items(
        data,
        answerable=config.answerable,
        unanswerable=config.unanswerable,
        seed=config.seed,
        limit=config.limit,
        no_decoy=config.no_decoy,
    )
    control = None
    if config.control:
        control = CONTROL_WORDS[
            int(stable_rng(config.seed, "control").integers(len(CONTROL_WORDS)))
        ]
    s = config.sampling
    opts = FormatsDesignOptions(
        template=template,
        scoring=config.scoring,
        refusal_text=config.refusal_text,
        escapes=tuple(config.escapes),
        refusal_phrases=config.phrases(template),
        max_new_tokens=config.max_new_tokens,
        orders=config.orders,
        control_word=control,
        temperature=s.temperature if s else None,
        n_samples=s.n_samples if s else 1,
        sampling_seed=(config.seed if s.seed is None else s.seed) if s else 0,
    )
    conditions, described = build_conditions(opts)
    base = [d["name"] for d in described if d["variant"] == "base"]
    for name in config.noise_floor:
        if name not in base:
            raise ConfigError(
                f"noise_floor: no condition {name!r} in this study; conditions: {', '.join(base)}"
            )
    info = FormatsDesign(
        seed=config.seed,
        template=template,
        scoring=config.scoring,
        refusal_phrases=list(opts.refusal_phrases),
        control_word=control,
        items=built.counts,
        conditions=described,
        noise_floor=list(config.noise_floor),
        examples=config.examples,
    )
    return StudyDesign.of(built.items, conditions, backends, info=info)


def determinism_check(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    backends: Sequence[Backend],
    n: int,
    seed: int,
) -> DeterminismRun:
    """Rerun ``n`` seeded questions under the greedy base formats with an empty cache file.

    The check's own cache lives in a temporary folder deleted afterwards, so every one of
    its requests reaches the model, whatever the main cache holds.
    """
    base = [it for it in items if it.metadata.get("variant", "base") == "base"]
    rng = stable_rng(seed, "determinism")
    picks = sorted(int(i) for i in rng.choice(len(base), size=min(n, len(base)), replace=False))
    subset = [base[i] for i in picks]
    with tempfile.TemporaryDirectory(prefix="steadyeval-determinism-") as tmp:
        result = run(
            subset,
            conditions,
            list(backends),
            options=RunOptions(cache=Path(tmp) / "fresh.sqlite", progress=False),
        )
    rows = result.table.select(
        ["model", "item_id", "condition", "output", "parsed", "option_logprobs"]
    ).to_pylist()
    return DeterminismRun(
        questions=len(subset), model_calls=result.summary["plan"]["model_calls"], rows=rows
    )
