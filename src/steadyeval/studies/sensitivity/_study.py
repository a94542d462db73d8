"""The sensitivity study on the study protocol: its config, data → design, analysis and
report sections."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field, field_validator

from ..._errors import ConfigError, DataError
from ...conditions import Template
from ...items import load_aliases, load_jsonl, load_probes, load_vocab, read_jsonl
from ...models import Backend
from ...reports import Section
from ...run import RunOptions
from ...scoring import canonical_scoring
from .._protocol import Study, StudyConfig, StudyDesign
from ._analysis import analyze_sensitivity
from ._design import (
    AnalysisOptions,
    ProbeOptions,
    SensitivityWarning,
    probe_design,
    task_design,
)
from ._report import sensitivity_report_sections

__all__ = [
    "SENSITIVITY_STUDY",
    "SensitivityConfig",
    "SensitivityStudy",
    "load_templates",
    "sensitivity_design",
]


def load_templates(path: str | Path) -> list[Template]:
    """Templates for a generic task: JSONL lines ``{"name": ..., "body": ...}`` (optional
    ``"answer"``, ``"header"``); bodies are Jinja2 as in :class:`Template`."""
    p = Path(path)
    out: list[Template] = []
    for lineno, rec in read_jsonl(p):
        if not isinstance(rec, dict):
            raise DataError(
                "not an object",
                file=str(p),
                line=lineno,
                expected='{"name": "plain", "body": "Question: {{ question }}"}',
            )
        for key in ("name", "body"):
            if not isinstance(rec.get(key), str) or not rec[key]:
                raise DataError(
                    "missing or empty",
                    file=str(p),
                    line=lineno,
                    field=key,
                    expected="a non-empty string",
                )
        unknown = sorted(set(rec) - {"name", "body", "answer", "header"})
        if unknown:
            raise DataError(
                f"unknown field(s) {unknown}",
                file=str(p),
                line=lineno,
                field=unknown[0],
                expected="name, body, answer, header",
            )
        out.append(
            Template(
                name=rec["name"],
                body=rec["body"],
                answer=rec.get("answer", " {{ answer }}"),
                header=rec.get("header", ""),
            )
        )
    return out


def sensitivity_design(
    data: str | Path,
    *,
    prompt_set: str | None = None,
    probe: ProbeOptions | None = None,
    analysis: AnalysisOptions | None = None,
    aliases: str | Path | None = None,
    vocab: str | Path | None = None,
    scoring: str | None = None,
) -> StudyDesign:
    """The study's design for a data directory (loads the data; calls no model).

    A directory with ``items.jsonl`` and ``templates.jsonl`` is a generic task (items asked
    under every template; ``scoring`` chooses how); any other is read as factual probes by
    :func:`load_probes` (``prompt_set`` for the LPAQA layout). ``aliases`` (a JSONL file,
    see :func:`load_aliases`) adds subject names; ``vocab`` (one word per line) keeps only
    facts whose object is in it.
    """
    root = Path(data)
    probe = probe or ProbeOptions()
    if (root / "items.jsonl").is_file() and (root / "templates.jsonl").is_file():
        for flag, value in (("prompt_set", prompt_set), ("vocab", vocab), ("aliases", aliases)):
            if value is not None:
                raise ConfigError(f"{flag} applies to factual probes; {root} is a generic task")
        items = load_jsonl(root / "items.jsonl")
        if probe.limit_per_relation is not None:
            items = _limit_task(items, probe.limit_per_relation)
        return task_design(
            items,
            load_templates(root / "templates.jsonl"),
            scoring=scoring,
            max_names=probe.max_names,
            analysis=analysis,
            info={"source": str(root)},
        )
    if scoring is not None:
        raise ConfigError("scoring applies to generic tasks; factual probes are scored by P@1")
    extra: dict[str, Any] = {}
    if aliases is not None:
        extra["aliases"] = load_aliases(aliases)
    if vocab is not None:
        extra["vocab"] = load_vocab(vocab)
    if extra:
        probe = ProbeOptions(**{**_fields(probe), **extra})
    return probe_design(load_probes(root, prompt_set=prompt_set), probe, analysis)


def _fields(opts: ProbeOptions) -> dict[str, Any]:
    return {k: getattr(opts, k) for k in opts.__dataclass_fields__}


def _limit_task(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` items per relation/subject (first in file order)."""
    seen: dict[str, int] = {}
    out = []
    for item in items:
        key = str(item.metadata.get("relation", item.metadata.get("subject", "")))
        if seen.get(key, 0) < limit:
            seen[key] = seen.get(key, 0) + 1
            out.append(item)
    return out


