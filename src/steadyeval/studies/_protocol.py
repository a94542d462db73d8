"""The one shape of a study: config → design → the runner → analysis → report sections.

A study is a :class:`Study` in the registry (:func:`register_study`, :func:`get_study`).
:func:`run_study` drives every study the same way: it validates the config (pydantic, with
located errors), asks the study for its design (items × conditions × models, as blocks;
each model's backend opens when first used: configs, not weights, so a design that reads only
its data reports a bad data file before any model opens), hands the design to the runner, lets the
study add follow-up blocks that depend on the first results (e.g. retraining a chosen
setting), analyses the results table (and only the table) and writes ``summary.json`` and
``summary.md``. The report (``steadyeval report``) shows the study's sections from the same
analysis, so a run re-analyses and re-renders offline.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._errors import ConfigError, DataError
from .._lazy import load_entry, load_plugins
from ..models import ModelSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from ..conditions import Condition
    from ..document import Section
    from ..items import Item
    from ..models import Backend
    from ..results import Analysis, Design, ResultsFrame, StudyColumn
    from ..run import Block, RunOptions

__all__ = [
    "Study",
    "StudyConfig",
    "StudyDesign",
    "StudyResult",
    "find_study",
    "get_study",
    "register_study",
    "study_names",
]


class StudyConfig(BaseModel):
    """What every study's config holds: the models (model specs; at least one). A study's
    config subclasses this; unknown keys are errors that name the allowed ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[ModelSpec] = Field(
        min_length=1,
        description="Model spec: BACKEND:NAME_OR_PATH[?key=value&...].",
        json_schema_extra={"flag": "model", "metavar": "SPEC"},
    )

    @field_validator("models")
    @classmethod
    def _models_once(cls, value: list[ModelSpec]) -> list[ModelSpec]:
        """Each spec listed once: an error naming the flag or the file's line, before any
        model loads. (A backend is checked where a file or flags give the config: a config
        built in Python may name a backend registered later.)"""
        from ..run import check_models

        check_models(value, backends=False)
        return value


@dataclass(frozen=True)
class StudyDesign:
    """What a study asks: blocks of items × conditions × models for the runner, the facts
    its analysis needs besides the table (``info``: the study's
    :class:`~steadyeval.results.Design`, or a mapping of its fields; written to
    ``summary.json`` as ``design``) and its own typed columns. ``sent``: requests a
    follow-up already sent while it chose its cells (a search's steps), counted in the
    summary's ``plan.model_calls``."""

    blocks: Sequence[Block]
    info: Design | Mapping[str, Any] = field(default_factory=dict)
    columns: Sequence[StudyColumn] = ()
    sent: int = 0

    @classmethod
    def of(
        cls,
        items: Sequence[Item],
        conditions: Sequence[Condition],
        models: Sequence[str | Backend],
        *,
        shot_pools: Mapping[str, Sequence[Item]] | None = None,
        info: Design | Mapping[str, Any] | None = None,
        columns: Sequence[StudyColumn] = (),
    ) -> StudyDesign:
        """The usual design: one block (every item × condition × model). ``models`` may be
        empty: :func:`~steadyeval.studies.run_study` then runs the block on the study's
        models."""
        from ..run import Block

        block = Block(items, conditions, list(models), shot_pools or {})
        return cls(blocks=(block,), info=info or {}, columns=columns)

    @property
    def items(self) -> list[Item]:
        """The items of every block, in block order."""
        return [i for b in self.blocks for i in b.items]

    @property
    def shot_pools(self) -> dict[str, Sequence[Item]]:
        """The shot pools of every block (a later block's pool of the same name wins)."""
        return {k: v for b in self.blocks for k, v in b.shot_pools.items()}

    @property
    def conditions(self) -> list[Condition]:
        """The conditions of every block, each once, in block order."""
        seen: dict[str, Condition] = {}
        for b in self.blocks:
            for c in b.conditions:
                seen.setdefault(c.name, c)
        return list(seen.values())


@dataclass(frozen=True)
class StudyResult:
    """A finished study run: its results table, ``summary.json``'s content, the study's
    typed analysis and the run folder (None when nothing was written)."""

    table: pa.Table
    summary: dict[str, Any]
    analysis: Analysis
    run_dir: Path | None


A = TypeVar("A", bound="Analysis")


