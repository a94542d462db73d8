"""The import rules (``tools/import_graph.py``): no private name (a ``_module`` or a ``_name``)
imported from another package, no import against the layer order, no cycle between packages,
except the one cycle still open (issue 39): ``conditions`` validates a condition's scoring
mode through ``scoring``, whose modes are typed by ``conditions``' ``Trial``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _graph() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "tools" / "import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


#: The open cycle, and the upward imports that make it (nothing else may join them).
KNOWN_CYCLE = ["conditions", "scoring"]


def test_no_private_name_is_imported_across_packages() -> None:
    assert _graph().measure().across == []


def test_no_new_cycle_and_no_new_upward_import() -> None:
    found = _graph().measure()
    assert found.cycles in ([], [KNOWN_CYCLE])
    assert all("(conditions imports scoring," in line for line in found.upward), found.upward


def test_the_checker_sees_a_private_module_and_a_private_name_across_packages() -> None:
    graph = _graph()
    edges = [
        graph.Edge("steadyeval.cli._report", "steadyeval.reports._options", ("X",), 3, False),
        graph.Edge("steadyeval.studies._run", "steadyeval.results", ("_hidden",), 4, False),
        graph.Edge("steadyeval.run._run", "steadyeval.results", ("read_results",), 5, False),
        graph.Edge("steadyeval.run._run", "steadyeval._errors", ("DataError",), 6, False),
        graph.Edge("steadyeval.run._run", "steadyeval.run._folder", ("claim",), 7, False),
    ]
    across, _ = graph.private_imports(edges)
    assert [a.split(" -> ")[0] for a in across] == [
        "steadyeval.cli._report:3",
        "steadyeval.studies._run:4",
    ]