class SensitivityConfig(StudyConfig):
    """A run of the sensitivity study (flags or YAML)."""

    data: str = Field(
        description="Probe directory (generic, LAMA or LPAQA layout) or a task directory "
        "(items.jsonl + templates.jsonl).",
        json_schema_extra={"path": True},
    )
    prompt_set: Literal["manual_paraphrase", "paraphrase", "mine"] | None = Field(
        None, description="LPAQA layout: which prompt set (default manual_paraphrase)."
    )
    limit_per_relation: int | None = Field(
        None, ge=1, description="At most N facts per relation (a seeded sample)."
    )
    templates_per_relation: int | None = Field(
        None, ge=1, description="Templates per relation (default: the smallest count)."
    )
    aliases: str | None = Field(
        None,
        description='Subject aliases, JSONL: {"subject": "...", "aliases": [...]}.',
        json_schema_extra={"path": True},
    )
    max_names: int = Field(5, ge=1, description="Names per subject (canonical + aliases).")
    candidates: Literal["vocabulary", "relation"] = Field(
        "vocabulary", description="P@1 over the vocabulary, or over the relation's objects."
    )
    vocab: str | None = Field(
        None,
        description="Keep only facts whose object is in this word list (one per line).",
        json_schema_extra={"path": True},
    )
    scoring: str | None = Field(None, description="Generic tasks only: how answers are scored.")
    subsets: int = Field(1000, ge=1, description="Rank consistency: number of subsets.")
    subset_size: int = Field(20, ge=1, description="Rank consistency: relations per subset.")
    k_templates: int | None = Field(
        None, ge=1, description="Sampled adjustment: templates drawn per relation (default all)."
    )
    k_names: int | None = Field(
        None, ge=1, description="Sampled adjustment: names drawn per fact (default all)."
    )
    weights: Literal["uniform", "data"] = Field(
        "uniform", description="P(template): uniform or the data's template weights."
    )
    seed: int = Field(42, description="Seed of the fact sample and of every analysis draw.")

    @field_validator("scoring")
    @classmethod
    def _known_scoring(cls, value: str | None) -> str | None:
        return None if value is None else canonical_scoring(value)


class SensitivityStudy(Study):
    """Study 2: prompt and verbalization sensitivity of probing, and the backdoor adjustment
    (``docs/study-sensitivity.md``)."""

    name = "sensitivity"
    question = (
        "how much do prompt wording and entity names move probing scores, and does the "
        "backdoor-adjusted score give a stable model ranking? (LAMA/LPAQA)"
    )
    config = SensitivityConfig

    def design(
        self, config: SensitivityConfig, backends: Sequence[Backend], options: RunOptions
    ) -> StudyDesign:
        analysis = AnalysisOptions(
            n_subsets=config.subsets,
            subset_size=config.subset_size,
            seed=config.seed,
            k_templates=config.k_templates,
            k_names=config.k_names,
            weights=config.weights,
        )
        probe = ProbeOptions(
            limit_per_relation=config.limit_per_relation,
            templates_per_relation=config.templates_per_relation,
            max_names=config.max_names,
            candidates=config.candidates,
            seed=config.seed,
        )
        with warnings.catch_warnings():  # the analysis reports the same facts as notes
            warnings.simplefilter("ignore", SensitivityWarning)
            design = sensitivity_design(
                config.data,
                prompt_set=config.prompt_set,
                probe=probe,
                analysis=analysis,
                aliases=config.aliases,
                vocab=config.vocab,
                scoring=config.scoring,
            )
        return design

    def analyze(self, table: pa.Table, info: Mapping[str, Any]) -> dict[str, Any]:
        return analyze_sensitivity(table, info)

    def sections(
        self, analysis: Mapping[str, Any], info: Mapping[str, Any], *, figures: bool = True
    ) -> list[Section]:
        return sensitivity_report_sections(analysis, figures=figures)


SENSITIVITY_STUDY = SensitivityStudy()
