"""steadyeval: language-model evaluation whose conclusions hold.

The spine: items × conditions → deduplicated, cached requests → model backend → a tidy
results table (one row per item × condition × model × sample) → analyses and reports.
"""

from typing import TYPE_CHECKING

from ._errors import (
    ConfigError,
    DataError,
    ModelSpecError,
    SteadyevalDeprecationWarning,
    SteadyevalError,
    StorageError,
    UnsupportedRequestError,
)
from ._lazy import lazy_exports
from ._version import __version__

if TYPE_CHECKING:
    from .conditions import (
        FORMATS,
        TEMPLATES,
        Condition,
        Format,
        Generation,
        Shots,
        Template,
        expand,
    )
    from .items import Item, load_items
    from .models import ModelSpec, load_backend, parse_model_spec, register_backend
    from .results import read_results
    from .run import PlanCounts, RunOptions, RunResult, run, run_config

# Everything else loads on first use, so ``import steadyeval`` stays cheap.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".conditions": [
            "FORMATS",
            "TEMPLATES",
            "Condition",
            "Format",
            "Generation",
            "Shots",
            "Template",
            "expand",
        ],
        ".items": ["Item", "load_items"],
        ".models": ["ModelSpec", "load_backend", "parse_model_spec", "register_backend"],
        ".results": ["read_results"],
        ".run": ["PlanCounts", "RunOptions", "RunResult", "run", "run_config"],
    },
    keep=["run"],
)


__all__ = [
    "FORMATS",
    "TEMPLATES",
    "Condition",
    "ConfigError",
    "DataError",
    "Format",
    "Generation",
    "Item",
    "ModelSpec",
    "ModelSpecError",
    "PlanCounts",
    "RunOptions",
    "RunResult",
    "Shots",
    "SteadyevalDeprecationWarning",
    "SteadyevalError",
    "StorageError",
    "Template",
    "UnsupportedRequestError",
    "__version__",
    "expand",
    "load_backend",
    "load_items",
    "parse_model_spec",
    "read_results",
    "register_backend",
    "run",
    "run_config",
]
