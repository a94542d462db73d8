"""A study's analysis as a typed, versioned object: :class:`Analysis`.

Each study declares a subclass (its fields: what its analysis computes) and returns it from
``analyze``; ``summary.json`` holds it under ``"analysis"`` with its ``schema_version``, and
``report``, ``reanalyze`` and Python users read it back as the same type
(:meth:`Analysis.from_json`). The object is frozen and holds JSON values only: numbers that
are not finite are ``None`` (as ``summary.json`` writes them), tuples are lists, numpy scalars
are Python numbers, so an analysis computed now equals the one read back from its file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .._errors import DataError
from .._json import json_safe

__all__ = ["Analysis", "AnalysisRecord"]

A = TypeVar("A", bound="Analysis")


class AnalysisRecord(BaseModel):
    """A typed record inside an analysis (a row of one of its tables): frozen, no unknown
    keys, JSON values only (see :class:`Analysis`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _json_values(cls, data: Any) -> Any:
        return json_safe(data) if isinstance(data, Mapping) else data


class Analysis(AnalysisRecord):
    """The analysis of one study run: a subclass per study, with a schema version.

    ``SCHEMA_VERSION`` is bumped when a field is removed or changes meaning; a
    ``summary.json`` written with another version is refused on reading with a message that
    says how to recompute it (``steadyeval.studies.reanalyze``)."""

    SCHEMA_VERSION: ClassVar[int] = 1

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
        if version != cls.SCHEMA_VERSION:
            raise DataError(
                f"{source}: the analysis has schema version {version!r}; this steadyeval "
                f"reads version {cls.SCHEMA_VERSION} ({cls.__name__}); recompute it from "
                "the results table with steadyeval.studies.reanalyze(RUN_DIR)"
            )
        fields = {k: v for k, v in data.items() if k != "schema_version"}
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top)"
            raise DataError(
                f"{source}: analysis field {where}: {first['msg']} ({exc.error_count()} "
                f"error(s) in all); recompute it with steadyeval.studies.reanalyze(RUN_DIR)"
            ) from None
