"""Run a plan: expand, dedupe, take cached responses, dispatch the rest, score, write."""

from ._config import (
    ConditionConfig,
    DataConfig,
    RunConfig,
    load_run_config,
    load_yaml_config,
    validate_config,
)
from ._config_checks import check_models
from ._dispatch import PlanCounts
from ._executor import Executor, LocalExecutor, call_backend
from ._folder import (
    REPORT_FILES,
    RunFolderBusy,
    claim_run_dir,
    default_out,
    in_a_run_folder,
    is_report,
    is_run_file,
    locked_run_dir,
    own,
    results_token,
    rewriting_run,
    writing_report,
)
from ._from_config import load_config_data, resolve_run_config, run_config
from ._plan import Plan, PlannedTrial, build_plan
from ._ray import RayExecutor
from ._run import Block, RunOptions, RunResult, run, run_blocks, run_id_for
from ._yaml import check_nodes, read_yaml

__all__ = [
    "REPORT_FILES",
    "Block",
    "ConditionConfig",
    "DataConfig",
    "Executor",
    "LocalExecutor",
    "Plan",
    "PlanCounts",
    "PlannedTrial",
    "RayExecutor",
    "RunConfig",
    "RunFolderBusy",
    "RunOptions",
    "RunResult",
    "build_plan",
    "call_backend",
    "check_models",
    "check_nodes",
    "claim_run_dir",
    "default_out",
    "in_a_run_folder",
    "is_report",
    "is_run_file",
    "load_config_data",
    "load_run_config",
    "load_yaml_config",
    "locked_run_dir",
    "own",
    "read_yaml",
    "resolve_run_config",
    "results_token",
    "rewriting_run",
    "run",
    "run_blocks",
    "run_config",
    "run_id_for",
    "validate_config",
    "writing_report",
]
