"""The few-shot study's analysis as types: what ``summary.json`` holds under ``analysis``.

Scores are shares in [0, 1] (the task's metric); a value that is not defined (a mean of no
scores, the std of one, Spearman's rho of a constant grid) is None.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, JsonValue, field_validator

from ...results import Analysis, AnalysisRecord, Design, DesignRecord
from ._config import STRATEGIES

__all__ = [
    "ByK",
    "FactorSensitivity",
    "FewShotAnalysis",
    "FewShotDesign",
    "FewShotDesignExperiment",
    "FewShotExperiment",
    "FinalRun",
    "GridPoint",
    "GridSetting",
    "MethodCell",
    "MethodPair",
    "MethodRow",
    "MethodsTable",
    "SkippedK",
    "Stability",
    "StrategyResult",
    "StrategyRow",
    "TaskStrategyRow",
    "UnlabelledSource",
]

#: A compared strategy: a split strategy, or FewNLU's fixed hyper-parameters (``final``, the
#: retraining on all labelled data, is not one).
Strategy = Literal["multisplit", "cv", "mdl", "fixed"]

#: A hyperparameter setting, name -> value. The values are the method's own: scalars for the
#: built-in methods, any JSON value a plug-in method's ``Param`` check returns.
Hparams = dict[str, JsonValue]


class GridSetting(AnalysisRecord):
    """One setting of the grid at one K: its score per split on dev and on test, with the
    mean and sample std (ddof=1) over the splits."""

    id: str
    hparams: Hparams
    dev_scores: list[float]
    test_scores: list[float]
    dev_mean: float | None
    dev_std: float | None
    test_mean: float | None
    test_std: float | None


class ByK(AnalysisRecord):
    """One strategy at one K: the grid, the chosen setting (highest mean dev, the grid's
    first on ties), its test scores, the oracle (best mean test), the regret and Spearman's
    rho of mean dev and mean test across the grid (None with a note when undefined)."""

    k: int
    n_splits: int
    grid: list[GridSetting]
    selected: str
    selected_hparams: Hparams
    dev_mean: float | None
    test_mean: float | None
    test_std: float | None
    test_scores: list[float]
    oracle_test_mean: float | None
    regret: float | None
    spearman: float | None
    spearman_p: float | None
    spearman_note: str | None


class Stability(AnalysisRecord):
    """How the chosen setting, its test score and rho move across K (ascending K)."""

    k_values: list[int]
    selected: list[str]
    test_means: list[float | None]
    spearmans: list[float | None]
    test_range: float | None
    test_sd: float | None
    spearman_range: float | None
    spearman_sd: float | None
    same_selection: bool


class FinalRun(AnalysisRecord):
    """The chosen setting (at the main K) retrained on all labelled data, one test score
    per seed."""

    hparams_id: str
    seeds: list[int]
    test_scores: list[float]
    test_mean: float | None
    test_std: float | None


class FactorSensitivity(AnalysisRecord):
    """FewNLU's Table 4 for one factor under one strategy at the main K: the factor's values
    with every other hyperparameter at the chosen setting's, each value's mean dev and mean
    test score over the K splits, and the sample std (ddof=1) of those means over the
    values; ``seed`` (training-sample order) and ``split`` are read per run, not averaged.
    ``note`` says why a std is None (fewer than two values, no dev part)."""

    factor: str
    values: list[JsonValue]
    dev_scores: list[float | None]
    test_scores: list[float | None]
    dev_std: float | None
    test_std: float | None
    note: str | None = None


class StrategyResult(AnalysisRecord):
    """One strategy of one experiment: per K (keys: K as a string), the stability across K,
    the final retraining (None when not run) and the per-factor sensitivity at the main K
    (FewNLU's Table 4)."""

    by_k: dict[str, ByK]
    stability: Stability
    final: FinalRun | None
    sensitivity: list[FactorSensitivity] = Field(default_factory=list)


class StrategyRow(AnalysisRecord):
    """One strategy at the main K, with its criteria (a row of the side-by-side table)."""

    strategy: Strategy
    k: int
    selected: str
    selected_hparams: Hparams
    dev_mean: float | None
    test_mean: float | None
    test_std: float | None
    test_scores: list[float]
    oracle_test_mean: float | None
    regret: float | None
    spearman: float | None
    test_range_over_k: float | None
    spearman_range_over_k: float | None
    final_test_mean: float | None
    final_test_std: float | None


class TaskStrategyRow(StrategyRow):
    """A :class:`StrategyRow` of one experiment, naming its task and method."""

    task: str
    method: str


class FewShotExperiment(AnalysisRecord):
    """One experiment (task × method): its criteria per strategy (keys: strategies in
    :data:`STRATEGIES`' order, however summary.json stored them), the side-by-side rows and
    the task's metric."""

    strategies: dict[str, StrategyResult]
    side_by_side: list[StrategyRow]
    metric: str

    @field_validator("strategies")
    @classmethod
    def _in_order(cls, value: dict[str, StrategyResult]) -> dict[str, StrategyResult]:
        """One order for summary.md and the report rebuilt from summary.json (whose keys
        are sorted): multisplit, cv, mdl, fixed."""
        rank: dict[str, int] = {name: i for i, name in enumerate(STRATEGIES)}
        return dict(sorted(value.items(), key=lambda kv: rank.get(kv[0], len(rank))))


class MethodCell(AnalysisRecord):
    """One method on one task: the chosen setting's test score per split (mean, sample
    std) and its criteria."""

    mean: float | None
    std: float | None
    scores: list[float]
    selected: str
    selected_hparams: Hparams
    spearman: float | None
    regret: float | None
    test_range_over_k: float | None


class MethodRow(AnalysisRecord):
    """One method across tasks (keys: tasks; None where the method has no result), its task
    average (None when a task is missing) and its criteria averaged over tasks."""

    method: str
    tasks: dict[str, MethodCell | None]
    average: float | None
    spearman: float | None
    regret: float | None
    test_range_over_k: float | None


class MethodPair(AnalysisRecord):
    """Method ``a`` minus ``b`` on the same (task, split) pairs: the mean difference per
    task, wins / losses / ties, the paired z-test and its Holm-adjusted p-value; ``note``
    says why a value is not defined (None when all are)."""

    a: str
    b: str
    n_pairs: int
    per_task: dict[str, float | None]
    wins: int
    losses: int
    ties: int
    estimate: float | None
    se: float | None
    low: float | None
    high: float | None
    pvalue: float | None
    pvalue_holm: float | None
    note: str | None = None


class MethodsTable(AnalysisRecord):
    """Methods × tasks under one strategy at the main K, and every two methods paired."""

    strategy: Strategy
    k: int
    tasks: list[str]
    rows: list[MethodRow]
    paired: list[MethodPair]


class FewShotAnalysis(Analysis):
    """FewNLU's three criteria per experiment (``experiments``, keys ``TASK/METHOD``) and
    strategy, the side-by-side rows of every experiment and the methods × tasks table.
    ``metric`` and ``strategies`` repeat the first experiment's (as one-experiment runs
    always had them); ``k`` is the main K."""

    metric: str
    k: int
    strategies: dict[str, StrategyResult]
    experiments: dict[str, FewShotExperiment]
    side_by_side: list[TaskStrategyRow]
    methods: MethodsTable


# -- the design facts (``summary.json``'s ``design``) ------------------------------------------


class GridPoint(DesignRecord):
    """One setting of a grid: its id (:func:`hparams_id`) and its hyperparameters."""

    id: str
    hparams: Hparams


class UnlabelledSource(DesignRecord):
    """Where a method's unlabelled examples come from, and how many there are."""

    source: str
    available: int


class SkippedK(DesignRecord):
    """A K a strategy could not split the labelled data into (``task``: None in a design
    written before several tasks)."""

    task: str | None = None
    strategy: str
    k: int
    reason: str


class FewShotDesignExperiment(DesignRecord):
    """One task × method: its key (``TASK/METHOD``), the grid in grid order, the labelled
    and test counts, whether the labelled items are grouped, the task's metric and the
    unlabelled examples (None: the method uses none)."""

    key: str
    task: str
    method: str
    grid: list[GridPoint]
    #: The fixed strategy's setting (its id; None when the run has no fixed strategy).
    fixed: str | None = None
    n_labelled: int | None = None
    n_test: int | None = None
    groups: bool = False
    metric: str | None = None
    unlabelled: UnlabelledSource | None = None


class FewShotDesign(Design):
    """What a few-shot run was: its tasks, methods and experiments (task × method), the base
    model, the strategies, the main K and the Ks run (and those skipped), Multi-Splits'
    ratio, how split sizes round, the seed, the final runs' seeds, whether the run was
    transductive and the units trained.
    The first experiment's facts are also at the top (``task``, ``method``, ``grid``, ...), as
    one-task one-method runs always had; a design written before several experiments has no
    ``experiments`` (:attr:`experiment_list` reads it as one)."""

    tasks: list[str] = Field(default_factory=list)
    methods: list[str] = Field(default_factory=list)
    experiments: list[FewShotDesignExperiment] | None = None
    task: str = ""
    method: str = ""
    grid: list[GridPoint]
    n_labelled: int | None = None
    n_test: int | None = None
    groups: bool = False
    model: str | None = None
    strategies: list[str]
    k: int
    k_values: list[int]
    skipped_k: list[SkippedK] = Field(default_factory=list)
    ratio: float | None = None
    split_sizes: str | None = None
    seed: int = 0
    final_seeds: int = 0
    #: ``--transductive``: a task without unlabelled examples used its test set's inputs.
    transductive: bool = False
    units: dict[str, Any] | None = None

    @property
    def experiment_list(self) -> list[FewShotDesignExperiment]:
        """The experiments; a design of one task and one method written before several is
        read from its top-level facts."""
        if self.experiments:
            return list(self.experiments)
        return [
            FewShotDesignExperiment(
                key=f"{self.task}/{self.method}",
                task=self.task,
                method=self.method,
                grid=self.grid,
                n_labelled=self.n_labelled,
                n_test=self.n_test,
                groups=self.groups,
            )
        ]
