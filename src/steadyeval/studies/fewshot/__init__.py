"""Study 4: few-shot evaluation protocols (FewNLU's framework) on FewGLUE / SuperGLUE.

For each hyperparameter setting and each of K splits of a small labelled set, a method (ICL,
PET, CLS, or a plug-in) adapts on the train part and is scored on the dev part and a test
set; split strategies (Multi-Splits, cross-validation, MDL) are judged by the test score of
the setting they choose, the dev–test rank correlation across settings, and stability as K
changes. See ``docs/study-fewshot.md``.
"""

from ._analysis import analyze, select
from ._framework import (
    STRATEGIES,
    FewShotConfig,
    FewShotResult,
    build_grid,
    load_space,
    make_splitter,
    reanalyze_fewshot,
    run_fewshot,
    unit_key,
)
from ._methods import (
    METHODS,
    CLSMethod,
    ICLMethod,
    Method,
    MethodContext,
    Param,
    PETMethod,
    Unit,
    get_method,
    hparams_id,
    register_method,
    tag_items,
)
from ._render import render
from ._tasks import TASKS, FewShotTask, get_task, item_groups, load_task_items, split_off_test

__all__ = [
    "METHODS",
    "STRATEGIES",
    "TASKS",
    "CLSMethod",
    "FewShotConfig",
    "FewShotResult",
    "FewShotTask",
    "ICLMethod",
    "Method",
    "MethodContext",
    "PETMethod",
    "Param",
    "Unit",
    "analyze",
    "build_grid",
    "get_method",
    "get_task",
    "hparams_id",
    "item_groups",
    "load_space",
    "load_task_items",
    "make_splitter",
    "reanalyze_fewshot",
    "register_method",
    "render",
    "run_fewshot",
    "select",
    "split_off_test",
    "tag_items",
    "unit_key",
]
