"""Study 4: few-shot evaluation protocols (FewNLU's framework) on FewGLUE / SuperGLUE.

For each hyperparameter setting and each of K splits of a small labelled set, a method (ICL,
PET, CLS, ADAPET, P-tuning, PET+MLM, iPET, Noisy Student, their combinations, or a plug-in)
adapts on the train part and is scored on the dev part and a test
set; split strategies (Multi-Splits, cross-validation, MDL) are judged by the test score of
the setting they choose, the dev–test rank correlation across settings, and stability as K
changes. The study (:data:`FEWSHOT_STUDY`) is registered as ``fewshot``. See
``docs/study-fewshot.md``.
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from ._analysis import analyze, select
    from ._builtin import CLSMethod, ICLMethod, PETMethod
    from ._combo import CombinedMethod, Spelling, parse_spelling
    from ._compare import compare_methods
    from ._config import STRATEGIES, FewShotConfig
    from ._data import load_unlabelled_items
    from ._framework import (
        COLUMNS,
        build_grid,
        fewshot_design,
        final_design,
        load_space,
        make_splitter,
    )
    from ._methods import (
        METHODS,
        Method,
        MethodContext,
        Unit,
        get_method,
        register_method,
        tag_items,
        verbalize,
    )
    from ._metrics import TASK_METRICS, TaskMetric, task_metric, task_scores
    from ._params import Param, hparams_id
    from ._report import fewshot_report_sections, hparams_label
    from ._study import FEWSHOT_STUDY, FewShotStudy
    from ._tasks import TASKS, FewShotTask, get_task, item_groups, load_task_items, split_off_test
    from ._types import (
        ByK,
        FewShotAnalysis,
        FewShotDesign,
        FewShotDesignExperiment,
        FewShotExperiment,
        FinalRun,
        GridPoint,
        GridSetting,
        MethodCell,
        MethodPair,
        MethodRow,
        MethodsTable,
        SkippedK,
        Stability,
        StrategyResult,
        StrategyRow,
        TaskStrategyRow,
        UnlabelledSource,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._analysis": ["analyze", "select"],
        "._builtin": ["CLSMethod", "ICLMethod", "PETMethod"],
        "._combo": ["CombinedMethod", "Spelling", "parse_spelling"],
        "._compare": ["compare_methods"],
        "._data": ["load_unlabelled_items"],
        "._metrics": ["TASK_METRICS", "TaskMetric", "task_metric", "task_scores"],
        "._config": ["STRATEGIES", "FewShotConfig"],
        "._framework": [
            "COLUMNS",
            "build_grid",
            "fewshot_design",
            "final_design",
            "load_space",
            "make_splitter",
        ],
        "._methods": [
            "METHODS",
            "Method",
            "MethodContext",
            "Unit",
            "get_method",
            "register_method",
            "tag_items",
            "verbalize",
        ],
        "._params": ["Param", "hparams_id"],
        "._report": ["fewshot_report_sections", "hparams_label"],
        "._study": ["FEWSHOT_STUDY", "FewShotStudy"],
        "._tasks": [
            "TASKS",
            "FewShotTask",
            "get_task",
            "item_groups",
            "load_task_items",
            "split_off_test",
        ],
        "._types": [
            "ByK",
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
        ],
    },
)

__all__ = [
    "COLUMNS",
    "FEWSHOT_STUDY",
    "METHODS",
    "STRATEGIES",
    "TASKS",
    "TASK_METRICS",
    "ByK",
    "CLSMethod",
    "CombinedMethod",
    "FewShotAnalysis",
    "FewShotConfig",
    "FewShotDesign",
    "FewShotDesignExperiment",
    "FewShotExperiment",
    "FewShotStudy",
    "FewShotTask",
    "FinalRun",
    "GridPoint",
    "GridSetting",
    "ICLMethod",
    "Method",
    "MethodCell",
    "MethodContext",
    "MethodPair",
    "MethodRow",
    "MethodsTable",
    "PETMethod",
    "Param",
    "SkippedK",
    "Spelling",
    "Stability",
    "StrategyResult",
    "StrategyRow",
    "TaskMetric",
    "TaskStrategyRow",
    "Unit",
    "UnlabelledSource",
    "analyze",
    "build_grid",
    "compare_methods",
    "fewshot_design",
    "fewshot_report_sections",
    "final_design",
    "get_method",
    "get_task",
    "hparams_id",
    "hparams_label",
    "item_groups",
    "load_space",
    "load_task_items",
    "load_unlabelled_items",
    "make_splitter",
    "parse_spelling",
    "register_method",
    "select",
    "split_off_test",
    "tag_items",
    "task_metric",
    "task_scores",
    "verbalize",
]
