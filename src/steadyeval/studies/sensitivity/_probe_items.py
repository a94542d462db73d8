"""Factual probes → the study's items: which relations and templates, which facts (a
seeded sample), each subject's names, and the template weights."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._errors import ConfigError
from ..._seeds import derive_seed
from ...items import Fact, Item, ProbeData, Relation, fact_metadata

if TYPE_CHECKING:
    from ._design import ProbeOptions

__all__ = ["choose_relations", "probe_items", "weights_info"]


def _names_for(fact: Fact, extra: Mapping[str, Sequence[str]] | None, cap: int) -> tuple[str, ...]:
    names = [fact.subject, *fact.aliases]
    if extra:
        more = extra.get(fact.subject_uri or "\x00") or extra.get(fact.subject) or ()
        names.extend(more)
    return tuple(dict.fromkeys(n for n in names if n.strip()))[:cap]


def choose_relations(
    data: ProbeData, opts: ProbeOptions
) -> tuple[list[Relation], int, dict[str, str]]:
    """The relations used, the length of the template axis, and the relations dropped
    (with why). With ``"all"`` the axis is the largest template count and none is dropped.
    """
    rels = list(data.relations)
    dropped: dict[str, str] = {}
    if opts.relations is not None:
        known = {r.id for r in rels}
        missing = [r for r in opts.relations if r not in known]
        if missing:
            raise ConfigError(
                f"relations not in {data.source}: {', '.join(missing)}; "
                f"available: {', '.join(sorted(known))}"
            )
        rels = [r for r in rels if r.id in set(opts.relations)]
    if opts.templates_per_relation == "all":
        return rels, max(len(r.templates) for r in rels), dropped
    k = opts.templates_per_relation or min(len(r.templates) for r in rels)
    for r in rels:
        if len(r.templates) < k:
            dropped[r.id] = f"has {len(r.templates)} templates; {k} per relation were asked for"
    rels = [r for r in rels if r.id not in dropped]
    if not rels:
        raise ConfigError(
            f"no relation has {k} templates; lower templates_per_relation "
            f"(counts: {sorted({len(r.templates) for r in data.relations})})"
        )
    return rels, k, dropped


def _sample(facts: list[Fact], limit: int | None, seed: int, relation: str) -> list[Fact]:
    if limit is None or len(facts) <= limit:
        return facts
    rng = np.random.default_rng(derive_seed("facts", seed, relation))
    keep = sorted(int(i) for i in rng.choice(len(facts), size=limit, replace=False))
    return [facts[i] for i in keep]


def probe_items(
    data: ProbeData, rels: Sequence[Relation], opts: ProbeOptions
) -> tuple[list[Item], dict[str, Any]]:
    items: list[Item] = []
    per_relation: dict[str, dict[str, int]] = {}
    for rel in rels:
        all_facts = data.facts_of(rel.id)
        facts = [f for f in all_facts if opts.vocab is None or f.object in opts.vocab]
        golds: dict[str, list[str]] = {}
        for f in all_facts:
            golds.setdefault(f.subject_key, [])
            if f.object not in golds[f.subject_key]:
                golds[f.subject_key].append(f.object)
        objects = list(
            dict.fromkeys(
                f.object for f in all_facts if opts.vocab is None or f.object in opts.vocab
            )
        )
        chosen = _sample(facts, opts.limit_per_relation, opts.seed, rel.id)
        per_relation[rel.id] = {
            "facts": len(all_facts),
            "in_vocab": len(facts),
            "used": len(chosen),
            "objects": len(objects),
        }
        for f in chosen:
            answers = [f.object, *(o for o in golds[f.subject_key] if o != f.object)]
            options = tuple(objects) if opts.candidates == "relation" else None
            if options is not None:
                answers = [a for a in answers if a in objects]
            meta = fact_metadata(rel.id, f)
            items.append(
                Item(
                    id=f"{rel.id}/{f.subject_key}/{f.object_key}",
                    question=rel.templates[0],
                    options=options,
                    answers=tuple(answers),
                    gold_options=tuple(objects.index(a) for a in answers) if options else (),
                    aliases=_names_for(f, opts.aliases, opts.max_names),
                    metadata=meta,
                )
            )
    return items, per_relation


def weights_info(
    rels: Sequence[Relation], k: int, mode: str, source: str
) -> dict[str, list[float]] | None:
    if mode == "uniform":
        return None
    missing = [r.id for r in rels if r.weights is None]
    if missing:
        raise ConfigError(
            f"weights='data' but {source} has no template weights for relation(s) "
            f"{', '.join(missing[:5])}; use weights='uniform' or add weights"
        )
    out = {}
    for r in rels:
        assert r.weights is not None
        w = list(r.weights[:k])
        if sum(w) <= 0:
            raise ConfigError(f"{r.where}: the first {k} template weights sum to 0")
        out[r.id] = [x / sum(w) for x in w]
    return out
