"""A study's analysis as a typed, versioned object: :class:`Analysis`.

Each study declares a subclass (its fields: what its analysis computes) and returns it from
``analyze``; ``summary.json`` holds it under ``"analysis"`` with its ``schema_version``, and
``report``, ``reanalyze`` and Python users read it back as the same type
(:meth:`Analysis.from_json`). The object is frozen and holds JSON values only: numbers that
are not finite are ``None`` (as ``summary.json`` writes them), tuples are lists, numpy scalars
are Python numbers, so an analysis computed now equals the one read back from its file.

A study's *design facts* (what the run was: its conditions, splits, seeds, ...) are typed the
same way, as a :class:`Design` subclass that ``summary.json`` holds under ``"design"``. A
design cannot be recomputed from the results table, so it carries no schema version and
reading never refuses a key it does not know (a run written by another version keeps its
facts), and :meth:`Design.to_json` writes exactly the keys the design was given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .._errors import DataError
from .._json import json_safe

__all__ = [
    "Analysis",
    "AnalysisRecord",
    "Design",
    "DesignRecord",
    "NoiseFloorFact",
    "RankConsistencyFacts",
    "RankConsistencySetting",
]

A = TypeVar("A", bound="Analysis")
D = TypeVar("D", bound="Design")


class AnalysisRecord(BaseModel):
    """A typed record inside an analysis (a row of one of its tables): frozen, no unknown
    keys, JSON values only (see :class:`Analysis`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        # built in memory (an analysis): JSON values only, so that it equals what is read back
        super().__init__(**json_safe(data))


class NoiseFloorFact(AnalysisRecord):
    """Flips between two conditions that should agree (``a`` and ``b``: the same format in
    other words), on one outcome of one model (None: every model); the report's agreement
    section sums a model's facts into its noise floor. ``flips`` None: not measured."""

    model: str | None = None
    outcome: str
    flips: int | None
    a: str | None = None
    b: str | None = None


class RankConsistencySetting(AnalysisRecord):
    """``stats.rank_consistency``'s result under one setting (e.g. a sensitivity regime)."""

    setting: str
    per_model: dict[str, float]
    modal_rank: dict[str, int] = {}
    overall: float | None = None


class RankConsistencyFacts(AnalysisRecord):
    """Rank consistency over ``n_subsets`` random subsets of ``subset_size`` of the units,
    per setting: what the report's rank-consistency section shows."""

    n_subsets: int | None = None
    subset_size: int | None = None
    n_units: int | None = None
    settings: list[RankConsistencySetting]


class Analysis(AnalysisRecord):
    """The analysis of one study run: a subclass per study, with a schema version.

    ``SCHEMA_VERSION`` is bumped when a field is removed or changes meaning; a
    ``summary.json`` written with another version is refused on reading with a message that
    says how to recompute it (``steadyeval.studies.reanalyze``).

    Two methods feed the report's generic sections; a study overrides those it has facts
    for: :meth:`noise_floors` (the agreement section) and :meth:`rank_consistency_facts`."""

    SCHEMA_VERSION: ClassVar[int] = 1

    def noise_floors(self) -> list[NoiseFloorFact] | None:
        """The noise floors the analysis measured (None: the study measures none)."""
        return None

    def rank_consistency_facts(self) -> RankConsistencyFacts | None:
        """Rank consistency, when the analysis computed it (None: not computed)."""
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``summary.json`` holds: the fields and ``schema_version``."""
        data: dict[str, Any] = json_safe(self.model_dump(mode="python"))
        return {**data, "schema_version": type(self).SCHEMA_VERSION}

    @classmethod
    def from_json(cls: type[A], data: Any, *, source: str = "summary.json") -> A:
        """The analysis in ``data`` (``summary.json``'s ``"analysis"``), checked: its
        schema version and every field; errors name ``source`` and the field."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise DataError(f"{source}: 'analysis' is {type(data).__name__}; expected an object")
        version = data.get("schema_version")
        if type(version) is not int or version != cls.SCHEMA_VERSION:
            shown = f"{version!r}" + ("" if type(version) is int else f" ({_kind(data)})")
            raise DataError(
                f"{source}: the analysis has schema version {shown}; this steadyeval "
                f"reads version {cls.SCHEMA_VERSION} ({cls.__name__}); recompute it from "
                "the results table with `steadyeval reanalyze RUN_DIR`"
            )
        fields = {k: v for k, v in data.items() if k != "schema_version"}
        where = _non_finite(fields)
        if where is not None:  # summary.json is written without NaN or infinity
            raise DataError(
                f"{source}: analysis field {where} is not a finite number; recompute it with "
                "`steadyeval reanalyze RUN_DIR`"
            )
        try:  # strict JSON: a count written as "4" or true is not a count; arrays fit tuples
            return cls.model_validate_json(json.dumps(fields), strict=True)
        except ValidationError as exc:
            raise DataError(
                f"{source}: analysis field {_first_error(exc)}; recompute it with "
                "`steadyeval reanalyze RUN_DIR`"
            ) from None


class DesignRecord(BaseModel):
    """A typed record inside a study's design facts: frozen, JSON values only (as
    :class:`AnalysisRecord`); keys this version does not know are kept as they are."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def __init__(self, **data: Any) -> None:
        # built in memory (a design): JSON values only, so that it equals what is read back
        super().__init__(**json_safe(data))


class Design(DesignRecord):
    """The design facts of one study run (``summary.json``'s ``"design"``): a subclass per
    study, whose fields are what its analysis and report read besides the results table.

    Unlike an :class:`Analysis` it has no schema version: a design is not recomputed, so a
    ``summary.json`` written by another version is read as far as its fields go (a field
    added later has a default; a key no longer read is kept), and written back unchanged."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``summary.json`` holds: the keys the design was built or read
        with (a field left at its default is not written)."""
        data: dict[str, Any] = json_safe(self.model_dump(mode="python", exclude_unset=True))
        return data

    @classmethod
    def from_json(cls: type[D], data: Any, *, source: str = "summary.json") -> D:
        """The design in ``data`` (``summary.json``'s ``"design"``, or a design built in
        memory), checked field by field; errors name ``source`` and the field."""
        if isinstance(data, cls):
            return data
        if isinstance(data, Design):
            data = data.to_json()
        if not isinstance(data, Mapping):
            raise DataError(f"{source}: 'design' is {type(data).__name__}; expected an object")
        where = _non_finite(data)
        if where is not None:  # summary.json is written without NaN or infinity
            raise DataError(
                f"{source}: design field {where} is not a finite number; these are not the "
                f"design facts {cls.__name__} reads (a hand-edited summary.json); run the "
                "study again"
            )
        try:  # strict JSON, as an analysis: a count written as "4" or true is not a count
            return cls.model_validate_json(json.dumps(json_safe(dict(data))), strict=True)
        except ValidationError as exc:
            raise DataError(
                f"{source}: design field {_first_error(exc)}; these are not the design facts "
                f"{cls.__name__} reads (a hand-edited summary.json, or another study's run); "
                "run the study again"
            ) from None


def _first_error(exc: ValidationError) -> str:
    """The first error's field path and message, and how many there are in all."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top)"
    return f"{where}: {first['msg']} ({exc.error_count()} error(s) in all)"


def _kind(data: Mapping[str, Any]) -> str:
    if "schema_version" not in data:
        return "no schema_version key"
    return f"a {type(data['schema_version']).__name__}"


def _non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first float in ``value`` that is NaN or infinite, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(top)"
    if isinstance(value, Mapping):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None
