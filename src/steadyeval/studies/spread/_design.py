"""The spread study's design: items, formats as conditions, and sparse (format, item) cells
as blocks (one block per format with the items sampled for it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..._errors import ConfigError
from ...conditions import FORMATS, Condition, Generation
from ...items import Item, load_items, sample_items
from ...stats import MAX_DRAW_VALUES, MAX_EFFECTS, MAX_GRID, MAX_ROW_EFFECTS, max_columns
from .._protocol import StudyDesign
from ._config import SpreadConfig
from ._formats_file import load_format_file
from ._grammar import COVARIATE_COLUMNS, generate_formats
from ._irt_design import stratified_cells
from ._types import SpreadDesign

__all__ = ["SpreadSetup", "cell_blocks", "spread_design", "spread_setup"]


class _AnyFormat(Protocol):
    name: str

    def condition(self, scoring: str, **settings: Any) -> Condition: ...

    def describe(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class SpreadSetup:
    """Items, formats (as conditions) and the format covariates (None: no covariates)."""

    items: tuple[Item, ...]
    formats: tuple[_AnyFormat, ...]
    conditions: tuple[Condition, ...]
    covariates: list[list[float]] | None


def _conditions(config: SpreadConfig, formats: Sequence[_AnyFormat], mc: bool) -> list[Condition]:
    settings: dict[str, Any] = {}
    if config.scoring == "generate":
        settings["generation"] = Generation(max_new_tokens=config.max_new_tokens, stop=("\n",))
    out = [f.condition(config.scoring, **settings) for f in formats]
    if not mc:  # items without options: the same templates, free-form answers
        out = [
            Condition(
                name=c.name,
                template=c.template,
                format=FORMATS["free"],
                scoring=c.scoring,
                generation=c.generation,
            )
            for c in out
        ]
    return out


def _check_draws(
    config: SpreadConfig, n_formats: int, n_items: int, n_covariates: int, models: int = 1
) -> None:
    """The estimator's limits (``steadyeval.stats.check_size``: formats + covariate
    columns, formats + items + covariate columns, models × formats × items; both methods:
    the search's analysis estimates too) and the estimate's draws × (formats + items),
    checked before the formats are built (and so in the dry run too), with what fits."""
    per_draw = n_formats + n_items
    covs = f" + {n_covariates} covariate columns (the grammar's choices)" if n_covariates else ""
    if n_formats + n_covariates > MAX_ROW_EFFECTS:
        raise ConfigError(
            f"{n_formats:,} formats{covs} is over the estimator's limit of "
            f"{MAX_ROW_EFFECTS:,} (its fit factorises a dense matrix of that size squared at "
            f"every step); pass --n-formats {MAX_ROW_EFFECTS - n_covariates} or fewer"
            + (" (or --no-covariates)" if n_covariates else "")
        )
    most = max_columns(n_formats, n_covariates, models)
    if n_items > most:
        if per_draw + n_covariates > MAX_EFFECTS:
            over = (
                f"{n_formats:,} formats + {n_items:,} items{covs} is over the estimator's "
                f"limit of {MAX_EFFECTS:,} (the sampler draws every effect each sweep)"
            )
        else:
            per = f"{models} models × " if models > 1 else ""
            over = (
                f"{per}{n_formats:,} formats × {n_items:,} items is over the estimator's limit "
                f"of {MAX_GRID:,} cells (every posterior draw completes that matrix)"
            )
        raise ConfigError(
            f"{over}; estimate on a sample of the items: --sample {most} or fewer (sample: "
            f"{most} in a config file; --limit N takes the first N, a biased sample of a "
            "sorted file)"
        )
    if config.method == "estimate" and config.draws * per_draw > MAX_DRAW_VALUES:
        most = MAX_DRAW_VALUES // per_draw
        raise ConfigError(
            f"--draws {config.draws} × ({n_formats:,} formats + {n_items:,} items) is over the "
            f"estimator's limit of {MAX_DRAW_VALUES:,} values held at once; "
            + (
                f"pass --draws {most} or fewer"
                if most >= 50
                else "use fewer formats, --limit or --sample"
            )
        )


def spread_setup(config: SpreadConfig, models: int = 1) -> SpreadSetup:
    """Load the items and build the formats (generated, or read from ``config.formats``);
    ``models``: how many models one fit holds (the decide study's comparison: all of
    them), for the estimator's limit on the completed matrix."""
    items = load_items(config.data)
    if config.limit is not None:
        items = items[: config.limit]
    elif config.sample is not None:
        items = sample_items(items, config.sample, seed=config.seed)
    if not items:
        raise ConfigError(f"{config.data}: no items")
    mc = all(i.options for i in items)
    if not mc and any(i.options for i in items):
        raise ConfigError(f"{config.data}: mix of items with and without options; use one kind")
    if not mc and config.scoring != "generate":
        raise ConfigError(
            f"{config.data}: items have no options, so scoring must be 'generate' "
            f"(got {config.scoring!r})"
        )
    covariates = None
    if config.formats is not None:
        formats: list[Any] = list(load_format_file(config.formats))
        _check_draws(config, len(formats), len(items), 0, models)
    else:
        columns = COVARIATE_COLUMNS if config.covariates else 0
        _check_draws(config, config.n_formats, len(items), columns, models)
        grammar = generate_formats(config.n_formats, config.grammar_seed)
        formats = list(grammar)
        if config.covariates:
            covariates = [g.covariates() for g in grammar]
    conditions = _conditions(config, formats, mc)
    return SpreadSetup(tuple(items), tuple(formats), tuple(conditions), covariates)