class Study(ABC, Generic[A]):
    """A study: its config, its design, its analysis and its report sections.

    Subclasses set :attr:`name`, :attr:`question`, :attr:`config`, :attr:`analysis_type`
    and :attr:`design_type`, and implement :meth:`design`, :meth:`analyze` and
    :meth:`sections`; :meth:`before_run` and :meth:`follow_up` are optional. ``analyze``
    reads only the results (a :class:`~steadyeval.results.ResultsFrame`) and the design facts
    (a :attr:`design_type`), so :func:`reanalyze` recomputes it offline; it returns the
    study's :class:`~steadyeval.results.Analysis`, which ``summary.json`` holds and
    :meth:`read_analysis` reads back as the same type.
    """

    #: The study's name: the CLI command (``steadyeval study NAME``) and ``summary.json``'s.
    name: ClassVar[str]
    #: One line: the question the study answers.
    question: ClassVar[str]
    #: The study's config model.
    config: ClassVar[type[StudyConfig]]
    #: The type of the study's analysis (a subclass of :class:`~steadyeval.results.Analysis`).
    analysis_type: type[A]
    #: The type of the study's design facts (a subclass of
    #: :class:`~steadyeval.results.Design`); None: the base type, which holds any keys.
    design_type: ClassVar[type[Design] | None] = None
    #: Example command lines for ``--help`` (one per line; optional).
    example: ClassVar[str] = ""
    #: The results column whose values the analysis's ``models`` name (see
    #: :meth:`check_analysis`).
    model_column: ClassVar[str] = "model"

    @abstractmethod
    def design(self, config: Any, backends: Sequence[Backend], options: RunOptions) -> StudyDesign:
        """Items, conditions and models for ``config`` (loads data; calls no model).
        ``options`` say where the run writes (a study that trains keeps checkpoints there)."""

    def before_run(
        self, config: Any, design: StudyDesign, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        """Checks that call models before the run (never in a dry run); default: none."""
        return design

    def plan_note(self, config: Any) -> str | None:
        """A line shown under a dry run's counts (what the counts leave out, e.g. the batches
        a follow-up adds); default: none."""
        return None

    def follow_up(
        self,
        config: Any,
        design: StudyDesign,
        results: ResultsFrame,
        backends: Sequence[Backend],
        options: RunOptions,
    ) -> StudyDesign | None:
        """More blocks that depend on the results so far (``results``: the first pass's, as
        a :class:`~steadyeval.results.ResultsFrame`; run after them), or None."""
        return None

    @abstractmethod
    def analyze(self, results: ResultsFrame, design: Any) -> A:
        """The analysis (of type :attr:`analysis_type`), from the results and the design
        facts (a :attr:`design_type`) alone."""

    @abstractmethod
    def sections(self, analysis: A, design: Any, *, figures: bool = True) -> list[Section]:
        """The report's sections for ``analysis`` (an :attr:`analysis_type`) and ``design``
        (a :attr:`design_type`; ``figures=False``: tables only)."""

    def read_analysis(self, data: Any, *, source: str = "summary.json") -> A:
        """``summary.json``'s ``"analysis"`` read back as :attr:`analysis_type` (checked;
        errors name ``source`` and the field)."""
        return self.analysis_type.from_json(data, source=source)

    def check_analysis(self, analysis: A, results: ResultsFrame) -> str | None:
        """What makes ``analysis`` (read back from ``summary.json``) disagree with the
        results table, or None; a report then recomputes the analysis from the table and
        says why. The default: the models the analysis names (``analysis.models``: names,
        or records with a ``model``) are those of the table's :attr:`model_column`, each
        named once."""
        models = getattr(analysis, "models", None)
        if not isinstance(models, list) or not results.has(self.model_column):
            return None
        named = [m if isinstance(m, str) else getattr(m, "model", None) for m in models]
        held = [str(v) for v in results.codes(self.model_column)[1] if v is not None]
        extra = [m for m in named if m not in held]
        if extra:
            return f"it names model {str(extra[0])[:120]!r}, which the results table lacks"
        seen: set[Any] = set()
        for m in named:  # a model named twice: its sections would show it twice
            if m in seen:
                return f"it names model {str(m)[:120]!r} twice"
            seen.add(m)
        lacking = [m for m in held if m not in named]
        if lacking:
            return f"it leaves out model {lacking[0][:120]!r} of the results table"
        return None

    def read_design(self, data: Any, *, source: str = "summary.json") -> Design:
        """``summary.json``'s ``"design"`` (or a design built in memory, or a mapping of its
        fields; None: none) as :attr:`design_type` (checked; errors name ``source`` and the
        field)."""
        from ..results import Design

        kind = self.design_type or Design
        if data is None or (isinstance(data, Mapping) and not data):
            try:
                return kind.from_json({}, source=source)
            except DataError:
                raise DataError(
                    f"{source}: no design facts ('design' is missing or empty); the "
                    f"{self.name} study's analysis reads them: run the study again"
                ) from None
        return kind.from_json(data, source=source)

    def markdown(self, analysis: A, design: Any, *, lead: bool | None = None) -> str:
        """The study's part of ``summary.md``: its sections without figures (``design``: a
        :attr:`design_type`, or ``summary.json``'s ``"design"``); ``lead``: only its lead
        sections (True), only the others (False), or all (None)."""
        from ..document import sections_markdown

        facts = self.read_design(design)
        sections = self.sections(analysis, facts, figures=False)
        if lead is not None:
            sections = [s for s in sections if s.lead == lead]
        return sections_markdown(sections) if sections else ""

    def load_config(
        self,
        path: str | Path | None = None,
        overrides: Mapping[str, Any] | None = None,
        *,
        flag_names: Mapping[str, str] | None = None,
    ) -> StudyConfig:
        """A YAML file (optional) plus ``overrides`` validated as this study's config; errors
        name the file and line (or the flag, see ``flag_names``), the key and what is
        allowed."""
        from ..run import load_yaml_config

        return load_yaml_config(
            self.config,
            path,
            overrides,
            what=f"{self.name}-study config",
            flag_names=flag_names,
        )


# Built-in studies are named by import path so nothing is imported until a study is used.
_BUILTIN: dict[str, str] = {
    "formats": "steadyeval.studies.formats._study:FORMATS_STUDY",
    "sensitivity": "steadyeval.studies.sensitivity._study:SENSITIVITY_STUDY",
    "knowledge": "steadyeval.studies.knowledge._study:KNOWLEDGE_STUDY",
    "fewshot": "steadyeval.studies.fewshot._study:FEWSHOT_STUDY",
    "spread": "steadyeval.studies.spread._study:SPREAD_STUDY",
    "decide": "steadyeval.studies.spread._decide:DECIDE_STUDY",
    "disparity": "steadyeval.studies.disparity._study:DISPARITY_STUDY",
}
_REGISTRY: dict[str, Study[Any] | str] = dict(_BUILTIN)
#: Installed packages add studies under this entry-point group (``name = "module:attr"``).
ENTRY_POINT_GROUP = "steadyeval.studies"
_entry_points_read = False


def _read_entry_points() -> None:
    """Add the studies installed packages declare (once; a registered name wins), and load
    the general plug-ins (which may register studies too)."""
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    load_plugins()
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _REGISTRY.setdefault(ep.name, ep.value)


def register_study(study: Study[Any], *, replace: bool = False) -> Study[Any]:
    """Add ``study`` to the registry under ``study.name``; returns it."""
    if not isinstance(study, Study):
        raise TypeError(f"expected a Study instance, got {type(study).__name__}")
    known = _REGISTRY.get(study.name)
    if known is not None and known is not study and not replace:
        raise ValueError(f"study {study.name!r} is already registered; pass replace=True")
    _REGISTRY[study.name] = study
    return study


def study_names() -> list[str]:
    """The registered studies' names (built-in, registered, then installed plug-ins)."""
    _read_entry_points()
    return list(_REGISTRY)


def get_study(name: str) -> Study[Any]:
    """The study called ``name`` (built-in studies are imported on first use)."""
    _read_entry_points()
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ConfigError(f"unknown study {name!r}; known studies: {', '.join(_REGISTRY)}")
    if isinstance(entry, str):
        loaded = load_entry(entry, f"study {name!r}")
        if not isinstance(loaded, Study):
            raise ConfigError(f"study {name!r} ({entry}) is not a Study instance")
        entry = _REGISTRY[name] = loaded
    return entry


def find_study(name: str | None) -> Study[Any] | None:
    """The registered study called ``name``, or None (no error) when there is none."""
    _read_entry_points()
    if name is None or name not in _REGISTRY:
        return None
    return get_study(name)
