"""Run the answer-format study: data → design → (determinism check) → run_study → analysis."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._errors import ConfigError
from ...conditions import Condition
from ...items import Item
from ...models import Backend, load_backend
from ...run import PlanCounts, RunOptions, run
from .._common import StudyDesign, StudyResult, reanalyze, run_study
from ._analysis import analyze_formats
from ._config import FormatsConfig
from ._design import (
    CONTROL_WORDS,
    FormatsDesignOptions,
    build_conditions,
    build_items,
    check_template,
    stable_rng,
)
from ._render import render_formats
from ._squad import load_squad

__all__ = ["formats_design", "reanalyze_formats", "run_formats_study"]

STUDY = "formats"


def formats_design(config: FormatsConfig, backends: Sequence[Backend]) -> StudyDesign:
    """Items and conditions for ``config`` (loads the data; calls no model). ``backends``
    are the models' (``template: auto`` follows their declared input format).

    ``design.info`` holds what the analysis needs besides the table: the seed, the
    conditions' roles, the noise-floor pair, and how the items were chosen (counts of
    qualifying, skipped and article-fallback questions).
    """
    template = check_template(backends, config.template)
    data = load_squad(config.data, split=config.split)
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
    info: dict[str, Any] = {
        "seed": config.seed,
        "template": template,
        "scoring": config.scoring,
        "refusal_phrases": list(opts.refusal_phrases),
        "control_word": control,
        "items": built.counts,
        "conditions": described,
        "noise_floor": list(config.noise_floor),
        "examples": config.examples,
    }
    return StudyDesign(items=built.items, conditions=conditions, info=info)


def _determinism_check(
    items: Sequence[Item],
    conditions: Sequence[Condition],
    backends: Sequence[Backend],
    n: int,
    seed: int,
) -> dict[str, Any]:
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
    return {
        "questions": len(subset),
        "model_calls": result.summary["plan"]["model_calls"],
        "rows": rows,
    }


def run_formats_study(
    config: FormatsConfig,
    *,
    out: Path | None = None,
    cache: Path | None = None,
    dry_run: bool = False,
    progress: bool | None = None,
) -> StudyResult | PlanCounts:
    """Run the answer-format study that ``config`` describes.

    Writes ``results.parquet`` (one row per question × condition × model; the ``format``
    column holds the format's name) and ``summary.json`` / ``summary.md`` with the analysis
    into ``out``. With ``dry_run`` nothing is sent: the plan's counts are returned. The
    optional determinism check (``config.determinism`` questions) always calls the model.
    """
    backends = [load_backend(m) for m in config.models]
    design = formats_design(config, backends)
    options = RunOptions(out=out, cache=cache, progress=progress)
    if not dry_run and config.determinism:
        greedy = [
            c
            for c, d in zip(design.conditions, design.info["conditions"], strict=True)
            if d["variant"] == "base"
        ]
        check = _determinism_check(design.items, greedy, backends, config.determinism, config.seed)
        design = StudyDesign(
            items=design.items,
            conditions=design.conditions,
            info={**design.info, "determinism": check},
        )
    return run_study(
        STUDY,
        design,
        backends,
        analyze=analyze_formats,
        render=render_formats,
        options=options,
        dry_run=dry_run,
        config=config.model_dump(mode="json"),
    )


def reanalyze_formats(run_dir: str | Path) -> dict[str, Any]:
    """Recompute the analysis of a finished run from its ``results.parquet`` (no model)."""
    return reanalyze(run_dir, analyze=analyze_formats, render=render_formats)
