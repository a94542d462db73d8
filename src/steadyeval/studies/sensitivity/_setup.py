"""The sensitivity study's design: a data directory → items × conditions (factual probes or
a generic task under several templates); loaded when a run starts."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._errors import ConfigError, DataError
from ...conditions import Template
from ...items import (
    Item,
    ProbeData,
    load_aliases,
    load_jsonl,
    load_probes,
    load_vocab,
    read_jsonl,
    sample_items,
    shorten,
)
from .._protocol import StudyDesign
from ._design import AnalysisOptions, ProbeOptions, probe_design, task_design

__all__ = ["load_templates", "sensitivity_design"]


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
    if os.path.isfile(root / "items.jsonl") and os.path.isfile(root / "templates.jsonl"):
        for flag, value in (("prompt_set", prompt_set), ("vocab", vocab), ("aliases", aliases)):
            if value is not None:
                raise ConfigError(f"{flag} applies to factual probes; {root} is a generic task")
        items = load_jsonl(root / "items.jsonl")
        if probe.limit_per_relation is not None:
            items = _limit_task(items, probe.limit_per_relation, probe.seed)
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
    probes = load_probes(root, prompt_set=prompt_set)
    extra: dict[str, Any] = {}
    if aliases is not None:
        extra["aliases"] = _matching_aliases(load_aliases(aliases), probes, aliases)
    if vocab is not None:
        extra["vocab"] = load_vocab(vocab)
    if extra:
        probe = dataclasses.replace(probe, **extra)
    return probe_design(probes, probe, analysis)


def _matching_aliases(
    aliases: dict[str, tuple[str, ...]], data: ProbeData, path: str | Path
) -> dict[str, tuple[str, ...]]:
    """``aliases`` when at least one key names a subject of ``data`` (its URI or label);
    a file that matches none would add no name at all without a word: an error."""
    subjects = {k for f in data.facts for k in (f.subject_uri, f.subject) if k}
    if not subjects & set(aliases):
        example = next(iter(aliases), "")
        raise DataError(
            f"none of its {len(aliases):,} keys (e.g. {shorten(repr(example))}) is a subject "
            f"of {shorten(data.source, 80)}",
            file=str(path),
            expected="keys that are the facts' subject URIs (e.g. Q142) or labels (e.g. France)",
        )
    return aliases


def _limit_task(items: Sequence[Item], limit: int, seed: int) -> list[Item]:
    """At most ``limit`` items per relation (else subject): a seeded uniform sample of each,
    as the facts of a probe get, in file order (the first N of a file sorted by difficulty
    would be a biased sample)."""
    groups: dict[str, list[Item]] = {}
    for item in items:
        key = str(item.metadata.get("relation", item.metadata.get("subject", "")))
        groups.setdefault(key, []).append(item)
    kept = {
        id(item)
        for group in groups.values()
        for item in (
            group if len(group) <= limit else sample_items(group, limit, seed=seed, strata=False)
        )
    }
    return [item for item in items if id(item) in kept]
