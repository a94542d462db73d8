"""The decide study: which of two (or a few) models is more accurate over a population of
prompt formats, at the fewest cells anytime-valid tests allow. Cells (format, item) are
drawn batch by batch and answered by every model until every pair's test decides or the
budget is spent; the analysis adds the comparison over formats (the crossed model).
``docs/study-decide.md``."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._errors import ConfigError
from .._protocol import Study, StudyDesign
from ._decide_config import DecideConfig
from ._decide_types import DecideAnalysis, DecideDesign

if TYPE_CHECKING:
    from ...document import Section
    from ...models import Backend
    from ...results import ResultsFrame
    from ...run import RunOptions
    from ._design import SpreadSetup
    from ._types import SpreadDesign

__all__ = ["DECIDE_STUDY", "DecideStudy"]

log = logging.getLogger(__name__)


def _setup(config: DecideConfig) -> tuple[SpreadSetup, int]:
    from ...stats import MAX_DRAW_VALUES
    from ._design import spread_setup
    from ._study import _as_config_error

    with _as_config_error("decide study"):
        setup = spread_setup(config.spread_config(), models=len(config.models))
    if len(setup.formats) < 2:
        raise ConfigError(
            f"decide study: {config.formats}: one format; a comparison over formats needs two "
            "or more"
        )
    k = len(config.models)
    values = config.draws * k * (len(setup.formats) + len(setup.items))
    if values > MAX_DRAW_VALUES:  # the comparison over formats, after every model call
        most = MAX_DRAW_VALUES // (k * (len(setup.formats) + len(setup.items)))
        raise ConfigError(
            f"--draws {config.draws} × {k} models × ({len(setup.formats):,} formats + "
            f"{len(setup.items):,} items) is over the comparison's limit of "
            f"{MAX_DRAW_VALUES:,} values held at once; pass --draws {most} or fewer"
        )
    budget = config.budget if config.budget is not None else 2 * len(setup.items)
    return setup, budget


def _identities(backends: Sequence[Backend]) -> list[str]:
    """The models as the results table's ``model`` column names them."""
    names = [b.identity() for b in backends]
    if len(set(names)) < len(names):
        raise ConfigError(
            f"decide study: two of the models are the same model "
            f"{next(n for n in names if names.count(n) > 1)!r}; compare different models"
        )
    return names


def _info(
    config: DecideConfig, models: list[str], setup: SpreadSetup, budget: int, sequence: Any
) -> DecideDesign:
    return DecideDesign(
        models=models,
        budget=budget,
        batch=config.batch,
        allocation=config.allocation,
        confidence=config.confidence,
        seed=config.seed,
        draws=config.draws,
        formats=[{"name": f.name, "choices": f.describe()} for f in setup.formats],
        items=[i.id for i in setup.items],
        covariates=setup.covariates,
        sequence=[[float(v) for v in cell] for cell in sequence],
    )


def _blocks(setup: SpreadSetup, cells: Sequence[tuple[int, int]]) -> list[Any]:
    """Blocks of the distinct cells not yet run (each answered by every model)."""
    from ._design import cell_blocks

    if not cells:
        return []
    rows, cols = (np.array(v, dtype=np.intp) for v in zip(*cells, strict=True))
    return cell_blocks(setup, rows, cols, "decide")


def _answers(results: ResultsFrame, facts: SpreadDesign, models: Sequence[str]) -> dict[Any, float]:
    """(model, format, item) → 1.0 / 0.0 of every cell of ``models`` in ``results``
    (:func:`._analysis.model_cells`: a cell's first row; unscored counts as wrong)."""
    from ._analysis import model_cells

    out: dict[Any, float] = {}
    for model in models:
        rows, cols, y, _ = model_cells(results, facts, model)
        for f, i, v in zip(rows.tolist(), cols.tolist(), y.tolist(), strict=True):
            out[(model, f, i)] = v
    return out


