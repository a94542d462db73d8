"""The import rules (``tools/import_graph.py``): no private name (a ``_module`` or a ``_name``)
imported from another package, no import against the layer order, no cycle between packages
(issue 39). The last cycle (``conditions`` <-> ``scoring``) was broken by defining the scoring
modes' protocol and registry with the conditions that name them; the modes live above."""

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


def test_no_private_name_is_imported_across_packages() -> None:
    assert _graph().measure().across == []


def test_no_cycle_and_no_upward_import() -> None:
    found = _graph().measure()
    assert found.cycles == []
    assert found.upward == []


def test_a_condition_names_a_built_in_scoring_mode_before_scoring_is_imported() -> None:
    """The registry imports the built-in modes by name on a miss (as plug-ins load), so the
    layer order costs nothing: a fresh interpreter builds a letter-scored condition from
    ``steadyeval.conditions`` alone."""
    import subprocess

    code = (
        "import sys\n"
        "from steadyeval.conditions import FORMATS, TEMPLATES, Condition\n"
        "assert 'steadyeval.scoring' not in sys.modules\n"
        "c = Condition(name='x', template=TEMPLATES['qa'], format=FORMATS['mc'],"
        " scoring='letter-logprob')\n"
        "print(c.scoring)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "letter-logprob"


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
