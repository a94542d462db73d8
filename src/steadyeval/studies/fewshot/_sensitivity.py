"""FewNLU's per-factor sensitivity (Zheng et al., 2022, section 4.4.2, Table 4) from the
per-setting scores the analysis already has.

FewNLU sets the hyperparameters to the best-performing setting and gives one factor
(pattern, learning rate, batch size, evaluation frequency, training-sample order, ...)
different values; the sensitivity is the standard deviation of the score over those values,
on the dev set and on the test set. Here the best-performing setting is the strategy's chosen
one (highest mean dev score) at the main K; a hyperparameter's value scores the mean over
the K splits of the setting that differs from the chosen one in that hyperparameter only;
the std is the sample std (ddof=1), as FewNLU's ``statistics.stdev`` (``fewnlu/cli.py:68``).
Two factors are read per run instead: ``split`` (the chosen setting's K splits) and
``seed``, the training-sample order: a unit's ``seed`` seeds its batch order (and dropout,
and a new head's initial weights), FewNLU's ``sampler_seed``; the chosen setting retrained
on all labelled data with ``final_seeds`` seeds (``final`` units), or the fixed strategy's K
seeds, give the test scores over which it varies (those units have no dev part).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from ._types import ByK, FactorSensitivity, FinalRun

__all__ = ["sample_std", "sensitivity"]


def sample_std(values: Sequence[float | None]) -> float | None:
    """The sample std (ddof=1) of the defined values; None with fewer than two."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.stdev(vals) if len(vals) > 1 else None


def _factor(grid: Sequence[Any], chosen: dict[str, Any], name: str) -> FactorSensitivity | None:
    """One hyperparameter: the settings equal to ``chosen`` but in ``name``, in grid order."""
    rows = [g for g in grid if all(g.hparams.get(k) == v for k, v in chosen.items() if k != name)]
    if len({repr(g.hparams.get(name)) for g in rows}) < 2:
        return None
    dev = [g.dev_mean for g in rows]
    test = [g.test_mean for g in rows]
    return FactorSensitivity(
        factor=name,
        values=[g.hparams.get(name) for g in rows],
        dev_scores=dev,
        test_scores=test,
        dev_std=sample_std(dev),
        test_std=sample_std(test),
    )


def _seed(scores: Sequence[float], seeds: Sequence[int], source: str) -> FactorSensitivity:
    return FactorSensitivity(
        factor="seed",
        values=list(seeds),
        dev_scores=[None] * len(scores),
        test_scores=list(scores),
        dev_std=None,
        test_std=sample_std(scores),
        note=f"{source}: trained on all labelled data, no dev part"
        + ("" if len(scores) > 1 else "; fewer than two seeds, no std"),
    )


def sensitivity(
    head: ByK, final: FinalRun | None, *, fixed: bool, first_seed: int
) -> list[FactorSensitivity]:
    """The factors of one strategy at the main K (``head``): every hyperparameter the grid
    varies, ``split`` and ``seed`` (module docstring); the fixed strategy (``fixed``) has
    only ``seed``, its K seeds from ``first_seed``."""
    if fixed:
        seeds = [first_seed + i for i in range(len(head.test_scores))]
        return [_seed(head.test_scores, seeds, "the fixed strategy's K seeds")]
    chosen = dict(head.selected_hparams)
    # By name: a setting's key order is not kept through summary.json.
    out = [f for name in sorted(chosen) if (f := _factor(head.grid, chosen, name)) is not None]
    row = next(g for g in head.grid if g.id == head.selected)
    out.append(
        FactorSensitivity(
            factor="split",
            values=list(range(len(row.test_scores))),
            dev_scores=list(row.dev_scores),
            test_scores=list(row.test_scores),
            dev_std=sample_std(row.dev_scores),
            test_std=sample_std(row.test_scores),
        )
    )
    if final is not None:
        out.append(_seed(final.test_scores, final.seeds, "the chosen setting retrained"))
    else:
        out.append(
            FactorSensitivity(
                factor="seed",
                values=[],
                dev_scores=[],
                test_scores=[],
                dev_std=None,
                test_std=None,
                note="every split unit has the run's seed: retrain the chosen setting with "
                "--final-seeds 2 or more (or add --strategy fixed) to measure it",
            )
        )
    return out