def cell_blocks(
    setup: SpreadSetup, rows: NDArray[np.intp], cols: NDArray[np.intp], phase: str
) -> list[Any]:
    """One block per format: the format's condition × the items sampled for it."""
    from ...run import Block

    blocks = []
    for f in np.unique(rows):
        items = [setup.items[int(c)] for c in np.sort(cols[rows == f])]
        blocks.append(Block(items, [setup.conditions[int(f)]], [], tags={"spread_phase": phase}))
    return blocks


def _info(config: SpreadConfig, setup: SpreadSetup) -> SpreadDesign:
    return SpreadDesign(
        method=config.method,
        sampler=config.sampler,
        budget=budget_of(config, setup),
        seed=config.seed,
        confidence=config.confidence,
        draws=config.draws,
        batch=config.batch,
        formats=[{"name": f.name, "choices": f.describe()} for f in setup.formats],
        items=[i.id for i in setup.items],
        covariates=setup.covariates,
    )


def budget_of(config: SpreadConfig, setup: SpreadSetup) -> int:
    """The cell budget: as given, else two single-format evaluations (2 × items)."""
    total = len(setup.formats) * len(setup.items)
    budget = config.budget if config.budget is not None else 2 * len(setup.items)
    if budget > total:
        raise ConfigError(f"budget {budget} exceeds the {total} (format, item) cells")
    if config.method == "search" and len(setup.formats) < 2:
        raise ConfigError(f"a search needs at least 2 formats to compare; got {len(setup.formats)}")
    if config.method == "search" and budget < 2 * config.batch:
        given = "" if config.budget is not None else " (the default: 2 × items)"
        raise ConfigError(
            f"budget {budget}{given} is below two search steps of --batch {config.batch} "
            f"cells ({2 * config.batch}); pass --budget {2 * config.batch} or more, or a "
            "smaller --batch"
        )
    if budget < len(setup.formats) and config.method == "estimate":
        raise ConfigError(
            f"budget {budget} is below the number of formats ({len(setup.formats)}); "
            "every format needs at least one cell"
        )
    return budget


def spread_design(config: SpreadConfig) -> tuple[StudyDesign, SpreadSetup]:
    """The first pass: stratified cells (estimate; half of them with the adaptive sampler),
    or the default format's first batch of items (search)."""
    from ...results import StudyColumn

    setup = spread_setup(config)
    n_f, n_i = len(setup.formats), len(setup.items)
    budget = budget_of(config, setup)
    if config.method == "search":
        first = np.random.default_rng(config.seed).permutation(n_i)[: config.batch]
        rows, cols = np.zeros(len(first), dtype=np.intp), first.astype(np.intp)
        phase = "search"
    else:
        n = budget // 2 if config.sampler == "adaptive" else budget
        n = max(n, n_f)
        rows, cols = stratified_cells(n_f, n_i, n, seed=config.seed)
        phase = "stratified"
    column = StudyColumn("spread_phase", "string", "how the cell was chosen")
    blocks = cell_blocks(setup, rows, cols, phase)
    return StudyDesign(tuple(blocks), _info(config, setup), (column,)), setup
