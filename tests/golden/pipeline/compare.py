"""Compare a pinned run (v1) with a fresh one, allowing only the changes CHANGES.md lists.

``tests/golden/CHANGES.md`` holds a table of rules, one per row::

    | case | path | rule | why |

``case`` and ``path`` are shell patterns (``fnmatch``); a path is ``results.<column>`` or
``summary.<key>.<key>...`` with list positions left out (``summary.analysis.examples.model``).
Rules:

* ``renamed`` — the value may change, but consistently: one map from old to new values, shared
  by every renamed path of the case, must be one-to-one (model names becoming identities,
  run ids, request keys). Strings and mapping keys elsewhere that equal a renamed old value
  must then hold its new value.
* ``added`` — present only in the new run (a new column or key).
* ``removed`` — present only in the pinned run.
* ``changed`` — compared no more (say why; use sparingly).
* ``loose`` — numbers compared to a relative 1e-3 instead of 1e-5 (statistics that magnify
  float32 rounding in the model's outputs; say which).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHANGES = Path(__file__).resolve().parents[1] / "CHANGES.md"
RULES = ("renamed", "added", "removed", "changed", "loose")


@dataclass(frozen=True)
class Rule:
    case: str
    path: str
    rule: str
    why: str


def load_rules(path: Path = CHANGES) -> list[Rule]:
    rules = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[2] not in RULES:
            continue
        case, pattern, rule, why = cells
        rules.append(Rule(case.strip("`"), pattern.strip("`"), rule, why))
    return rules


@dataclass
class Comparison:
    case: str
    rules: list[Rule]
    renames: dict[Any, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def rule(self, path: str) -> str | None:
        bare = re.sub(r"\[\d+\]", "", path)
        for r in self.rules:
            if fnmatch.fnmatchcase(self.case, r.case) and fnmatch.fnmatchcase(bare, r.path):
                return r.rule
        return None

    def allows(self, path: str, rule: str) -> bool:
        """Whether some rule of this case says ``rule`` for ``path``."""
        bare = re.sub(r"\[\d+\]", "", path)
        return any(
            r.rule == rule
            and fnmatch.fnmatchcase(self.case, r.case)
            and fnmatch.fnmatchcase(bare, r.path)
            for r in self.rules
        )

    def rename(self, path: str, old: Any, new: Any) -> None:
        known = self.renames.get(old, new)
        if known != new:
            self.problems.append(f"{path}: {old!r} renamed both to {known!r} and {new!r}")
        self.renames[old] = new

    def check_one_to_one(self) -> None:
        seen: dict[Any, Any] = {}
        for old, new in self.renames.items():
            if new in seen and seen[new] != old:
                self.problems.append(
                    f"renamed values {seen[new]!r} and {old!r} both became {new!r}"
                )
            seen[new] = old

    # -- walking --------------------------------------------------------------------------
    def walk(self, old: Any, new: Any, path: str) -> None:
        rule = self.rule(path)
        if rule == "changed":
            return
        if rule == "renamed" and not isinstance(old, Mapping | list):
            self.rename(path, _key(old), _key(new))
            return
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            self._mapping(old, new, path)
        elif isinstance(old, list) and isinstance(new, list):
            if len(old) != len(new):
                self.problems.append(f"{path}: {len(old)} entries pinned, {len(new)} now")
                return
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                self.walk(a, b, f"{path}[{i}]")
        elif not self._same(old, new, 1e-3 if rule == "loose" else 1e-5):
            self.problems.append(f"{path}: pinned {_short(old)}, now {_short(new)}")

    def _mapping(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        keys = {self.renames.get(k, k): k for k in old}
        for k_new in new:
            if k_new not in keys and not self.allows(f"{path}.{k_new}", "added"):
                self.problems.append(f"{path}.{k_new}: new key not listed as added")
        for k_new, k_old in keys.items():
            sub = f"{path}.{k_new}"
            if k_new not in new:
                if not (self.allows(sub, "removed") or self.allows(f"{path}.{k_old}", "removed")):
                    self.problems.append(f"{sub}: pinned key missing, not listed as removed")
                continue
            self.walk(old[k_old], new[k_new], sub)

    def _same(self, old: Any, new: Any, rel: float = 1e-5) -> bool:
        if isinstance(old, str) and old in self.renames:
            return bool(self.renames[old] == new)
        if isinstance(old, float) and isinstance(new, int | float) and not isinstance(new, bool):
            return is_close(old, float(new), rel)
        if isinstance(old, int) and isinstance(new, float) and not isinstance(old, bool):
            return is_close(float(old), new, rel)
        return bool(type(old) is type(new) and old == new)


def is_close(a: float, b: float, rel: float = 1e-5) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def _key(value: Any) -> Any:
    return tuple(_key(v) for v in value) if isinstance(value, list) else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def upgrade(pinned: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned (schema version 1) columns mapped to the current schema by the product's
    own :func:`steadyeval.results.upgrade_table`."""
    import pyarrow as pa

    from steadyeval.results import RESULTS_SCHEMA_V1, upgrade_table

    columns = dict(pinned["results"])
    n = len(columns["item_id"])
    arrays, fields = [], []
    for f in RESULTS_SCHEMA_V1:
        arrays.append(pa.array(columns.pop(f.name, [None] * n), type=f.type))
        fields.append(f)
    for name, values in columns.items():  # a v1 study's own columns, types inferred
        arr = pa.array(values)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    table = upgrade_table(
        pa.Table.from_arrays(arrays, schema=pa.schema(fields, RESULTS_SCHEMA_V1.metadata))
    )
    results = {
        name: table.column(name).to_pylist()
        for name in table.column_names
        if name in pinned["results"] or name not in RESULTS_SCHEMA_V1.names
    }
    return {**pinned, "results": results}


def compare(case: str, pinned: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """Every difference between ``pinned`` (schema version 1) and ``fresh`` that no rule of
    CHANGES.md allows, after :func:`upgrade`. Results are compared first, so renames learnt
    from their columns apply to the summary."""
    pinned = upgrade(pinned)
    cmp = Comparison(case, load_rules())
    # Renamed columns first, so every later string compare knows the renames.
    old_r, new_r = pinned["results"], fresh["results"]
    ordered = sorted(old_r, key=lambda c: cmp.rule(f"results.{c}") != "renamed")
    for column in [*ordered, *(c for c in new_r if c not in old_r)]:
        path = f"results.{column}"
        if column not in new_r:
            if not cmp.allows(path, "removed"):
                cmp.problems.append(f"{path}: pinned column missing, not listed as removed")
            continue
        if column not in old_r:
            if not cmp.allows(path, "added"):
                cmp.problems.append(f"{path}: new column not listed as added")
            continue
        cmp.walk(old_r[column], new_r[column], path)
    cmp.walk(pinned["summary"], fresh["summary"], "summary")
    cmp.check_one_to_one()
    return cmp.problems