class DecideStudy(Study[DecideAnalysis]):
    """Is A more accurate than B over the formats a user might have used? Draws (format,
    item) cells batch by batch, every model answers each, and stops when the anytime-valid
    tests decide (every pair's, with more than two models); then compares the models over
    the population of formats (``docs/study-decide.md``)."""

    name = "decide"
    question = "which model is better over all formats, at the fewest cells?"
    config = DecideConfig
    analysis_type = DecideAnalysis
    design_type = DecideDesign
    example = """
        steadyeval study decide --model hf:Qwen/Qwen2.5-0.5B --model hf:Qwen/Qwen2.5-1.5B \\
            --data mmlu.jsonl --sample 2000 --budget 4000 --out runs/decide
    """

    def design(
        self, config: DecideConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        from ...results import StudyColumn
        from ._decide_cells import first_cells

        setup, budget = _setup(config)
        first = first_cells(
            len(setup.formats),
            len(setup.items),
            budget=budget,
            batch=config.batch,
            adaptive=config.allocation == "adaptive",
            seed=config.seed,
        )
        cells = list(dict.fromkeys((f, i) for f, i, _, _ in first))
        column = StudyColumn("spread_phase", "string", "how the cell was chosen")
        return StudyDesign(
            tuple(_blocks(setup, cells)),
            _info(config, _identities(backends), setup, budget, first),
            (column,),
        )

    def plan_note(self, config: DecideConfig) -> str | None:
        """The counts are the first batch's: the later ones depend on the answers."""
        _, budget = _setup(config)
        k = len(config.models)
        return (
            f"dry run: the counts are the first batch's ({min(config.batch, budget):,} cells); "
            f"the batches after it depend on the answers: at most {budget:,} cells × {k} "
            "models"
        )

    def follow_up(
        self,
        config: DecideConfig,
        design: StudyDesign,
        results: ResultsFrame,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign | None:
        """The batches after the first, each run through the runner and the response cache
        (so the final pass, and a rerun, read them back without calling the models)."""
        from ...results import ResultsFrame
        from ...run import RunOptions, run_blocks
        from ._decide_cells import draw_sequence
        from ._design import _info as spread_facts

        setup, budget = _setup(config)
        models = _identities(backends)
        facts = spread_facts(config.spread_config(), setup)  # what model_cells reads
        known = _answers(results, facts, models)
        step_options = RunOptions(cache=options.cache, progress=False, executor=options.executor)
        new: list[tuple[int, int]] = []
        sent = [0]

        def answer(cells: list[tuple[int, int]]) -> list[tuple[float, ...]]:
            todo = [c for c in dict.fromkeys(cells) if (models[0], *c) not in known]
            if todo:
                blocks = [
                    dataclasses.replace(b, models=list(backends)) for b in _blocks(setup, todo)
                ]
                ran = run_blocks(blocks, options=step_options, columns=design.columns)
                sent[0] += int(ran.summary["plan"]["model_calls"])
                known.update(_answers(ResultsFrame(ran.table, design.columns), facts, models))
                new.extend(todo)
            missing = [c for c in cells if any((m, *c) not in known for m in models)]
            if missing:
                raise ConfigError(f"decide study: no answer for cell {missing[0]} of a model")
            return [tuple(known[(m, *c)] for m in models) for c in cells]

        sequence = draw_sequence(
            len(setup.formats),
            len(setup.items),
            budget=budget,
            batch=config.batch,
            adaptive=config.allocation == "adaptive",
            confidence=config.confidence,
            seed=config.seed,
            answer=answer,
            progress=None if options.progress is False else _progress(budget, config.confidence),
        )
        info = _info(config, models, setup, budget, sequence)
        return StudyDesign(tuple(_blocks(setup, new)), info.to_json(), design.columns, sent=sent[0])

    def analyze(self, results: ResultsFrame, design: DecideDesign) -> DecideAnalysis:
        from ._decide_analysis import analyze_decide
        from ._study import _as_config_error

        with _as_config_error("decide study"):
            return analyze_decide(results, design)

    def sections(
        self, analysis: DecideAnalysis, design: DecideDesign, *, figures: bool = True
    ) -> list[Section]:
        from ._decide_report import decide_report_sections

        return decide_report_sections(analysis, design, figures=figures)


def _progress(budget: int, confidence: float) -> Callable[[int, int, int], None]:
    """A log line after each batch: cells drawn of the budget, and the pairs decided."""

    from ._decide_report import level_text

    def report(drawn: int, decided: int, pairs: int) -> None:
        log.info(
            "decide: %d of %d cells drawn; %d of %d pair(s) decided at %s",
            drawn, budget, decided, pairs, level_text(confidence),
        )  # fmt: skip

    return report


DECIDE_STUDY = DecideStudy()
