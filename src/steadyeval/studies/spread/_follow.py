"""The spread study's second pass: adaptive cells, or the Thompson-sampling search."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..._log import timed_steps
from ...stats import IrtCells, StatsWarning, fit_irt, irt_distribution
from .._protocol import StudyDesign
from ._analysis import SWEEPS, model_cells
from ._config import SpreadConfig
from ._design import budget_of, cell_blocks, spread_setup
from ._irt_design import adaptive_cells
from ._irt_search import thompson_search
from ._types import SpreadDesign

if TYPE_CHECKING:
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions

__all__ = ["adaptive_follow_up", "search_follow_up"]

log = logging.getLogger(__name__)


def adaptive_follow_up(
    config: SpreadConfig, design: StudyDesign, results: ResultsFrame
) -> StudyDesign:
    """Fit the first (stratified) half, then put the rest of the budget on the formats whose
    accuracy is least certain (one adaptive round; with several models, their union)."""
    setup = spread_setup(config)
    info = SpreadDesign.from_json(design.info, source="the spread study's design")
    n_f, n_i = len(setup.formats), len(setup.items)
    blocks = []
    for model in results.codes("model", order="sorted", nulls=False)[1]:
        rows, cols, y, _ = model_cells(results, info, str(model))
        left = budget_of(config, setup) - len(y)
        if left <= 0:
            continue
        cells = IrtCells.of(rows, cols, y, n_f, n_i)
        x = np.asarray(info.covariates) if info.covariates else None
        what = f"spread of {model}: adaptive cells"
        doing = f"estimating from the first {len(y)} cells (200 draws)"
        with (
            timed_steps(log, what, doing, done="estimated", unit=SWEEPS) as steps,
            warnings.catch_warnings(),  # the final analysis notes what the cells cannot tell
        ):
            warnings.simplefilter("ignore", StatsWarning)
            dist = irt_distribution(
                fit_irt(cells, x), n_draws=200, seed=config.seed, progress=steps
            )
        taken = np.zeros((n_f, n_i), dtype=bool)
        taken[rows, cols] = True
        r, c = adaptive_cells(dist, taken, min(left, int((~taken).sum())), seed=config.seed)
        blocks += cell_blocks(setup, r, c, "adaptive")
    return StudyDesign(tuple(blocks), {}, design.columns)


def search_follow_up(
    config: SpreadConfig,
    design: StudyDesign,
    results: ResultsFrame,
    backends: Sequence[Backend],
    options: RunOptions,
) -> StudyDesign:
    """Run the search step by step (each step's cells through the runner and the response
    cache, so the final pass reads them back without calling the model again)."""
    from ...results import ResultsFrame
    from ...run import RunOptions, run_blocks

    setup = spread_setup(config)
    n_f, n_i = len(setup.formats), len(setup.items)
    step_options = RunOptions(cache=options.cache, progress=False, executor=options.executor)
    names = [c.name for c in setup.conditions]
    # cells of the first pass (the default format's first batch, for every model)
    done = set(zip(results.values("condition"), results.values("item_id"), strict=True))
    blocks = []
    sent = [0]  # requests the steps send (the final pass reads them from the cache)
    for backend in backends:

        def evaluate(rows: np.ndarray, cols: np.ndarray, backend: Backend = backend) -> list[float]:
            step = [
                dataclasses.replace(b, models=[backend])
                for b in cell_blocks(setup, rows, cols, "search")
            ]
            ran = run_blocks(step, options=step_options, columns=design.columns)
            sent[0] += int(ran.summary["plan"]["model_calls"])
            res = ResultsFrame(ran.table, design.columns)
            cells = zip(res.values("condition"), res.values("item_id"), strict=True)
            correct = dict(zip(cells, (res.bools("correct") == 1).tolist(), strict=True))
            return [
                1.0 if correct.get((names[int(r)], setup.items[int(c)].id)) else 0.0
                for r, c in zip(rows, cols, strict=True)
            ]

        result = thompson_search(
            evaluate, n_f, n_i, budget_of(config, setup), batch=config.batch, seed=config.seed
        )
        keep = np.array(
            [
                (names[r], setup.items[c].id) not in done
                for r, c in zip(result.rows, result.cols, strict=True)
            ],
            dtype=bool,
        )
        for b in cell_blocks(setup, result.rows[keep], result.cols[keep], "search"):
            blocks.append(dataclasses.replace(b, models=[backend]))
    return StudyDesign(tuple(blocks), {}, design.columns, sent=sent[0])
