"""Run a plan: expand, dedupe, take cached responses, dispatch the rest, score, write."""

from ._executor import Executor, LocalExecutor, call_backend
from ._run import PlanCounts, RunOptions, RunResult, run, run_id_for

__all__ = [
    "Executor",
    "LocalExecutor",
    "PlanCounts",
    "RunOptions",
    "RunResult",
    "call_backend",
    "run",
    "run_id_for",
]
